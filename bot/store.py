"""Bot state that must survive a restart, kept in the shared journal (SQLite).

* ``bot_requests``: ids of requests already handled, so a delivery that Slack retries
  (``X-Slack-Retry-Num``) or sends twice is done at most once, even across restarts.
* ``bot_buttons``: the server-side side of every button. A button's value is only a
  random token; what it does (cluster, runbook, target, who asked, until when) lives
  here, so nothing a client sends back is ever trusted as a command. A token is spent
  atomically, so a confirmation runs once even if two presses race.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from storage.journal import Journal


@dataclass(frozen=True)
class Button:
    token: str
    kind: str  # "fix" | "confirm" | "cancel"
    cluster: str
    runbook: str
    target: str
    requested_by: str
    created_at: float
    expires_at: float
    used_at: float | None
    used_by: str | None
    data: Mapping[str, Any]

    def expired(self, now: float | None = None) -> bool:
        return (now or time.time()) > self.expires_at


class BotStore:
    """Own connection to the journal file, ``synchronous=NORMAL`` (WAL: no fsync per
    commit; a power cut may forget the last few request ids, a crash does not), and its
    own lock, so the ack path never queues behind check or audit writes."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        db = journal.db
        self._lock = threading.Lock()
        if journal.path == ":memory:":
            self._conn = journal.db.conn
        else:
            self._conn = sqlite3.connect(journal.path, check_same_thread=False, timeout=30,
                                         isolation_level=None)
            self._conn.execute("pragma synchronous=NORMAL")
        with journal.lock:
            db.table("bot_requests").create({"key": str, "received_at": float, "kind": str},
                                      pk="key", if_not_exists=True)
            db.table("bot_buttons").create(
                {"token": str, "kind": str, "cluster": str, "runbook": str, "target": str,
                 "requested_by": str, "created_at": float, "expires_at": float,
                 "used_at": float, "used_by": str, "data": str},
                pk="token", if_not_exists=True)
            db.table("bot_audit").create(
                {"at": float, "user": str, "cluster": str, "action": str, "outcome": str,
                 "detail": str}, if_not_exists=True)

    def close(self) -> None:
        if self._conn is not self.journal.db.conn:
            self._conn.close()

    def first_time(self, key: str, kind: str) -> bool:
        """True the first time ``key`` is seen; False for a retry or duplicate."""
        with self._lock:
            try:
                self._conn.execute(
                    "insert into bot_requests (key, received_at, kind) values (?, ?, ?)",
                    (key, time.time(), kind))
                return True
            except sqlite3.IntegrityError:
                return False

    def new_button(self, kind: str, cluster: str, runbook: str, target: str,
                   requested_by: str, ttl_s: float, data: Mapping[str, Any] | None = None,
                   token: str | None = None) -> str:
        tok = token or secrets.token_urlsafe(18)
        now = time.time()
        with self.journal.lock:
            self.journal.db.table("bot_buttons").insert(
                {"token": tok, "kind": kind, "cluster": cluster, "runbook": runbook,
                 "target": target, "requested_by": requested_by, "created_at": now,
                 "expires_at": now + ttl_s, "used_at": None, "used_by": None,
                 "data": json.dumps(dict(data or {}), default=str)})
        return tok

    def button(self, token: str) -> Button | None:
        if not token or len(token) > 64:
            return None
        with self.journal.lock:
            rows = list(self.journal.db["bot_buttons"].rows_where("token = ?", [token]))
        if not rows:
            return None
        r = rows[0]
        return Button(r["token"], r["kind"], r["cluster"], r["runbook"], r["target"],
                      r["requested_by"], r["created_at"], r["expires_at"], r["used_at"],
                      r["used_by"], json.loads(r["data"] or "{}"))

    def spend(self, tokens: list[str], user: str) -> bool:
        """Mark tokens used (all of one plan's buttons together); False if already spent."""
        now = time.time()
        with self.journal.lock, self.journal.db.conn:
            cur = self.journal.db.conn.execute(
                f"update bot_buttons set used_at = ?, used_by = ? where used_at is null and "
                f"token in ({','.join('?' * len(tokens))})", (now, user, *tokens))
            return bool(cur.rowcount)

    def audit(self, user: str, cluster: str | None, action: str, outcome: str,
              detail: str = "") -> None:
        """Every bot action with the Slack user ID (runbook runs also go to runbook_runs)."""
        with self._lock:
            self._conn.execute(
                "insert into bot_audit (at, user, cluster, action, outcome, detail) values "
                "(?, ?, ?, ?, ?, ?)", (time.time(), user, cluster, action, outcome,
                                       detail[:500]))

    def audit_rows(self, limit: int = 50) -> list[dict[str, Any]]:
        cur = self._conn.execute("select at, user, cluster, action, outcome, detail from "
                                 "bot_audit order by rowid desc limit ?", (limit,))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]
