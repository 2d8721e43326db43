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
    QuotaPrevious,
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
from storage.model.prom import PromProblem, PromStatus, StaleHost
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
class HeldChange:
    """A time-limited change stordoc made and reverts at its deadline
    (``storage.expiring``): a raised full ratio, noout on a host's OSDs."""

    id: int
    cluster: str
    kind: str  # "ratio" (key: nearfull_ratio...) | "osd-flag" (key: noout, on entities)
    key: str
    entities: tuple[str, ...]  # the OSDs of an osd-flag ("osd.0", ...); () for a ratio
    before: float | None  # a ratio's value before stordoc changed it
    after: float | None  # the value stordoc set
    deadline: float
    by: str
    created_at: float
    run_id: int | None
    state: str  # pending (written, not yet applied), held, reverted, left, ended, not_made
    reason: str = ""
    note: str = ""

    @property
    def what(self) -> str:
        if self.kind == "ratio":
            return f"{self.key} {self.before:g} -> {self.after:g}"
        return f"{self.key} on {', '.join(self.entities)}"


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
    # ``core.service.pipeline``; not saved with a snapshot)
    runs: tuple[RecentRun, ...] = ()
    # time-limited changes stordoc holds on the cluster (storage.expiring; the journal's,
    # put here by ``core.service.pipeline``; not saved with a snapshot)
    changes: tuple[HeldChange, ...] = ()
    # (epoch s, fill of the fullest OSD 0..1) of earlier checks (storage.fillhist), oldest
    # first: what ``checks.fill`` fits days-to-full on
    fill_history: tuple[tuple[float, float], ...] = ()
    # host facts from Prometheus (``storage.hostfacts.prom``): its errors, stale hosts,
    # unmatched series; None when the cluster has no ``prometheus`` (not saved either)
    prometheus: PromStatus | None = None


__all__ = [
    "BlockDevice",
    "CephDevice",
    "CephState",
    "QuotaPrevious",
    "CephVersions",
    "DaemonFacts",
    "HeldChange",
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
    "PromProblem",
    "PromStatus",
    "StaleHost",
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
