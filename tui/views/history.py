"""Check-run history and the runbook audit trail (rows from the journal's dicts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tui.views.common import Row, _row, human_age

HISTORY_COLUMNS = ("run", "when", "source", "worst", "findings", "exit", "took")
AUDIT_COLUMNS = ("run", "when", "runbook", "target", "confirmed by", "outcome", "message")


def _when(ts: Any, now: float) -> str:
    try:
        return human_age(now - float(ts)) + " ago"
    except (TypeError, ValueError):
        return str(ts or "-")


def history_rows(runs: Sequence[Mapping[str, Any]], now: float) -> list[Row]:
    out = []
    for r in runs:
        worst = str(r.get("worst") or "ok")
        cells = [str(r.get("id")), _when(r.get("started_at"), now), str(r.get("source") or "-"),
                 worst, str(r.get("n_findings", "-")), str(r.get("exit_code", "-")),
                 f"{float(r.get('duration_s') or 0):.1f}s"]
        out.append(_row(f"run:{r.get('id')}", "run", cells,
                        ["", "", "", {"crit": "bold red", "warn": "yellow"}.get(worst, "green"),
                         "", "", ""], r))
    return out


def audit_rows(runs: Sequence[Mapping[str, Any]], now: float) -> list[Row]:
    out = []
    for r in runs:
        status = str(r.get("outcome") or r.get("status") or "-")
        when = r.get("started_at")
        detail = str(r.get("message") or r.get("summary") or "")
        cells = [str(r.get("id", "-")), _when(when, now), str(r.get("runbook", "-")),
                 str(r.get("target", "-")),
                 str(r.get("confirmed_by") or r.get("user") or "-"), status, detail[:80]]
        ok = status in ("success", "succeeded")
        out.append(_row(f"audit:{r.get('id')}", "audit", cells,
                        ["", "", "bold", "", "", "green" if ok else "bold red", ""], r))
    return out
