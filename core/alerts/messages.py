"""The messages the alert desk posts: the incident an alert (or watch mode) is about, or
what stordoc's check saw when it finds none.

Rendering only: the Fix and Silence buttons' tokens are made by the desk (the bot store).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from checks.model import Verdict
from core.service import fixes
from core.slack.blocks import (
    SEV_ICON,
    Block,
    button,
    clip,
    context,
    divider,
    esc,
    evidence_line,
    header,
    section,
)

if TYPE_CHECKING:
    from checks.incidents import Incident
    from checks.outcome import CheckOutcome
    from core.alerts.payload import AmPayload
    from core.alerts.windows import GroupState


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
    if (fx := fixes.incident_fix(inc)) is not None:
        txt += f"\n_next:_ `fix {fx.runbook} {esc(fx.target)}`"
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
    seen = _seen(out)
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


def _seen(out: CheckOutcome) -> str:
    n = len(out.incidents)
    return ("no finding" if not out.report.findings else
            f"{n} incident{'s' if n != 1 else ''}, none about this alert" if n else
            f"{len(out.report.findings)} findings, none grouped as an incident")


def alert_quiet_line(p: AmPayload, cluster: str, out: CheckOutcome, no_data: str = "",
                     silence_token: str | None = None) -> list[Block]:
    """An alert group stordoc explains with no incident, as one block of a window's thread
    (the window's first group got ``alert_quiet_blocks``): its Silence button beside it."""
    n = len(p.alerts)
    summary = p.commonAnnotations.get("summary") or p.alerts[0].annotations.get("summary", "")
    txt = f"*{esc(p.name)}* firing ({n} alert{'s' if n != 1 else ''})"
    if summary:
        txt += f": _{esc(clip(summary, 200))}_"
    txt += f"\nstordoc's check finds {_seen(out)} (at {time.strftime('%H:%M:%S')})."
    if no_data:
        txt += f" No data for it here: {esc(clip(no_data, 200))}."
    acc = button("Silence 4h", "silence", silence_token) if silence_token else None
    return [section(txt, acc)]


_STATE_ICON = {"firing": ":red_circle:", "resolved": ":white_check_mark:"}


def window_summary_blocks(cluster: str, opened_at: float, window_s: float,
                          groups: list[GroupState]) -> list[Block]:
    """The running summary under a window's top-level post: how many groups, in which
    state, one line each (firing first) within a section's 3000 characters."""
    firing = [g for g in groups if g.status == "firing"]
    done = [g for g in groups if g.status != "firing"]
    hm = time.strftime("%H:%M", time.gmtime(opened_at))
    until = time.strftime("%H:%M", time.gmtime(opened_at + window_s))
    head = (f"*{len(groups)} alert group{'s' if len(groups) != 1 else ''} on "
            f"{esc(cluster)}* since {hm} UTC: {len(firing)} firing, {len(done)} resolved"
            f"\n_until {until} UTC, new groups of {esc(cluster)} go in this thread_")
    lines: list[str] = []
    size = len(head)
    shown = 0
    for g in firing + done:
        extra = f", {g.repeats} repeat{'s' if g.repeats != 1 else ''}" if g.repeats else ""
        line = (f"{_STATE_ICON.get(g.status, '')} *{esc(g.name)}* {g.status} ({g.alerts} "
                f"alert{'s' if g.alerts != 1 else ''}{extra})")
        if size + len(line) + 1 > 2850:
            break
        lines.append(line)
        size += len(line) + 1
        shown += 1
    if shown < len(groups):
        lines.append(f"… and {len(groups) - shown} more (in the thread)")
    return [divider(), section("\n".join([head, *lines]))]


def silence_actions(token: str) -> list[Block]:
    """The Silence button of an alert's message."""
    return [{"type": "actions", "elements": [button("Silence 4h", "silence", token)]}]
