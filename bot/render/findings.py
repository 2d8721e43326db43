"""Findings and incidents as Slack messages: severity groups, the Fix buttons, ``health``.

A finding with a runbook gets a Fix button (its token comes from the caller: rendering
never creates buttons); an incident shows its cause first and one next step, so the page
reads as a diagnosis rather than a list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from checks.incidents import Incident, headline
from checks.model import Finding, Severity, Verdict
from core.service import fixes
from core.service.fixes import last_line
from core.slack.blocks import (
    MAX_SECTION,
    MAX_TEXT,
    SEV_ICON,
    SEV_TITLE,
    Block,
    Reply,
    button,
    clip,
    context,
    divider,
    esc,
    evidence_line,
    header,
    paginate,
    section,
    sections_of,
)

TokenFn = Callable[[Finding], str | None]



def finding_blocks(f: Finding, token: str | None) -> list[Block]:
    txt = f"{SEV_ICON[f.severity]} *{esc(f.entity)}*  `{f.code}`\n{esc(f.message)}"
    if f.runbook and token:
        txt += f"\n_fix:_ `{f.runbook} {esc(f.target or '')}`"
    acc = button("Fix", "fix", token, style="primary") if (token and f.runbook) else None
    blocks = [section(txt, acc)]
    ev = evidence_line(f.evidence)
    if ev:
        blocks.append(context(ev))
    return blocks


def findings_reply(cluster: str, findings: Sequence[Finding], token_for: TokenFn,
                   title: str | None = None, note: str | None = None) -> Reply:
    """Findings grouped by severity, worst first, each with its Fix button."""
    counts = {s: sum(1 for f in findings if f.severity == s) for s in Severity}
    summary = ", ".join(f"{counts[s]} {s.label}" for s in reversed(Severity) if counts[s])
    head = title or f"{cluster}: " + ("no findings" if not findings else summary)
    text = head if not findings else f"{head}: " + "; ".join(
        f"{f.entity} {f.code}" for f in findings[:10])
    blocks: list[Block] = [header(head)]
    if note:
        blocks.append(context(esc(note)))
    if not findings:
        blocks.append(section(":white_check_mark: All checks passed."))
    for sev in sorted(Severity, reverse=True):
        group = [f for f in findings if f.severity == sev]
        if not group:
            continue
        blocks.append(section(f"*{SEV_TITLE[sev]} ({len(group)})*"))
        for f in group:
            blocks.extend(finding_blocks(f, token_for(f)))
        blocks.append(divider())

    def plain() -> str:
        return "\n".join(f"[{f.severity.label}] {f.entity} {f.code}: {f.message}"
                         + (f"  (fix: {f.runbook} {f.target or ''})" if f.runbook else "")
                         for f in findings) + "\n"
    return paginate(head, blocks, text, plain, f"{cluster}-findings.txt")


IncidentTokenFn = Callable[[Incident], "str | None"]


def incident_blocks(n: int, inc: Incident, token: str | None) -> list[Block]:
    """One incident: the cause, its impact, what it explains, one next step (Fix)."""
    # the root keeps its own severity everywhere; an incident worse than its root (PGs
    # blocking client I/O under a warn finding) says so on its impact line
    txt = (f"{SEV_ICON[inc.root.severity]} *{n}. {esc(inc.root.code)}* `{esc(inc.root.entity)}`"
           f"\n{esc(inc.root.message)}")
    if inc.escalated:
        txt += f"\n_impact ({inc.severity.label}):_ {esc(inc.impact)}"
    elif inc.impact != inc.root.message:
        txt += f"\n_impact:_ {esc(inc.impact)}"
    fx = fixes.incident_fix(inc)
    if fx is not None:
        txt += f"\n_next:_ `{esc(fx.command)}`"
    elif inc.manual:
        txt += f"\n_by hand:_ {esc(clip(inc.manual, 400))}"
    acc = (button("Fix", "fix", token, style="primary")
           if token and fx is not None else None)
    blocks = [section(clip(txt, MAX_SECTION - 20), acc)]
    if inc.consequences:
        blocks.append(context("explains: " + esc(clip(", ".join(
            f"{c.code} {c.entity}" for c in inc.consequences), 1500))))
    return blocks


def health_reply(cluster: str, verdict: Verdict, incidents: Sequence[Incident],
                 findings: Sequence[Finding], incident_token: IncidentTokenFn,
                 ceph_health: str | None = None, note: str | None = None) -> Reply:
    """`health`: stordoc's verdict and the top cause first, incidents each with one Fix,
    then Ceph's health as one fact, then every finding (no Fix on consequences)."""
    head = headline(cluster, verdict, incidents, len(findings))
    # the cause in one notification preview; the incident below says it whole
    blocks: list[Block] = [section(f"*{esc(clip(head, 200))}*")]
    facts = []
    if ceph_health:
        facts.append(f"Ceph {ceph_health}")
    counts = {s: sum(1 for f in findings if f.severity == s) for s in Severity}
    by_sev = ", ".join(f"{counts[s]} {s.label}" for s in (Severity.CRIT, Severity.WARN)
                       if counts[s])
    facts.append(f"{len(findings)} finding{'' if len(findings) == 1 else 's'}"
                 + (f" ({by_sev})" if by_sev else ""))
    if note:
        facts.append(note)
    blocks.append(context(esc(" · ".join(facts))))
    if not findings:
        blocks.append(section(":white_check_mark: All checks passed."))
    for n, inc in enumerate(incidents, 1):
        blocks.extend(incident_blocks(n, inc, incident_token(inc)))
    rest = [f for f in findings if not any(f.key == x.key for i in incidents
                                            for x in i.findings)]
    if rest:
        blocks.append(divider())
        blocks.append(section(f"*Other findings ({len(rest)})*"))
        for f in rest:
            blocks.extend(finding_blocks(f, None))
    # what to do, last, as the CLI's last line says it (the core's one decision)
    last = last_line(incidents, findings=findings)
    blocks.append(section(f"*next:* `{esc(last.removeprefix('next: '))}`"
                          if not last.startswith(("next: by hand", "next: nothing"))
                          else f"*next:* {esc(last.removeprefix('next: '))}"))

    def plain() -> str:
        lines = [head]
        for n, inc in enumerate(incidents, 1):
            imp = f"impact ({inc.severity.label})" if inc.escalated else "impact"
            lines.append(f"{n}. [{inc.root.severity.label}] {inc.root.code} {inc.root.entity}: "
                         f"{inc.root.message} | {imp}: {inc.impact}"
                         + (f" | next: {fx.command}"
                            if (fx := fixes.incident_fix(inc)) is not None else ""))
            lines += [f"   explains: {c.code} {c.entity}: {c.message}"
                      for c in inc.consequences]
        lines += [f"[{f.severity.label}] {f.entity} {f.code}: {f.message}" for f in rest]
        lines.append(last)
        return "\n".join(lines) + "\n"
    return paginate(head, blocks, head, plain, f"{cluster}-health.txt")


VERDICT_ICON = {Verdict.OK: ":large_green_circle:", Verdict.WARN: ":large_orange_circle:",
                Verdict.CRIT: ":red_circle:", Verdict.UNREACHABLE: ":black_circle:"}


def all_clusters_reply(lines: Sequence[tuple[Verdict, str]]) -> Reply:
    """``health all``: one verdict line per cluster, worst first."""
    icon = VERDICT_ICON
    rows = sorted(lines, key=lambda x: -x[0])
    head = f"All clusters ({len(rows)})"
    blocks: list[Block] = [header(head)]
    blocks += sections_of("\n".join(f"{icon.get(c, '')} {esc(t)}" for c, t in rows))
    text = head + ": " + "; ".join(t for _, t in rows)
    return paginate(head, blocks, clip(text, MAX_TEXT), lambda: "\n".join(t for _, t in rows)
                    + "\n", "all-clusters.txt")
