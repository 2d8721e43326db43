"""Run the bot: build it from the settings, serve HTTP (signed requests) or Socket Mode.

HTTP mode is bolt's WSGI adapter on a threading WSGI server from the standard library,
bound to loopback (put a TLS reverse proxy in front of it for Slack). In front of bolt,
``SignedGate`` does the cheap things first and nothing expensive before authentication:
the body is bounded (``MAX_BODY``; larger is 413 unread), the timestamp must be an
integer at most five minutes old (else 400/401), the signature (HMAC-SHA256 of
``v0:timestamp:body``) must match (else 401), and only then is the body parsed (not a
Slack payload: 400) and handed to bolt. A refused request costs one bounded log line,
never the body or a traceback. Reading a request (headers and body together) has a
total deadline (``REQUEST_DEADLINE_S``) on top of the per-read timeout, so a client that
dribbles a byte now and then cannot hold a worker: it gets 408. Socket Mode uses bolt's built-in client with
the app-level token; no port is opened.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import ipaddress
import logging
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.error import BoltError
from slack_sdk.errors import SlackApiError

from bot import alerts as al
from bot.app import StordocBot
from bot.auth import RoleSpec
from bot.redact import Redactor, install
from bot.wsgi import TooDeep, drain, load_json
from checks.model import Severity
from stordoc.env import Env
from stordoc.errors import UserError
from stordoc.service import Service

log = logging.getLogger("stordoc.bot")
PATH = "/slack/events"
MAX_BODY = 512 * 1024  # a block_actions payload carries its message: 50 blocks fit easily
MAX_AGE_S = 300  # Slack's own rule: older requests may be replays
_TS_RE = re.compile(r"[0-9]{1,12}")
_SIG_RE = re.compile(r"v0=[0-9a-f]{64}")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class SignedGate:
    """WSGI middleware before bolt: size, timestamp, signature, then a parseable body."""

    def __init__(self, inner: WsgiApp, signing_secret: str, path: str = PATH,
                 max_body: int = MAX_BODY, clock: Callable[[], float] = time.time) -> None:
        self.inner = inner
        self.path = path
        self.max_body = max_body
        self.clock = clock
        self._secret = signing_secret.encode()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        def answer(code: int, reason: str, detail: str, size: int = 0) -> Iterable[bytes]:
            log.warning("http: refused %s %s: %s (%d bytes from %s)", code, reason, detail,
                        size, str(environ.get("REMOTE_ADDR", "?"))[:64])
            body = f"{reason}\n".encode()
            start_response(f"{code} {reason}", [("Content-Type", "text/plain"),
                                                ("Content-Length", str(len(body)))])
            return [body]

        if environ.get("PATH_INFO") != self.path:
            return answer(404, "Not Found", "unknown path")
        if environ.get("REQUEST_METHOD") != "POST":
            return answer(405, "Method Not Allowed", "not a POST")
        raw_len = str(environ.get("CONTENT_LENGTH") or "0")
        if not _TS_RE.fullmatch(raw_len):
            return answer(400, "Bad Request", "bad Content-Length")
        size = int(raw_len)
        stream = environ["wsgi.input"]
        if size > self.max_body:
            drain(stream, size)
            return answer(413, "Payload Too Large", f"body over {self.max_body} bytes", size)
        body = stream.read(size) if size else b""
        ts = str(environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP", ""))
        sig = str(environ.get("HTTP_X_SLACK_SIGNATURE", ""))
        if not _TS_RE.fullmatch(ts):
            return answer(400, "Bad Request", "missing or non-integer timestamp", size)
        if abs(self.clock() - int(ts)) > MAX_AGE_S:
            return answer(401, "Unauthorized", "timestamp older than 5 minutes", size)
        mac = hmac.new(self._secret, b"v0:" + ts.encode() + b":" + body, hashlib.sha256)
        want = "v0=" + mac.hexdigest()  # over the raw bytes: any body, even not UTF-8
        if not _SIG_RE.fullmatch(sig) or not hmac.compare_digest(want, sig):
            return answer(401, "Unauthorized", "bad signature", size)
        why = malformed(body, str(environ.get("CONTENT_TYPE", "")))
        if why:
            return answer(400, "Bad Request", f"signed but {why}", size)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return self.inner(environ, start_response)


def malformed(body: bytes, content_type: str) -> str | None:
    """Why a signed body is not a Slack payload bolt can take, or None."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    if content_type.split(";")[0].strip() == "application/json":
        try:
            obj = load_json(text)
        except TooDeep as e:
            return str(e)
        except ValueError:
            return "not JSON"
        return None if isinstance(obj, dict) else "not a JSON object"
    try:
        form = parse_qs(text, strict_parsing=bool(text), max_num_fields=200)
    except ValueError:
        return "not a form"
    if "payload" in form:
        try:
            obj = load_json(form["payload"][0])
        except TooDeep as e:
            return f"payload: {e}"
        except ValueError:
            return "payload is not JSON"
        if not isinstance(obj, dict):
            return "payload is not a JSON object"
    return None


