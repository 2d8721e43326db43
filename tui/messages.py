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


# --------------------------------------------------------------------------- screens -> App
# A screen never calls the App: it posts one of these (they bubble from the screen to the
# App, whose ``on_...`` handler acts). What a screen reads comes from ``tui.state``.


class OpenRunbook(Message):
    """Plan a runbook on a target (``x``, ``m``, the command palette's Fix)."""

    def __init__(self, runbook: str, target: str) -> None:
        super().__init__()
        self.runbook = runbook
        self.target = target


class GoTo(Message):
    """Open a section (``tui.app.SECTIONS``'s action id: "findings", "osds", ...)."""

    def __init__(self, section: str) -> None:
        super().__init__()
        self.section = section


class RefreshWanted(Message):
    """Refresh the cluster's data (a timer tick, after a mute or a run); ``force`` says
    so when one is still running."""

    def __init__(self, force: bool = False) -> None:
        super().__init__()
        self.force = force


class WorkEnded(Message):
    """A runbook or benchmark run ended: the next q quits at once again."""


class ExitWanted(Message):
    """A run stopped on quit has ended: stordoc quits, saying how the run ended."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__()
        self.message = message
