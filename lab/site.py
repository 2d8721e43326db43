"""Where one lab lives: its base directory, ports, OSD layout, release seam, every path
under the base, and its state file ``lab.json``. No processes: the parts (lab/procs.py,
mounts.py, ceph.py, swift.py) are given a ``LabSite`` and work under it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.layout import CV_BOOTSTRAP_DIR, CV_OSD_ROOT, Ports, layout_kinds
from lab.system import System


def state_at(base: Path) -> dict[str, Any]:
    """The state file of the lab under ``base`` ({} when there is none)."""
    try:
        return dict(json.loads((base / "lab.json").read_text()))
    except (OSError, ValueError):
        return {}


class LabSite:
    """A lab's place: ``base``, its ``ports``, its OSD ``layout`` and the ``system`` seam
    its ``release`` runs through (lab/system.py, lab/rootfs.py)."""

    def __init__(self, base: Path, ports: Ports, layout: str, release: str,
                 system: System) -> None:
        self.base = base
        self.ports = ports
        self.kinds = layout_kinds(layout)
        self.layout = layout
        self.system = system
        self.release = release

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
    def prom_config_path(self) -> Path:
        """The lab's config with host facts from its Prometheus (lab/hostmetrics.py)."""
        return self.base / "stordoc-prom.toml"

    @property
    def state_path(self) -> Path:
        return self.base / "lab.json"

    @property
    def on_host_script(self) -> Path:
        """``on-host HOST ARGV...``: ARGV in a UTS namespace named HOST (lab/ceph.py)."""
        return self.base / "bin" / "on-host"

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
        return state_at(self.base)

    def write_state(self, **kv: Any) -> None:
        st = self.read_state()
        st.update(kv)
        self.state_path.write_text(json.dumps(st, indent=1))

    @property
    def fsid(self) -> str:
        return str(self.read_state().get("fsid", ""))

