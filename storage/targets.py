"""Where a cluster is and how to reach it: plain typed values built from the settings.

``storage`` imports nothing of ours, so the settings model (in ``core.settings``) turns
the TOML into these before any collector or runner sees it.
"""

from __future__ import annotations

import ipaddress
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
    # the argv that runs the rados CLI (``rados list-inconsistent-obj``: an OSD operation
    # python-rados does not offer), given -c/--keyring/-n of this target
    rados: tuple[str, ...] = ("rados",)


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
    # disk replacement (runbook osd-replace-disk): stop a running OSD ({pid} is the pid the
    # host reported), prepare a new device under a destroyed id, per deployment flavour
    osd_stop: tuple[str, ...] = ("systemctl", "stop", "ceph-osd@{id}")
    osd_prepare_raw: tuple[str, ...] = ("ceph-volume", "--cluster", "{cluster}", "raw",
                                        "prepare", "--bluestore", "--data", "{device}",
                                        "--osd-id", "{id}")
    osd_create_lvm: tuple[str, ...] = ("ceph-volume", "--cluster", "{cluster}", "lvm",
                                       "create", "--bluestore", "--data", "{device}",
                                       "--osd-id", "{id}", "--no-systemd")
    # a ceph-disk style XFS OSD rebuilt on a new disk (same id, same data dir): formatted
    # with {id}, {conf}, {cluster}, {device}, {data_dir}, {fs_uuid}, {osd_uuid}. No -f:
    # mkfs.xfs itself refuses a device that holds a filesystem
    osd_mkfs_xfs: tuple[str, ...] = ("mkfs.xfs", "-q", "-m", "uuid={fs_uuid}", "{device}")
    osd_mount_xfs: tuple[str, ...] = ("mount", "-t", "xfs", "-o", "noatime", "{device}",
                                      "{data_dir}")
    osd_keyring_new: tuple[str, ...] = ("ceph-authtool", "--create-keyring",
                                        "{data_dir}/keyring", "--gen-key", "-n", "osd.{id}")
    osd_keyring_print: tuple[str, ...] = ("ceph-authtool", "{data_dir}/keyring", "-p", "-n",
                                          "osd.{id}")
    osd_mkfs: tuple[str, ...] = ("ceph-osd", "--cluster", "{cluster}", "-i", "{id}", "--mkfs",
                                 "--osd-uuid", "{osd_uuid}")
    osd_chown: tuple[str, ...] = ("chown", "-R", "ceph:ceph", "{data_dir}")
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
class PromTarget:
    """A Prometheus that scrapes a node_exporter on the cluster's hosts: host facts for
    every host from it (``storage.hostfacts.prom``), SSH only for the hosts in question."""

    url: str  # "http://127.0.0.1:9090"
    timeout_s: float = 10.0  # per query: connect, each read, and the whole answer
    stale_s: float = 180.0  # a host whose node_exporter sample is older is unknown
    job: str = "node"  # the scrape job of the node_exporters (``up{job="node"}``)
    # at most this many hosts get SSH per check (those Ceph/Swift/Prometheus name first,
    # then those Prometheus cannot speak for); 0: never SSH, Prometheus only
    ssh_max_hosts: int = 64


@dataclass(frozen=True)
class SwiftTarget:
    proxy_url: str | None = None  # "http://127.0.0.1:8080"
    auth_url: str | None = None  # "http://127.0.0.1:8080/auth/v1.0"
    user: str | None = None
    key: str | None = None
    swift_dir: str = "/etc/swift"  # rings (*.ring.gz) and builders (*.builder)
    recon_timeout_s: float = 5.0


@dataclass(frozen=True)
class HostDiscovery:
    """``hosts_from``: which parts of the cluster name its hosts (``ceph``: CRUSH hosts
    at their OSDs' public address; ``swift``: the rings' storage servers), and the host
    every found one is built from (``name``/``address`` blank: filled per host)."""

    sources: tuple[str, ...]
    defaults: HostTarget = field(default_factory=lambda: HostTarget(name="", address=""))


@dataclass(frozen=True)
class ClusterTarget:
    name: str
    ceph: CephTarget | None = None
    swift: SwiftTarget | None = None
    hosts: tuple[HostTarget, ...] = field(default_factory=tuple)
    ceph_cluster_name: str = "ceph"
    prometheus: PromTarget | None = None  # host facts from Prometheus when set
    # hosts found from the cluster at check time (storage.discover.resolve_hosts)
    discovery: HostDiscovery | None = None

    def hosts_named(self, spelling: str) -> tuple[HostTarget, ...]:
        """Every configured host ``spelling`` may mean: the host of that exact name; else
        the name in another case or with a trailing dot (``NODE1``, ``node1.``); else the
        host whose address it is (``127.0.0.2``, an IPv6 address in any of its spellings,
        a DNS name in another case). More than one: ambiguous, the caller says so. Only an
        ASCII spelling is folded: ``str.lower`` maps look-alikes (the Kelvin sign K) onto
        ASCII letters, and a look-alike must never name a host."""
        exact = tuple(h for h in self.hosts if h.name == spelling)
        if exact or not spelling.isascii():
            return exact
        key = host_key(spelling)
        by_name = tuple(h for h in self.hosts if host_key(h.name) == key)
        if by_name:
            return by_name
        ip = ip_of(key)
        return tuple(h for h in self.hosts if host_key(h.address) == key
                     or (ip is not None and ip_of(h.address) == ip))

    def host(self, name: str) -> HostTarget | None:
        """The one configured host ``name`` means (``hosts_named``), else None."""
        found = self.hosts_named(name)
        return found[0] if len(found) == 1 else None


def host_key(spelling: str) -> str:
    """A host spelling without what does not make another host: case, one trailing dot
    (the DNS root), surrounding blanks and the brackets of an IPv6 literal."""
    t = spelling.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1]
    if t.endswith(".") and not t.endswith(".."):
        t = t[:-1]
    return t.lower()


def ip_of(spelling: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a spelling names (an IPv4-mapped IPv6 one as its IPv4), or None."""
    try:
        ip = ipaddress.ip_address(host_key(spelling))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip
