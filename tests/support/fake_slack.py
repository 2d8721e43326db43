"""A fake Slack for tests: the Web API on loopback, Socket Mode over a local websocket, and
a client that signs requests to the app exactly as Slack does.

``FakeSlack`` records every Web API call (method, params, headers) and answers like Slack
(``auth.test``, ``chat.postMessage``, ``chat.update``, ``chat.postEphemeral``,
``chat.delete``, ``files.getUploadURLExternal`` + the upload URL +
``files.completeUploadExternal``, ``usergroups.users.list``, ``views.open``,
``apps.connections.open``). It also rejects messages over Slack's limits (50 blocks,
3000-character sections) with ``invalid_blocks``, as Slack would, so a test notices.
Waiting is done on a condition variable notified on each call, never by sleeping.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "xoxb-fake-test-token-000"
APP_TOKEN = "xapp-1-fake-app-token-000"
SIGNING_SECRET = "fake-signing-secret-0123456789abcdef"
BOT_USER = "UBOT000001"


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)
    response: dict[str, Any] = field(default_factory=dict)


class FakeSlack:
    """The Slack Web API on 127.0.0.1 (random port), recording calls."""

    def __init__(self, token: str = TOKEN, groups: Mapping[str, list[str]] | None = None) -> None:
        self.token = token
        self.groups = dict(groups or {})
        self.calls: list[Call] = []
        self.uploads: dict[str, bytes] = {}
        self.cond = threading.Condition()
        self._ts = itertools.count(1)
        self._fid = itertools.count(1)
        self.ws_url: str | None = None
        self._fail: dict[str, tuple[int, int, str]] = {}
        self.failed: list[Call] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                path = urllib.parse.urlparse(self.path).path
                if path.startswith("/upload/"):
                    fake.uploads[path.rsplit("/", 1)[1]] = raw
                    fake._record("upload", {"file_id": path.rsplit("/", 1)[1],
                                            "size": len(raw)}, dict(self.headers))
                    self._send(200, b"OK - %d" % len(raw), "text/plain")
                    return
                method = path.strip("/").split("/")[-1]
                ctype = self.headers.get("Content-Type", "")
                params: dict[str, Any]
                if "json" in ctype:
                    params = json.loads(raw or b"{}")
                else:
                    params = {k: v[0] for k, v in urllib.parse.parse_qs(
                        raw.decode(), keep_blank_values=True).items()}
                q = urllib.parse.urlparse(self.path).query
                params.update({k: v[0] for k, v in urllib.parse.parse_qs(q).items()})
                for k in ("blocks", "files"):
                    if isinstance(params.get(k), str):
                        params[k] = json.loads(params[k])
                failure = fake._failing(method, params)
                if failure is not None:
                    status, err = failure
                    if status == 0:  # a dropped connection: no answer at all
                        self.close_connection = True
                        return
                    self.send_response(status)
                    if status == 429:
                        self.send_header("Retry-After", "0")
                    out = json.dumps({"ok": False, "error": err}).encode()
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                    return
                body = fake.answer(method, params, dict(self.headers))
                self._send(200, json.dumps(body).encode(), "application/json")

            do_GET = do_POST

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/api/"
        self._t = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # ------------------------------------------------------------------ failures
    def fail(self, method: str, times: int, status: int = 500,
             error: str = "internal_error") -> None:
        """The next ``times`` calls of ``method`` fail (HTTP ``status``, ``ok: false``);
        they are kept in ``failed``, not in ``calls``. ``times`` < 0: until ``heal()``.
        ``status`` 0: the connection is closed without an answer."""
        with self.cond:
            self._fail[method] = (times, status, error)

    def heal(self) -> None:
        with self.cond:
            self._fail.clear()

    def _failing(self, method: str, params: dict[str, Any]) -> tuple[int, str] | None:
        with self.cond:
            left, status, error = self._fail.get(method, (0, 0, ""))
            if left == 0:
                return None
            self._fail[method] = (left - 1, status, error)
            self.failed.append(Call(method, params, {}))
            self.cond.notify_all()
            return status, error

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeSlack:
        self._t.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ------------------------------------------------------------------ answers
    def _record(self, method: str, params: dict[str, Any], headers: dict[str, str],
                response: dict[str, Any] | None = None) -> None:
        with self.cond:
            self.calls.append(Call(method, params, headers, response=response or {}))
            self.cond.notify_all()

    def _ts_next(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def answer(self, method: str, params: dict[str, Any],
               headers: dict[str, str]) -> dict[str, Any]:
        resp = self._answer(method, params, headers)
        self._record(method, params, headers, resp)
        return resp

    def _answer(self, method: str, params: dict[str, Any],
                headers: dict[str, str]) -> dict[str, Any]:
        auth = headers.get("Authorization") or headers.get("authorization") or ""
        if method == "apps.connections.open":
            if auth != "Bearer " + APP_TOKEN:
                return {"ok": False, "error": "invalid_auth"}
            return {"ok": True, "url": self.ws_url}
        if auth != "Bearer " + self.token:
            return {"ok": False, "error": "invalid_auth"}
        if method == "auth.test":
            return {"ok": True, "url": "https://fake.slack.test/", "team": "fake",
                    "user": "stordoc", "team_id": "T0000001", "user_id": BOT_USER,
                    "bot_id": "B0000001"}
        if method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
            err = limits_error(params)
            if err:
                return {"ok": False, "error": "invalid_blocks", "detail": err}
            if not params.get("channel"):
                return {"ok": False, "error": "channel_not_found"}
            if method == "chat.postEphemeral":
                return {"ok": True, "message_ts": self._ts_next()}
            ts = params.get("ts") if method == "chat.update" else self._ts_next()
            return {"ok": True, "channel": params["channel"], "ts": ts,
                    "message": {"text": params.get("text"), "ts": ts}}
        if method == "chat.delete":
            if not params.get("channel") or not params.get("ts"):
                return {"ok": False, "error": "message_not_found"}
            return {"ok": True, "channel": params["channel"], "ts": params["ts"]}
        if method == "files.getUploadURLExternal":
            fid = f"F{next(self._fid):08d}"
            return {"ok": True, "file_id": fid,
                    "upload_url": f"http://127.0.0.1:{self.port}/upload/{fid}"}
        if method == "files.completeUploadExternal":
            files = params.get("files") or []
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title", "")}
                                          for f in files]}
        if method == "usergroups.users.list":
            g = params.get("usergroup", "")
            if g not in self.groups:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": self.groups[g]}
        if method == "views.open":
            return {"ok": True, "view": {"id": "V0000001"}}
        return {"ok": False, "error": "unknown_method"}

    # ------------------------------------------------------------------ queries
    def of(self, *methods: str) -> list[Call]:
        with self.cond:
            return [c for c in self.calls if c.method in methods]

    def wait_for(self, pred: Callable[[FakeSlack], Any], timeout: float = 30.0) -> Any:
        """Block until ``pred(self)`` is truthy (re-checked on every call); its value."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                v = pred(self)
                if v:
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out; calls: {self.summary()}")
                self.cond.wait(left)

    def summary(self) -> list[str]:
        return [f"{c.method}:{str(c.params.get('text', ''))[:80]}" for c in self.calls]


