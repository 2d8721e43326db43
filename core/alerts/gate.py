"""The HTTP receiver of Alertmanager's webhook (``POST /alertmanager``), cheap checks first.

Bounded body, bearer token compared in constant time, a payload that validates; anything
else is a 4xx with a one-line reason and nothing queued. The work (check, post) is done
by the ``accept`` callable it is given (``AlertDesk.accept``), in the bot's pool.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

from core.alerts.payload import AmPayload, Refused, parse_payload
from core.slack.wsgi import drain

log = logging.getLogger("stordoc.bot.alerts")  # the name it had in bot/alerts/__init__.py
PATH = "/alertmanager"
MAX_BODY = 1024 * 1024  # Alertmanager sends every alert of a group: 200 alerts fit well
_BEARER_RE = re.compile(r"Bearer ([\x21-\x7e]{8,512})")
_LEN_RE = re.compile(r"[0-9]{1,12}")


class AlertGate:
    """WSGI app for ``POST /alertmanager``: cheap checks first, the work in the pool."""

    def __init__(self, token: str, accept: Callable[[AmPayload], str],
                 max_alerts: int = 200, max_body: int = MAX_BODY) -> None:
        self._token = token.encode()
        self.accept = accept  # validates cluster/channel (raises Refused), queues the work
        self.max_alerts = max_alerts
        self.max_body = max_body

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        try:
            detail = self._take(environ)
            code, reason = 200, "OK"
        except Refused as e:
            code, reason, detail = e.status, _REASONS.get(e.status, "Refused"), str(e)
            log.warning("alertmanager webhook: refused %d: %s (from %s)", code, detail,
                        str(environ.get("REMOTE_ADDR", "?"))[:64])
        body = (json.dumps({"status": reason, "detail": detail}) + "\n").encode()
        start_response(f"{code} {reason}", [("Content-Type", "application/json"),
                                            ("Content-Length", str(len(body)))])
        return [body]

    def _take(self, environ: dict[str, Any]) -> str:
        if environ.get("REQUEST_METHOD") != "POST":
            raise Refused(405, "not a POST")
        raw_len = str(environ.get("CONTENT_LENGTH") or "0")
        if not _LEN_RE.fullmatch(raw_len):
            raise Refused(400, "bad Content-Length")
        size = int(raw_len)
        if size > self.max_body:
            drain(environ["wsgi.input"], size)
            raise Refused(413, f"body over {self.max_body} bytes")
        body = environ["wsgi.input"].read(size) if size else b""
        m = _BEARER_RE.fullmatch(str(environ.get("HTTP_AUTHORIZATION", "")))
        if not m or not hmac.compare_digest(m.group(1).encode(), self._token):
            raise Refused(401, "missing or wrong bearer token")
        return self.accept(parse_payload(body, self.max_alerts))


_REASONS = {400: "Bad Request", 401: "Unauthorized", 405: "Method Not Allowed",
            413: "Payload Too Large", 422: "Unprocessable Entity"}
