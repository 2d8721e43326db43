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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from storage.audit import redact
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
        # what text is scrubbed with before it is stored (the bot sets its Redactor's,
        # which knows the configured secrets): a secret typed anywhere is never at rest
        self.scrub: Callable[[str], str] = redact
        db = journal.db
        self._lock: threading.Lock | threading.RLock = threading.Lock()
        if journal.path == ":memory:":  # one connection only: share it and its lock
            self._conn = journal.db.conn
            self._lock = journal.lock
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
        try:
            self._write("insert into bot_requests (key, received_at, kind) values (?, ?, ?)",
                        (key, time.time(), kind))
            return True
        except sqlite3.IntegrityError:
            return False

    def _write(self, sql: str, args: tuple[Any, ...]) -> int:
        """One write in its own IMMEDIATE transaction: waits for other writers (busy
        timeout) instead of failing on a stale read snapshot; returns the row count."""
        with self._lock:
            self._conn.execute("begin immediate")
            try:
                n = self._conn.execute(sql, args).rowcount
            except BaseException:
                self._conn.execute("rollback")
                raise
            self._conn.execute("commit")
            return int(n)

    def new_button(self, kind: str, cluster: str, runbook: str, target: str,
                   requested_by: str, ttl_s: float, data: Mapping[str, Any] | None = None,
                   token: str | None = None) -> str:
        tok = token or secrets.token_urlsafe(18)
        now = time.time()
        self._write(
            "insert into bot_buttons (token, kind, cluster, runbook, target, requested_by, "
            "created_at, expires_at, used_at, used_by, data) values "
            "(?, ?, ?, ?, ?, ?, ?, ?, null, null, ?)",
            (tok, kind, cluster, runbook, target, requested_by, now, now + ttl_s,
             json.dumps(_scrubbed(dict(data or {}), self.scrub), default=str)))
        return tok

    def button(self, token: str) -> Button | None:
        if not token or len(token) > 64:
            return None
        with self._lock:
            rows = self._conn.execute(
                "select token, kind, cluster, runbook, target, requested_by, created_at, "
                "expires_at, used_at, used_by, data from bot_buttons where token = ?",
                (token,)).fetchall()
        if not rows:
            return None
        r = rows[0]
        return Button(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
                      json.loads(r[10] or "{}"))

    def spend(self, tokens: list[str], user: str) -> bool:
        """Mark tokens used (all of one plan's buttons together); False if already spent."""
        return bool(self._write(
            f"update bot_buttons set used_at = ?, used_by = ? where used_at is null and "
            f"token in ({','.join('?' * len(tokens))})", (time.time(), user, *tokens)))

    def audit(self, user: str, cluster: str | None, action: str, outcome: str,
              detail: str = "") -> None:
        """Every bot action with the Slack user ID (runbook runs also go to runbook_runs)."""
        self._write("insert into bot_audit (at, user, cluster, action, outcome, detail) "
                    "values (?, ?, ?, ?, ?, ?)",
                    (time.time(), user, cluster, action, outcome,
                     self.scrub(detail)[:500]))

    def audit_rows(self, limit: int = 50) -> list[dict[str, Any]]:
        with self._lock:
            cur = self._conn.execute("select at, user, cluster, action, outcome, detail "
                                     "from bot_audit order by rowid desc limit ?", (limit,))
            cols = [d[0] for d in cur.description]
            rows = cur.fetchall()
        return [dict(zip(cols, row)) for row in rows]


def _scrubbed(obj: Any, scrub: Callable[[str], str]) -> Any:
    """``obj`` with every string scrubbed (a button's data: shallow, a few fields)."""
    if isinstance(obj, Mapping):
        return {str(k): _scrubbed(v, scrub) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_scrubbed(v, scrub) for v in obj]
    return scrub(obj) if isinstance(obj, str) else obj