def limits_error(params: Mapping[str, Any]) -> str | None:
    """What Slack would reject about a message's blocks, or None."""
    blocks = params.get("blocks") or []
    if len(blocks) > 50:
        return f"{len(blocks)} blocks"
    for b in blocks:
        if b.get("type") == "section" and len(b.get("text", {}).get("text", "")) > 3000:
            return "section text over 3000"
        if b.get("type") == "header" and len(b["text"]["text"]) > 150:
            return "header over 150"
    return None


# --------------------------------------------------------------------------- signing client


def sign(secret: str, body: bytes, ts: int | None = None) -> dict[str, str]:
    """The headers Slack sends: ``v0=HMAC_SHA256(secret, "v0:{ts}:{body}")``."""
    t = str(int(time.time()) if ts is None else ts)
    sig = hmac.new(secret.encode(), b"v0:" + t.encode() + b":" + body,
                   hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": t, "X-Slack-Signature": "v0=" + sig}


@dataclass
class Response:
    status: int
    body: str
    elapsed_s: float


class SlackSender:
    """Sends slash commands, mentions and button presses to the app as Slack does."""

    def __init__(self, url: str, secret: str = SIGNING_SECRET, command: str = "/stordoc",
                 channel: str = "C0000TEST") -> None:
        self.url = url
        self.secret = secret
        self.command = command
        self.channel = channel
        self._n = itertools.count(1)

    def send(self, body: bytes, ctype: str, headers: Mapping[str, str] | None = None,
             ts: int | None = None, secret: str | None = None) -> Response:
        h = {"Content-Type": ctype, **sign(secret or self.secret, body, ts), **(headers or {})}
        req = urllib.request.Request(self.url, data=body, headers=h, method="POST")
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return Response(resp.status, resp.read().decode(), time.monotonic() - t0)
        except urllib.error.HTTPError as e:
            return Response(e.code, e.read().decode(), time.monotonic() - t0)

    def command_body(self, text: str, user: str, trigger_id: str | None = None) -> bytes:
        n = next(self._n)
        return urllib.parse.urlencode({
            "token": "deprecated", "team_id": "T0000001", "team_domain": "fake",
            "channel_id": self.channel, "channel_name": "oncall", "user_id": user,
            "user_name": "someone", "command": self.command, "text": text,
            "api_app_id": "A0000001", "is_enterprise_install": "false",
            "response_url": "http://127.0.0.1:9/response", "trigger_id":
                trigger_id or f"{n}.{time.time_ns()}.trigger"}).encode()

    def slash(self, text: str, user: str, **kw: Any) -> Response:
        headers = kw.pop("headers", None)
        return self.send(self.command_body(text, user, **kw),
                         "application/x-www-form-urlencoded", headers)

    def mention_body(self, text: str, user: str, thread_ts: str | None = None,
                     event_id: str | None = None) -> bytes:
        n = next(self._n)
        ev: dict[str, Any] = {"type": "app_mention", "user": user, "channel": self.channel,
                              "text": f"<@{BOT_USER}> {text}", "ts": f"1690000000.{n:06d}",
                              "event_ts": f"1690000000.{n:06d}"}
        if thread_ts:
            ev["thread_ts"] = thread_ts
        return json.dumps({"token": "x", "team_id": "T0000001", "api_app_id": "A0000001",
                           "type": "event_callback", "event_id": event_id or f"Ev{n:08d}",
                           "event_time": int(time.time()), "event": ev,
                           "authorizations": [{"user_id": BOT_USER, "is_bot": True}]}).encode()

    def mention(self, text: str, user: str, **kw: Any) -> Response:
        headers = kw.pop("headers", None)
        return self.send(self.mention_body(text, user, **kw), "application/json", headers)

    def action_body(self, action_id: str, value: str, user: str, message_ts: str,
                    thread_ts: str | None = None, trigger_id: str | None = None) -> bytes:
        n = next(self._n)
        msg: dict[str, Any] = {"type": "message", "ts": message_ts, "text": "x"}
        if thread_ts:
            msg["thread_ts"] = thread_ts
        payload = {
            "type": "block_actions", "team": {"id": "T0000001", "domain": "fake"},
            "user": {"id": user, "username": "someone", "team_id": "T0000001"},
            "api_app_id": "A0000001", "token": "x",
            "container": {"type": "message", "message_ts": message_ts,
                          "channel_id": self.channel, "is_ephemeral": False},
            "trigger_id": trigger_id or f"{n}.{time.time_ns()}.trigger",
            "channel": {"id": self.channel, "name": "oncall"}, "message": msg,
            "response_url": "http://127.0.0.1:9/response",
            "actions": [{"action_id": action_id, "block_id": "b1", "value": value,
                         "type": "button", "action_ts": f"{time.time():.6f}",
                         "text": {"type": "plain_text", "text": action_id}}]}
        return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()

    def press(self, action_id: str, value: str, user: str, message_ts: str,
              **kw: Any) -> Response:
        headers = kw.pop("headers", None)
        return self.send(self.action_body(action_id, value, user, message_ts, **kw),
                         "application/x-www-form-urlencoded", headers)


# --------------------------------------------------------------------------- helpers


def buttons(call: Call, action_id: str | None = None) -> list[dict[str, Any]]:
    """Every button in a recorded message's blocks (optionally of one action_id)."""
    out = []
    for b in call.params.get("blocks") or []:
        els = ([b["accessory"]] if "accessory" in b else []) + list(b.get("elements") or [])
        out.extend(e for e in els if e.get("type") == "button"
                   and (action_id is None or e.get("action_id") == action_id))
    return out


def all_text(call: Call) -> str:
    """The fallback text plus every text in the blocks, for assertions."""
    parts = [str(call.params.get("text", ""))]

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "text" and isinstance(v, str):
                    parts.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(call.params.get("blocks") or [])
    return "\n".join(parts)


class FakeSocketMode:
    """Slack's Socket Mode endpoint on a local websocket: says hello, sends envelopes,
    records the acks the app sends back (``{"envelope_id": ...}``)."""

    def __init__(self) -> None:
        from websockets.sync.server import serve

        self.acks: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self._conns: list[Any] = []
        self._n = itertools.count(1)
        self.server = serve(self._handler, "127.0.0.1", 0)
        self.port = self.server.socket.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}/link"
        self._t = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> FakeSocketMode:
        self._t.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()

    def _handler(self, ws: Any) -> None:
        with self.cond:
            self._conns.append(ws)
            self.cond.notify_all()
        ws.send(json.dumps({"type": "hello", "num_connections": 1,
                            "connection_info": {"app_id": "A0000001"}}))
        for msg in ws:
            data = json.loads(msg)
            with self.cond:
                self.acks.append(data)
                self.cond.notify_all()

    def wait_connected(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self._conns:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the app never connected over Socket Mode")
                self.cond.wait(left)

    def send(self, kind: str, payload: Mapping[str, Any], retry: int = 0) -> str:
        """Deliver one envelope (``slash_commands``, ``events_api``, ``interactive``)."""
        eid = f"env-{next(self._n)}"
        env = {"envelope_id": eid, "type": kind, "payload": payload,
               "accepts_response_payload": kind != "events_api", "retry_attempt": retry,
               "retry_reason": "timeout" if retry else ""}
        with self.cond:
            ws = self._conns[-1]
        ws.send(json.dumps(env))
        return eid

    def wait_ack(self, envelope_id: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for a in self.acks:
                    if a.get("envelope_id") == envelope_id:
                        return a
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no ack for {envelope_id}")
                self.cond.wait(left)


# --------------------------------------------------------------------------- the real bot


class BotHarness:
    """The real bot (bolt App over real HTTP on loopback) wired to a FakeSlack.

    ``settings`` is any stordoc Settings; its ``slack`` section is replaced by one that
    points at the fake API with test secrets and the given roles.
    """

    def __init__(self, settings: Any, roles: Mapping[str, Mapping[str, Any]],
                 journal: str, button_ttl_s: int = 900, admins: tuple[str, ...] = (),
                 groups: Mapping[str, list[str]] | None = None, port: int = 0,
                 channels: Mapping[str, str] | None = None, alerts: Any = None,
                 snapshots_dir: str | None = None, **bot_kw: Any) -> None:
        from bot.server import HttpServer, alert_gate, build_bot
        from core.env import Env
        from core.settings import Role, Secret, SlackSettings

        self.fake = FakeSlack(groups=groups).start()
        slack = SlackSettings(
            bot_token=Secret(value=TOKEN), signing_secret=Secret(value=SIGNING_SECRET),
            app_token=Secret(value=APP_TOKEN), api_base_url=self.fake.base_url,
            button_ttl_s=button_ttl_s, admins=list(admins),
            roles={k: Role(**v) for k, v in roles.items()}, channels=dict(channels or {}),
            snapshots_dir=snapshots_dir)
        upd: dict[str, Any] = {"slack": slack, "journal": journal}
        if alerts is not None:
            upd["alerts"] = alerts
        self.settings = settings.model_copy(update=upd)
        self.env = Env(self.settings)
        self.bot = build_bot(self.env, **bot_kw)
        self.server = HttpServer(self.bot, "127.0.0.1", port,
                                 alerts=alert_gate(self.env, self.bot)).start()
        self.base_url = f"http://127.0.0.1:{self.server.port}"
        self.slack = SlackSender(self.server.url, command=slack.command)

    def close(self) -> None:
        self.server.stop()
        self.bot.close()
        self.fake.stop()
        self.env.close()

    def posts(self) -> list[Call]:
        return self.fake.of("chat.postMessage")

    def ephemerals(self) -> list[Call]:
        return self.fake.of("chat.postEphemeral")

    def wait_post(self, needle: str, methods: tuple[str, ...] = ("chat.postMessage",),
                  timeout: float = 60.0) -> Call:
        """The first call of ``methods`` whose text contains ``needle``."""
        def find(f: FakeSlack) -> Call | None:
            for c in f.of(*methods):
                if needle in all_text(c):
                    return c
            return None
        return self.fake.wait_for(find, timeout)  # type: ignore[no-any-return]
