"""Manager, monitor and placement faults: the manager stopped (by its pid), an OSD up and
in with CRUSH weight 0, a monitor whose data directory reads low on space; and a standby
manager for the failover runbook (``start_standby_mgr``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.procs import LabError, run, wait
from lab.scenarios.base import OSD_ANY, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

STANDBY_MGR = "y"
# the lab's own line (lab/ceph.py's ceph.conf), put back by the heal: not Ceph's 30
LAB_AVAIL_WARN = "2"


def mgr_stat(lab: Lab) -> dict[str, Any]:
    got = lab.ceph_cluster.ask("mgr stat")  # librados: polled (CephCluster.ask)
    return got if isinstance(got, dict) else {}


def mgr_active(lab: Lab, name: str) -> bool:
    s = mgr_stat(lab)
    return bool(s.get("available")) and s.get("active_name") == name


def start_standby_mgr(lab: Lab, name: str = STANDBY_MGR) -> None:
    """A second ceph-mgr (``mgr.y``) beside the lab's ``mgr.x``; waits until the map lists
    it as a standby. ``lab down`` stops it (``Lab.known_daemons``, while its pid file is
    there); ``stop_standby_mgr`` stops it and removes its pid file."""
    cc = lab.ceph_cluster
    step = f"start standby mgr.{name}"
    d = lab.ceph_dir / "mgr" / f"ceph-{name}"
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "keyring").exists():
        run(cc._argv("ceph", "-c", cc._p(lab.conf), "auth", "get-or-create", f"mgr.{name}",
                     "mon", "allow profile mgr", "osd", "allow *", "mds", "allow *", "-o",
                     cc._p(d / "keyring")), step, timeout=30)
    if lab.pid(f"mgr.{name}") is None:
        run(cc.mgr_start_argv(name), step, log=str(lab.log_dir / f"ceph-mgr.{name}.log"))
    wait(lambda: name in _standbys(lab) or mgr_active(lab, name), 60, step,
         f"mgr.{name} in the manager map", str(lab.log_dir / f"ceph-mgr.{name}.log"))


def _standbys(lab: Lab) -> list[str]:
    got = lab.ceph_cluster.ask("mgr dump")
    if not isinstance(got, dict):
        return []
    return [str(s.get("name")) for s in got.get("standbys", []) if isinstance(s, dict)]


def stop_standby_mgr(lab: Lab, name: str = STANDBY_MGR) -> None:
    """Stop ``mgr.y``; if it is the active one, fail it first so that ``mgr.x`` takes over
    at once (a stopped active manager is dropped only after the beacon grace)."""
    step = f"stop mgr.{name}"
    if mgr_active(lab, name):
        wait(lambda: "x" in _standbys(lab), 60, step, "mgr.x standby")
        lab.ceph("mgr", "fail", name, step=step)
        wait(lambda: mgr_active(lab, "x"), 60, step, "mgr.x active")
    lab.stop(f"mgr.{name}")
    # its pid file names it among the lab's daemons (``Lab.known_daemons``): gone with it
    (lab.run_dir / f"ceph-mgr.{name}.pid").unlink(missing_ok=True)


def wait_mgr_reports(lab: Lab, step: str) -> None:
    """mgr.x active, and its PG statistics answered (``pg stat``, not the monitors' copy)."""
    wait(lambda: mgr_active(lab, "x"), 90, step, "mgr.x active",
         str(lab.log_dir / "ceph-mgr.x.log"))
    wait(lambda: lab.ceph_cluster.ask("pg stat", mgr=True) is not None, 60, step,
         "the manager to answer pg stat")
    lab.wait_pgs_clean(120, step)


class MgrStopped(Scenario):
    name = "mgr-stopped"
    summary = "the only ceph-mgr stopped by its pid: no manager, PG statistics stale"

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        pid = lab.pid("mgr.x")
        if pid is None:
            raise LabError("break mgr-stopped", "mgr.x is not running")
        lab.stop("mgr.x")
        return f"mgr.x (pid {pid}) stopped"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal mgr-stopped"
        if lab.pid("mgr.x") is None:
            lab.start_mgr()
        wait_mgr_reports(lab, step)
        return "mgr.x started, active and reporting"


class OsdCrushWeightZero(Scenario):
    name = "osd-crush-weight-zero"
    summary = "an OSD up and in with CRUSH weight 0 (ceph osd crush reweight osd.N 0)"
    options = (OSD_ANY,)
    heal_options = (OSD_ANY,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = f"break {self.name} osd.{args.osd}"
        w = _crush_weight(lab, args.osd)
        if w is None:
            raise LabError(step, f"osd.{args.osd} is not in the CRUSH map")
        if w > 0:
            lab.write_state(**{f"osd{args.osd}_crush_weight": w})
        lab.ceph("osd", "crush", "reweight", f"osd.{args.osd}", "0", step=step)
        lab.wait_pgs_clean(300, step)
        return f"osd.{args.osd} CRUSH weight {w:g} -> 0 (up and in)"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = f"heal {self.name} osd.{args.osd}"
        w = lab.read_state().get(f"osd{args.osd}_crush_weight")
        if not w:
            others = [x for i in range(lab.n_osds) if i != args.osd
                      and (x := _crush_weight(lab, i))]
            w = max(others) if others else 0.0098
        lab.ceph("osd", "crush", "reweight", f"osd.{args.osd}", f"{float(w):.6f}", step=step)
        lab.wait_pgs_clean(300, step)
        return f"osd.{args.osd} CRUSH weight back to {float(w):g}"


def _crush_weight(lab: Lab, osd: int) -> float | None:
    tree = lab.ceph("osd", "tree", timeout=10, check=False)
    for n in (tree or {}).get("nodes", []) if isinstance(tree, dict) else []:
        if n.get("id") == osd:
            return float(n.get("crush_weight", 0.0))
    return None


def _health(lab: Lab) -> set[str]:
    return lab.health_checks()


class MonDiskLow(Scenario):
    name = "mon-disk-low"
    summary = ("mon.a's data dir reads low on space: mon_data_avail_warn raised above its "
               "free %, at runtime (ceph.conf holds the lab's 2, which a `config set` "
               "would not override)")

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = "break mon-disk-low"
        lab.ceph("tell", "mon.a", "config", "set", "mon_data_avail_warn", "99", step=step)
        wait(lambda: "MON_DISK_LOW" in _health(lab), 60, step, "MON_DISK_LOW")
        return "mon.a mon_data_avail_warn 99 (runtime): MON_DISK_LOW"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal mon-disk-low"
        lab.ceph("tell", "mon.a", "config", "set", "mon_data_avail_warn", LAB_AVAIL_WARN,
                 step=step)
        wait(lambda: "MON_DISK_LOW" not in _health(lab), 60, step, "MON_DISK_LOW cleared")
        return f"mon.a mon_data_avail_warn back to the lab's {LAB_AVAIL_WARN}"
