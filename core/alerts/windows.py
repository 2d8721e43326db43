"""Alert windows: the alert groups of one cluster within ``alerts.thread_window_s`` as one
thread, and the sender that keeps that thread within Slack's limits.

The first alert group of a cluster in a window is posted at the channel's top level (the
message ``AlertDesk`` has always posted); every later group of that cluster until the
window ends goes into that message's thread, and the top-level message gets a running
summary of the window's groups and their states (``messages.window_summary_blocks``).
A group that repeats one already in the window (the same group key, or only alerts whose
fingerprints the window has seen) is counted in the summary, not posted again.

Windows live in the journal (``alert_windows``, one row per top-level post, and
``alert_window_groups``, one row per group in it), so after a restart the window's thread
is found again and its summary keeps its count.

``Outbox`` sends what goes into a window's thread: one sender thread per window, at most
one message per channel slot of the bot's throttle (Slack: about one per second per
channel), packing what is queued meanwhile into one reply of at most ``PACK_BLOCKS``
blocks; the summary's ``chat.update`` at most every ``summary_every_s``. A flood of 500
groups is then one top-level post, a few dozen replies and a few updates.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.slack.blocks import Block, LimitError, clip
from core.slack.retry import is_slack_failure

if TYPE_CHECKING:
    from core.alerts.payload import AmPayload
    from core.slack.store import BotStore

log = logging.getLogger("stordoc.bot.alerts")

PACK_BLOCKS = 48  # blocks of one packed reply (Slack: 50 per message)
PACK_ITEMS = 40  # thread items in one reply


@dataclass
class GroupState:
    """One alert group in a window: its last status, alerts, repeats, fingerprints."""

    group: str
    name: str
    status: str
    alerts: int
    repeats: int
    fingerprints: list[str]
    first_at: float


@dataclass(frozen=True)
class AlertWindow:
    """A window's top-level post: where it is, when it opened, what it said."""

    key: str
    cluster: str
    channel: str
    ts: str
    opened_at: float
    title: str
    root: list[Block] = field(default_factory=list)


def fingerprints_of(p: AmPayload) -> list[str]:
    return sorted({a.fingerprint for a in p.alerts if a.fingerprint})


class AlertWindows:
    """The ``alert_windows`` and ``alert_window_groups`` tables (the bot store's connection)."""

    def __init__(self, store: BotStore, window_s: float) -> None:
        self.store = store
        self.window_s = window_s
        with store.journal.lock:
            db = store.journal.db
            db.table("alert_windows").create(
                {"key": str, "cluster": str, "channel": str, "ts": str, "opened_at": float,
                 "title": str, "root": str}, pk="key", if_not_exists=True)
            db.table("alert_window_groups").create(
                {"window": str, "grp": str, "name": str, "status": str, "alerts": int,
                 "repeats": int, "fps": str, "first_at": float}, pk=("window", "grp"),
                if_not_exists=True)
            db.execute("create index if not exists alert_window_groups_grp "
                       "on alert_window_groups (grp)")
            db.execute("create index if not exists alert_windows_cluster "
                       "on alert_windows (cluster, opened_at)")

    # -------------------------------------------------------------- reads
    def _q(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self.store._lock:
            return list(self.store._conn.execute(sql, args).fetchall())

    _COLS = "key, cluster, channel, ts, opened_at, title, root"

    @staticmethod
    def _win(row: tuple[Any, ...]) -> AlertWindow:
        return AlertWindow(str(row[0]), str(row[1]), str(row[2]), str(row[3]), float(row[4]),
                           str(row[5] or ""), list(json.loads(row[6] or "[]")))

    def current(self, cluster: str, now: float | None = None) -> AlertWindow | None:
        """The cluster's window still open at ``now`` (None when windows are off)."""
        if self.window_s <= 0:
            return None
        at = time.time() if now is None else now
        rows = self._q(f"select {self._COLS} from alert_windows where cluster = ? and "
                       "opened_at > ? order by opened_at desc limit 1",
                       (cluster, at - self.window_s))
        return self._win(rows[0]) if rows else None

    def listing(self, cluster: str, group: str) -> AlertWindow | None:
        """The newest window of ``cluster`` that lists ``group``."""
        rows = self._q(f"select {', '.join('w.' + c for c in self._COLS.split(', '))} "
                       "from alert_windows w join alert_window_groups g on g.window = w.key "
                       "where g.grp = ? and w.cluster = ? order by w.opened_at desc limit 1",
                       (group, cluster))
        return self._win(rows[0]) if rows else None

    def by_ts(self, channel: str, ts: str) -> AlertWindow | None:
        rows = self._q(f"select {self._COLS} from alert_windows where channel = ? and ts = ?",
                       (channel, ts))
        return self._win(rows[0]) if rows else None

    def get(self, key: str) -> AlertWindow | None:
        rows = self._q(f"select {self._COLS} from alert_windows where key = ?", (key,))
        return self._win(rows[0]) if rows else None

    def groups(self, key: str) -> list[GroupState]:
        """The window's groups, in the order they came."""
        return [GroupState(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]),
                           list(json.loads(r[5] or "[]")), float(r[6]))
                for r in self._q("select grp, name, status, alerts, repeats, fps, first_at "
                                 "from alert_window_groups where window = ? "
                                 "order by first_at, rowid", (key,))]

    def repeats(self, win: AlertWindow, p: AmPayload) -> bool:
        """``p`` repeats what the window has: the same group, or only alerts (by
        fingerprint) of the window's groups."""
        if self._q("select 1 from alert_window_groups where window = ? and grp = ?",
                   (win.key, p.groupKey)):
            return True
        fps = set(fingerprints_of(p))
        if not fps or len(fps) < len(p.alerts):  # an alert without a fingerprint: news
            return False
        seen: set[str] = set()
        for (raw,) in self._q("select fps from alert_window_groups where window = ?",
                              (win.key,)):
            seen.update(json.loads(raw or "[]"))
        return fps <= seen

    def lists(self, win: AlertWindow, group: str) -> bool:
        return bool(self._q("select 1 from alert_window_groups where window = ? and grp = ?",
                            (win.key, group)))

    # -------------------------------------------------------------- writes
    def open(self, cluster: str, channel: str, ts: str, title: str, root: list[Block],
             p: AmPayload) -> AlertWindow:
        """Record a top-level post as the cluster's window, with ``p`` its first group."""
        win = AlertWindow(f"{cluster}|{channel}|{ts}", cluster, channel, ts, time.time(),
                          title, root)
        self.store._write("insert or replace into alert_windows (key, cluster, channel, ts, "
                          "opened_at, title, root) values (?, ?, ?, ?, ?, ?, ?)",
                          (win.key, cluster, channel, ts, win.opened_at, title,
                           json.dumps(root)))
        self.note(win, p)
        return win

    def note(self, win: AlertWindow, p: AmPayload) -> None:
        """The group's state in the window: new, or its status and alerts now (a firing
        delivery of a group listed already counts as a repeat)."""
        fps = fingerprints_of(p)
        self.store._write(
            "insert into alert_window_groups (window, grp, name, status, alerts, repeats, "
            "fps, first_at) values (?, ?, ?, ?, ?, 0, ?, ?) on conflict (window, grp) do "
            "update set status = excluded.status, alerts = excluded.alerts, "
            "repeats = repeats + (excluded.status = 'firing'), fps = excluded.fps",
            (win.key, p.groupKey, p.name, p.status, len(p.alerts), json.dumps(fps),
             time.time()))


