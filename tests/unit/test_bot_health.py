"""`health` in Slack: verdict and cause first, incidents with one Fix each, Ceph's health
as one fact, the other findings without Fix buttons (bot.render.health_reply)."""

from __future__ import annotations

from bot import render as r
from checks.incidents import correlate
from checks.model import Finding, Severity, Verdict


def test_health_reply_leads_with_the_cause_and_one_fix() -> None:
    fs = [Finding("OSD_DATA_UNMOUNTED", Severity.CRIT, "osd.1", "osd.1 data dir not mounted",
                  {}, "osd-remount", "osd.1"),
          Finding("OSD_DOWN_IN", Severity.CRIT, "osd.1", "osd.1 down", {}, "osd-start",
                  "osd.1"),
          Finding("POOL_PG_NUM_LOW", Severity.WARN, "pool rbd", "few PGs", {},
                  "pool-pg-num", "rbd")]
    incs = correlate(fs)
    tokens: list[str] = []

    def tok(inc):  # type: ignore[no-untyped-def]
        tokens.append(inc.next_step.command)
        return f"T{len(tokens)}"

    rep = r.health_reply("lab", Verdict.CRIT, incs, fs, tok, "HEALTH_WARN")
    blocks = rep.messages[0].blocks if hasattr(rep, "messages") else rep.blocks  # type: ignore[attr-defined]
    first = blocks[0]["text"]["text"]
    assert first.startswith("*CRIT lab: OSD_DATA_UNMOUNTED osd.1: osd.1 down but still in")
    assert "Ceph HEALTH_WARN" in blocks[1]["elements"][0]["text"]
    assert tokens == ["stordoc fix osd-remount osd.1", "stordoc fix pool-pg-num rbd"]
    text = r.blocks_to_text(blocks)
    assert "stordoc fix osd-start" not in text  # the consequence's fix is never offered
