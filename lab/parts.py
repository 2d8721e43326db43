"""The parts of one lab and what tests, benchmarks, scenarios and the alert chain ask of
them: daemons by pid file (lab/procs.py), images and mounts (lab/mounts.py), the Ceph
daemons and CLI (lab/ceph.py) and the Swift ones (lab/swift.py), all under a ``LabSite``.
Bringing the lab up and down, and its faults, are lab/core.py's ``Lab``, which is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.ceph import CephCluster
from lab.layout import ALERT_DAEMONS, EXPORTER_PREFIX, KMSG_TEXTFILE_DAEMON, SWIFT_SERVERS, Ports
from lab.mounts import Mounts
from lab.procs import Procs
from lab.site import LabSite
from lab.swift import SwiftCluster
from lab.system import System


class LabParts(LabSite):
    """A lab's running parts (``procs``, ``mounts``, ``ceph_cluster``, ``swift_cluster``)
    and the questions asked of them."""

    def __init__(self, base: Path, ports: Ports, layout: str, release: str,
                 system: System) -> None:
        super().__init__(base, ports, layout, release, system)
        self.procs = Procs(self)
        self.mounts = Mounts(self)
        self.ceph_cluster = CephCluster(self, self.procs, self.mounts)
        self.swift_cluster = SwiftCluster(self, self.procs, self.mounts)

    # ------------------------------------------------------------------ the parts' API
    # what tests, benchmarks and the alert chain use, kept on the Lab itself
    def ceph(self, *args: str, timeout: float = 30, check: bool = True,
             step: str = "ceph") -> Any:
        """Run the ``ceph`` CLI against this lab, JSON out (None when it prints nothing)."""
        return self.ceph_cluster.cli(*args, timeout=timeout, check=check, step=step)

    def pid(self, name: str) -> int | None:
        return self.procs.pid(name)

    def stop(self, name: str, timeout: float = 20) -> bool:
        """Stop one daemon of this lab by its pid file. True if it was running."""
        return self.procs.stop(name, timeout)

    def start_mon(self) -> None:
        self.ceph_cluster.start_mon()

    def start_mgr(self) -> None:
        self.ceph_cluster.start_mgr()

    def start_osd(self, i: int) -> None:
        self.ceph_cluster.start_osd(i)

    def osd_up(self, i: int) -> bool | None:
        return self.ceph_cluster.osd_up(i)

    def osds_up_in(self) -> tuple[int, int]:
        return self.ceph_cluster.osds_up_in()

    def osd_device(self, i: int) -> str | None:
        return self.ceph_cluster.osd_device(i)

    def pgs_clean(self) -> bool:
        return self.ceph_cluster.pgs_clean()

    def health_checks(self) -> set[str]:
        return self.ceph_cluster.health_checks()

    def unsettled(self, settling_checks: frozenset[str]) -> str | None:
        return self.ceph_cluster.unsettled(settling_checks)

    def wait_pgs_clean(self, timeout: float, step: str) -> None:
        self.ceph_cluster.wait_pgs_clean(timeout, step)

    def pg_states(self) -> str:
        return self.ceph_cluster.pg_states()

    def loop_devices(self) -> dict[str, str]:
        return self.mounts.loop_devices()

    def replication_last(self, kind: str) -> tuple[float | None, float | None]:
        return self.swift_cluster.replication_last(kind)

    def wait_replication_pass(self, kind: str, after: float, step: str,
                              timeout: float = 90) -> None:
        self.swift_cluster.wait_replication_pass(kind, after, step, timeout)

    def swift_server_answers(self, kind: str) -> bool:
        return self.swift_cluster.server_answers(kind)

    def known_daemons(self) -> list[str]:
        """Every daemon this lab may run, in the order ``down`` stops them."""
        names = ["sshd", "memcached", "swift-proxy", "swift-account", "swift-container",
                 "swift-object", "rsyncd", "mgr.x"]
        # a standby manager a test started (lab/scenarios/mgrmon.py), while its pid file is
        if (self.run_dir / "ceph-mgr.y.pid").exists():
            names.append("mgr.y")
        names += [f"swift-{k}-replicator" for k in SWIFT_SERVERS]
        # this layout's OSDs and any other OSD with a pid file here: a lab recreated with
        # a layout of fewer OSDs must still stop the ones the old layout started
        ids = set(range(self.n_osds))
        for f in self.run_dir.glob("ceph-osd.*.pid"):
            n = f.name.removeprefix("ceph-osd.").removesuffix(".pid")
            if n.isdigit():
                ids.add(int(n))
        names += [f"osd.{i}" for i in sorted(ids)]
        names.append("mon.a")
        state = self.read_state()
        if state.get("metrics"):  # lab/hostmetrics.py: the lab's Prometheus, the exporters
            names[:0] = ["prometheus", KMSG_TEXTFILE_DAEMON] + [
                f"{EXPORTER_PREFIX}node{n}" for n in range(1, self.n_hosts + 1)]
        if state.get("alerts"):
            names[:0] = [n for n in ALERT_DAEMONS if n not in names]
        # a restart-loop supervisor (lab/scenarios/daemons.py) left by a break not healed:
        # stopped first, or it starts its OSD again after the OSD is stopped
        names[:0] = sorted(f.name.removesuffix(".pid") for f in self.pids.glob("osd-*-loop.pid"))
        # the client load of osd-slow-ops (lab/scenarios/slow.py) left by a break that failed
        if (self.pids / "slow-load.pid").exists():
            names.insert(0, "slow-load")
        return names

