"""Findings and the check registry.

A finding has a stable UPPER_SNAKE ``code`` (like Ceph's health codes, safe to mute and
script against), a ``severity`` kept apart from the code, the ``entity`` it is about
(``osd.3``, ``pool rbd``, ``object ring d2@127.0.0.1:6210``), a one-line message, the
evidence, and the runbook that fixes it. Checks are registered explicitly with the codes
they may emit; the registry refuses a code registered twice.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.model import ClusterSnapshot


class Severity(enum.IntEnum):
    INFO = 0
    WARN = 1
    CRIT = 2

    @property
    def label(self) -> str:
        return self.name.lower()


class Verdict(enum.IntEnum):
    """A check run's verdict on Nagios' scale: the exit status of ``stordoc check``."""

    OK = 0
    WARN = 1
    CRIT = 2
    UNREACHABLE = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def of(cls, worst: Severity | None, unreachable: bool) -> Verdict:
        """Unreachable first; else the worst severity (INFO counts as OK)."""
        if unreachable:
            return cls.UNREACHABLE
        if worst is None or worst == Severity.INFO:
            return cls.OK
        return cls.WARN if worst == Severity.WARN else cls.CRIT


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    entity: str
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    runbook: str | None = None  # name of the runbook that fixes it, e.g. "osd-remount"
    target: str | None = None  # what to pass that runbook, e.g. "osd.1"
    since: float | None = None  # epoch seconds this condition started, when known

    @property
    def key(self) -> tuple[str, str]:
        """Identity across runs: the same code on the same entity is the same finding."""
        return (self.code, self.entity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.label,
            "entity": self.entity,
            "message": self.message,
            "evidence": dict(self.evidence),
            "runbook": self.runbook,
            "target": self.target,
            "since": self.since,
        }


@dataclass(frozen=True)
class CodeInfo:
    """Documentation of one code: what it means and what fixes it."""

    code: str
    severity: Severity  # the usual severity; a check may raise or lower it per finding
    summary: str
    runbook: str | None = None


@dataclass(frozen=True)
class Thresholds:
    """Tunable limits, from the settings ([thresholds] / per cluster). Defaults are sane."""

    pg_per_osd_target: int = 100
    pg_low_factor: float = 4.0  # pg_num below target/factor is too few
    pg_high_factor: float = 4.0  # pg_num above target*factor is too many
    mon_max_pg_per_osd: int = 250
    cache_near_target_ratio: float = 0.9
    swift_balance_max: float = 5.0  # percent
    swift_dispersion_max: float = 5.0  # percent
    swift_min_parts_per_device: int = 100
    swift_max_parts_per_device: int = 1_000_000
    # recon judgement (checks/swift_recon.py; docs/checks.md lists them)
    swift_replication_age_warn_s: float = 3 * 3600.0
    swift_replication_age_crit_s: float = 12 * 3600.0
    swift_replication_failures_warn: int = 10
    swift_async_pending_warn: int = 100
    swift_async_pending_crit: int = 10_000
    swift_quarantine_growth_warn: int = 10
    swift_history_window_s: float = 86400.0
    swift_fill_warn: float = 0.80
    swift_fill_crit: float = 0.90
    swift_fill_spread_warn: float = 0.20
    swift_load5_warn: float = 50.0
    swift_time_drift_max_s: float = 1.0
    swift_sockstat_orphan_warn: int = 5000
    swift_driveaudit_errors_max: int = 0
    swift_sweep_warn_s: float = 6 * 3600.0
    # dispersion (checks/swift_dispersion.py): % of sampled copies found
    swift_dispersion_copies_warn_pct: float = 100.0  # any missing copy warns
    swift_dispersion_copies_crit_pct: float = 90.0
    osd_nearfull_ratio_default: float = 0.85
    clock_skew_max_s: float = 0.05
    io_error_window_s: float = 86400.0
    # Ceph's devicehealth prediction (checks/device_health.py): its own defaults,
    # mgr/devicehealth warn_threshold (6 weeks) and mark_out_threshold (4 weeks)
    device_health_warn_s: float = 6 * 7 * 86400.0
    device_health_crit_s: float = 4 * 7 * 86400.0
    device_wear_warn: float = 0.9
    # PGs peering/activating this long after a stordoc run or an OSD change are
    # "settling after" it (INFO), not a CRIT incident (checks.settle.settle_cause)
    pg_settle_window_s: float = 120.0


@dataclass(frozen=True)
class CheckContext:
    thresholds: Thresholds = Thresholds()
    now: float = 0.0


CheckFn = Callable[[ClusterSnapshot, CheckContext], Iterable[Finding]]


@dataclass(frozen=True)
class RegisteredCheck:
    name: str
    fn: CheckFn
    codes: tuple[CodeInfo, ...]
    needs: tuple[str, ...]  # "ceph", "swift", "hosts": skipped when that part is missing
    # the parts it looks at (its needs, and what it reads when there: a Swift check
    # that compares the ring with the hosts): a part that could not be read leaves it blind
    reads: tuple[str, ...] = ()


_CODE_RE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")


class Registry:
    def __init__(self) -> None:
        self._checks: dict[str, RegisteredCheck] = {}
        self._codes: dict[str, CodeInfo] = {}

    def register(
        self, name: str, codes: Iterable[CodeInfo], needs: Iterable[str] = ("ceph",),
        reads: Iterable[str] = (),
    ) -> Callable[[CheckFn], CheckFn]:
        codes_t = tuple(codes)
        needs_t = tuple(needs)
        reads_t = tuple(dict.fromkeys((*needs_t, *reads)))

        def deco(fn: CheckFn) -> CheckFn:
            if name in self._checks:
                raise ValueError(f"check {name!r} registered twice")
            for ci in codes_t:
                if not _CODE_RE.match(ci.code):
                    raise ValueError(f"code {ci.code!r} is not UPPER_SNAKE")
                if ci.code in self._codes:
                    raise ValueError(f"code {ci.code} registered twice")
            for ci in codes_t:
                self._codes[ci.code] = ci
            self._checks[name] = RegisteredCheck(name, fn, codes_t, needs_t, reads_t)
            return fn

        return deco

    def add_code(self, info: CodeInfo) -> None:
        """Codes emitted by the engine itself (internal errors, unreachable parts)."""
        if info.code in self._codes:
            raise ValueError(f"code {info.code} registered twice")
        self._codes[info.code] = info

    @property
    def checks(self) -> tuple[RegisteredCheck, ...]:
        return tuple(self._checks.values())

    @property
    def codes(self) -> Mapping[str, CodeInfo]:
        return dict(self._codes)


REGISTRY = Registry()
check = REGISTRY.register
