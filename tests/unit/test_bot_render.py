"""Block Kit rendering stays inside Slack's limits, however much there is to show."""

from __future__ import annotations

import pytest

from bot import render as r
from checks.model import Finding, Severity
from storage.model import CephState, CrushHost, OsdState, PgSummary


def _f(i: int, sev: Severity = Severity.WARN, runbook: str | None = "osd-start") -> Finding:
    return Finding("OSD_DOWN_OUT", sev, f"osd.{i}", f"osd.{i} is down and out " + "x" * 50,
                   {"host": f"node{i}", "down_for_s": 700}, runbook, f"osd.{i}")


def test_findings_grouped_by_severity_with_fix_buttons() -> None:
    fs = [_f(1, Severity.CRIT), _f(2), Finding("CACHE_TIER_DEPRECATED", Severity.INFO,
                                               "pool hot", "cache tiering is deprecated")]
    tokens = iter(["tok-a", "tok-b"])
    rep = r.findings_reply("lab", fs, lambda f: next(tokens) if f.runbook else None)
    assert rep.upload is None and len(rep.messages) == 1
    blocks = rep.messages[0].blocks
    texts = [b["text"]["text"] for b in blocks if b["type"] in ("section", "header")]
    assert texts[0] == "lab: 1 crit, 1 warn, 1 info"
    i_crit = texts.index("*Critical (1)*")
    i_warn = texts.index("*Warning (1)*")
    i_info = texts.index("*Info (1)*")
    assert i_crit < i_warn < i_info
    buttons = [b["accessory"] for b in blocks if "accessory" in b]
    assert [(b["text"]["text"], b["value"]) for b in buttons] == [("Fix", "tok-a"),
                                                                 ("Fix", "tok-b")]
    assert any("_fix:_ `osd-start osd.1`" in t for t in texts)
    assert "host: `node1`" in r.blocks_to_text(blocks)


def test_no_findings_says_so() -> None:
    rep = r.findings_reply("lab", [], lambda f: None)
    assert "no findings" in rep.messages[0].text
    assert "All checks passed" in r.blocks_to_text(rep.messages[0].blocks)


def test_many_findings_split_into_valid_messages() -> None:
    fs = [_f(i) for i in range(40)]  # 2 blocks each + headings: more than 50 blocks
    rep = r.findings_reply("lab", fs, lambda f: "t")
    assert len(rep.messages) == 2 and rep.upload is None
    for m in rep.messages:
        r.validate_message(m)
        assert len(m.blocks) <= 50
    assert rep.messages[1].text.endswith("(2/2)")


def test_huge_output_becomes_a_file() -> None:
    fs = [_f(i) for i in range(200)]
    rep = r.findings_reply("lab", fs, lambda f: "t")
    assert rep.upload is not None
    assert rep.upload.content.count("\n") == 200
    assert "osd.199" in rep.upload.content
    assert len(rep.messages) == 1
    r.validate_message(rep.messages[0])


def test_long_text_split_on_section_limit() -> None:
    blocks = r.sections_of("\n".join(f"line {i} " + "y" * 200 for i in range(100)))
    assert len(blocks) > 1
    assert all(len(b["text"]["text"]) <= r.MAX_SECTION for b in blocks)
    one = r.sections_of("z" * 7000)
    assert [len(b["text"]["text"]) for b in one] == [2980, 2980, 1040]


@pytest.mark.parametrize("blocks,msg", [
    ([r.section("a")] * 51, "51 blocks"),
    ([{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}], "3001"),
    ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}], "header"),
    ([{"type": "section", "text": {"type": "mrkdwn", "text": ""}}], "section text of 0"),
    ([{"type": "actions", "elements": [{"type": "button", "action_id": "a", "value": "v" * 2001,
                                        "text": {"type": "plain_text", "text": "b"}}]}],
     "button value"),
])
def test_validation_refuses_what_slack_refuses(blocks: list[r.Block], msg: str) -> None:
    with pytest.raises(r.LimitError, match=msg):
        r.validate_blocks(blocks)


def test_clip_keeps_headers_legal() -> None:
    assert len(r.header("h" * 500)["text"]["text"]) == 150
    r.validate_blocks([r.header("h" * 500), r.section("s" * 9000)])


def test_mrkdwn_control_characters_escaped() -> None:
    f = Finding("X_Y", Severity.WARN, "pool <!channel>", "a & b <@U1>")
    rep = r.findings_reply("lab", [f], lambda _: None)
    text = r.blocks_to_text(rep.messages[0].blocks)
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text


def _ceph() -> CephState:
    def osd(i: int, up: bool, inn: bool) -> OsdState:
        return OsdState(i, f"u{i}", up, inn, True, f"node{i + 1}", 0.01, 1.0 if inn else 0.0)
    return CephState("fsid", "16.2.15", "pacific", 10, (), (osd(0, True, True),
                     osd(1, False, True), osd(2, True, False)),
                     (CrushHost("node1", (0,)), CrushHost("node2", (1,)),
                      CrushHost("node3", (2,))), (), PgSummary(0, {}), "HEALTH_WARN", (),
                     0.95, 0.9, 0.85)


def test_osd_tree_by_host_with_up_in_marks() -> None:
    rep = r.osd_tree_reply("lab", _ceph())
    text = r.blocks_to_text(rep.messages[0].blocks)
    assert rep.messages[0].text == "lab: 3 OSDs, 2 up, 2 in"
    lines = text.splitlines()
    i1 = lines.index("*node2*")
    assert "`osd.1` :red_circle: down · in" in lines[i1 + 1]
    assert "`osd.2` :large_green_circle: up · *out*" in text


def test_plan_has_confirm_dialog_and_cancel() -> None:
    rep = r.plan_reply("lab", "osd-remount", "osd.1", ["node2: mount /dev/loop3 /x"],
                       "ctok", "xtok", "U1", 900, True)
    acts = next(b for b in rep.messages[0].blocks if b["type"] == "actions")["elements"]
    assert [(a["action_id"], a["value"]) for a in acts] == [("confirm", "ctok"),
                                                           ("cancel", "xtok")]
    assert acts[0]["confirm"]["confirm"]["text"] == "Run it"
    assert "two-person rule" in r.blocks_to_text(rep.messages[0].blocks)
    plan_only = r.plan_reply("lab", "osd-remount", "osd.1", ["x"], None, None, "U1", 900,
                             False)
    assert not [b for b in plan_only.messages[0].blocks if b["type"] == "actions"]
