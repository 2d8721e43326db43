"""Typed, immutable snapshot of one cluster: what the collectors saw, nothing derived.

Every collector fills its own part; an unreachable monitor, host or Swift server is
recorded as an error string in the snapshot, never raised past the collector. Checks are
pure functions of a ``ClusterSnapshot``. All types are frozen dataclasses built from
tuples so that a snapshot can be shared between threads (TUI workers, the bot) safely.

By domain: ``storage.model.ceph`` (monitors, manager), ``storage.model.hosts`` (SSH host
facts), ``storage.model.swift`` (rings, recon, dispersion); every name is importable from
``storage.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from storage.model.ceph import (
    RELEASES,
    CephDevice,
    CephState,
    CephVersions,
    ConfigSetting,
    CrashReport,
    CrushHost,
    DaemonVersion,
    HealthCheck,
    HealthMute,
    OsdState,
    OsdUsage,
    PgSummary,
    PoolAutoscale,
    PoolState,
    RunningConfig,
    VersionCount,
    release_major,
    release_name,
    version_key,
)
from storage.model.daemons import DaemonFacts, DaemonLife, DaemonStatus, daemon_kind
from storage.model.hosts import (
    BlockDevice,
    Daemon,
    DeviceIdentity,
    FsProbe,
    FstabLine,
    HostFacts,
    HostRaw,
    IoError,
    LvmVolume,
    Mount,
    NetCounters,
    OsdDataDir,
    SmartReport,
    SwiftDeviceDir,
    UnitState,
    XfsEvent,
)
from storage.model.swift import (
    QUARANTINE_KINDS,
    Copy,
    DiskUsage,
    DispersionPart,
    DispersionState,
    JsonValue,
    Load,
    Quarantined,
    ReconHost,
    Replication,
    RingDevice,
    RingState,
    Sockstat,
    SweepTimes,
    SwiftState,
)


@dataclass(frozen=True)
class RecentRun:
    """A runbook run stordoc made on the cluster, as the journal's audit has it: what a
    check needs to tell the change's own effects (PGs peering after it, a flag it holds)
    from a fault. ``flags``: osdmap flags the run set (``flags_held``: and has not unset
    yet)."""

    id: int
    runbook: str
    target: str
    started_at: float
    finished_at: float | None  # None: still running
    outcome: str  # running, success, failed, ...
    flags: tuple[str, ...] = ()
    flags_held: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``run #6 osd-remount osd.1``"""
        return f"run #{self.id} {self.runbook} {self.target}"


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
    # runbook runs of this cluster running or finished lately (the journal's, put here by
    # ``checks.service``; not saved with a snapshot)
    runs: tuple[RecentRun, ...] = ()


__all__ = [
    "BlockDevice",
    "CephDevice",
    "CephState",
    "CephVersions",
    "DaemonFacts",
    "DaemonLife",
    "DaemonStatus",
    "daemon_kind",
    "ClusterSnapshot",
    "ConfigSetting",
    "Copy",
    "CrashReport",
    "CrushHost",
    "Daemon",
    "DaemonVersion",
    "DeviceIdentity",
    "DiskUsage",
    "DispersionPart",
    "DispersionState",
    "FsProbe",
    "FstabLine",
    "HealthCheck",
    "HealthMute",
    "HostFacts",
    "NetCounters",
    "HostRaw",
    "IoError",
    "JsonValue",
    "Load",
    "LvmVolume",
    "Mount",
    "OsdDataDir",
    "OsdState",
    "OsdUsage",
    "PgSummary",
    "RecentRun",
    "PoolAutoscale",
    "PoolState",
    "QUARANTINE_KINDS",
    "Quarantined",
    "RELEASES",
    "ReconHost",
    "Replication",
    "RingDevice",
    "RingState",
    "RunningConfig",
    "Sockstat",
    "SweepTimes",
    "SmartReport",
    "SwiftDeviceDir",
    "SwiftState",
    "UnitState",
    "XfsEvent",
    "VersionCount",
    "release_major",
    "release_name",
    "version_key",
]
