"""Mutes with expiry, like ``ceph health mute CODE TTL``: one table in the journal, so the
CLI, the bot and the TUI (and the lead's Alertmanager silences) share them.

A mute hides one finding code, on one entity or on all, for one cluster, until a time.
Rows are never deleted: an unmute stamps ``removed_at``/``removed_by``, an expired mute
simply stops matching. So the table is also the audit of who muted what, why and until
when. The config's static ``muted = [...]`` list is separate and stays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from storage.audit import redact
from storage.journal import Journal

TABLE = "mutes"


@dataclass(frozen=True)
class Mute:
    id: int
    cluster: str
    code: str
    entity: str | None  # None: every entity of this code
    until: float
    by: str
    reason: str
    created_at: float
    removed_at: float | None = None
    removed_by: str | None = None

    def matches(self, code: str, entity: str) -> bool:
        return code == self.code and (self.entity is None or self.entity == entity)

    def active(self, now: float) -> bool:
        return self.removed_at is None and self.until > now

    @property
    def what(self) -> str:
        return f"{self.code} {self.entity}" if self.entity else f"{self.code} (all)"


def _ensure(journal: Journal) -> None:
    def create() -> None:
        journal.db.table(TABLE).create(
            {"id": int, "cluster": str, "code": str, "entity": str, "until": float,
             "by": str, "reason": str, "created_at": float, "removed_at": float,
             "removed_by": str},
            pk="id", if_not_exists=True)
        journal.db.table(TABLE).create_index(["cluster", "code"], if_not_exists=True)
    journal.ensure_schema("mutes", create)


def _mute(row: dict[str, Any]) -> Mute:
    return Mute(int(row["id"]), str(row["cluster"]), str(row["code"]),
                row["entity"] or None, float(row["until"]), str(row["by"]),
                redact(str(row["reason"])),  # a row of an older version may hold one raw
                float(row["created_at"]), row["removed_at"],
                row["removed_by"])


def add_mute(journal: Journal, cluster: str, code: str, entity: str | None, until: float,
             by: str, reason: str, now: float | None = None,
             secrets: tuple[str, ...] = ()) -> Mute:
    """Mute ``code`` (on ``entity``, or all) on ``cluster`` until ``until`` (epoch s).
    The reason is stored redacted (``secrets`` and secret-shaped text)."""
    now = time.time() if now is None else now
    if until <= now:
        raise ValueError("a mute must end in the future")
    if not reason.strip():
        raise ValueError("a mute needs a reason")
    _ensure(journal)
    row = {"cluster": cluster, "code": code.upper(), "entity": entity or None,
           "until": until, "by": by, "reason": redact(reason.strip(), secrets),
           "created_at": now,
           "removed_at": None, "removed_by": None}
    with journal.lock, journal.db.atomic():
        pk = journal.db.table(TABLE).insert(row).last_pk
    return _mute({**row, "id": pk})


def remove_mutes(journal: Journal, cluster: str, code: str, entity: str | None, by: str,
                 now: float | None = None) -> list[Mute]:
    """Unmute: the active mutes of ``code`` (on ``entity``, or the all-entities one)."""
    now = time.time() if now is None else now
    gone = [m for m in active_mutes(journal, cluster, now)
            if m.code == code.upper() and m.entity == (entity or None)]
    if gone:
        with journal.lock, journal.db.atomic():
            for m in gone:
                journal.db.table(TABLE).update(m.id, {"removed_at": now, "removed_by": by})
    return gone


def list_mutes(journal: Journal, cluster: str | None = None,
               limit: int = 100) -> list[Mute]:
    """Every mute, newest first (active, expired and removed: the audit)."""
    _ensure(journal)
    where, args = ("cluster = ?", [cluster]) if cluster else (None, [])
    return [_mute(r) for r in journal.db.table(TABLE).rows_where(
        where, args, order_by="id desc", limit=limit)]


def active_mutes(journal: Journal, cluster: str, now: float | None = None) -> list[Mute]:
    """Mutes in force now; an expired one stops matching by itself."""
    now = time.time() if now is None else now
    if TABLE not in journal.db.table_names():  # nobody muted anything yet: write nothing
        return []
    return [_mute(r) for r in journal.db.table(TABLE).rows_where(
        "cluster = ? and removed_at is null and until > ?", [cluster, now],
        order_by="id")]
