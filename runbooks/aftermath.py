"""After a fix, the truth: what the cluster is still doing (PGs peering, recovering,
backfilling; Ceph's own progress events and their ETA), followed until clean or a
timeout, so a front end never says "success" and then shows a CRIT without a word.

``aftermath_of`` is pure (PG states + ``progress json`` -> one line); ``read`` asks the
manager (and the monitor when an OSD last went up/down/in/out: PG states read in the
first seconds after are the map before the change, ``checks.osd.PG_REPORT_GRACE_S``);
``follow`` polls with a deadline. Every front end calls ``follow`` and renders its
lines: the CLI prints them, the bot updates one thread message, the TUI its run screen.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from checks.osd import PG_REPORT_GRACE_S, pg_state_is_clean, pgs_reported_since
from runbooks.model import RunContext
from storage.ceph import CephClient, CephError, last_osd_change, parse_pg_stat, parse_stamp

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
    # every PG reads active+clean, but an OSD went up/down/in/out only this many seconds
    # ago: the states may predate the peering it starts (``clean`` False until reported)
    unreported_s: float | None = None

    @property
    def line(self) -> str:
        if self.error:
            return f"cluster state unknown: {self.error}"
        if self.clean:
            return f"clean: all {self.num_pgs} PGs active+clean"
        if self.unreported_s is not None:
            return (f"settling: all {self.num_pgs} PGs read active+clean, but an OSD "
                    f"went up/down/in/out {max(0, int(self.unreported_s))} s ago; waiting "
                    "for the OSDs' next PG report")
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
                 last_change: float | None = None) -> Aftermath:
    """``last_change``: when an OSD last went up/down/in/out (the monitor's ``osd stat``)."""
    unclean = {s: n for s, n in by_state.items() if not pg_state_is_clean(s)}
    inactive = sum(n for s, n in unclean.items()
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
    n_unclean = sum(unclean.values())
    clean = n_unclean == 0 and num_pgs > 0
    unreported = None
    if clean and not pgs_reported_since(last_change, now):
        clean, unreported = False, now - (last_change or now)
    return Aftermath(clean, num_pgs, n_unclean, inactive, unclean,
                     tuple(events), max(etas) if etas else None, unreported_s=unreported)


PG_KINDS = frozenset({"osd", "pool", "cache-pool"})


def worth_following(runbook: str) -> bool:
    """Runbooks whose success moves PGs (an OSD back, pg_num changed): follow them."""
    from runbooks.base import registry

    rb = registry().get(runbook)
    return rb is not None and rb.info.target_kind in PG_KINDS


def read(ctx: RunContext) -> Aftermath:
    """PG states and progress events, straight from the manager (no host facts)."""
    if ctx.target.ceph is None:
        return Aftermath(True, 0, 0, 0, {}, error="no Ceph configured")
    try:
        with CephClient(ctx.target.ceph) as c:
            # the map first: PG states read after it are at least as new as the change
            try:
                changed = last_osd_change(c.mon("osd stat"))
            except CephError:
                changed = None  # an old monitor without the stamps: PG states alone
            num, states = parse_pg_stat(c.mgr("pg stat"))
            try:
                prog = c.mgr("progress json")
            except CephError:
                prog = None  # the progress module may be off: PG states still tell
    except CephError as e:
        return Aftermath(False, 0, 0, 0, {}, error=str(e))
    return aftermath_of(states, num, prog if isinstance(prog, Mapping) else None, time.time(),
                        changed)


def follow(ctx: RunContext, on_line: Callable[[Aftermath], None], timeout_s: float = 300.0,
           interval_s: float = 2.0, cancel: threading.Event | None = None,
           reader: Callable[[RunContext], Aftermath] = read) -> Aftermath:
    """Report what the cluster does until its PGs are clean, the deadline or cancel.
    ``on_line`` gets each state whose line changed (and the last one).

    "Clean but not yet reported" that lasts the grace by this host's clock counts as
    clean: a monitor whose clock runs ahead must not keep a clean cluster settling."""
    cancel = cancel or threading.Event()
    deadline = time.monotonic() + timeout_s
    last = ""
    unreported_since: float | None = None
    while True:
        am = reader(ctx)
        if am.unreported_s is None:
            unreported_since = None
        else:
            t = time.monotonic()
            unreported_since = t if unreported_since is None else unreported_since
            if t - unreported_since >= PG_REPORT_GRACE_S:
                am = dataclasses.replace(am, clean=True, unreported_s=None)
        if _line_key(am) != last:
            on_line(am)
            last = _line_key(am)
        if am.clean or time.monotonic() >= deadline or cancel.wait(interval_s):
            return am


def _line_key(am: Aftermath) -> str:
    """The line without its ticking seconds (one "settling" message, not one a poll)."""
    return "settling" if am.unreported_s is not None else am.line
