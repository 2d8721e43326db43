"""After a fix, the truth: what the cluster is still doing (PGs peering, recovering,
backfilling; Ceph's own progress events and their ETA), followed until clean or a
timeout, so a front end never says "success" and then shows a CRIT without a word.

``aftermath_of`` is pure (PG states + whether they count + ``progress json`` -> one line);
``read`` asks the manager for the PGs and the monitor for the osdmap they are judged
against (PG states read right after an OSD change are the manager's picture of the map
before it: ``checks.settle`` is the rule); ``follow`` polls with a deadline. Every front
end calls ``follow`` and renders its lines: the CLI prints them, the bot updates one
thread message, the TUI its run screen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from checks.settle import judge_pgs, states_of
from runbooks.model import RunContext
from storage.ceph import (
    CephClient,
    CephError,
    PgSettle,
    parse_pg_stat,
    parse_stamp,
    read_pg_settle,
    worth_comparing,
)

INACTIVE = frozenset({"peering", "activating", "down", "incomplete", "stale", "unknown",
                      "creating", "inactive"})


@dataclass(frozen=True)
class Aftermath:
    clean: bool
    num_pgs: int
    unclean: int  # PGs not active+clean
    inactive: int  # of them, not serving I/O
    states: Mapping[str, int]
    events: tuple[str, ...] = ()  # Ceph's progress events ("Rebalancing after osd.1 ...")
    eta_s: float | None = None
    error: str | None = None
    # every PG reads active+clean but the reading does not count yet, and why ("54 of 65
    # PGs have not reported on osdmap epoch 30"): ``clean`` is False until it does
    settling: str | None = None
    # how the states were judged when not by the osdmap (the stamp fallback and why)
    note: str | None = None

    @property
    def line(self) -> str:
        if self.error:
            return f"cluster state unknown: {self.error}"
        tail = f" ({self.note})" if self.note else ""
        if self.clean:
            return f"clean: all {self.num_pgs} PGs active+clean{tail}"
        if self.settling is not None:
            return f"settling: {self.settling}; all {self.num_pgs} PGs read active+clean{tail}"
        top = ", ".join(f"{n} {s}" for s, n in sorted(self.states.items(),
                                                       key=lambda kv: -kv[1])[:3])
        what = "peering" if self.inactive else "recovering"
        out = f"{what}: {self.unclean} of {self.num_pgs} PGs not active+clean ({top})"
        if self.inactive:
            out += f"; {self.inactive} not serving I/O yet"
        if self.events:
            out += f"; Ceph: {self.events[0]}"
        if self.eta_s is not None:
            out += f"; ETA {int(self.eta_s)} s"
        return out


def _eta(ev: Mapping[str, Any], now: float) -> float | None:
    """Remaining seconds of one progress event from its start and progress (as ceph -s)."""
    p = ev.get("progress")
    started = parse_stamp(ev.get("started_at")) or None
    if not isinstance(p, (int, float)) or not 0 < p < 1 or started is None:
        return None
    elapsed = max(0.0, now - started)
    return elapsed * (1 - p) / p


def aftermath_of(by_state: Mapping[str, int], num_pgs: int,
                 progress: Mapping[str, Any] | None, now: float,
                 settle: PgSettle | None = None) -> Aftermath:
    """``settle``: whether the PGs have reported on the current osdmap
    (``storage.ceph.read_pg_settle``); its own states are judged when it read them."""
    num_pgs, by_state = states_of(settle, num_pgs, by_state)
    v = judge_pgs(num_pgs, by_state, settle, now)
    inactive = sum(n for s, n in v.unclean.items()
                   if "active" not in s.split("+") or set(s.split("+")) & INACTIVE)
    events: list[str] = []
    etas: list[float] = []
    for ev in (progress or {}).get("events", ()) if isinstance(progress, Mapping) else ():
        if not isinstance(ev, Mapping):
            continue
        msg = str(ev.get("message") or "")
        p = ev.get("progress")
        if isinstance(p, (int, float)):
            msg += f" {p:.0%}"
        events.append(msg.strip())
        e = _eta(ev, now)
        if e is not None:
            etas.append(e)
    return Aftermath(v.clean, num_pgs, sum(v.unclean.values()), inactive, v.unclean,
                     tuple(events), max(etas) if etas else None,
                     settling=v.states.why_not if v.settling else None,
                     note=v.states.fallback)


PG_KINDS = frozenset({"osd", "pool", "cache-pool"})


def worth_following(runbook: str) -> bool:
    """Runbooks whose success moves PGs (an OSD back, pg_num changed): follow them."""
    from runbooks.catalog import registry

    rb = registry().get(runbook)
    return rb is not None and rb.info.target_kind in PG_KINDS


def read(ctx: RunContext) -> Aftermath:
    """PG states (``pg stat``), whether they count when they all read clean
    (``storage.ceph.read_pg_settle``: the manager's PG reports against the current
    osdmap; while some PG reads otherwise the states say "not clean" already and the
    dump is not worth reading, ``worth_comparing``) and progress events (no host facts)."""
    t = ctx.target.ceph
    if t is None:
        return Aftermath(True, 0, 0, 0, {}, error="no Ceph configured")
    try:
        with CephClient(t) as c:
            num, states = parse_pg_stat(c.mgr("pg stat"))
            settle = read_pg_settle(c, t.osdmaptool, t.timeout_s) \
                if worth_comparing(states) else None
            try:
                prog = c.mgr("progress json")
            except CephError:
                prog = None  # the progress module may be off: PG states still tell
    except CephError as e:
        return Aftermath(False, 0, 0, 0, {}, error=str(e))
    return aftermath_of(states, num, prog if isinstance(prog, Mapping) else None, time.time(),
                        settle)


def follow(ctx: RunContext, on_line: Callable[[Aftermath], None], timeout_s: float = 300.0,
           interval_s: float = 2.0, cancel: threading.Event | None = None,
           reader: Callable[[RunContext], Aftermath] = read) -> Aftermath:
    """Report what the cluster does until its PGs are clean, the deadline or cancel.
    ``on_line`` gets each state whose line changed (and the last one).

    Reads every ``interval_s`` while PGs recover (minutes, as a rule); while what it
    waits for ends within seconds -- PGs that only have to report on the new map
    (``settling``: the OSDs' next report), that peer (not serving I/O yet), or a
    recovery Ceph's own progress event expects to end sooner than ``interval_s`` --
    every ``QUICK_POLL_S`` at most (until that ETA), so that the end is said when it
    comes, not up to a whole interval later. A read is ``pg stat`` and ``progress json``;
    the PG dump and the map only when every PG reads clean (~50 ms on the lab)."""
    cancel = cancel or threading.Event()
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        am = reader(ctx)
        if _line_key(am) != last:
            on_line(am)
            last = _line_key(am)
        wait = _next_read(am, interval_s)
        if am.clean or time.monotonic() >= deadline or cancel.wait(wait):
            return am


# how often ``follow`` reads at most while what it waits for takes seconds (settling,
# peering, a recovery Ceph expects to end within the interval)
QUICK_POLL_S = 0.5


def _next_read(am: Aftermath, interval_s: float) -> float:
    """Seconds until ``follow``'s next read (see ``follow``)."""
    if am.settling is not None or am.inactive > 0:
        return min(interval_s, QUICK_POLL_S)
    if am.eta_s is not None and am.eta_s < interval_s:
        return min(interval_s, max(QUICK_POLL_S, am.eta_s))
    return interval_s


def _line_key(am: Aftermath) -> str:
    """The line without its ticking counts (one "settling" message, not one a poll)."""
    return "settling" if am.settling is not None else am.line
