"""Where a cluster is and how to reach it: plain typed values built from the settings.

``storage`` imports nothing of ours, so the settings model (in ``stordoc.settings``) turns
the TOML into these before any collector or runner sees it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CephTarget:
    conf: str  # path to ceph.conf
    keyring: str | None = None
    client: str = "client.admin"
    timeout_s: float = 10.0  # connect and per-command
    # the argv that runs osdmaptool (the map is given as /dev/stdin): tells whether each
    # PG has reported on the current osdmap (``storage.ceph.settle``); () = do not use it
    # (the stamp fallback, said so). It must not be older than the monitors' release.
    osdmaptool: tuple[str, ...] = ("osdmaptool",)


@dataclass(frozen=True)
class DaemonTarget:
    """A daemon stordoc watches on a host besides its OSDs (those come from the osdmap):
    ``mon.a``, ``mgr.x``, ``swift-object-server``, ``memcached``, ``rsyncd``... Its pid
    file, log, how to ask it whether it answers (a Ceph admin socket or a TCP port), its
    systemd unit, and the argv that starts it (runbook daemon-restart)."""

    name: str
    pid_file: str = ""
    log_file: str = ""
    admin_socket: str = ""
    port: int | None = None
    address: str = ""  # where the port listens; "" = the host's address
    unit: str = ""
    start: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostTarget:
    """One host reachable over SSH. Command templates are argv templates (no shell)."""

    name: str  # "node1" — the CRUSH host name when it runs OSDs
    address: str  # "127.0.0.2"
    port: int = 22
    user: str = "root"
    key_file: str | None = None
    known_hosts: str | None = None
    timeout_s: float = 10.0
    # argv templates, formatted with {id} (OSD id), {conf} (ceph.conf), {cluster}
    osd_start: tuple[str, ...] = ("systemctl", "start", "ceph-osd@{id}")
    osd_data_dir: str = "/var/lib/ceph/osd/{cluster}-{id}"
    osd_pid_file: str | None = None  # e.g. "/run/ceph/ceph-osd.{id}.pid"; else ps scan
    # how a tmpfs data dir is re-created (runbook osd-activate), per deployment flavour;
    # formatted with {id}, {conf}, {cluster}, {device}, {osd_fsid}, {fsid}
    osd_activate_raw: tuple[str, ...] = ("ceph-volume", "--cluster", "{cluster}", "raw",
                                         "activate", "--device", "{device}", "--no-systemd")
    osd_activate_lvm: tuple[str, ...] = ("ceph-volume", "--cluster", "{cluster}", "lvm",
                                         "activate", "--no-systemd", "{id}", "{osd_fsid}")
    # cephadm: the unit's container activates and runs the OSD in one go
    osd_start_cephadm: tuple[str, ...] = ("systemctl", "start", "ceph-{fsid}@osd.{id}")
    swift_devices_dir: str | None = None  # "/srv/node"
    # argv template, formatted with {server} (object, container or account)
    swift_server_start: tuple[str, ...] = ("systemctl", "start", "swift-{server}")
    swift_replicator_start: tuple[str, ...] = ("systemctl", "start",
                                               "swift-{server}-replicator")
    fstab_path: str = "/etc/fstab"
    # where this host's Swift servers read their rings (md5 of each *.ring.gz over SSH)
    swift_ring_dirs: tuple[str, ...] = ()
    # a daemon's life (checks/daemons.py): the OSDs' logs, admin sockets and units
    # ({id}, {cluster}), Ceph's crash dir, the other daemons of this host, and where the
    # restart runbook keeps a daemon's evidence before it restarts it
    osd_log_file: str | None = "/var/log/ceph/{cluster}-osd.{id}.log"
    osd_admin_socket: str | None = "/var/run/ceph/{cluster}-osd.{id}.asok"
    osd_unit: str | None = "ceph-osd@{id}.service"
    ceph_crash_dir: str | None = "/var/lib/ceph/crash"
    daemons: tuple[DaemonTarget, ...] = ()
    evidence_dir: str = "/var/lib/stordoc/evidence"


@dataclass(frozen=True)
class SwiftTarget:
    proxy_url: str | None = None  # "http://127.0.0.1:8080"
    auth_url: str | None = None  # "http://127.0.0.1:8080/auth/v1.0"
    user: str | None = None
    key: str | None = None
    swift_dir: str = "/etc/swift"  # rings (*.ring.gz) and builders (*.builder)
    recon_timeout_s: float = 5.0


@dataclass(frozen=True)
class ClusterTarget:
    name: str
    ceph: CephTarget | None = None
    swift: SwiftTarget | None = None
    hosts: tuple[HostTarget, ...] = field(default_factory=tuple)
    ceph_cluster_name: str = "ceph"

    def host(self, name: str) -> HostTarget | None:
        for h in self.hosts:
            if h.name == name or h.address == name:
                return h
        return None
