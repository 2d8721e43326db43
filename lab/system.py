"""The release seam: which Ceph/Swift programs the lab runs, and how their paths look.

Every Ceph or Swift program the lab runs (``ceph-mon``, ``ceph-mgr``, ``ceph-osd``,
``ceph-volume``, ``ceph-authtool``, ``monmaptool``, ``ceph``, ``swift-*-server``,
``swift-*-replicator``, ``swift-ring-builder``, ``swift-recon-cron``, ...) is built by
:meth:`System.argv`, also the argv the lab writes into ``stordoc.toml`` (``osd_start``,
``osd_activate_raw``) and the Swift start scripts. Host tools (``mount``, ``losetup``,
``mkfs.xfs``, ``sshd``, ``memcached``, ``rsync``, Prometheus) do not go through it.

Every path a daemon of that release sees (in its argv, in ceph.conf and the Swift confs)
goes through :meth:`System.daemon_path`; every fixed path the release owns that the host
reads or writes (``/var/lib/ceph/osd``, ``/var/lib/ceph/bootstrap-osd``,
``/etc/swift/swift.conf``) goes through :meth:`System.host_path`. The contract:
``daemon_path(host_path(p)) == p`` for those fixed paths, and the lab's base directory is
seen at the same path by host and daemons.

Today's lab runs the host's own release (Debian's packages), where all three are the
identity. Another release (e.g. Reef unpacked in a root filesystem ``ROOTFS``) is a
subclass whose ``argv`` prefixes ``chroot ROOTFS`` and whose ``host_path`` maps ``/x`` to
``ROOTFS/x`` (with the lab's base directory bind-mounted at the same path inside).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


class System:
    """The Ceph/Swift release the lab runs: the host's own packages."""

    name = "host"
    # ceph-mgr's environment and the mgr modules it must not load (a release whose
    # packages break some module says so here; see lab/rootfs.py)
    mgr_env: tuple[str, ...] = ()
    mgr_disabled_modules: str | None = None
    osd_conf_extra = ""  # more [osd] lines for this release's ceph.conf

    def argv(self, argv: Sequence[str]) -> list[str]:
        """The command line that runs ``argv`` (a Ceph/Swift program and its arguments)."""
        return list(argv)

    def daemon_path(self, path: str | os.PathLike[str]) -> str:
        """How a program of this release sees ``path`` (a host path)."""
        return str(path)

    def host_path(self, path: str) -> Path:
        """Where the host finds ``path``, a fixed path of this release's filesystem."""
        return Path(path)


HOST = System()
