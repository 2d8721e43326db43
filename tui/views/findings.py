"""Incidents, findings grouped by severity, and a finding's evidence."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from checks.incidents import Incident
from checks.model import Finding, Severity
from tui.views.common import SEV_STYLE, Row, _row

FINDING_COLUMNS = ("severity", "code", "entity", "message", "runbook")
INCIDENT_COLUMNS = ("sev", "cause", "entity", "next step", "impact")


def incident_rows(incidents: Sequence[Incident], new: Iterable[tuple[str, str]] = ()
                  ) -> list[Row]:
    """One row per incident, worst first: the cause, the one next step, the impact."""
    new_set = set(new)
    rows = []
    for inc in incidents:
        step = inc.next_step
        nxt = f"{step.runbook} {step.target}" if step else "by hand"
        mark = " *new*" if inc.root.key in new_set else ""
        rows.append(_row(f"incident:{inc.id}", "incident",
                         [inc.severity.label, inc.root.code, inc.root.entity, nxt,
                          inc.impact + mark],
                         [SEV_STYLE[inc.severity], "bold", "", "cyan" if step else "dim", ""],
                         inc))
    return rows


def finding_rows(findings: Sequence[Finding], needle: str = "",
                 new: Iterable[tuple[str, str]] = ()) -> list[Row]:
    """Grouped by severity (crit first), a header row per group."""
    new_set = set(new)
    rows: list[Row] = []
    for sev in (Severity.CRIT, Severity.WARN, Severity.INFO):
        group = [f for f in findings if f.severity == sev]
        kept = []
        for f in sorted(group, key=lambda f: (f.code, f.entity)):
            mark = " *new*" if f.key in new_set else ""
            cells = ["  " + sev.label, f.code, f.entity, f.message + mark,
                     f"{f.runbook} {f.target}" if f.runbook else "-"]
            r = _row(f"finding:{f.code}:{f.entity}", "finding", cells,
                     [SEV_STYLE[sev], "bold", "", "", "cyan" if f.runbook else "dim"], f)
            if r.matches(needle):
                kept.append(r)
        if not group or (needle and not kept):
            continue
        rows.append(Row(f"sev:{sev.label}", "severity",
                        (f"▾ {sev.label.upper()} ({len(group)})", "", "", "", ""),
                        (SEV_STYLE[sev],), sev.label, sev))
        rows.extend(kept)
    return rows


def evidence_text(evidence: Mapping[str, Any]) -> str:
    try:
        return json.dumps(dict(evidence), indent=2, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(dict(evidence))


def findings_for(findings: Iterable[Finding], entity: str) -> list[Finding]:
    return [f for f in findings if f.entity == entity or f.target == entity]
