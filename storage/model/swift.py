"""The Swift part of the snapshot: rings, recon answers, dispersion samples.

Every fact a check reads is a typed field; recon's answers are parsed once, by
``storage.swift_recon_parse`` (``ReconHost.raw`` is kept only to write captures).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypedDict

# A JSON value as recon sent it: what a finding shows as evidence unchanged (never judged).
JsonValue: TypeAlias = (
    "None | bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue]")


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


QUARANTINE_KINDS = ("objects", "containers", "accounts")


@dataclass(frozen=True)
class Quarantined:
    """``/recon/quarantined``: quarantined items of the node (None: no number reported)."""

    objects: float | None = None
    containers: float | None = None
    accounts: float | None = None

    def by_kind(self) -> tuple[tuple[str, float | None], ...]:
        """(kind, count) in the order of ``QUARANTINE_KINDS``."""
        return (("objects", self.objects), ("containers", self.containers),
                ("accounts", self.accounts))


class Replication(TypedDict):
    """A server's last replication pass as recon reports it (None: not reported)."""

    last: float | None  # epoch seconds it completed
    duration_s: float | None
    failures: float | None
    attempted: float | None


@dataclass(frozen=True)
class Load:
    """``/recon/load``: the node's load averages."""

    avg_1m: float | None = None
    avg_5m: float | None = None
    avg_15m: float | None = None
    reported: Mapping[str, JsonValue] = field(default_factory=dict)  # the answer (evidence)


@dataclass(frozen=True)
class Sockstat:
    """``/recon/sockstat``: the node's TCP sockets."""

    orphan: float | None = None
    reported: Mapping[str, JsonValue] = field(default_factory=dict)  # the answer (evidence)


@dataclass(frozen=True)
class SweepTimes:
    """Seconds of the last sweep/pass of the server's background daemons (None: not
    reported): ``updater/<server>``, ``auditor/<server>`` (and the object auditor's ALL
    and ZBF passes), ``expirer/object`` (object servers only)."""

    updater_s: float | None = None
    auditor_s: float | None = None
    object_auditor_all_s: float | None = None
    object_auditor_zbf_s: float | None = None
    expirer_s: float | None = None


@dataclass(frozen=True)
class DiskUsage:
    """One entry of ``/recon/diskusage``: a directory under the server's ``devices``.
    Recon sends ``mounted: false`` (and empty strings for the sizes) for an unmounted
    device, the error's text in ``mounted`` when it could not tell."""

    device: str
    mounted: bool = False  # recon said ``true``
    size: float | None = None  # bytes; None when not a number
    used: float | None = None
    avail: float | None = None
    error: str | None = None  # recon's text in place of ``mounted``

    @property
    def fill(self) -> float | None:
        """Used / size of a mounted device with numbers to tell, else None (Python's json
        reads ``NaN`` and ``Infinity``: no fill from them)."""
        if not self.mounted or not self.size or self.used is None or \
                not math.isfinite(self.size) or not math.isfinite(self.used):
            return None
        return self.used / self.size


@dataclass(frozen=True)
class ReconHost:
    """Recon answers of one storage server (``ip:port``), parsed by
    ``storage.swift_recon_parse.recon_from_raw``. A fact whose answer did not arrive (or
    had an unknown shape) is None."""

    ip: str
    port: int
    server: str  # "object" | "container" | "account"
    error: str | None = None
    # why it did not answer: "refused" (nothing listens: process down), "timeout",
    # "http" (an HTTP error status), "no-recon" (answers, but not recon: middleware
    # missing), "bad-json"; None when every recon answer arrived
    error_kind: str | None = None
    unmounted: tuple[str, ...] = ()  # device names
    diskusage: tuple[DiskUsage, ...] = ()
    ringmd5: Mapping[str, str] = field(default_factory=dict)  # path -> md5
    swiftconfmd5: str | None = None
    unmounted_answered: bool = False  # /recon/unmounted arrived (else ``unmounted`` unknown)
    quarantined: Quarantined | None = None
    async_pending: float | None = None  # /recon/async (object servers)
    replication: Replication | None = None  # /recon/replication/<server>
    # that answer as recon sent it: the evidence of a replicator that never completed a pass
    replication_reported: Mapping[str, JsonValue] | None = None
    load: Load | None = None
    remote_time: float | None = None  # /recon/time: the server's clock
    local_time: float | None = None  # this host's clock at the middle of that request
    rtt_s: float | None = None  # that request's round trip
    sockstat: Sockstat | None = None
    drive_audit_errors: float | None = None  # /recon/driveaudit
    sweep_times: SweepTimes = field(default_factory=SweepTimes)
    # recon's JSON answers by check name ("_local_time", "_rtt_s", "_errors" added): kept
    # only to write captures; checks and runbooks read the typed fields above, never this
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
