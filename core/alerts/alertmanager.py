"""Alertmanager's API v2, the two calls stordoc makes: create a silence, list them.

Used by ``silence`` (a command and a button) and ``silences``; any failure is one
``AlertmanagerError`` line for the chat, never a traceback.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any


class AlertmanagerError(Exception):
    """Alertmanager's API did not do what was asked; one line."""


class AlertmanagerApi:
    """The two calls stordoc makes to Alertmanager's API v2: create a silence, list them."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            detail = e.read()[:200].decode("utf-8", "replace").strip()
            raise AlertmanagerError(f"Alertmanager answered {e.code}: {detail}") from None
        except (OSError, ValueError) as e:
            raise AlertmanagerError(f"Alertmanager at {self.url} unreachable: {e}") from None

    def create_silence(self, matchers: Mapping[str, str], ends_at: float, created_by: str,
                       comment: str) -> str:
        body = {"matchers": [{"name": k, "value": v, "isRegex": False, "isEqual": True}
                             for k, v in matchers.items()],
                "startsAt": rfc3339(time.time()), "endsAt": rfc3339(ends_at),
                "createdBy": created_by, "comment": comment or "silenced from Slack"}
        out = self._call("POST", "/api/v2/silences", body)
        sid = out.get("silenceID") if isinstance(out, dict) else None
        if not sid:
            raise AlertmanagerError("Alertmanager returned no silence ID")
        return str(sid)

    def silences(self, label: str, value: str) -> list[dict[str, Any]]:
        """Active silences whose matchers include ``label="value"``."""
        out = self._call("GET", "/api/v2/silences")
        res = []
        for sil in out if isinstance(out, list) else []:
            if (sil.get("status") or {}).get("state") != "active":
                continue
            ms = {m.get("name"): m.get("value") for m in sil.get("matchers") or []}
            if ms.get(label) == value:
                res.append(sil)
        return res


def rfc3339(epoch: float) -> str:
    """Epoch seconds as the UTC timestamp Alertmanager's API takes."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
