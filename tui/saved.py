"""The TUI on a saved snapshot (``stordoc tui --from DIR``): the diagnosis a live check
would have given at that moment, every screen that reads it, and nothing that acts (a
snapshot is the past: no runbook, benchmark or mute can reach the cluster through it)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checks.outcome import CheckOutcome
from core.service.actions import ActionPlan
from core.service.records import AlertPost
from core.service.snapshots import Replay
from storage.audit import AuditRun, AuditStep
from storage.journal import CheckRun, FindingRecord
from storage.targets import ClusterTarget
from tui.backend import ActionRefused, BenchView, LogSink, ProgressSink, RunView

READ_ONLY = "a saved snapshot: nothing can be run, muted or benchmarked through it"


@dataclass
class SavedSnapshotBackend:
    """One replayed snapshot (``core.service.snapshots.load``); every refresh returns it."""

    replay: Replay

    def clusters(self) -> Sequence[str]:
        return [self.replay.doc.cluster]

    def target(self, cluster: str) -> ClusterTarget | None:
        return self.replay.target

    def refresh(self, cluster: str) -> CheckOutcome:
        return self.replay.outcome

    def runbooks(self) -> Sequence[str]:
        return []

    def plan(self, cluster: str, runbook: str, target: str,
             options: Mapping[str, Any] | None = None) -> ActionPlan:
        raise ActionRefused(READ_ONLY)

    def execute(self, cluster: str, plan: ActionPlan, on_event: LogSink,
                cancel: threading.Event) -> RunView:
        raise ActionRefused(READ_ONLY)

    def follow(self, cluster: str, runbook: str, on_line: Callable[[str, bool], None],
               cancel: threading.Event) -> None:
        """Nothing runs against a snapshot: nothing to follow."""

    def mute(self, cluster: str, code: str, entity: str | None, for_s: float,
             reason: str) -> str:
        raise ActionRefused(READ_ONLY)

    def history(self, cluster: str, limit: int = 50) -> list[CheckRun]:
        return []

    def alert_stream(self, limit: int = 20) -> list[AlertPost]:
        return []

    def findings_of(self, run_id: int) -> list[FindingRecord]:
        return []

    def audit(self, cluster: str, limit: int = 50) -> list[AuditRun]:
        return []

    def audit_steps(self, run_id: int) -> list[AuditStep]:
        return []

    def bench_available(self) -> bool:
        return False

    def bench_plan(self, cluster: str, kind: str, options: Mapping[str, Any]) -> ActionPlan:
        raise ActionRefused(READ_ONLY)

    def bench_run(self, cluster: str, plan: ActionPlan, on_progress: ProgressSink,
                  cancel: threading.Event) -> BenchView:
        raise ActionRefused(READ_ONLY)

    def bench_history(self, cluster: str, limit: int = 20) -> list[dict[str, Any]]:
        return []
