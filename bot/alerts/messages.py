"""The messages the alert desk posts: the incident an alert (or watch mode) is about, or
what stordoc's check saw when it finds none.

Rendering only: the Fix and Silence buttons' tokens are made by the desk (the bot store).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from bot.render.blocks import Block, button, clip, context, esc, header, section
from bot.render.findings import SEV_ICON, evidence_line
from checks.model import Verdict

if TYPE_CHECKING:
    from bot.alerts.payload import AmPayload
    from checks.incidents import Incident
    from checks.outcome import CheckOutcome


def alert_incident_blocks(cluster: str, inc: Incident, why: str,
                          fix_token: str | None) -> list[Block]:
    """Cause, evidence, impact, the next step with its Fix button (``fix_token``, given
    when the incident has a next step) or what to do by hand, and what it explains."""
    root = inc.root
    icon = SEV_ICON.get(root.severity, "")  # the root's own severity, as everywhere
    imp = f"impact ({inc.severity.label})" if inc.escalated else "impact"
    blocks: list[Block] = [header(f"{why} on {cluster}")]
    txt = (f"{icon} *Cause:* *{esc(root.entity)}* `{root.code}`\n{esc(root.message)}"
           f"\n_{imp}:_ {esc(inc.impact)}")
    acc = None
    if inc.next_step is not None:
        ns = inc.next_step
        txt += f"\n_next:_ `fix {ns.runbook} {esc(ns.target)}`"
        if fix_token is not None:
            acc = button("Fix", "fix", fix_token, style="primary")
    elif inc.manual:
        txt += f"\n_by hand:_ {esc(inc.manual)}"
    blocks.append(section(txt, acc))
    ev = evidence_line(root.evidence)
    if ev:
        blocks.append(context(ev))
    if inc.consequences:
        cons = "; ".join(f"{f.entity} {f.code}" for f in inc.consequences[:12])
        more = len(inc.consequences) - 12
        blocks.append(context(esc(clip("consequences: " + cons
                                       + (f" (+{more})" if more > 0 else ""), 1500))))
    return blocks


def alert_quiet_blocks(p: AmPayload, cluster: str, out: CheckOutcome,
                       no_data: str = "") -> list[Block]:
    """An alert stordoc's check explains with no incident: say what the check saw (and,
    for an alert stordoc has no data for here, why: ``checks.alert_map``)."""
    n = len(out.incidents)
    seen = ("no finding" if not out.report.findings else
            f"{n} incident{'s' if n != 1 else ''}, none about this alert" if n else
            f"{len(out.report.findings)} findings, none grouped as an incident")
    summary = p.commonAnnotations.get("summary") or p.alerts[0].annotations.get("summary", "")
    blocks: list[Block] = [header(f"{p.name} firing on {cluster}")]
    txt = f"stordoc's check finds {seen} (at {time.strftime('%H:%M:%S')})."
    if summary:
        txt = f"_{esc(clip(summary, 300))}_\n" + txt
    if no_data:
        txt += f"\nNo data for it here: {esc(clip(no_data, 300))}."
    if out.report.verdict >= Verdict.WARN:  # the engine's verdict, not one made here
        txt += f"\nRun `health {cluster}` for the findings."
    blocks.append(section(txt))
    return blocks


def silence_actions(token: str) -> list[Block]:
    """The Silence button of an alert's message."""
    return [{"type": "actions", "elements": [button("Silence 4h", "silence", token)]}]
