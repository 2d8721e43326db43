"""Unfound objects, made for real, the way Ceph's own qa makes them
(``qa/tasks/lost_unfound.py``).

``pg-unfound``: a pool of one PG, size 2, min_size 1, pinned to OSDs [a, b] with b its
primary (``lab.scenarios.flap.pinned_pool``). Objects are written on both; then a is
stopped, and b alone takes new objects and overwrites of the old ones while its
recovery is held (``osd_recovery_delay_start`` on b: b is the primary, it would push the
writes to a). a is started and peers: its log now knows the newer versions it lacks.
b is stopped, marked down and lost (``ceph osd lost B``): every place the newer versions
could be has been probed, and the PG is active with those objects unfound (Ceph's
OBJECT_UNFOUND, ``ceph pg P list_unfound``); a has their previous versions (revert) or
nothing (new objects: revert forgets them).

Heal: remove the config key, start b (its copies come back, if they were not marked lost
meanwhile), wait for clean, delete the pool (its upmap goes with it). Only what the
break made is undone: the pool, the key on b, b's daemon.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.procs import LabError, wait
from lab.scenarios.base import FaultArgs, Scenario
from lab.scenarios.flap import _acting, _pg_state, _wait_up, _write_objects, pinned_pool

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

UNFOUND_POOL = "lab-unfound"
# objects written on both OSDs first, then (b alone) rewritten, plus as many new ones:
# OLD overwrites and NEW - OLD new objects are unfound
UNFOUND_OLD = 4
UNFOUND_NEW = 8
# (a, b): the same OSDs as pg-stuck; b (the primary) has the newest writes and is lost
UNFOUND_OSDS = (1, 2)
HOLD_KEY = "osd_recovery_delay_start"
HOLD_S = "1000"


def pool_pgid(lab: Lab, pool: str = UNFOUND_POOL) -> str | None:
    """The one PG of ``pool``, None when the pool does not exist."""
    got: Any = lab.ceph("osd", "pool", "ls", "detail", check=False, timeout=10)
    for p in got if isinstance(got, list) else []:
        if isinstance(p, dict) and p.get("pool_name") == pool:
            return f"{p['pool_id']}.0"
    return None


def num_unfound(lab: Lab, pgid: str) -> int:
    """How many objects ``ceph pg P list_unfound`` says are unfound (-1: no answer)."""
    got: Any = lab.ceph("pg", pgid, "list_unfound", check=False, timeout=15)
    if not isinstance(got, dict):
        return -1
    return int(got.get("num_unfound", len(got.get("objects", []))) or 0)


def _peered_degraded(lab: Lab, pgid: str, osds: list[int]) -> bool:
    """Active on both ``osds`` (none missing from the acting set, not peering), and
    degraded: the peer lacks the newer writes and nothing was pushed to it."""
    parts = set(_pg_state(lab, pgid, UNFOUND_POOL).split("+"))
    return (_acting(lab, pgid) == osds and {"active", "degraded"} <= parts
            and not {"undersized", "peering", "activating"} & parts)


class PgUnfound(Scenario):
    name = "pg-unfound"
    summary = (f"pool {UNFOUND_POOL}: its one PG active with {UNFOUND_NEW} unfound objects "
               f"(the newest writes were on an OSD now stopped and marked lost)")

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = "break pg-unfound"
        a, b = UNFOUND_OSDS
        pgid = pinned_pool(lab, UNFOUND_POOL, UNFOUND_OSDS, step)
        _write_objects(lab, UNFOUND_POOL, UNFOUND_OLD)
        # b would push its writes to a as soon as a peers: held for HOLD_S seconds (the
        # OSD re-reads the key at once: OSD::handle_conf_change defers its recovery)
        lab.ceph("config", "set", f"osd.{b}", HOLD_KEY, HOLD_S, step=step)
        wait(lambda: _conf(lab, b) == float(HOLD_S), 30, step,
             f"osd.{b} {HOLD_KEY} {HOLD_S}")
        lab.stop(f"osd.{a}")
        lab.ceph("osd", "down", str(a), step=step)
        wait(lambda: "active" in _pg_state(lab, pgid, UNFOUND_POOL).split("+"), 60, step,
             f"pg {pgid} active on osd.{b} alone")
        _write_objects(lab, UNFOUND_POOL, UNFOUND_NEW)  # OLD rewritten, the rest new
        lab.start_osd(a)
        _wait_up(lab, a, step)
        # a peered (its log knows the newer versions) and nothing was recovered to it
        wait(lambda: _peered_degraded(lab, pgid, [b, a]), 60, step,
             f"pg {pgid} active+degraded on osd.{b}, osd.{a} (recovery held)")
        lab.stop(f"osd.{b}")
        lab.ceph("osd", "down", str(b), step=step)
        lab.ceph("osd", "lost", str(b), "--yes-i-really-mean-it", step=step)
        wait(lambda: num_unfound(lab, pgid) == UNFOUND_NEW, 90, step,
             f"pg {pgid} with {UNFOUND_NEW} unfound objects")
        return (f"pg {pgid}: {UNFOUND_NEW} objects unfound ({UNFOUND_OLD} overwrites, "
                f"{UNFOUND_NEW - UNFOUND_OLD} new) written to osd.{b} alone, osd.{b} "
                f"stopped and marked lost")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal pg-unfound"
        a, b = UNFOUND_OSDS
        lab.ceph("config", "rm", f"osd.{b}", HOLD_KEY, step=step)
        started = []
        for i in (a, b):
            if lab.pid(f"osd.{i}") is None:
                lab.start_osd(i)
                started.append(i)
        for i in started:
            _wait_up(lab, i, step)
        pgid = pool_pgid(lab)
        if pgid is not None:
            lab.ceph_cluster.delete_pool(UNFOUND_POOL, step)  # its upmap goes with it
        lab.wait_pgs_clean(300, step)
        return (f"{HOLD_KEY} of osd.{b} removed; started "
                f"{', '.join(f'osd.{i}' for i in started) or 'nothing'}; pool "
                f"{UNFOUND_POOL} removed")


def _conf(lab: Lab, osd: int) -> float | None:
    """``osd``'s running value of the hold key (None: no answer)."""
    try:
        got: Any = lab.ceph("tell", f"osd.{osd}", "config", "get", HOLD_KEY, check=False,
                            timeout=15)
    except LabError:
        return None
    try:
        return float(str(got.get(HOLD_KEY))) if isinstance(got, dict) else None
    except ValueError:
        return None
