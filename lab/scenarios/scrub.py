"""A PG made inconsistent the way a disk does it: one replica's object corrupted on disk.

``pg-inconsistent`` writes a small object into the lab's ``rbd`` pool, stops one OSD that
holds a non-primary copy (``noout`` meanwhile), overwrites that copy's data in the OSD's
BlueStore with ``ceph-objectstore-tool --op list`` / ``set-bytes`` (BlueStore's own
checksums are rewritten with it: no read error, only different data, as a disk that
returned wrong bytes once leaves it), starts the OSD, and deep-scrubs the PG: Ceph then
reports it inconsistent (PG_DAMAGED, OSD_SCRUB_ERRORS) and ``rados
list-inconsistent-obj`` names that copy (``data_digest_mismatch_info``). Heal repairs the
PG if it still is inconsistent and removes the object."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.procs import LabError, run, wait
from lab.scenarios.base import FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

POOL = "rbd"  # the lab's own pool: no new pool (a pool of few PGs is a finding)
OBJECT = "stordoc-lab-scrub"
GOOD = "stordoc lab: the good copy of an object\n"
BAD = GOOD.replace("good", "BAD!")  # same length: only the data digest differs
WAIT_S = 120.0


def _pg_row(lab: Lab, pgid: str) -> dict[str, Any]:
    res = lab.ceph("pg", "ls", pgid.split(".")[0], check=False)
    rows = res.get("pg_stats", []) if isinstance(res, dict) else (res or [])
    return next((p for p in rows if isinstance(p, dict) and p.get("pgid") == pgid), {})


def _inconsistent(lab: Lab, pgid: str) -> bool:
    return "inconsistent" in str(_pg_row(lab, pgid).get("state", ""))


class PgInconsistent(Scenario):
    name = "pg-inconsistent"
    summary = ("one replica's object corrupted on disk (ceph-objectstore-tool set-bytes on "
               "the stopped OSD), then a deep scrub: an inconsistent PG")

    def _rados(self, lab: Lab, step: str, *args: str, data: str | None = None) -> str:
        cc = lab.ceph_cluster
        return run(cc._argv("rados", "-c", cc._p(lab.conf), "-p", POOL, *args), step,
                   input=data).stdout

    def _corrupt(self, lab: Lab, osd: int, step: str) -> None:
        """Overwrite the copy on the (stopped) OSD."""
        cc = lab.ceph_cluster
        tool = ["ceph-objectstore-tool", "--no-mon-config", "--data-path",
                cc._p(lab.osd_dir(osd))]
        listed = run(cc._argv(*tool, "--op", "list", OBJECT), step, timeout=120).stdout
        spec = next((ln for ln in listed.splitlines() if OBJECT in ln), None)
        if spec is None:
            raise LabError(step, f"osd.{osd} holds no copy of {POOL}/{OBJECT}: {listed!r}")
        bad = lab.base / "scrub-bad-copy"
        bad.write_text(BAD)
        try:
            run(cc._argv(*tool, spec, "set-bytes", cc._p(bad)), step, timeout=120)
        finally:
            bad.unlink(missing_ok=True)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = "break pg-inconsistent"
        self._rados(lab, step, "put", OBJECT, "-", data=GOOD)
        m = lab.ceph("osd", "map", POOL, OBJECT, step=step)
        pgid, acting = str(m["pgid"]), [int(x) for x in m["acting"]]
        primary = int(m["acting_primary"])
        victim = next(o for o in acting if o != primary)
        lab.ceph("osd", "set", "noout", step=step)
        try:
            lab.stop(f"osd.{victim}")
            wait(lambda: lab.osd_up(victim) is False, 60, step, f"osd.{victim} down")
            self._corrupt(lab, victim, step)
            lab.start_osd(victim)
            wait(lambda: lab.osd_up(victim) is True, 90, step, f"osd.{victim} up",
                 str(lab.log_dir / f"ceph-osd.{victim}.log"))
        finally:
            lab.ceph("osd", "unset", "noout", step=step)
        lab.wait_pgs_clean(300, step)
        lab.ceph("pg", "deep-scrub", pgid, step=step)
        wait(lambda: _inconsistent(lab, pgid), WAIT_S, step, f"pg {pgid} inconsistent")
        return (f"pg {pgid} (acting {acting}): the copy of {POOL}/{OBJECT} on osd.{victim} "
                "overwritten on disk, deep scrub: inconsistent")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal pg-inconsistent"
        m = lab.ceph("osd", "map", POOL, OBJECT, step=step)
        pgid = str(m["pgid"])
        said = "consistent"
        if _inconsistent(lab, pgid):
            lab.ceph("pg", "repair", pgid, step=step)
            wait(lambda: not _inconsistent(lab, pgid)
                 and "repair" not in str(_pg_row(lab, pgid).get("state", "")),
                 WAIT_S, step, f"pg {pgid} repaired")
            said = "repaired"
        if OBJECT in self._rados(lab, step, "ls").split():
            self._rados(lab, step, "rm", OBJECT)
        lab.wait_pgs_clean(300, step)
        return f"pg {pgid} {said}, {POOL}/{OBJECT} removed"


__all__ = ["PgInconsistent"]
