"""Run the bot: build it from the settings, serve HTTP (signed requests) or Socket Mode.

HTTP mode is bolt's WSGI adapter on waitress (a WSGI server),
bound to loopback (put a TLS reverse proxy in front of it for Slack). In front of bolt,
``SignedGate`` does the cheap things first and nothing expensive before authentication:
the body is bounded (``MAX_BODY``; larger is 413 unread), the timestamp must be an
integer at most five minutes old (else 400/401), the signature (HMAC-SHA256 of
``v0:timestamp:body``) must match (else 401), and only then is the body parsed (not a
Slack payload: 400) and handed to bolt. A refused request costs one bounded log line,
never the body or a traceback.

The HTTP server is waitress: its loop thread receives every request without blocking and
hands only complete ones to the workers, so clients that dribble a byte now and then hold
a socket, never a worker; a request not complete ``REQUEST_DEADLINE_S`` after it began is
answered 408 and closed, a connection silent for ``READ_TIMEOUT_S`` is closed. Socket
Mode uses bolt's built-in client with the app-level token; no port is opened.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import ipaddress
import logging
import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.wsgi import SlackRequestHandler
from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask, ThreadedTaskDispatcher

from bot.app import StordocBot
from core import alerts as al
from core.env import Env
from core.errors import UserError
from core.policy import Authorizer
from core.service import Service
from core.slack.poster import alert_config, check_token, log_redactor, other_secrets
from core.slack.wsgi import DRAIN_MAX, TooDeep, drain, load_json

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
        try:  # bolt's own error handler answers most odd shapes; what escapes it lands here
            return list(self.inner(environ, start_response))
        except Exception as e:  # noqa: BLE001 - a signed body bolt cannot read: 400
            return answer(400, "Bad Request", "signed, but bolt cannot take this payload "
                          f"({type(e).__name__}: {one_line(str(e))[:160]})", size)


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


def build_bot(env: Env, *, socket_mode: bool = False, **overrides: Any) -> StordocBot:
    """A bot from ``settings.slack``; missing secrets are a one-line user error (``stordoc
    watch`` posts without a bot: ``core.slack.poster.build_poster``)."""
    s = env.settings.slack
    token = s.bot_token.resolve()
    secret = s.signing_secret.resolve()
    if not token:
        raise UserError("no Slack bot token: set $SLACK_BOT_TOKEN or slack.bot_token.file")
    if not secret and not socket_mode:
        raise UserError("no Slack signing secret: set $SLACK_SIGNING_SECRET or "
                        "slack.signing_secret.file")
    app_token = s.app_token.resolve() if socket_mode else None
    if socket_mode and not app_token:
        raise UserError("no Slack app token for Socket Mode: set $SLACK_APP_TOKEN or "
                        "slack.app_token.file")
    roles = Authorizer.from_settings(env.settings).roles
    kw: dict[str, Any] = {"command": s.command, "api_base_url": s.api_base_url,
                          "button_ttl_s": s.button_ttl_s, "roles": roles, "admins": s.admins,
                          "secrets": other_secrets(env, app_token)}
    kw.update(overrides)
    red = log_redactor([token, secret, *kw["secrets"]])
    # auth.test is ours, not bolt's: a Slack that is down is an outage, not a bad token
    bot = StordocBot(Service(env), bot_token=token, channels=s.channels,
                     alerts=alert_config(env),
                     signing_secret=secret or "not-receiving", verify_token=False, **kw)
    check_token(bot.client, red, bot.closing, bot.close)
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

    The last line of defence: anything a gate did not expect is one log line and a 500,
    never a traceback on stderr (waitress hands over only complete requests: the read
    timeout and the request deadline are the server's, see ``HttpServer``)."""

    def __init__(self, slack: WsgiApp, alerts: WsgiApp | None) -> None:
        self.slack = slack
        self.alerts = alerts

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        app = self.alerts if (self.alerts is not None
                              and environ.get("PATH_INFO") == al.PATH) else self.slack
        try:
            return list(app(environ, start_response))
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


READ_TIMEOUT_S = 15.0  # a connection silent this long (mid-request or idle) is closed
MAX_WORKERS = 32  # complete requests handled at once; more wait in waitress's task queue
REQUEST_DEADLINE_S = 30.0  # headers and body must have arrived this long after they began
MAX_CONNECTIONS = 1000  # open connections (slow or not) before accepting pauses
TICK_S = 0.25  # how often the timeouts are looked at (at least: the loop's wake-up)


class _ErrorTask(ErrorTask):  # type: ignore[misc]
    """waitress's own refusal (a request it cannot parse, a body over its limit): the same
    one bounded log line as the gates' refusals."""

    def execute(self) -> None:
        e = self.request.error
        log.warning("http: refused %s %s: %s (from %s)", e.code, e.reason,
                    one_line(str(e.body))[:160], str(self.channel.addr[0])[:64])
        super().execute()


class _Channel(HTTPChannel):  # type: ignore[misc]
    """waitress's connection, with the clock of the request being received: it starts
    with the connection and again with the first byte of each next request, and stops
    once a request is complete (then waitress hands it to a worker)."""

    started: float | None
    error_task_class = _ErrorTask

    def __init__(self, *a: Any, **kw: Any) -> None:
        self.started = time.monotonic()
        super().__init__(*a, **kw)

    def received(self, data: bytes) -> bool:
        if self.started is None and data:
            self.started = time.monotonic()
        done = bool(super().received(data))
        if self.request is None:  # nothing partial left: no clock until the next byte
            self.started = None
        return done

    def late(self, now: float, deadline_s: float) -> bool:
        return (self.started is not None and now - self.started > deadline_s
                and not self.requests and not self.will_close
                and not self.close_when_flushed)

    def refuse_late(self) -> None:
        """408 and close, from the server's loop thread (no task runs for this channel)."""
        answer = (b"HTTP/1.0 408 Request Timeout\r\nContent-Length: 0\r\n"
                  b"Connection: close\r\n\r\n")
        with self.requests_lock:
            self.request = None
            self.started = None
            with self.outbuf_lock:
                self.outbufs[-1].append(answer)
                self.current_outbuf_count += len(answer)
                self.total_outbufs_len += len(answer)
            self.close_when_flushed = True


