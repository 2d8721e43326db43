"""Temporary changes that expire: one table in the journal for every change stordoc makes
with a deadline (an emergency raise of the full ratios, noout on a host's OSDs during a
maintenance window).

A change is written here BEFORE it is applied (state ``pending``), marked ``held`` once
made (or ``not_made`` when its step failed), and ended at its deadline by whoever runs
next (``runbooks.expiry.sweep``: ``stordoc watch``, the bot's periodic work, the next
command that touches the cluster), even after stordoc was restarted or killed: the row
survives the process. Rows are never deleted: the table is also the record of who set
what, when, until when, and how it ended (``reverted``; ``left`` when someone else changed
the value since; ``ended`` when a person ended it early, e.g. ``maintenance end``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from storage.audit import redact
from storage.journal import Journal
from storage.model import HeldChange

TABLE = "expiring_changes"
OPEN_STATES = ("pending", "held")  # not ended yet: a pending row may have been applied
# when its process died between the command and the mark: the sweep reads the cluster


def _ensure(journal: Journal) -> None:
    def create() -> None:
        journal.db.table(TABLE).create(
            {"id": int, "cluster": str, "kind": str, "key": str, "entities": str,
             "before": float, "after": float, "deadline": float, "by": str,
             "created_at": float, "run_id": int, "state": str, "reason": str,
             "note": str, "ended_at": float, "ended_by": str},
            pk="id", if_not_exists=True)
        journal.db.table(TABLE).create_index(["cluster", "state"], if_not_exists=True)
    journal.ensure_schema(TABLE, create)


def _change(r: dict[str, Any]) -> HeldChange:
    try:
        ents = json.loads(r["entities"] or "[]")
    except ValueError:
        ents = []
    return HeldChange(int(r["id"]), str(r["cluster"]), str(r["kind"]), str(r["key"]),
                      tuple(str(e) for e in ents if isinstance(e, str)),
                      None if r["before"] is None else float(r["before"]),
                      None if r["after"] is None else float(r["after"]),
                      float(r["deadline"]), str(r["by"] or ""), float(r["created_at"]),
                      None if r["run_id"] is None else int(r["run_id"]),
                      str(r["state"]), str(r["reason"] or ""), str(r["note"] or ""))


def record(journal: Journal, cluster: str, kind: str, key: str, deadline: float, by: str,
           entities: Sequence[str] = (), before: float | None = None,
           after: float | None = None, run_id: int | None = None, reason: str = "",
           now: float | None = None) -> HeldChange:
    """Write a change before it is made (``pending``); ``mark`` it once made."""
    now = time.time() if now is None else now
    if deadline <= now:
        raise ValueError("a temporary change must end in the future")
    if kind not in ("ratio", "osd-flag"):
        raise ValueError(f"unknown kind of temporary change: {kind}")
    _ensure(journal)
    row = {"cluster": cluster, "kind": kind, "key": key,
           "entities": json.dumps(list(entities)), "before": before, "after": after,
           "deadline": deadline, "by": by, "created_at": now, "run_id": run_id,
           "state": "pending", "reason": redact(reason), "note": "", "ended_at": None,
           "ended_by": None}
    with journal.lock, journal.db.atomic():
        pk = journal.db.table(TABLE).insert(row).last_pk
    return _change({**row, "id": pk})


def mark(journal: Journal, change_id: int, state: str, note: str = "", by: str = "",
         now: float | None = None) -> None:
    """``held`` (made), ``not_made``, or an end: ``reverted``, ``left``, ``ended``."""
    now = time.time() if now is None else now
    _ensure(journal)
    upd: dict[str, Any] = {"state": state}
    if note:
        upd["note"] = redact(note)
    if state not in OPEN_STATES:
        upd["ended_at"] = now
        upd["ended_by"] = by
    with journal.lock, journal.db.atomic():
        journal.db.table(TABLE).update(change_id, upd)


def open_changes(journal: Journal, cluster: str) -> list[HeldChange]:
    """Changes made (or maybe made) and not ended yet, oldest first."""
    if TABLE not in journal.db.table_names():  # nothing was ever changed: write nothing
        return []
    return [_change(r) for r in journal.db.table(TABLE).rows_where(
        "cluster = ? and state in ('pending', 'held')", [cluster], order_by="id")]


def due(journal: Journal, cluster: str, now: float | None = None) -> list[HeldChange]:
    """Open changes whose deadline has passed, newest first (reverted in the reverse
    order they were made: nearfull before full)."""
    now = time.time() if now is None else now
    return sorted((c for c in open_changes(journal, cluster) if c.deadline <= now),
                  key=lambda c: -c.id)


def history(journal: Journal, cluster: str | None = None, limit: int = 50
            ) -> list[HeldChange]:
    """Every change, newest first (open and ended)."""
    if TABLE not in journal.db.table_names():
        return []
    where, args = ("cluster = ?", [cluster]) if cluster else (None, [])
    return [_change(r) for r in journal.db.table(TABLE).rows_where(
        where, args, order_by="id desc", limit=limit)]


__all__ = ["HeldChange", "due", "history", "mark", "open_changes", "record"]