def build_bot(env: Env, *, socket_mode: bool = False, post_only: bool = False,
              **overrides: Any) -> StordocBot:
    """A bot from ``settings.slack``; missing secrets are a one-line user error.
    ``post_only`` (watch mode) needs the bot token only: it receives nothing."""
    s = env.settings.slack
    token = s.bot_token.resolve()
    secret = s.signing_secret.resolve()
    if not token:
        raise UserError("no Slack bot token: set $SLACK_BOT_TOKEN or slack.bot_token.file")
    if not secret and not socket_mode and not post_only:
        raise UserError("no Slack signing secret: set $SLACK_SIGNING_SECRET or "
                        "slack.signing_secret.file")
    app_token = s.app_token.resolve() if socket_mode else None
    if socket_mode and not app_token:
        raise UserError("no Slack app token for Socket Mode: set $SLACK_APP_TOKEN or "
                        "slack.app_token.file")
    roles = {k: RoleSpec(tuple(v.viewers), tuple(v.operators), v.two_person)
             for k, v in s.roles.items()}
    swift_keys = [c.swift.key.resolve() for c in env.settings.clusters.values()
                  if c.swift and c.swift.key]
    if env.settings.alerts.token:
        swift_keys.append(env.settings.alerts.token.resolve())
    kw: dict[str, Any] = {"command": s.command, "api_base_url": s.api_base_url,
                          "button_ttl_s": s.button_ttl_s, "roles": roles, "admins": s.admins,
                          "secrets": [x for x in [app_token, *swift_keys] if x]}
    kw.update(overrides)
    red = Redactor([token, secret, *kw["secrets"]])
    install(red)
    try:
        a = env.settings.alerts
        bot = StordocBot(Service(env), bot_token=token, channels=s.channels,
                         alerts=al.AlertConfig(a.cluster_label, dict(a.clusters),
                                               a.alertmanager_url, a.quiet_hours,
                                               Severity[a.quiet_min_severity.upper()],
                                               a.thread_window_s),
                         signing_secret=secret or "not-receiving", **kw)
    except (OSError, SlackApiError, BoltError) as e:  # auth.test at start-up failed
        raise UserError(f"cannot start the bot: Slack API auth.test failed: "
                        f"{red.text(str(e)).splitlines()[0][:300]}") from None
    return bot


def alert_gate(env: Env, bot: StordocBot) -> al.AlertGate | None:
    """The Alertmanager webhook when ``alerts.token`` is set (no token, no intake)."""
    a = env.settings.alerts
    token = a.token.resolve() if a.token else None
    if not token:
        return None
    if len(token) < 8 or not token.isascii() or not token.isprintable() or " " in token:
        raise UserError("alerts.token: at least 8 printable ASCII characters, no spaces")
    desk = bot.desk
    return al.AlertGate(token, lambda p: desk.accept(p, a.cluster_label, a.clusters),
                        max_alerts=a.max_alerts)


