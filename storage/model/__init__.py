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
from storage.model.hosts import (
    BlockDevice,
    Daemon,
    DeviceIdentity,
    FstabLine,
    HostFacts,
    HostRaw,
    IoError,
    LvmVolume,
    Mount,
    OsdDataDir,
    SwiftDeviceDir,
    UnitState,
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


__all__ = [
    "BlockDevice",
    "CephState",
    "CephVersions",
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
    "FstabLine",
    "HealthCheck",
    "HealthMute",
    "HostFacts",
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
    "SwiftDeviceDir",
    "SwiftState",
    "UnitState",
    "VersionCount",
    "release_major",
    "release_name",
    "version_key",
]
