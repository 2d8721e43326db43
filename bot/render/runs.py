"""What stordoc did and would do, as Slack messages: check runs, audit rows, plans.

A plan is a dry run shown with Confirm (behind Slack's own confirm dialog) and Cancel; the
message is closed afterwards with who did what (``plan_closed_blocks``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from checks.mutable import CANNOT_LOOK_WHY, mute_refusal
from core.slack.blocks import (
    Block,
    Reply,
    button,
    clip,
    context,
    esc,
    header,
    paginate,
    section,
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


_SLACK_USER_RE = re.compile(r"[UW][A-Z0-9]{2,30}")


def _who(by: str) -> str:
    """A Slack user ID as a mention; anyone else (a CLI user) as plain text."""
    return f"<@{by}>" if _SLACK_USER_RE.fullmatch(by or "") else esc(by or "?")


def _span(seconds: float) -> str:
    """``3 h 40 min``, ``2 days 3 h``, ``12 min``: a span in words."""
    s = max(0, int(seconds))
    d, h, m = s // 86400, s % 86400 // 3600, s % 3600 // 60
    if d:
        return f"{d} day{'s' if d > 1 else ''}" + (f" {h} h" if h else "")
    if h:
        return f"{h} h" + (f" {m} min" if m else "")
    return f"{max(m, 1)} min" if s >= 60 else "less than a minute"


def ttl_words(seconds: float) -> str:
    """How long a button lasts, exactly: ``2 s``, ``1 min 30 s``, ``15 min``, ``1 h``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600 and s % 60:
        return f"{s // 60} min {s % 60} s"
    return _span(s)


def _local_time(ts: float) -> str:
    """Slack's own date formatting: each reader sees it in their time zone."""
    import datetime as dt

    utc = dt.datetime.fromtimestamp(ts, dt.UTC)
    return (f"<!date^{int(ts)}^{{date_short_pretty}} at {{time}}|"
            f"{utc:%Y-%m-%d %H:%M} UTC>")


def mute_line(m: Any, now: float) -> str:
    """One active mute in words (``silences`` lists them beside Alertmanager's)."""
    return (f":no_bell: {esc(m.what)}: muted by {_who(m.by)} for another "
            f"{_span(m.until - now)} (until {_local_time(m.until)}): "
            f"{esc(clip(m.reason or '-', 200))}")


def mutes_reply(cluster: str, mutes: Sequence[Any], now: float) -> Reply:
    """``mute list``: one block per mute (what, who, until in words, the reason), the
    active ones first; ``mutes`` are ``storage.mutes.Mute``-like records."""
    head = f"{cluster}: mutes"
    active = [m for m in mutes if m.removed_at is None and m.until > now]
    past = [m for m in mutes if m not in active]
    blocks: list[Block] = [header(head)]
    if not mutes:
        blocks.append(section("no mutes recorded"))
    for m in active:
        ignored = f" (ignored: {CANNOT_LOOK_WHY})" if mute_refusal(m.code) else ""
        blocks.append(section(
            f":no_bell: *{esc(m.what)}*{ignored}\nmuted by {_who(m.by)} for another "
            f"{_span(m.until - now)} (until {_local_time(m.until)})\n"
            f"> {esc(clip(m.reason or '(no reason given)', 500))}"))
    if past:
        lines = []
        for m in past:
            if m.removed_at is not None:
                end = (f"unmuted by {_who(m.removed_by or '?')} "
                       f"{_span(now - m.removed_at)} ago")
            else:
                end = f"expired {_span(now - m.until)} ago"
            lines.append(f":bell: {esc(m.what)}: {end} (muted by {_who(m.by)}: "
                         f"{esc(clip(m.reason or '-', 200))})")
        blocks.append(context(f"{len(active)} active · {len(past)} ended"))
        blocks.extend(sections_of("\n".join(lines)))
    return paginate(head, blocks, head + f": {len(active)} active")


def plan_reply(cluster: str, runbook: str, target: str, lines: Sequence[str],
               confirm_token: str | None, cancel_token: str | None, requester: str,
               ttl_s: int, two_person: bool) -> Reply:
    """The plan as a dry run, with Confirm (behind Slack's confirm dialog) and Cancel;
    ``two_person``: the policy says someone else must confirm (``core.policy``)."""
    head = f"Plan: {runbook} {target} on {cluster}"
    body = "\n".join(lines) or "(no steps)"
    blocks: list[Block] = [header(head)]
    blocks.extend(sections_of("```\n" + esc(clip(body, 2900 * 10)) + "\n```")[:40])
    note = f"requested by <@{requester}> · buttons expire in {ttl_words(ttl_s)}"
    if two_person:
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
