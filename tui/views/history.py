"""Check-run history and the runbook audit trail (rows from the journal's records)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runbooks.model import Outcome
from storage.audit import AuditRun
from storage.journal import CheckRun
from tui.views.common import Row, _row, human_age

HISTORY_COLUMNS = ("run", "when", "source", "worst", "findings", "exit", "took")
AUDIT_COLUMNS = ("run", "when", "runbook", "target", "confirmed by", "outcome", "message")


def _when(ts: Any, now: float) -> str:
    try:
        return human_age(now - float(ts)) + " ago"
    except (TypeError, ValueError):
        return str(ts or "-")


def history_rows(runs: Sequence[CheckRun], now: float) -> list[Row]:
    out = []
    for r in runs:
        cells = [str(r.id), _when(r.started_at, now), r.source or "-", r.worst,
                 str(r.n_findings), str(r.exit_code), f"{r.duration_s:.1f}s"]
        out.append(_row(f"run:{r.id}", "run", cells,
                        ["", "", "", {"crit": "bold red", "warn": "yellow"}.get(r.worst, "green"),
                         "", "", ""], r))
    return out


def audit_rows(runs: Sequence[AuditRun], now: float) -> list[Row]:
    out = []
    for r in runs:
        cells = [str(r.id), _when(r.started_at, now), r.runbook, r.target,
                 r.confirmed_by or r.user or "-", r.outcome or "-", r.message[:80]]
        ok = r.outcome == Outcome.SUCCESS
        out.append(_row(f"audit:{r.id}", "audit", cells,
                        ["", "", "bold", "", "", "green" if ok else "bold red", ""], r))
    return out
