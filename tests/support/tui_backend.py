"""``SnapshotBackend``: the TUI's test double (tui.backend.Backend) over captured data.

Every refresh returns the same snapshot; the findings pass through the engine's one mute
rule (``checks.engine.apply_mutes``) with the mutes made here, which go through the real
checks too (``core.service.records.known_code``, ``checks.mutable.mute_refusal`` and
``storage.mutes.add_mute`` into an in-memory journal): a mute refused or ignored by the
product is refused or ignored here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import checks.catalog  # noqa: F401  (registers every code: the mute rule reads them)
from checks.engine import CheckReport, apply_mutes
from checks.incidents import correlate
from checks.model import REGISTRY, Finding
from checks.mutable import mute_refusal
from checks.outcome import CheckOutcome
from core.service.actions import ActionPlan
from core.service.records import AlertPost, UnknownCode, known_code
from storage.audit import AuditRun, AuditStep
from storage.journal import CheckRun, FindingRecord, Journal
from storage.model import ClusterSnapshot
from storage.mutes import active_mutes, add_mute
from storage.targets import ClusterTarget
from tui.backend import ActionRefused, BenchView, LogSink, ProgressSink, RunView


@dataclass
class SnapshotBackend:
    """Captured data: every refresh returns the same snapshot and findings (less muted).

    Used by TUI tests and the benchmarks (a synthetic 10,000-OSD cluster). With ``work``
    set, refresh also spends that many seconds of real CPU so the keystroke benchmark
    measures the UI while a refresh really runs.
    """

    snapshot: ClusterSnapshot
    findings: tuple[Finding, ...] = ()
    cluster_target: ClusterTarget | None = None
    history_rows: list[CheckRun] = field(default_factory=list)
    audit_rows: list[AuditRun] = field(default_factory=list)
    bench_rows: list[dict[str, Any]] = field(default_factory=list)
    audit_step_rows: dict[int, list[AuditStep]] = field(default_factory=dict)
    work: float = 0.0
    fresh: bool = False  # each refresh returns a new snapshot object (new taken_at)
    calls: int = 0
    mutes: list[tuple[str, str | None, float, str]] = field(default_factory=list)
    journal: Journal = field(default_factory=lambda: Journal(":memory:"))

    def clusters(self) -> Sequence[str]:
        return [self.snapshot.cluster]

    def target(self, cluster: str) -> ClusterTarget | None:
        return self.cluster_target

    def refresh(self, cluster: str) -> CheckOutcome:
        self.calls += 1
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < self.work:
            # real work in Python (holds the GIL like a collector's JSON parsing would)
            n += sum(1 for o in (self.snapshot.ceph.osds if self.snapshot.ceph else ())
                     if o.up)
        snap = self.snapshot
        if self.fresh:
            snap = replace(snap, taken_at=snap.taken_at + self.calls)
        rules = [(m.code, m.entity) for m in active_mutes(self.journal, snap.cluster)]
        shown, hidden, overridden = apply_mutes(self.findings, REGISTRY.codes,
                                                mute_rules=rules)
        report = CheckReport(snap.cluster, shown, snap.taken_at, 0.0, (), hidden, overridden)
        # grouped like a live check; next steps are not planned on captured data
        return CheckOutcome(snap, report, None, None, 0.0, 0.0,
                            correlate(report.findings, snap))

    def runbooks(self) -> Sequence[str]:
        return []

    def plan(self, cluster: str, runbook: str, target: str,
             options: Mapping[str, Any] | None = None) -> ActionPlan:
        raise ActionRefused("captured data: runbooks cannot run against it")

    def follow(self, cluster: str, runbook: str, on_line: Callable[[str, bool], None],
               cancel: threading.Event) -> None:
        """Captured data: nothing runs, so nothing to follow."""

    def mute(self, cluster: str, code: str, entity: str | None, for_s: float,
             reason: str) -> str:
        """Captured data: mutes hide findings in this session only."""
        try:
            code = known_code(code)
        except UnknownCode as e:
            raise ActionRefused(str(e)) from None
        refused = mute_refusal(code)
        if refused:
            raise ActionRefused(refused)
        try:
            m = add_mute(self.journal, self.snapshot.cluster, code, entity or None,
                         time.time() + for_s, "tui-test", reason)
        except ValueError as e:
            raise ActionRefused(str(e)) from None
        self.mutes.append((code, entity, for_s, reason))
        return f"muted {m.what} (captured data: this session only)"

    def execute(self, cluster: str, plan: ActionPlan, on_event: LogSink,
                cancel: threading.Event) -> RunView:
        raise ActionRefused("captured data: runbooks cannot run against it")

    def history(self, cluster: str, limit: int = 50) -> list[CheckRun]:
        return self.history_rows[:limit]

    def alert_stream(self, limit: int = 20) -> list[AlertPost]:
        return []

    def findings_of(self, run_id: int) -> list[FindingRecord]:
        return [FindingRecord(i, run_id, self.snapshot.cluster, f.code, f.severity.label,
                              f.entity, f.message, dict(f.evidence), f.runbook, f.target,
                              f.since) for i, f in enumerate(self.findings, 1)]

    def audit(self, cluster: str, limit: int = 50) -> list[AuditRun]:
        return self.audit_rows[:limit]

    def audit_steps(self, run_id: int) -> list[AuditStep]:
        return list(self.audit_step_rows.get(run_id, ()))

    def bench_available(self) -> bool:
        return True

    def bench_plan(self, cluster: str, kind: str, options: Mapping[str, Any]) -> ActionPlan:
        raise ActionRefused("captured data: benchmarks cannot run against it")

    def bench_run(self, cluster: str, plan: ActionPlan, on_progress: ProgressSink,
                  cancel: threading.Event) -> BenchView:
        raise ActionRefused("captured data: benchmarks cannot run against it")

    def bench_history(self, cluster: str, limit: int = 20) -> list[dict[str, Any]]:
        return self.bench_rows[:limit]
