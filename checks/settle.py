"""Which PG states count: the one rule behind a fix's follow-up
(``runbooks.aftermath``), the benchmark gate (``runbooks.bench.common.ceph_gate``),
``stordoc check`` (``PGS_SETTLING``, checks/pgs.py) and the lab's wait before each test
(``lab.ceph``).

The manager's PG states lag an osdmap change by the OSDs' next report: read 0.3 s after
an ``osd in`` they say "65 active+clean" about the map before it, and peering starts a
second later. A PG's state counts once the PG has reported on the current map: its
reported up and acting sets (and primaries) equal what the map computes for it
(``storage.ceph.settle``, osdmaptool). That is a fact; a timer is a guess, and is used
only as the stated fallback when the map cannot be read (no osdmaptool, one older than
the monitors): clean PGs read at least ``STAMP_GRACE_S`` after the monitor's
``osd_up_since``/``osd_in_since`` count.

The other half (``settling``): PGs that peer, activate or recover right after a change --
a runbook run stordoc made (the journal's, ``ClusterSnapshot.runs``) or any OSD up/down/
in/out (the monitor's stamps) -- within ``Thresholds.pg_settle_window_s`` and with every
OSD up are "settling after" that change, INFO, as a fix's follow-up says: not a CRIT
incident nobody can fix. Past the window, with an OSD down, or with a PG down, incomplete,
stale or unknown, they are judged as always (``checks.pgs``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from checks.osd import pg_state_is_clean
from storage.model import CephState, ClusterSnapshot, RecentRun
from storage.model.ceph import PgSettle, SettleMethod

# The stamp fallback only: the OSDs report PG stats every ``mgr_stats_period`` (5 s by
# default); states read this long after the last OSD up/down/in/out describe it.
STAMP_GRACE_S = 10.0
# A monitor stamp further ahead of this host's clock than this says nothing of when the
# change happened (a skewed clock): the PG states count as read.
CLOCK_SKEW_S = 60.0


@dataclass(frozen=True)
class StatesCount:
    """Whether the PG states as read can be taken for the cluster's, and what said so."""

    counts: bool
    method: SettleMethod
    why_not: str | None = None  # "54 of 65 PGs have not reported on osdmap epoch 30"
    # not the map rule: which rule decided and why the map could not ("stamp rule ...")
    fallback: str | None = None


def pg_states_count(settle: PgSettle | None, now: float) -> StatesCount:
    """The rule. ``settle`` None means nothing was asked (e.g. a check whose PGs read
    unclean anyway): the states count as read."""
    if settle is None:
        return StatesCount(True, SettleMethod.UNKNOWN)
    if settle.method is SettleMethod.OSDMAP:
        if settle.unreported == 0:
            return StatesCount(True, settle.method)
        on = f"osdmap epoch {settle.epoch}" if settle.epoch is not None else "the current osdmap"
        return StatesCount(False, settle.method,
                           f"{settle.unreported} of {settle.num_pgs} PGs have not reported "
                           f"on {on}")
    why = settle.error or "the osdmap could not be read"
    changed = settle.last_change
    if settle.method is SettleMethod.UNKNOWN or changed is None or not math.isfinite(changed):
        return StatesCount(True, SettleMethod.UNKNOWN,
                           fallback=f"PG states taken as read (neither the osdmap nor the "
                                    f"monitor's stamps could tell: {why})")
    fallback = f"stamp rule ({STAMP_GRACE_S:g} s after the last OSD change): {why}"
    ago = now - changed
    if ago >= STAMP_GRACE_S or -ago >= CLOCK_SKEW_S:
        return StatesCount(True, settle.method, fallback=fallback)
    return StatesCount(False, settle.method,
                       f"an OSD went up/down/in/out {max(0, int(ago))} s ago", fallback)


@dataclass(frozen=True)
class PgVerdict:
    """PG states judged once: clean means every PG active+clean and the states count."""

    num_pgs: int
    unclean: Mapping[str, int] = field(default_factory=dict)  # state -> PGs, not clean
    states: StatesCount = field(default_factory=lambda: StatesCount(True,
                                                                    SettleMethod.UNKNOWN))

    @property
    def reads_clean(self) -> bool:
        """Every PG reads active+clean (whether or not that reading counts yet)."""
        return self.num_pgs > 0 and not self.unclean

    @property
    def clean(self) -> bool:
        return self.reads_clean and self.states.counts

    @property
    def settling(self) -> bool:
        """Reads clean, but the reading does not count yet."""
        return self.reads_clean and not self.states.counts


def judge_pgs(num_pgs: int, by_state: Mapping[str, int], settle: PgSettle | None,
              now: float) -> PgVerdict:
    """``by_state``: the states to judge; when ``settle`` read the PG dump, pass its own
    (``PgSettle.by_state``, the states whose placement was compared) -- ``states_of``."""
    unclean = {s: n for s, n in by_state.items() if n and not pg_state_is_clean(s)}
    return PgVerdict(num_pgs, unclean, pg_states_count(settle, now))


def states_of(settle: PgSettle | None, num_pgs: int,
              by_state: Mapping[str, int]) -> tuple[int, Mapping[str, int]]:
    """The states to judge: those of the dump ``settle`` compared when it read one, else
    the given ones (``pg stat``)."""
    if settle is not None and settle.by_state:
        return sum(settle.by_state.values()), settle.by_state
    return num_pgs, by_state


def judge_state(st: CephState, now: float) -> PgVerdict:
    """A snapshot's PGs (its ``pgs`` are already the dump's when one was read), judged
    as of when they were read (``collected_at``; ``now`` when unknown)."""
    return judge_pgs(st.pgs.num_pgs, st.pgs.by_state, st.pg_settle, st.collected_at or now)