class Router:
    """Slack's signed requests to ``SignedGate``; ``/alertmanager`` to the alert gate.

    The last line of defence: a client that stalls mid-body (the socket's read timeout)
    or is still sending it at the request deadline gets 408, and anything a gate did not expect is one log line and a 500, never a
    traceback on stderr."""

    def __init__(self, slack: WsgiApp, alerts: WsgiApp | None) -> None:
        self.slack = slack
        self.alerts = alerts

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        app = self.alerts if (self.alerts is not None
                              and environ.get("PATH_INFO") == al.PATH) else self.slack
        try:
            return list(app(environ, start_response))
        except RequestDeadline as e:
            code, reason = 408, "Request Timeout"
            log.warning("http: refused 408: %s (from %s)", e,
                        str(environ.get("REMOTE_ADDR", "?"))[:64])
        except TimeoutError:
            code, reason = 408, "Request Timeout"
            log.warning("http: refused 408: the client stalled sending its request "
                        "(from %s)", str(environ.get("REMOTE_ADDR", "?"))[:64])
        except Exception as e:  # noqa: BLE001 - one line, no traceback, no body
            code, reason = 500, "Internal Server Error"
            log.error("http: internal error on %s: %s: %s",
                      one_line(str(environ.get("PATH_INFO", "?"))[:64]), type(e).__name__,
                      one_line(str(e))[:200])
        body = f"{reason}\n".encode()
        start_response(f"{code} {reason}", [("Content-Type", "text/plain"),
                                            ("Content-Length", str(len(body)))],
                       sys.exc_info())
        return [body]


def one_line(text: str) -> str:
    """``text`` with control characters escaped: one log line whatever it holds."""
    return text.encode("unicode_escape", "backslashreplace").decode("ascii")


READ_TIMEOUT_S = 15.0  # a client silent this long mid-request is dropped (408 or closed)
MAX_WORKERS = 32  # requests handled at once; more wait in the listen backlog
QUEUE_WAIT_S = 10.0  # a connection that finds no free worker this long is answered 503
REQUEST_DEADLINE_S = 30.0  # headers and body must have arrived this long after pick-up


class RequestDeadline(TimeoutError):
    """The request (headers and body) was not complete within its total deadline."""


class _DeadlineReader(io.RawIOBase):
    """The connection's read side with a total deadline over all reads: each read waits
    at most the per-read timeout and never past ``deadline`` (``time.monotonic``); a read
    cut short by the deadline, or started after it, raises ``RequestDeadline``. Writes
    (the answer) keep the socket's own timeout."""

    def __init__(self, sock: socket.socket, read_timeout_s: float | None, deadline: float,
                 deadline_s: float) -> None:
        super().__init__()
        self.sock = sock
        self.read_timeout_s = read_timeout_s
        self.deadline = deadline
        self.deadline_s = deadline_s

    def readable(self) -> bool:
        return True

    def _late(self) -> RequestDeadline:
        return RequestDeadline(f"the request was not complete within {self.deadline_s:g} s")

    def readinto(self, b: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._late()
        cut = self.read_timeout_s is None or left < self.read_timeout_s
        self.sock.settimeout(left if cut else self.read_timeout_s)
        try:
            return self.sock.recv_into(b)
        except TimeoutError:
            if cut:
                raise self._late() from None
            raise
        finally:
            self.sock.settimeout(self.read_timeout_s)


class _Server(WSGIServer):
    """A threading WSGI server with a bounded number of worker threads.

    The accept loop takes a connection only when a worker is free (the kernel's listen
    backlog holds the rest); one that finds no worker within ``queue_wait_s`` gets a 503.
    Each worker's socket has a read timeout (``_Quiet.timeout``) and reading the whole
    request a deadline (``_Quiet.deadline_s``), so a stalled or dribbling client frees
    its worker."""

    allow_reuse_address = True
    request_queue_size = 128  # the default 5 drops SYNs under bursts: 1 s retransmits
    max_workers = MAX_WORKERS
    queue_wait_s = QUEUE_WAIT_S

    def server_activate(self) -> None:
        super().server_activate()
        self.slots = threading.BoundedSemaphore(self.max_workers)
        self.busy_refusals = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(timeout=self.queue_wait_s):
            self.busy_refusals += 1
            log.warning("http: refused 503: all %d workers busy", self.max_workers)
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0"
                                b"\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        t = threading.Thread(target=self._work, args=(request, client_address),
                             name="stordoc-bot-http-worker", daemon=True)
        t.start()

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception as e:  # noqa: BLE001
            self.handle_error(request, client_address, e)
        finally:
            self.shutdown_request(request)
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any,
                     e: BaseException | None = None) -> None:
        """One log line instead of socketserver's traceback on stderr."""
        e = e or sys.exc_info()[1]
        if isinstance(e, RequestDeadline):  # still in the headers: 408, then close
            log.warning("http: refused 408: %s (from %s)", e, str(client_address[0])[:64])
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.0 408 Request Timeout\r\nContent-Length: 0"
                                b"\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
        elif isinstance(e, TimeoutError):
            log.info("http: dropped a connection from %s: it stalled (read timeout)",
                     str(client_address[0])[:64])
        else:
            log.warning("http: connection from %s failed: %s: %s",
                        str(client_address[0])[:64], type(e).__name__,
                        one_line(str(e))[:200])


