"""Flapping and stuck PGs, made for real.

``osd-flapping``: the monitor marks a running OSD down (``ceph osd down N``, what lost
heartbeats make it do) FLAPS times; each time the OSD says "wrongly marked me down" and
boots again. Heal: a clean restart of that OSD (the restart on-call does once the cause
is fixed; stordoc counts flaps since the last clean restart).

``pg-stuck``: a pool of one PG, size 2, min_size 1, on OSDs [a, b]: a is stopped, objects
are written to b alone, b is stopped, a is started: a cannot go active without b's newer
writes, so the PG is ``down``, its peering blocked by b (b stays stopped). Heal: start b,
wait for clean, delete the pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.procs import LabError, wait
from lab.scenarios.base import OSD_ANY, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

FLAPS = 4
STUCK_POOL = "lab-stuck"
STUCK_OBJECTS = 8
# (a, b): a is stopped first and started again, b alone has the newest writes and stays
# stopped: the PG's blocker
STUCK_OSDS = (1, 2)


class OsdFlapping(Scenario):
    name = "osd-flapping"
    summary = (f"a running OSD marked down {FLAPS} times (`ceph osd down`): each time it "
               "says 'wrongly marked me down' and boots again")
    options = (OSD_ANY,)
    heal_options = (OSD_ANY,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"break osd-flapping osd.{osd}"
        if lab.pid(f"osd.{osd}") is None or lab.osd_up(osd) is not True:
            raise LabError(step, f"osd.{osd} is not running and up")
        for i in range(FLAPS):
            lab.ceph("osd", "down", str(osd), step=step)
            wait(lambda: lab.osd_up(osd) is True, 60, step,
                 f"osd.{osd} back up after flap {i + 1}",
                 str(lab.log_dir / f"ceph-osd.{osd}.log"))
        lab.wait_pgs_clean(300, step)
        return f"osd.{osd} marked down {FLAPS} times while running; it came back each time"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"heal osd-flapping osd.{osd}"
        lab.stop(f"osd.{osd}")
        lab.start_osd(osd)
        wait(lambda: lab.osd_up(osd) is True, 60, step, f"osd.{osd} up",
             str(lab.log_dir / f"ceph-osd.{osd}.log"))
        lab.wait_pgs_clean(300, step)
        return f"osd.{osd} restarted cleanly (its flap count starts again)"


def _write_objects(lab: Lab, pool: str, n: int) -> None:
    import rados

    c = rados.Rados(conffile=str(lab.conf), conf={"keyring": str(lab.admin_keyring)})
    c.connect(timeout=30)
    try:
        io = c.open_ioctx(pool)
        try:
            for i in range(n):
                io.write_full(f"stuck-{i}", b"x" * 4096)
        finally:
            io.close()
    finally:
        c.shutdown()


def _pg_state(lab: Lab, pgid: str, pool: str = STUCK_POOL) -> str:
    got: Any = lab.ceph("pg", "ls-by-pool", pool, check=False, timeout=10)
    stats = got.get("pg_stats", []) if isinstance(got, dict) else got or []
    for p in stats:
        if isinstance(p, dict) and p.get("pgid") == pgid:
            return str(p.get("state", ""))
    return ""


def _wait_up(lab: Lab, osd: int, step: str) -> None:
    wait(lambda: lab.osd_up(osd) is True, 60, step, f"osd.{osd} up")


def _acting(lab: Lab, pgid: str) -> list[int]:
    got: Any = lab.ceph("pg", "map", pgid, check=False, timeout=10)
    return [int(x) for x in got.get("acting", [])] if isinstance(got, dict) else []


def pinned_pool(lab: Lab, pool: str, osds: tuple[int, int], step: str) -> str:
    """A replicated pool of one PG, size 2, min_size 1, pinned by ``ceph osd pg-upmap``
    to ``osds`` (a, b) with b its primary (the same two OSDs on every lab, whatever pool
    id CRUSH hashes), active+clean; its PG id. Deleting the pool removes the upmap."""
    if pool not in lab.ceph_cluster.pool_names():
        lab.ceph("osd", "pool", "create", pool, "1", "1", "replicated",
                 "--autoscale-mode=off", step=step)
    for k, v in (("size", "2"), ("min_size", "1")):
        lab.ceph("osd", "pool", "set", pool, k, v, step=step)
    lab.ceph("osd", "pool", "application", "enable", pool, "rbd", step=step)
    lab.wait_pgs_clean(120, step)
    detail = lab.ceph("osd", "pool", "ls", "detail", step=step)
    pgid = f"{next(p['pool_id'] for p in detail if p['pool_name'] == pool)}.0"
    a, b = osds
    lab.ceph("osd", "pg-upmap", pgid, str(b), str(a), step=step)
    wait(lambda: _acting(lab, pgid) == [b, a], 60, step, f"pg {pgid} on osd.{b}, osd.{a}")
    lab.wait_pgs_clean(120, step)
    return pgid


class PgStuck(Scenario):
    name = "pg-stuck"
    summary = (f"pool {STUCK_POOL}: its one PG down, peering blocked by a stopped OSD "
               "that alone has the newest writes")

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = "break pg-stuck"
        a, b = STUCK_OSDS
        pgid = pinned_pool(lab, STUCK_POOL, STUCK_OSDS, step)
        lab.stop(f"osd.{a}")
        lab.ceph("osd", "down", str(a), step=step)
        wait(lambda: "active" in _pg_state(lab, pgid).split("+"), 60, step,
             f"pg {pgid} active on osd.{b} alone")
        _write_objects(lab, STUCK_POOL, STUCK_OBJECTS)
        lab.stop(f"osd.{b}")
        lab.ceph("osd", "down", str(b), step=step)
        lab.start_osd(a)
        wait(lambda: lab.osd_up(a) is True, 60, step, f"osd.{a} up")
        wait(lambda: "down" in _pg_state(lab, pgid).split("+"), 90, step,
             f"pg {pgid} down")
        return (f"pg {pgid} down: osd.{a} stopped, {STUCK_OBJECTS} objects written to "
                f"osd.{b} alone, osd.{b} stopped, osd.{a} started")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal pg-stuck"
        started = []
        for i in range(lab.n_osds):
            if lab.pid(f"osd.{i}") is None:
                lab.start_osd(i)
                started.append(i)
        for i in started:
            _wait_up(lab, i, step)
        lab.wait_pgs_clean(300, step)
        if STUCK_POOL in lab.ceph_cluster.pool_names():
            lab.ceph_cluster.delete_pool(STUCK_POOL, step)  # its upmap goes with it
        lab.wait_pgs_clean(120, step)
        return (f"started {', '.join(f'osd.{i}' for i in started) or 'nothing'}; pool "
                f"{STUCK_POOL} removed")