# PG states settling never explains: data no OSD that is up can serve, or states nobody
# reports
NOT_SETTLING = frozenset({"down", "incomplete", "stale", "unknown", "inactive",
                          "creating", "recovery_unfound", "backfill_unfound",
                          "recovery_toofull", "backfill_toofull", "inconsistent"})


@dataclass(frozen=True)
class SettleCause:
    """The change PGs settle after: ``what`` ("run #6 osd-remount osd.1", "osd.1 came up
    12 s ago"), when it happened (a run's start, the monitor's stamp), the run if any."""

    what: str
    at: float
    run: RecentRun | None = None

    @property
    def line(self) -> str:
        return f"settling after {self.what}"


def _down_osds(st: CephState) -> list[str]:
    return [o.name for o in st.osds if o.exists and not o.destroyed and not o.up]


def settle_cause(st: CephState, runs: tuple[RecentRun, ...], now: float,
                 window_s: float) -> SettleCause | None:
    """The change the cluster may still settle after, None when none is recent enough
    or an OSD is down (its PGs may stay inactive for good: not settling). A run counts
    while running and ``window_s`` after it finished; an OSD change ``window_s`` after
    the monitor's stamp (a stamp ahead of ``now`` by more than ``CLOCK_SKEW_S`` says
    nothing)."""
    if _down_osds(st):
        return None
    recent = [r for r in runs
              if r.outcome != "refused" and r.started_at <= now + CLOCK_SKEW_S
              and (r.finished_at is None or now - r.finished_at <= window_s)]
    if recent:
        r = max(recent, key=lambda x: (x.started_at, x.id))
        return SettleCause(r.name, r.started_at, r)
    stamps = [(t, kind) for t, kind in ((st.osd_up_since, "up"), (st.osd_in_since, "in"))
              if t is not None and -CLOCK_SKEW_S <= now - t <= window_s]
    if not stamps:
        return None
    at, kind = max(stamps)
    ago = f"{max(0, int(now - at))} s ago"
    if kind == "up":
        ups = [o for o in st.osds if o.exists and o.up]
        if ups:
            last = max(ups, key=lambda o: (o.up_from, o.id))
            return SettleCause(f"{last.name} came up {ago}", at)
        return SettleCause(f"an OSD went down or came up {ago}", at)
    return SettleCause(f"an OSD went in or out {ago}", at)


# Ceph's health codes about PGs that peer or recover: while they settle after a change
# (``pgs_settling``), or while Ceph's health still says them about PGs that read clean
# (``health_lags``), they are INFO, part of PGS_SETTLING
SETTLING_CEPH_CODES = frozenset({"PG_AVAILABILITY", "PG_DEGRADED", "OBJECT_MISPLACED"})


def health_lags(snap: ClusterSnapshot, now: float, window_s: float) -> SettleCause | None:
    """Every PG reads active+clean right after a stordoc run (running, or finished within
    ``window_s``; every OSD up: ``settle_cause``) while Ceph's health still carries one of
    ``SETTLING_CEPH_CODES``: the monitor's health summary lags the PG stats by the
    manager's next digest (seen on Reef: ``PG_DEGRADED: 40 pgs undersized`` seconds after
    osd-remount finished and the PG stats read 65 active+clean). That code is the run's
    settling, not a fault of its own. None when a PG reads otherwise (``pgs_settling``
    judges those), Ceph says no such code, or no run is recent (an OSD change alone, e.g.
    a cluster just started, leaves Ceph's word as it is)."""
    st = snap.ceph
    if st is None or st.pgs.num_pgs <= 0 or unclean_states(st.pgs.by_state):
        return None
    if not any(hc.code in SETTLING_CEPH_CODES for hc in st.health_checks):
        return None
    cause = settle_cause(st, snap.runs, st.collected_at or now, window_s)
    return cause if cause is not None and cause.run is not None else None


def unclean_states(by_state: Mapping[str, int]) -> dict[str, int]:
    return {s: n for s, n in by_state.items() if n and not pg_state_is_clean(s)}


def pgs_settling(snap: ClusterSnapshot, now: float, window_s: float) -> SettleCause | None:
    """The rule for a snapshot: some PGs not active+clean, none of them in a state
    settling never explains (``NOT_SETTLING``), and a recent change (``settle_cause``),
    judged as of when the PGs were read. None: judge the PGs as always."""
    st = snap.ceph
    if st is None:
        return None
    unclean = unclean_states(st.pgs.by_state)
    if unclean and set(unclean) <= {"unknown"}:
        return manager_back(st, st.collected_at or now, window_s)
    if not unclean or any(set(s.split("+")) & NOT_SETTLING for s in unclean):
        return None
    return settle_cause(st, snap.runs, st.collected_at or now, window_s)


def manager_back(st: CephState, now: float, window_s: float) -> SettleCause | None:
    """A manager that became active within ``window_s``: until the OSDs report to it (every
    ``mgr_stats_period``, 5 s) it knows no PG's state and calls them all unknown, and
    ``pg dump_stuck`` lists them inactive. That is the manager settling, not 65 PGs stuck:
    None when no manager is active and answering, or it became active earlier (PGs unknown
    to a manager that has run a while are judged as always)."""
    mgr = st.mgr
    if mgr is None or not mgr.available or not mgr.active or mgr.answered is False:
        return None
    at = mgr.active_change
    if at is None or not math.isfinite(at) or not -CLOCK_SKEW_S <= now - at <= window_s:
        return None
    return SettleCause(f"mgr.{mgr.active} became active {max(0, int(now - at))} s ago "
                       "(its PG states come with the OSDs' next reports)", at)