class _Quiet(WSGIRequestHandler):
    timeout = READ_TIMEOUT_S  # StreamRequestHandler.setup: settimeout
    deadline_s = REQUEST_DEADLINE_S

    def setup(self) -> None:
        """The deadline runs from the moment a worker takes the connection."""
        deadline = time.monotonic() + self.deadline_s
        super().setup()
        self.rfile.close()  # socket.makefile's reader: replaced, the socket stays open
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self.timeout,
                                                       deadline, self.deadline_s))

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)

    def get_stderr(self) -> Any:
        return _LogLines()


class _LogLines:
    """wsgiref's error stream: what it would print (a traceback) becomes bounded lines."""

    def write(self, text: str) -> int:
        if text.startswith("Traceback"):  # one line per traceback, and not its text
            log.warning("http: an answer could not be sent (the client went away?)")
        return len(text)

    def flush(self) -> None:
        return None


def check_loopback(host: str) -> None:
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = host == "localhost"
    if not ok:
        raise UserError(f"refusing to listen on {host}: bind to loopback (127.0.0.1) and "
                        "put a TLS reverse proxy in front for Slack")


class HttpServer:
    """The bot's HTTP endpoint (``POST /slack/events``) in a background thread."""

    def __init__(self, bot: StordocBot, host: str = "127.0.0.1", port: int = 3000,
                 alerts: al.AlertGate | None = None, *,
                 read_timeout_s: float = READ_TIMEOUT_S, max_workers: int = MAX_WORKERS,
                 queue_wait_s: float = QUEUE_WAIT_S,
                 request_deadline_s: float = REQUEST_DEADLINE_S) -> None:
        check_loopback(host)
        self.bot = bot
        gate = SignedGate(SlackRequestHandler(bot.app, PATH), bot.signing_secret, PATH)
        server = type("_BoundedServer", (_Server,), {"max_workers": max_workers,
                                                     "queue_wait_s": queue_wait_s})
        handler = type("_TimedHandler", (_Quiet,), {"timeout": read_timeout_s,
                                                    "deadline_s": request_deadline_s})
        self.httpd: _Server = make_server(host, port, Router(gate, alerts),
                                          server_class=server, handler_class=handler)
        self.port: int = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}{PATH}"
        self._t: threading.Thread | None = None

    def start(self) -> HttpServer:
        self._t = threading.Thread(target=self.httpd.serve_forever, name="stordoc-bot-http",
                                   daemon=True)
        self._t.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._t:
            self._t.join(10)


def socket_mode(bot: StordocBot, app_token: str) -> SocketModeHandler:
    """A Socket Mode handler using the bot's WebClient (so api_base_url applies)."""
    return SocketModeHandler(bot.app, app_token, web_client=bot.client)
