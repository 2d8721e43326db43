"""Incidents, findings grouped by severity, and a finding's evidence."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.text import Text

from checks.incidents import Incident
from checks.model import Finding, Severity
from core.service import fixes
from tui.views.common import SEV_STYLE, Row, _row

FINDING_COLUMNS = ("severity", "code", "entity", "message", "runbook")
INCIDENT_COLUMNS = ("sev", "cause", "entity", "next step", "impact")


def incident_rows(incidents: Sequence[Incident], new: Iterable[tuple[str, str]] = ()
                  ) -> list[Row]:
    """One row per incident, worst first: the cause, the one next step, the impact."""
    new_set = set(new)
    rows = []
    for inc in incidents:
        step = fixes.incident_fix(inc)
        nxt = f"{step.runbook} {step.target}" if step else "by hand"
        mark = " *new*" if inc.root.key in new_set else ""
        # the root's own severity (one per finding everywhere); a worse incident says so
        # in its impact cell
        imp = (f"({inc.severity.label}) " if inc.escalated else "") + inc.impact
        rows.append(_row(f"incident:{inc.id}", "incident",
                         [inc.root.severity.label, inc.root.code, inc.root.entity, nxt,
                          imp + mark],
                         [SEV_STYLE[inc.root.severity], "bold", "", "cyan" if step else "dim",
                          SEV_STYLE[inc.severity] if inc.escalated else ""],
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


def finding_line(f: Finding | None, fix_key: bool = True) -> Text:
    """The finding under the cursor, whole and wrapped (the table's cells are cut at
    80 columns): severity, code, entity, message and the runbook with its target."""
    if f is None:
        return Text("")
    t = Text()
    t.append(f"{f.severity.label} ", style=SEV_STYLE[f.severity])
    t.append(f"{f.code} {f.entity}: ", style="bold")
    t.append(f.message)
    if f.runbook:
        t.append(f"   {'x: ' if fix_key else 'fix: '}{f.runbook} {f.target}", style="cyan")
    return t


def incident_line(inc: Incident | None, fix_key: bool = True) -> Text:
    """The incident under the cursor's one next step, whole (its table cell is cut at 80
    columns), and that Enter opens it."""
    if inc is None:
        return Text("")
    t = Text()
    step = fixes.incident_fix(inc)
    if step is not None:
        t.append("next step: ", style="bold")
        t.append(f"{'x runs ' if fix_key else ''}{step.runbook} {step.target}", style="cyan")
    else:
        t.append("by hand: ", style="bold")
        t.append(inc.manual or "no runbook applies", style="dim")
    t.append("   (Enter: the incident)", style="dim")
    return t


def incident_lines(inc: Incident, fix_key: bool = True) -> list[tuple[str, str, str]]:
    """One incident, whole: cause, impact, the one next step, every finding in it."""
    step = fixes.incident_fix(inc)
    out = [
        ("incident", f"{inc.root.severity.label} {inc.headline}", SEV_STYLE[inc.root.severity]),
        ("cause", f"{inc.root.code} {inc.root.entity}: {inc.root.message}", "bold"),
        (f"impact ({inc.severity.label})" if inc.escalated else "impact", inc.impact,
         SEV_STYLE[inc.severity] if inc.escalated else ""),
        ("next step", (f"{step.runbook} {step.target}" + ("  (press x to plan it)"
                                                          if fix_key else "")
                       if step else f"by hand: {inc.manual or 'no runbook applies'}"),
         "cyan" if step else "dim"),
    ]
    for f in inc.consequences:
        out.append((f"{f.severity.label} {f.code}", f"{f.entity}: {f.message}",
                    SEV_STYLE[f.severity]))
    out.append(("evidence", evidence_text(inc.root.evidence), ""))
    return out
