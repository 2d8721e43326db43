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

This module holds the :class:`Lab`'s life cycle: up, status, down, and its faults
(``break_``/``heal``, lab/scenarios/). Where a lab lives is lab/site.py (``LabSite``:
paths, ports, the state file ``lab.json``); its running parts and what is asked of them
are lab/parts.py (``LabParts``: procs, mounts, ceph, swift); the parts a lab is brought
up with are lab/sshd.py, config.py, alerts.py; lab/system.py is the release seam every
Ceph/Swift program goes through. No part imports this module (tests/unit/test_import_layers.py).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lab import scenarios
from lab.alerts import AlertChain
from lab.config import write_config
from lab.hostmetrics import HostMetrics
from lab.layout import DEFAULT_DIR, DEFAULT_LAYOUT, DEFAULT_PORT_BASE, Ports
from lab.parts import LabParts
from lab.procs import LabError
from lab.rootfs import HOST_RELEASE, ChrootSystem, system_for
from lab.scenarios import DEFAULTS
from lab.site import state_at
from lab.sshd import up_sshd
from lab.system import System

Progress = Callable[[str], None]


def own_base(base: Path) -> None:
    """The lab's base directory as root may use it: created 0755 if missing, else it (and a
    link naming it) must be this user's and not writable by group or others. The default
    lives in /var/tmp, where anyone could make it first and plant links or pid files in
    it for root to follow; such a base is refused (LabError), nothing in it touched."""
    try:
        lst = os.lstat(base)
    except FileNotFoundError:
        base.mkdir(parents=True, mode=0o755)
        base.chmod(0o755)  # whatever the umask
        return
    st = os.stat(base) if os.path.isdir(base) else lst
    me = os.geteuid()
    why = ("not a directory" if not os.path.isdir(base)
           else f"owned by uid {lst.st_uid}, not {me}" if lst.st_uid != me
           else f"its target is owned by uid {st.st_uid}, not {me}" if st.st_uid != me
           else f"writable by group or others (mode {st.st_mode & 0o7777:04o})"
           if st.st_mode & 0o022 else "")
    if why:
        raise LabError("base directory", f"{base}: {why}: refused (use another --dir, "
                       "or remove it)")


class Lab(LabParts):
    """One lab under ``base`` with ports from ``port_base``, running Ceph/Swift of
    ``release`` (lab/rootfs.py: the host's own packages for Pacific, a chroot for Reef; a
    lab that exists keeps the release it was made with). ``system`` overrides the seam."""

    def __init__(self, base: str | os.PathLike[str] = DEFAULT_DIR,
                 port_base: int | None = None, layout: str | None = None,
                 system: System | None = None, release: str | None = None) -> None:
        root = Path(base).resolve()
        state = state_at(root)
        if port_base is None:
            port_base = int(state.get("port_base", DEFAULT_PORT_BASE)) if state else \
                DEFAULT_PORT_BASE
        if layout is None:
            layout = str(state.get("osd_layout", DEFAULT_LAYOUT))
        if release is None:
            release = str(state.get("release", HOST_RELEASE))
        super().__init__(root, Ports(port_base), layout, release,
                         system if system is not None else system_for(release, root))

    # ------------------------------------------------------------------ up
    def up(self, progress: Progress | None = None, with_alerts: bool = False,
           with_metrics: bool = True) -> float:
        """Bring the whole lab up from nothing; returns the seconds it took. With
        ``with_alerts``, also the alert chain (lab/alerts.py); with ``with_metrics`` (the
        default), a node_exporter per host and the lab's Prometheus scraping them
        (lab/hostmetrics.py)."""
        say = progress or (lambda s: None)
        t0 = time.monotonic()
        own_base(self.base)
        say(f"cleaning any previous lab under {self.base}")
        self.down(quiet=True)
        for d in (self.base, self.run_dir, self.log_dir, self.images, self.pids,
                  self.swift_etc, self.swift_node, self.ssh_dir, self.base / "hosts",
                  self.base / "swift" / "cache", self.ceph_dir / "osd"):
            d.mkdir(parents=True, exist_ok=True)
        self.write_state(port_base=self.ports.base, fsid=str(uuid.uuid4()),
                         started=time.time(), osd_layout=self.layout, release=self.release,
                         metrics=False)  # HostMetrics.start says True
        if isinstance(self.system, ChrootSystem):
            say(f"mounting the {self.release} root filesystem")
            t1 = time.monotonic()
            self.system.attach(say)
            self.write_state(rootfs_seconds=round(time.monotonic() - t1, 1))
        say("starting sshd and memcached")
        up_sshd(self)
        self.swift_cluster.up_memcached()
        metrics = HostMetrics(self)
        if with_metrics:
            say("starting a node_exporter per host and Prometheus")
            metrics.start()  # ready by the end (waited for below)
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
        if with_metrics:
            metrics.wait_ready()
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
        ports: dict[str, int | str] = {
            "mon": self.ports.mon, "swift-proxy": self.ports.proxy,
            "swift-account": self.ports.account, "swift-container": self.ports.container,
            "swift-object": self.ports.object, "memcached": self.ports.memcached,
            "sshd": self.ports.sshd}
        metrics = HostMetrics(self)
        if metrics.on():
            ports.update(metrics.exporters.targets_by_daemon())
            ports.update(prometheus=AlertChain(self).ports.prometheus)
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
        if os.path.lexists(self.base):
            own_base(self.base)  # its pid files name what is stopped
        stopped = []
        for name in self.known_daemons():
            if name.endswith("-loop") and self.procs.stop_group(name):
                stopped.append(name)
            elif self.stop(name):
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