class _Server(TcpWSGIServer):  # type: ignore[misc]
    """waitress's server: one loop thread receives every connection's request without
    blocking (a slow sender holds a socket, never a worker), and hands complete requests
    to ``threads`` workers. On top of waitress: the per-request deadline (408, then
    closed); waitress itself closes connections silent for ``channel_timeout``."""

    channel_class = _Channel
    deadline_s = REQUEST_DEADLINE_S
    read_timeout_s = READ_TIMEOUT_S
    late_refusals = 0

    def tick(self) -> None:
        """Close what is late (called from the loop thread every ``TICK_S``): a connection
        silent for ``read_timeout_s`` (waitress's own ``channel_timeout`` counts whole
        seconds only), a request not complete ``deadline_s`` after it began (408)."""
        now, mono = time.time(), time.monotonic()
        for ch in list(self.active_channels.values()):
            if not isinstance(ch, _Channel) or ch.will_close or ch.close_when_flushed:
                continue
            if ch.late(mono, self.deadline_s):
                self.late_refusals += 1
                log.warning("http: refused 408: the request was not complete within %g s "
                            "(from %s)", self.deadline_s, str(ch.addr[0])[:64])
                ch.refuse_late()
            elif not ch.requests and now - ch.last_activity > self.read_timeout_s:
                log.info("http: closed a connection from %s: silent for %g s",
                         str(ch.addr[0])[:64], self.read_timeout_s)
                ch.will_close = True


def check_loopback(host: str) -> None:
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = host == "localhost"
    if not ok:
        raise UserError(f"refusing to listen on {host}: bind to loopback (127.0.0.1) and "
                        "put a TLS reverse proxy in front for Slack")


class HttpServer:
    """The bot's HTTP endpoint (``POST /slack/events``) on waitress.

    waitress reads each request (headers and body) in its loop thread and only a complete
    one reaches a worker, so slow or stalled senders cannot starve signed requests: each
    is closed after ``read_timeout_s`` of silence, or answered 408 and closed when its
    request is not complete ``request_deadline_s`` after it began."""

    def __init__(self, bot: StordocBot, host: str = "127.0.0.1", port: int = 3000,
                 alerts: al.AlertGate | None = None, *,
                 read_timeout_s: float = READ_TIMEOUT_S, max_workers: int = MAX_WORKERS,
                 request_deadline_s: float = REQUEST_DEADLINE_S,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        check_loopback(host)
        self.bot = bot
        gate = SignedGate(SlackRequestHandler(bot.app, PATH), bot.signing_secret, PATH)
        self.tick_s = min(TICK_S, request_deadline_s / 4, read_timeout_s / 4)
        adj = Adjustments(  # waitress's timeouts are whole seconds: ours are in tick()
            host=host, port=port, threads=max_workers, ident="stordoc",
            channel_timeout=math.ceil(read_timeout_s) + 1,
            connection_limit=max_connections, asyncore_use_poll=True, backlog=128,
            # the gate refuses a body over MAX_BODY with 413 itself (it reads and drops at
            # most DRAIN_MAX of it); waitress refuses larger ones unread
            max_request_body_size=DRAIN_MAX, log_socket_errors=False,
            clear_untrusted_proxy_headers=False, expose_tracebacks=False)
        server = type("_TimedServer", (_Server,), {"deadline_s": request_deadline_s,
                                                   "read_timeout_s": read_timeout_s})
        dispatcher = ThreadedTaskDispatcher()
        dispatcher.set_thread_count(max_workers)
        self.httpd: _Server = server(Router(gate, alerts), map={}, dispatcher=dispatcher,
                                     adj=adj)
        self.port: int = int(self.httpd.effective_port)
        self.url = f"http://{host}:{self.port}{PATH}"
        self._stop = threading.Event()
        self._closed = False
        self._t: threading.Thread | None = None

    def start(self) -> HttpServer:
        self._t = threading.Thread(target=self.serve_forever, name="stordoc-bot-http",
                                   daemon=True)
        self._t.start()
        return self

    def serve_forever(self) -> None:
        """The loop (until ``stop``); then every connection and worker is closed."""
        next_tick = 0.0
        try:
            while not self._stop.is_set():
                wasyncore.loop(timeout=self.tick_s, map=self.httpd._map, use_poll=True,
                               count=1)
                if time.monotonic() >= next_tick:
                    next_tick = time.monotonic() + self.tick_s
                    self.httpd.tick()
        finally:
            self.close()

    def stop(self) -> None:
        self._stop.set()
        if self._t:
            self._t.join(30)
        else:
            self.close()

    def close(self) -> None:
        """Close the listening socket, every connection and the workers (once)."""
        if self._closed:
            return
        self._closed = True
        for obj in list(self.httpd._map.values()):
            try:
                obj.close()
            except OSError:
                pass
        self.httpd.task_dispatcher.shutdown(timeout=10)


def socket_mode(bot: StordocBot, app_token: str) -> SocketModeHandler:
    """A Socket Mode handler using the bot's WebClient (so api_base_url applies)."""
    return SocketModeHandler(bot.app, app_token, web_client=bot.client)
