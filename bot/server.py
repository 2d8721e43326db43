"""Run the bot: build it from the settings, serve HTTP (signed requests) or Socket Mode.

HTTP mode is bolt's WSGI adapter on a threading WSGI server from the standard library,
bound to loopback (put a TLS reverse proxy in front of it for Slack). Every request is
verified by bolt against the signing secret (HMAC of ``v0:timestamp:body``, at most five
minutes old) before any listener sees it. Socket Mode uses bolt's built-in client with
the app-level token; no port is opened.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.error import BoltError
from slack_sdk.errors import SlackApiError

from bot.app import StordocBot
from bot.auth import RoleSpec
from bot.backend import Backend
from bot.redact import Redactor, install
from stordoc.env import Env
from stordoc.errors import UserError

log = logging.getLogger("stordoc.bot")
PATH = "/slack/events"


def build_bot(env: Env, *, socket_mode: bool = False, **overrides: Any) -> StordocBot:
    """A bot from ``settings.slack``; missing secrets are a one-line user error."""
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
    roles = {k: RoleSpec(tuple(v.viewers), tuple(v.operators), v.two_person)
             for k, v in s.roles.items()}
    swift_keys = [c.swift.key.resolve() for c in env.settings.clusters.values()
                  if c.swift and c.swift.key]
    kw: dict[str, Any] = {"command": s.command, "api_base_url": s.api_base_url,
                          "button_ttl_s": s.button_ttl_s, "roles": roles, "admins": s.admins,
                          "secrets": [x for x in [app_token, *swift_keys] if x]}
    kw.update(overrides)
    red = Redactor([token, secret, *kw["secrets"]])
    install(red)
    try:
        return StordocBot(Backend(env), bot_token=token,
                          signing_secret=secret or "socket-mode-unused", **kw)
    except (OSError, SlackApiError, BoltError) as e:  # auth.test at start-up failed
        raise UserError(f"cannot start the bot: Slack API auth.test failed: "
                        f"{red.text(str(e)).splitlines()[0][:300]}") from None


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default 5 drops SYNs under bursts: 1 s retransmits


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)


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

    def __init__(self, bot: StordocBot, host: str = "127.0.0.1", port: int = 3000) -> None:
        check_loopback(host)
        self.bot = bot
        self.httpd = make_server(host, port, SlackRequestHandler(bot.app, PATH),
                                 server_class=_Server, handler_class=_Quiet)
        self.port = self.httpd.server_address[1]
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