# --------------------------------------------------------------------------- sending

@dataclass(frozen=True)
class Item:
    """One thing for a window's thread: its notification text and its blocks."""

    text: str
    blocks: list[Block]


class Outbox:
    """What goes into windows' threads, and their summaries, sent at Slack's pace."""

    def __init__(self, post: Callable[[AlertWindow, str, list[Block]], None],
                 update: Callable[[AlertWindow], None], pace: Callable[[str], None],
                 failed: Callable[[Exception], None], stop: threading.Event) -> None:
        self._post = post  # (window, text, blocks): one reply in the window's thread
        self._update = update  # the window's top-level post with its summary now
        self._pace = pace  # waits for the channel's next slot (the bot's throttle)
        self._failed = failed
        self.stop = stop
        self.summary_every_s = 3.0  # chat.update is Slack's tier 3 (~50 a minute)
        self._lock = threading.Lock()
        self._items: dict[str, list[Item]] = {}
        self._dirty: set[str] = set()
        self._wins: dict[str, AlertWindow] = {}
        self._running: set[str] = set()
        self._idle = threading.Condition(self._lock)

    def put(self, win: AlertWindow, item: Item) -> None:
        with self._lock:
            self._items.setdefault(win.key, []).append(item)
            self._kick(win)

    def touch(self, win: AlertWindow) -> None:
        """The window's summary changed: update its top-level post (paced)."""
        with self._lock:
            self._dirty.add(win.key)
            self._kick(win)

    def wait_idle(self, timeout: float) -> bool:
        """Until nothing is queued (tests, benchmarks, shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._running, timeout)

    def _kick(self, win: AlertWindow) -> None:  # with self._lock
        self._wins[win.key] = win
        if win.key not in self._running:
            self._running.add(win.key)
            threading.Thread(target=self._run, args=(win.key,), daemon=True,
                             name="stordoc-alert-thread").start()

    def _take(self, key: str) -> list[Item]:  # with self._lock
        q = self._items.get(key, [])
        batch: list[Item] = []
        blocks = 0
        while q and len(batch) < PACK_ITEMS and (
                not batch or blocks + len(q[0].blocks) <= PACK_BLOCKS):
            it = q.pop(0)
            batch.append(it)
            blocks += len(it.blocks)
        return batch

    def _run(self, key: str) -> None:
        last_update = float("-inf")
        try:
            while not self.stop.is_set():
                wait_s = 0.0
                with self._lock:
                    win = self._wins[key]
                    # the summary first when its time has come (a running count while
                    # replies are still being sent), else the next packed reply
                    due = key in self._dirty and \
                        time.monotonic() - last_update >= self.summary_every_s
                    batch = [] if due else self._take(key)
                    if due:
                        self._dirty.discard(key)
                    if not batch and not due:
                        if key not in self._dirty:
                            return
                        wait_s = self.summary_every_s - (time.monotonic() - last_update)
                if due:
                    self._send(self._update, win)
                    last_update = time.monotonic()
                elif batch:
                    self._pace(win.channel)
                    self._send(self._post, win, _pack_text(win, batch),
                               [b for it in batch for b in it.blocks])
                else:
                    self.stop.wait(max(0.05, wait_s))
        finally:
            with self._lock:
                self._running.discard(key)
                self._idle.notify_all()

    def _send(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except LimitError as e:  # a bug of ours: said, never a lost thread
            log.error("alert thread message over Slack's limits: %s", e)
        except Exception as e:
            if not is_slack_failure(e):
                log.error("alert thread message failed: %s: %s", type(e).__name__,
                          str(e)[:300])
                return
            self._failed(e)


def _pack_text(win: AlertWindow, batch: list[Item]) -> str:
    if len(batch) == 1:
        return batch[0].text
    return clip(f"{len(batch)} alert updates on {win.cluster}: "
                + "; ".join(it.text for it in batch), 300)
