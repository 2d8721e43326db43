"""The incident threads the bot posted, kept in the journal (``alert_threads``).

One row per posted incident, keyed ``CLUSTER|INCIDENT`` (``CLUSTER|alert|GROUP`` when an
alert came with no incident): its Slack channel and thread, the Alertmanager groups linked
to it, and when it closed. In the journal so that a restart never posts an open incident
twice; the TUI reads the same table. Reads see open threads only.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.slack.store import BotStore


@dataclass(frozen=True)
class AlertThread:
    key: str
    cluster: str
    incident: str
    channel: str
    ts: str
    opened_at: float
    title: str


class AlertThreads:
    """The ``alert_threads`` table, through the bot store's own connection and lock."""

    def __init__(self, store: BotStore) -> None:
        self.store = store
        with store.journal.lock:
            store.journal.db.table("alert_threads").create(
                {"key": str, "cluster": str, "incident": str, "channel": str, "ts": str,
                 "opened_at": float, "closed_at": float, "title": str, "groups": str},
                pk="key", if_not_exists=True)

    def add(self, key: str, cluster: str, incident: str, channel: str, ts: str, title: str,
            group: str) -> None:
        """Record a message just posted (reopens a closed thread of the same key)."""
        self.store._write(
            "insert or replace into alert_threads (key, cluster, incident, channel, ts, "
            "opened_at, closed_at, title, groups) values (?, ?, ?, ?, ?, ?, null, ?, ?)",
            (key, cluster, incident, channel, ts, time.time(), title,
             json.dumps([group] if group else [])))

    def link_group(self, key: str, group: str) -> bool:
        """Link a group to the thread; False when it was linked already (a repeat)."""
        groups = self.groups(key)
        if group in groups:
            return False
        self.store._write("update alert_threads set groups = ? where key = ?",
                          (json.dumps([*groups, group]), key))
        return True

    def close(self, key: str) -> None:
        self.store._write("update alert_threads set closed_at = ? where key = ?",
                          (time.time(), key))

    def _rows(self, where: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self.store._lock:
            return list(self.store._conn.execute(
                "select key, cluster, incident, channel, ts, opened_at, title, groups "
                f"from alert_threads where closed_at is null and {where}", args).fetchall())

    def get(self, key: str) -> AlertThread | None:
        rows = self._rows("key = ?", (key,))
        return AlertThread(*rows[0][:7]) if rows else None

    def groups(self, key: str) -> list[str]:
        rows = self._rows("key = ?", (key,))
        return list(json.loads(rows[0][7] or "[]")) if rows else []

    def open_of(self, cluster: str) -> list[AlertThread]:
        return [AlertThread(*row[:7]) for row in self._rows("cluster = ?", (cluster,))]

    def of_group(self, cluster: str, group: str) -> list[AlertThread]:
        return [AlertThread(*row[:7]) for row in self._rows("cluster = ?", (cluster,))
                if group in json.loads(row[7] or "[]")]
