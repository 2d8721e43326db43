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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from checks.osd import pg_state_is_clean
from storage.model import CephState
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
