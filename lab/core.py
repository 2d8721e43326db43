"""A real Ceph + Swift + SSH cluster on one machine, from Debian's packages.

Everything lives under one base directory (default ``/var/tmp/stordoc-lab``) and one port
range, so two labs can run side by side. Daemons are plain processes tracked by pid
files; ``down`` stops exactly those pids (checking each one's command line first, never a
name pattern), unmounts the lab's images and detaches its loop devices. ``break_`` and
``heal`` inject and undo real faults (lab/scenarios/).

Layout (see docs/ARCHITECTURE.md): OSD N on CRUSH host ``node{N+1}`` (127.0.0.{N+2}); an
``xfs`` OSD's data dir ``ceph/osd/ceph-N`` is an XFS image loop-mounted there, holding
small files and a ``block`` symlink to a loop device over a sparse file (as ceph-disk
left it); a ``raw`` OSD is ceph-volume's (label on the device, tmpfs data dir).

This module holds the :class:`Lab` (paths, its state file ``lab.json``, orchestration);
the parts are lab/procs.py, mounts.py, ceph.py, swift.py, sshd.py, config.py, alerts.py,
and lab/system.py, the release seam every Ceph/Swift program goes through.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lab import scenarios
from lab.alerts import DAEMONS as ALERT_DAEMONS
from lab.alerts import AlertChain
from lab.ceph import CephCluster
from lab.config import write_config
from lab.layout import (
    CV_BOOTSTRAP_DIR,
    CV_OSD_ROOT,
    DEFAULT_DIR,
    DEFAULT_LAYOUT,
    DEFAULT_PORT_BASE,
    SWIFT_SERVERS,
    Ports,
    layout_kinds,
)
from lab.mounts import Mounts
from lab.procs import LabError, Procs
from lab.rootfs import HOST_RELEASE, ChrootSystem, system_for
from lab.scenarios import DEFAULTS
from lab.sshd import up_sshd
from lab.swift import SwiftCluster
from lab.system import System

Progress = Callable[[str], None]


class Lab:
    """One lab under ``base`` with ports from ``port_base``, running Ceph/Swift of
    ``release`` (lab/rootfs.py: the host's own packages for Pacific, a chroot for Reef; a
    lab that exists keeps the release it was made with). ``system`` overrides the seam."""

    def __init__(self, base: str | os.PathLike[str] = DEFAULT_DIR,
                 port_base: int | None = None, layout: str | None = None,
                 system: System | None = None, release: str | None = None) -> None:
        self.base = Path(base).resolve()
        state = self.read_state()
        if port_base is None:
            port_base = int(state.get("port_base", DEFAULT_PORT_BASE)) if state else \
                DEFAULT_PORT_BASE
        self.ports = Ports(port_base)
        if layout is None:
            layout = str(state.get("osd_layout", DEFAULT_LAYOUT))
        self.kinds = layout_kinds(layout)
        self.layout = layout
        if release is None:
            release = str(state.get("release", HOST_RELEASE))
        self.system = system if system is not None else system_for(release, self.base)
        self.release = release
        self.procs = Procs(self)
        self.mounts = Mounts(self)
        self.ceph_cluster = CephCluster(self)
        self.swift_cluster = SwiftCluster(self)

    @property
    def n_osds(self) -> int:
        return len(self.kinds)

    @property
    def n_hosts(self) -> int:
        """CRUSH hosts with OSDs (node1..nodeN); Swift lives on node1..node3."""
        return max(3, self.n_osds)

    @property
    def cv_cluster(self) -> str:
        """The cluster *name* ceph-volume uses: unique per lab, so that its fixed paths
        (``/var/lib/ceph/osd/NAME-ID``, ``/var/lib/ceph/bootstrap-osd/NAME.keyring``) of
        labs side by side do not collide. The daemons keep the name ``ceph``."""
        return f"sdlab{self.ports.base}"

    # ------------------------------------------------------------------ paths
    @property
    def cv_osd_root(self) -> Path:
        return self.system.host_path(CV_OSD_ROOT)

    @property
    def bootstrap_keyring(self) -> Path:
        return self.system.host_path(CV_BOOTSTRAP_DIR) / f"{self.cv_cluster}.keyring"

    @property
    def ceph_dir(self) -> Path:
        return self.base / "ceph"

    @property
    def conf(self) -> Path:
        return self.ceph_dir / "ceph.conf"

    @property
    def admin_keyring(self) -> Path:
        return self.ceph_dir / "ceph.client.admin.keyring"

    @property
    def run_dir(self) -> Path:
        return self.ceph_dir / "run"

    @property
    def log_dir(self) -> Path:
        return self.base / "log"

    @property
    def images(self) -> Path:
        return self.base / "images"

    @property
    def pids(self) -> Path:
        return self.base / "pids"

    @property
    def swift_etc(self) -> Path:
        return self.base / "swift" / "etc"

    @property
    def swift_node(self) -> Path:
        return self.base / "swift" / "node"

    def ring_dir(self, kind: str) -> Path:
        """The swift_dir of one storage server (its own copy of the rings), so that one
        server can run with an older ring.gz than the others (``swift-ring-stale``)."""
        return self.base / "swift" / "srv" / kind

    @property
    def ssh_dir(self) -> Path:
        return self.base / "ssh"

    @property
    def config_path(self) -> Path:
        return self.base / "stordoc.toml"

    @property
    def state_path(self) -> Path:
        return self.base / "lab.json"

    @property
    def swift_start_script(self) -> Path:
        return self.base / "bin" / "swift-server-start"

    @property
    def replicator_start_script(self) -> Path:
        return self.base / "bin" / "swift-replicator-start"

    def osd_dir(self, i: int) -> Path:
        if i < len(self.kinds) and self.kinds[i] == "raw":
            return self.cv_osd_root / f"{self.cv_cluster}-{i}"
        return self.ceph_dir / "osd" / f"ceph-{i}"

    def osd_pid_file(self, i: int) -> Path:
        return self.run_dir / f"ceph-osd.{i}.pid"

    # ------------------------------------------------------------------ state
    def read_state(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.state_path.read_text()))
        except (OSError, ValueError):
            return {}

    def write_state(self, **kv: Any) -> None:
        st = self.read_state()
        st.update(kv)
        self.state_path.write_text(json.dumps(st, indent=1))

    @property
    def fsid(self) -> str:
        return str(self.read_state().get("fsid", ""))

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

    # ------------------------------------------------------------------ up
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
        if self.read_state().get("alerts"):
            names[:0] = list(ALERT_DAEMONS)
        return names

    def up(self, progress: Progress | None = None, with_alerts: bool = False) -> float:
        """Bring the whole lab up from nothing; returns the seconds it took. With
        ``with_alerts``, also the alert chain (lab/alerts.py)."""
        say = progress or (lambda s: None)
        t0 = time.monotonic()
        say(f"cleaning any previous lab under {self.base}")
        self.down(quiet=True)
        for d in (self.base, self.run_dir, self.log_dir, self.images, self.pids,
                  self.swift_etc, self.swift_node, self.ssh_dir, self.base / "hosts",
                  self.base / "swift" / "cache", self.ceph_dir / "osd"):
            d.mkdir(parents=True, exist_ok=True)
        self.write_state(port_base=self.ports.base, fsid=str(uuid.uuid4()),
                         started=time.time(), osd_layout=self.layout, release=self.release)
        if isinstance(self.system, ChrootSystem):
            say(f"mounting the {self.release} root filesystem")
            t1 = time.monotonic()
            self.system.attach(say)
            self.write_state(rootfs_seconds=round(time.monotonic() - t1, 1))
        say("starting sshd and memcached")
        up_sshd(self)
        self.swift_cluster.up_memcached()
        say("creating the Ceph monitor and manager")
        self.ceph_cluster.up_mon_mgr()
        say(f"creating {self.n_osds} BlueStore OSDs (layout {self.layout}: "
            f"{', '.join(self.kinds)})")
        self.mounts.write_fstabs()
        with ThreadPoolExecutor(max_workers=2) as ex:
            swift_f = ex.submit(self.swift_cluster.prepare)
            self.ceph_cluster.up_osds()
            swift_f.result()
        say("starting Swift")
        self.swift_cluster.up()
        say("creating pools and waiting for HEALTH_OK")
        self.ceph_cluster.up_pools()
        if with_alerts:
            say("starting the alert chain (mgr prometheus module, Prometheus, Alertmanager)")
            self.write_state(alerts=True)
            AlertChain(self).up()
        write_config(self)
        took = time.monotonic() - t0
        self.write_state(up_seconds=round(took, 1))
        say(f"lab up in {took:.1f}s")
        return took

    # ------------------------------------------------------------------ status
    def status(self) -> dict[str, Any]:
        """What runs, where, on which ports; Ceph health; Swift healthcheck."""
        procs = {n: self.pid(n) for n in self.known_daemons()}
        ports = {"mon": self.ports.mon, "swift-proxy": self.ports.proxy,
                 "swift-account": self.ports.account,
                 "swift-container": self.ports.container,
                 "swift-object": self.ports.object, "memcached": self.ports.memcached,
                 "sshd": self.ports.sshd}
        if self.read_state().get("alerts"):
            chain = AlertChain(self)
            ports.update(prometheus=chain.ports.prometheus,
                         alertmanager=chain.ports.alertmanager)
        health: Any = None
        if procs.get("mon.a"):
            try:
                h = self.ceph("health", timeout=8, check=False)
                health = h.get("status") if isinstance(h, dict) else h
            except LabError as e:
                health = str(e)
        return {
            "base": str(self.base), "config": str(self.config_path),
            "exists": self.state_path.exists(), "processes": procs, "ports": ports,
            "ceph_health": health, "osds_up_in": self.osds_up_in() if procs.get("mon.a")
            else None,
            "swift_healthcheck": self.swift_cluster.healthy() if procs.get("swift-proxy")
            else None,
            "mounts": self.mounts.under_base(), "loop_devices": self.loop_devices(),
            "up_seconds": self.read_state().get("up_seconds"),
            "osd_layout": self.layout, "osd_kinds": list(self.kinds),
            "release": self.release,
        }

    def running(self) -> bool:
        st = self.status()
        return all(st["processes"].values()) and st["swift_healthcheck"] is True

    # ------------------------------------------------------------------ down
    def down(self, quiet: bool = False) -> dict[str, Any]:
        """Stop what this lab started, unmount, detach, remove the base directory."""
        stopped = []
        for name in self.known_daemons():
            if self.stop(name):
                stopped.append(name)
        unmounted, detached = self.mounts.cleanup(quiet)
        if self.base.exists() and not self.mounts.under_base():
            shutil.rmtree(self.base, ignore_errors=True)
        return {"stopped": stopped, "unmounted": unmounted, "detached": detached}

    # ------------------------------------------------------------------ faults
    def break_(self, scenario: str, osd: int = DEFAULTS.osd, out: bool = DEFAULTS.out,
               device: str = DEFAULTS.device, mode: str = DEFAULTS.mode,
               server: str = DEFAULTS.server) -> str:
        """Inject a real fault (lab/scenarios/); returns a one-line description of what
        was done. A bad option is a ValueError and changes nothing."""
        return scenarios.get(scenario).run_break(
            self, scenarios.FaultArgs(osd=osd, out=out, device=device, mode=mode,
                                      server=server))

    def heal(self, scenario: str, osd: int = DEFAULTS.osd, device: str = DEFAULTS.device,
             server: str = DEFAULTS.server) -> str:
        """Undo a fault injected by ``break_``."""
        return scenarios.get(scenario).run_heal(
            self, scenarios.FaultArgs(osd=osd, device=device, server=server))
