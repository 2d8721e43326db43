"""Typed messages that thread workers post to the UI (workers never touch widgets)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.message import Message

from checks.outcome import CheckOutcome
from core.service.actions import ActionPlan
from tui.backend import BenchProgressView, BenchView, LogLine, RunView


class Refreshed(Message):
    """A refresh finished with an outcome (which may itself say a part is unreachable)."""

    def __init__(self, cluster: str, outcome: CheckOutcome) -> None:
        super().__init__()
        self.cluster = cluster
        self.outcome = outcome


class RefreshFailed(Message):
    """A refresh raised or timed out: keep the last data, show the error."""

    def __init__(self, cluster: str, error: str) -> None:
        super().__init__()
        self.cluster = cluster
        self.error = error


class Planned(Message):
    def __init__(self, plan: ActionPlan) -> None:
        super().__init__()
        self.plan = plan


class RunLogged(Message):
    """One event of a runbook as it runs (the live step log)."""

    def __init__(self, event: LogLine) -> None:
        super().__init__()
        self.event = event


class RunFinished(Message):
    def __init__(self, result: RunView) -> None:
        super().__init__()
        self.result = result


class HistoryLoaded(Message):
    def __init__(self, runs: Sequence[Any], audit: Sequence[Any]) -> None:
        super().__init__()
        self.runs = list(runs)
        self.audit = list(audit)


class BenchProgressed(Message):
    def __init__(self, progress: BenchProgressView) -> None:
        super().__init__()
        self.progress = progress


class BenchFinished(Message):
    def __init__(self, result: BenchView) -> None:
        super().__init__()
        self.result = result


class BenchHistoryLoaded(Message):
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.rows = rows
