"""Slack's `health` on every replayed lab scenario of both releases, as Block Kit, saved as
syrupy snapshots (a readable rendering of the blocks: one line per block kind, buttons
named), and checked against Slack's limits: no section text past 3000 characters, at
most 10 fields of at most 2000, a header within 150, and a headline a phone shows whole.

Update after a deliberate change: ``pytest tests/unit/test_bot_health_blocks.py
--snapshot-update`` and read the diff of ``__snapshots__/test_bot_health_blocks.ambr``.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot import render as r
from tests.unit.test_replay import PAIRS, replay


def health(release: str, name: str) -> r.Reply:
    out = replay(release, name).outcome
    ceph = out.snapshot.ceph
    made: list[str] = []

    def token(inc: Any) -> str | None:
        if inc.next_step is None:
            return None
        made.append(inc.next_step.command)
        return f"tok-{len(made)}"

    return r.health_reply("lab", out.report.verdict, out.incidents, out.report.findings,
                          token, ceph.health_status if ceph else None)


def _text(t: Any) -> str:
    return str(t.get("text", "")) if isinstance(t, dict) else ""


def readable(reply: r.Reply) -> str:
    """The blocks as a reviewer reads them: kind, text, fields, buttons."""
    out: list[str] = []
    for i, m in enumerate(reply.messages, 1):
        out.append(f"=== message {i}: {m.text}")
        for b in m.blocks:
            kind = b["type"]
            if kind == "divider":
                out.append("-----")
                continue
            if kind == "context":
                out.append("[context] " + " | ".join(_text(e) for e in b["elements"]))
                continue
            if kind == "actions":
                out.append("[actions] " + " ".join(f"<{_text(e.get('text'))}>"
                                                   for e in b["elements"]))
                continue
            out.append(f"[{kind}] {_text(b.get('text'))}")
            for f in b.get("fields") or []:
                out.append(f"  [field] {_text(f)}")
            acc = b.get("accessory")
            if acc:
                out.append(f"  <{_text(acc.get('text'))}> ({acc.get('action_id')} "
                           f"{acc.get('value')})")
    if reply.upload is not None:
        out.append(f"=== upload {reply.upload.filename} "
                   f"({len(reply.upload.content.splitlines())} lines)")
    return "\n".join(out) + "\n"


def within_limits(reply: r.Reply) -> None:
    for m in reply.messages:
        r.validate_message(m)  # the renderer's own check (50 blocks, sizes)
        for b in m.blocks:
            if b["type"] == "section":
                assert len(_text(b.get("text"))) <= 3000
                fields = b.get("fields") or []
                assert len(fields) <= 10 and all(len(_text(f)) <= 2000 for f in fields)
            if b["type"] == "header":
                assert len(_text(b.get("text"))) <= 150
    head = _text(reply.messages[0].blocks[0].get("text")).split("\n")[0]
    assert len(head) <= 300, head  # the cause in one notification preview


@pytest.mark.parametrize("release,name", PAIRS)
def test_health_blocks(release: str, name: str, snapshot: Any) -> None:
    reply = health(release, name)
    within_limits(reply)
    text = readable(reply)
    assert "['" not in text and "{'" not in text and "None" not in text
    assert text == snapshot
