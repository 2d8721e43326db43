"""The hosts part of the snapshot: what one host said over SSH (mounts, block devices,
identities of unmounted devices, daemons, kernel I/O errors, OSD and Swift dirs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from storage.model.daemons import DaemonFacts


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
class OsdDataDir:
    """An OSD's data directory as its host sees it (the facts script's ``@@osd`` section)."""

    osd_id: int
    path: str
    exists: bool = False
    has_whoami: bool = False  # its ``whoami`` file is there: the OSD's files are in place
    block: str | None = None  # the device its ``block`` symlink resolves to; None: no link


@dataclass(frozen=True)
class SwiftDeviceDir:
    """A Swift ring device's directory on its host (``@@swift`` section)."""

    device: str  # ring device name, "d1"
    path: str
    exists: bool = False
    # server kind ("object", "container", "account") -> partition directories on it
    partitions: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class FsProbe:
    """One OSD data dir or Swift device judged on its host (the facts script's
    ``@@fsprobe KIND NAME`` section): mounted, read-only, a write probe (a file of
    stordoc's own, ``mktemp``-created and removed), and ``df``. ``None``: not known."""

    kind: str  # "osd" | "swift"
    name: str  # "1" (osd.1) | "d2"
    path: str
    mounted: bool = False
    source: str | None = None  # the mounted device, e.g. /dev/sdb1
    fstype: str | None = None
    readonly: bool | None = None  # the mount's options say ``ro``
    write_ok: bool | None = None  # None: not probed (not a mount point)
    write_error: str | None = None  # mktemp's or the write's message ("Read-only file system")
    size: int | None = None  # bytes, from df
    avail: int | None = None
    inodes_free: int | None = None
    df_error: str | None = None


@dataclass(frozen=True)
class XfsEvent:
    """A kernel line about one XFS filesystem (``XFS (loop5): ...``): it was mounted, shut
    down (``xfs_io -x -c shutdown``, a failing disk), or reported an error."""

    device: str  # kernel name, "loop5", "sdb1"
    kind: str  # "mount" | "unmount" | "shutdown" | "error"
    line: str
    when: float | None = None


@dataclass(frozen=True)
class SmartReport:
    """``smartctl -j -H -A`` of one whole disk. ``available`` False: no SMART data
    (loop/virtual device, smartctl missing, no permission): health unknown, not good."""

    device: str  # /dev/sdb
    available: bool
    passed: bool | None = None  # the overall-health self-assessment
    reason: str = ""  # why unavailable, or the failing attributes
    attributes: Mapping[str, int] = field(default_factory=dict)  # name -> raw value
    exit_status: int | None = None


@dataclass(frozen=True)
class HostRaw:
    """What one host's scripts printed, kept only when asked (a snapshot replays it
    through the same parser): the facts script's output, the identity script's (run only
    for unmounted devices), and when the run started by this host's wall clock."""

    facts: str
    identity: str | None = None
    started_at: float = 0.0
    window_s: float = 86400.0


@dataclass(frozen=True)
class NetCounters:
    """One interface's error and drop counters since boot (``/proc/net/dev``)."""

    rx_errs: int = 0
    rx_drop: int = 0
    tx_errs: int = 0
    tx_drop: int = 0

    @property
    def bad(self) -> int:
        return self.rx_errs + self.rx_drop + self.tx_errs + self.tx_drop


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
    osd_data: Mapping[int, OsdDataDir] = field(default_factory=dict)  # this host's OSDs
    swift_devices: Mapping[str, SwiftDeviceDir] = field(default_factory=dict)  # its ring devs
    lvm_volumes: tuple[LvmVolume, ...] = ()  # LVs tagged by ceph-volume lvm
    units: tuple[UnitState, ...] = ()  # OSD-related systemd units (when systemd runs)
    ring_md5: Mapping[str, str] = field(default_factory=dict)  # ring.gz path -> md5 (SSH)
    addresses: tuple[str, ...] = ()  # the host's interface addresses (``ip -o addr``); () unknown
    # filesystems and disks (checks/disks.py): probes of each OSD dir / Swift device, XFS
    # kernel events, SMART per whole disk; ``disks_collected`` False: an older script's
    # output (a saved snapshot) that had none of these, so nothing is known
    fs_probes: tuple[FsProbe, ...] = ()
    xfs_events: tuple[XfsEvent, ...] = ()
    smart: Mapping[str, SmartReport] = field(default_factory=dict)
    disks_collected: bool = False
    collected_at: float = 0.0
    duration_s: float = 0.0
    raw: HostRaw | None = None  # only when collected with ``keep_raw`` (snapshots)
    # every watched daemon of this host (its OSDs and its configured daemons): the facts
    # of its life, judged by checks/daemons.py
    daemon_facts: tuple[DaemonFacts, ...] = ()
    # interface -> error/drop counters (``/proc/net/dev``); None: not collected (an older
    # script's output, or no /proc/net/dev)
    net_counters: Mapping[str, NetCounters] | None = None

    @property
    def reachable(self) -> bool:
        return self.error is None

    @property
    def osd_dirs(self) -> dict[int, str]:
        """This host's OSD id -> data dir path."""
        return {i: d.path for i, d in self.osd_data.items()}

    @property
    def swift_dirs(self) -> dict[str, str]:
        """Its ring device name -> the directory it is mounted on."""
        return {n: d.path for n, d in self.swift_devices.items()}

    @property
    def swift_parts(self) -> dict[str, Mapping[str, int]]:
        """Ring device -> server kind -> partition directories on it."""
        return {n: d.partitions for n, d in self.swift_devices.items()}

    def mount_at(self, path: str) -> Mount | None:
        norm = path.rstrip("/")
        for m in self.mounts:
            if m.target.rstrip("/") == norm:
                return m
        return None
