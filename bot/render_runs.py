"""What stordoc did and would do, as Slack messages: check runs, audit rows, plans.

A plan is a dry run shown with Confirm (behind Slack's own confirm dialog) and Cancel; the
message is closed afterwards with who did what (``plan_closed_blocks``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.render_blocks import (
    Block,
    Reply,
    button,
    clip,
    context,
    esc,
    header,
    paginate,
    sections_of,
)


def history_reply(cluster: str, runs: Sequence[Mapping[str, Any]]) -> Reply:
    import datetime as dt

    head = f"{cluster}: last {len(runs)} check runs"
    lines = []
    for run in runs:
        when = dt.datetime.fromtimestamp(run["started_at"], dt.UTC)
        lines.append(f"#{run['id']} {when:%Y-%m-%d %H:%M:%S}Z {run['worst']} "
                     f"{run['n_findings']} findings ({run['source']})")
    lines = lines or ["no check runs recorded yet"]
    return paginate(head, [header(head)] + sections_of("\n".join(lines)), head)


def rows_reply(title: str, rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> Reply:
    lines = [" ".join(f"{k}={esc(clip(str(r.get(k)), 80))}" for k in keys if r.get(k)
                      is not None) for r in rows] or ["nothing recorded yet"]
    return paginate(title, [header(title)] + sections_of("\n".join(lines)), title)


def plan_reply(cluster: str, runbook: str, target: str, lines: Sequence[str],
               confirm_token: str | None, cancel_token: str | None, requester: str,
               ttl_s: int, second_person: bool, two_person: bool) -> Reply:
    """The plan as a dry run, with Confirm (behind Slack's confirm dialog) and Cancel."""
    head = f"Plan: {runbook} {target} on {cluster}"
    body = "\n".join(lines) or "(no steps)"
    blocks: list[Block] = [header(head)]
    blocks.extend(sections_of("```\n" + esc(clip(body, 2900 * 10)) + "\n```")[:40])
    note = f"requested by <@{requester}> · buttons expire in {ttl_s // 60} min"
    if second_person and two_person:
        note += " · two-person rule: someone else must confirm"
    blocks.append(context(note))
    if confirm_token and cancel_token:
        blocks.append({"type": "actions", "elements": [
            button("Confirm", "confirm", confirm_token, style="danger", confirm={
                "title": {"type": "plain_text", "text": "Run this runbook?"},
                "text": {"type": "mrkdwn",
                         "text": clip(f"Run `{runbook} {esc(target)}` on *{cluster}* now?", 300)},
                "confirm": {"type": "plain_text", "text": "Run it"},
                "deny": {"type": "plain_text", "text": "Not now"},
            }),
            button("Cancel", "cancel", cancel_token),
        ]})
    return paginate(head, blocks, head)


def plan_closed_blocks(head: str, status: str) -> list[Block]:
    """``status`` is our own mrkdwn (user mentions of validated IDs): not escaped."""
    return [header(head), context(status)]
