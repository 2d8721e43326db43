"""Typed, immutable snapshot of one cluster: what the collectors saw, nothing derived.

Every collector fills its own part; an unreachable monitor, host or Swift server is
recorded as an error string in the snapshot, never raised past the collector. Checks are
pure functions of a ``ClusterSnapshot``. All types are frozen dataclasses built from
tuples so that a snapshot can be shared between threads (TUI workers, the bot) safely.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------- Ceph


@dataclass(frozen=True)
class OsdState:
    """One OSD as ``osd dump`` and ``osd tree`` describe it together.

    ``up``/``in_`` come from ``osd dump`` (0/1); ``host`` is the CRUSH host bucket from
    ``osd tree``; ``reweight`` 0 means out. ``down_since`` / ``out_since`` are epoch
    seconds when known (from ``osd dump``'s ``down_stamp`` / xinfo), used for "how long".
    """

    id: int
    uuid: str
    up: bool
    in_: bool
    exists: bool
    host: str | None
    crush_weight: float
    reweight: float
    device_class: str | None = None
    state: tuple[str, ...] = ()  # e.g. ("exists", "up") from osd dump
    up_from: int = 0
    up_thru: int = 0
    down_at: int = 0
    down_since: float | None = None
    public_addr: str | None = None
    destroyed: bool = False
    new: bool = False  # created but never booted ("new" state)

    @property
    def name(self) -> str:
        return f"osd.{self.id}"


@dataclass(frozen=True)
class CrushHost:
    name: str
    osd_ids: tuple[int, ...]


@dataclass(frozen=True)
class PoolState:
    """One pool from ``osd pool ls detail`` (id key ``pool_id``) / ``osd dump`` (``pool``)."""

    id: int
    name: str
    size: int
    min_size: int
    pg_num: int
    pgp_num: int
    pg_num_target: int
    crush_rule: int
    type: str  # "replicated" | "erasure"
    application: tuple[str, ...] = ()
    pg_autoscale_mode: str = "off"
    target_size_ratio: float = 0.0
    target_size_bytes: int = 0
    # cache tiering
    tier_of: int = -1
    tiers: tuple[int, ...] = ()
    read_tier: int = -1
    write_tier: int = -1
    cache_mode: str = "none"
    target_max_bytes: int = 0
    target_max_objects: int = 0
    cache_target_dirty_ratio_micro: int = 400000
    cache_target_dirty_high_ratio_micro: int = 600000
    cache_target_full_ratio_micro: int = 800000
    hit_set_type: str = "none"
    hit_set_count: int = 0
    hit_set_period: int = 0
    min_read_recency_for_promote: int = 0
    min_write_recency_for_promote: int = 0
    quota_max_bytes: int = 0
    quota_max_objects: int = 0
    # usage from ``df``
    stored_bytes: int = 0
    objects: int = 0
    max_avail_bytes: int = 0
    percent_used: float = 0.0


@dataclass(frozen=True)
class PgSummary:
    num_pgs: int
    by_state: Mapping[str, int]  # "active+clean" -> 69
    stuck: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # "inactive" -> pgids


@dataclass(frozen=True)
class HealthCheck:
    """One entry of ``health detail``: Ceph's own code, severity, summary and details."""

    code: str
    severity: str  # "HEALTH_WARN" | "HEALTH_ERR"
    summary: str
    detail: tuple[str, ...] = ()
    muted: bool = False


@dataclass(frozen=True)
class OsdUsage:
    id: int
    utilization: float  # percent
    kb: int = 0
    kb_avail: int = 0


@dataclass(frozen=True)
class CephState:
    """What the monitors said. ``raw`` keeps each command's JSON for evidence and tests."""

    fsid: str
    version: str  # e.g. "16.2.15"
    release: str  # e.g. "pacific"
    epoch: int
    flags: tuple[str, ...]
    osds: tuple[OsdState, ...]
    hosts: tuple[CrushHost, ...]
    pools: tuple[PoolState, ...]
    pgs: PgSummary
    health_status: str
    health_checks: tuple[HealthCheck, ...]
    full_ratio: float
    backfillfull_ratio: float
    nearfull_ratio: float
    osd_usage: tuple[OsdUsage, ...] = ()
    mon_quorum: tuple[str, ...] = ()
    mon_names: tuple[str, ...] = ()
    config: Mapping[str, str] = field(default_factory=dict)  # mon_max_pg_per_osd, ...
    total_bytes: int = 0
    total_avail_bytes: int = 0
    collected_at: float = 0.0
    raw: Mapping[str, Any] = field(default_factory=dict)

    def osd(self, osd_id: int) -> OsdState | None:
        for o in self.osds:
            if o.id == osd_id:
                return o
        return None

    def pool(self, name: str) -> PoolState | None:
        for p in self.pools:
            if p.name == name:
                return p
        return None


# --------------------------------------------------------------------------- hosts


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    fstype: str
    options: str = ""


@dataclass(frozen=True)
class BlockDevice:
    """``lsblk -J -b -o NAME,PATH,TYPE,SIZE,FSTYPE,UUID,MOUNTPOINT,...`` / ``blkid``."""

    path: str
    type: str  # disk | part | loop | lvm
    size: int
    fstype: str | None
    uuid: str | None
    mountpoint: str | None
    backing_file: str | None = None  # loop devices


@dataclass(frozen=True)
class DeviceIdentity:
    """What an (unmounted) device says it is: read from its filesystem, read-only.

    For an OSD data device: ``whoami`` (OSD id) and ``ceph_fsid`` (cluster fsid).
    For a Swift device: the device label/dir name it carries, if any.
    """

    device: str
    whoami: int | None = None
    ceph_fsid: str | None = None
    osd_fsid: str | None = None
    label: str | None = None
    # where the identity was read: "xfs" (files of a ceph-disk style data partition),
    # "bluestore" (the BlueStore label, ``ceph-bluestore-tool show-label``: ceph-volume
    # raw), "lvm" (LV tags: ceph-volume lvm)
    kind: str = "xfs"
    # the label holds what ``prime-osd-dir`` needs to rebuild a tmpfs data dir (osd_key,
    # ready); the key itself is never kept
    activatable: bool = False


@dataclass(frozen=True)
class FstabLine:
    device: str
    mountpoint: str
    fstype: str
    options: str
    commented: bool  # a deliberately disabled line ("#/dev/sdb1 /srv/node/d1 ...")
    raw: str = ""


@dataclass(frozen=True)
class Daemon:
    kind: str  # "ceph-osd", "ceph-mon", "swift-object-server", ...
    ident: str  # "0" for osd.0, "a" for mon.a, server name for swift
    pid: int | None
    running: bool


@dataclass(frozen=True)
class IoError:
    device: str  # "loop3", "sdb"
    line: str
    when: float | None = None


@dataclass(frozen=True)
class LvmVolume:
    """An LV that ceph-volume lvm tagged (``lvs -o lv_tags`` / ``ceph-volume lvm list``)."""

    lv_path: str
    vg_name: str
    lv_name: str
    osd_id: int | None
    osd_fsid: str | None
    cluster_fsid: str | None
    cluster_name: str | None = None
    type: str = "block"  # ceph.type: block | db | wal
    active: bool = True  # lv_active == "active" (unknown counts as active)
    devices: tuple[str, ...] = ()  # physical devices under it


@dataclass(frozen=True)
class UnitState:
    """A systemd unit that matters for an OSD (``systemctl show``, ``journalctl -u``)."""

    unit: str  # ceph-osd@3.service, ceph-volume@lvm-3-UUID.service, ceph-FSID@osd.3.service
    osd_id: int | None
    active_state: str  # active | failed | inactive | activating ...
    sub_state: str = ""
    result: str = ""  # success | exit-code | timeout ...
    since: str | None = None  # StateChangeTimestamp as printed
    log_tail: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostFacts:
    """Facts from one host over SSH. ``error`` set means the host did not answer."""

    name: str
    address: str
    error: str | None = None
    mounts: tuple[Mount, ...] = ()
    block_devices: tuple[BlockDevice, ...] = ()
    identities: tuple[DeviceIdentity, ...] = ()  # of devices NOT mounted
    fstab: tuple[FstabLine, ...] = ()
    daemons: tuple[Daemon, ...] = ()
    # swift-(object|container|account)-server processes (ident = their config file)
    swift_processes: tuple[Daemon, ...] = ()
    # TCP port -> (pid, process name) of what listens on it (``ss -ltnp``); None = unknown
    listeners: Mapping[int, tuple[int | None, str]] | None = None
    io_errors: tuple[IoError, ...] = ()
    dirs: Mapping[str, bool] = field(default_factory=dict)  # path -> exists (OSD/Swift dirs)
    links: Mapping[str, str] = field(default_factory=dict)  # "DIR/block" -> resolved device
    osd_dirs: Mapping[int, str] = field(default_factory=dict)  # this host's OSD id -> data dir
    swift_dirs: Mapping[str, str] = field(default_factory=dict)  # its ring device -> dir
    # its ring device -> server kind -> partition directories on it (data to replicate)
    swift_parts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    lvm_volumes: tuple[LvmVolume, ...] = ()  # LVs tagged by ceph-volume lvm
    units: tuple[UnitState, ...] = ()  # OSD-related systemd units (when systemd runs)
    ring_md5: Mapping[str, str] = field(default_factory=dict)  # ring.gz path -> md5 (SSH)
    addresses: tuple[str, ...] = ()  # the host's interface addresses (``ip -o addr``); () unknown
    collected_at: float = 0.0
    duration_s: float = 0.0

    @property
    def reachable(self) -> bool:
        return self.error is None

    def mount_at(self, path: str) -> Mount | None:
        norm = path.rstrip("/")
        for m in self.mounts:
            if m.target.rstrip("/") == norm:
                return m
        return None


# --------------------------------------------------------------------------- Swift


@dataclass(frozen=True)
class RingDevice:
    id: int
    region: int
    zone: int
    ip: str
    port: int
    device: str
    weight: float
    parts: int
    parts_wanted: int = 0
    replication_ip: str | None = None
    replication_port: int | None = None
    meta: str = ""

    @property
    def endpoint(self) -> str:
        return f"{self.device}@{self.ip}:{self.port}"


@dataclass(frozen=True)
class RingState:
    """One ring (object, account, container, object-N) from ring.gz and its builder."""

    kind: str  # "object", "account", "container", "object-1"
    ring_path: str | None
    builder_path: str | None
    part_power: int
    replicas: float
    min_part_hours: int
    devices: tuple[RingDevice, ...]
    balance: float | None = None  # percent, from the builder
    dispersion: float | None = None  # percent, from the builder
    ring_mtime: float | None = None
    builder_mtime: float | None = None
    ring_md5: str | None = None
    builder_matches_ring: bool | None = None  # builder's devs/replicas/parts vs ring.gz
    last_rebalance_hours_ago: float | None = None
    error: str | None = None
    builder_replicas: float | None = None  # the builder's (planned) replicas, may differ


@dataclass(frozen=True)
class ReconHost:
    """Recon answers of one storage server (``ip:port``)."""

    ip: str
    port: int
    server: str  # "object" | "container" | "account"
    error: str | None = None
    # why it did not answer: "refused" (nothing listens: process down), "timeout",
    # "http" (an HTTP error status), "no-recon" (answers, but not recon: middleware
    # missing), "bad-json"; None when every recon answer arrived
    error_kind: str | None = None
    unmounted: tuple[str, ...] = ()  # device names
    diskusage: tuple[Mapping[str, Any], ...] = ()
    ringmd5: Mapping[str, str] = field(default_factory=dict)  # path -> md5
    swiftconfmd5: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- dispersion


@dataclass(frozen=True)
class Copy:
    """One replica asked: the ring device it should be on and what it answered."""

    kind: str  # "object" or "container"
    name: str  # container or container/object
    ip: str
    port: int
    device: str
    partition: int
    status: int | None  # HTTP status; None when the server could not be asked
    error: str | None = None

    @property
    def found(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def missing(self) -> bool:
        return self.status == 404


@dataclass(frozen=True)
class DispersionPart:
    """Objects or containers: how many were sampled and what each replica answered."""

    kind: str
    sampled: int
    replicas: int
    copies: tuple[Copy, ...] = ()

    @property
    def expected(self) -> int:
        return len(self.copies)

    @property
    def found(self) -> int:
        return sum(1 for c in self.copies if c.found)

    @property
    def missing(self) -> int:
        return sum(1 for c in self.copies if c.missing)

    @property
    def errors(self) -> int:
        return sum(1 for c in self.copies if not c.found and not c.missing)

    @property
    def pct_found(self) -> float | None:
        """Copies found among those asked that answered (100.0 = all there)."""
        asked = self.found + self.missing
        return 100.0 * self.found / asked if asked else None

    def missing_by_device(self) -> Counter[tuple[str, int, str]]:
        return Counter((c.ip, c.port, c.device) for c in self.copies if c.missing)

    def lost(self) -> list[str]:
        """Names none of whose replicas answered "found" while at least one said 404."""
        by: dict[str, list[Copy]] = {}
        for c in self.copies:
            by.setdefault(c.name, []).append(c)
        return sorted(n for n, cs in by.items()
                      if not any(c.found for c in cs) and any(c.missing for c in cs))


@dataclass(frozen=True)
class DispersionState:
    """What ``storage.dispersion.sample`` saw (``populated`` False: nothing to sample)."""

    populated: bool
    account: str | None = None
    objects: DispersionPart | None = None
    containers: DispersionPart | None = None
    error: str | None = None
    sampled_at: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class SwiftState:
    rings: tuple[RingState, ...]
    recon: tuple[ReconHost, ...]
    proxy_url: str | None = None
    proxy_healthy: bool | None = None
    proxy_error: str | None = None
    local_ring_md5: Mapping[str, str] = field(default_factory=dict)
    local_swiftconf_md5: str | None = None
    collected_at: float = 0.0
    # earlier recon numbers from the journal: entity -> metric -> (taken_at, value)
    history: Mapping[str, Mapping[str, tuple[float, float]]] = field(default_factory=dict)
    dispersion: DispersionState | None = None  # None: not sampled (no auth configured)

    def ring(self, kind: str) -> RingState | None:
        for r in self.rings:
            if r.kind == kind:
                return r
        return None


# --------------------------------------------------------------------------- whole cluster


@dataclass(frozen=True)
class ClusterSnapshot:
    """Everything known about one cluster at one moment.

    ``ceph``/``swift`` are None when the cluster has no such part configured *or* when it
    could not be reached; ``ceph_error``/``swift_error`` tell which. ``hosts`` maps the
    configured host name to its facts (possibly an error).
    """

    cluster: str
    taken_at: float
    ceph: CephState | None = None
    ceph_error: str | None = None
    swift: SwiftState | None = None
    swift_error: str | None = None
    hosts: Mapping[str, HostFacts] = field(default_factory=dict)
    host_facts_collected: bool = False
    duration_s: float = 0.0
