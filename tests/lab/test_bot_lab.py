"""The bot on the real lab: `/stordoc health lab` after an OSD's data dir is unmounted and
its Fix button end to end (a viewer refused, plan, the two-person rule, a retried delivery
run once, thread progress, verification, the OSD up, the audit naming the Slack users);
refusals; a plan cancelled runs nothing; a benchmark from Slack with its chart. The health
reply of every scenario: tests/unit/test_replay.py (from snapshots)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.settings import load_settings
from lab import Lab
from tests.support.fake_slack import BotHarness, all_text, buttons

OPS, OPS2, VIEWER, STRANGER = "UOPSLAB001", "UOPSLAB002", "UVIEWLAB01", "USTRANGE01"
# a plan is posted, or (on a loaded machine, past working_after_s) replaces the "still
# working…" message it posted first
PLAN_CALLS = ("chat.postMessage", "chat.update")


@pytest.fixture
def h(lab: Lab, tmp_path: Path) -> Iterator[BotHarness]:
    harness = BotHarness(load_settings(lab.config_path),
                         {"lab": {"viewers": [VIEWER], "operators": [OPS, OPS2],
                                  "two_person": True}},
                         str(tmp_path / "bot.db"), throttle_s=0.2)
    yield harness
    harness.close()


def _health(h: BotHarness, user: str):  # type: ignore[no-untyped-def]
    n = len(h.posts())
    h.slack.slash("health lab", user)

    def answered(f):  # type: ignore[no-untyped-def]
        fresh = f.of("chat.postMessage")[n:] + f.of("chat.update")
        return [c for c in fresh if "lab:" in str(c.params.get("text", ""))]
    return h.fake.wait_for(answered, 120)[0]


def test_fix_button_flow_end_to_end(h: BotHarness, lab: Lab, osd1_unmounted: None) -> None:
    msg = _health(h, OPS)
    ts = msg.response["ts"]
    text = all_text(msg)
    assert "OSD_DATA_UNMOUNTED" in text and "/dev/loop" in text  # the device that holds it
    # the cause is the first line: stordoc's verdict and the root, Ceph's health after it;
    # one Fix button, the root's runbook (osd-start would refuse: never offered)
    first = msg.params["blocks"][0]["text"]["text"]
    assert "lab: OSD_DATA_UNMOUNTED osd.1" in first.split("\n")[0], first
    fixes = {h.bot.store.button(b["value"]).runbook: b["value"]  # type: ignore[union-attr]
             for b in buttons(msg, "fix")}
    assert list(fixes) == ["osd-remount"]
    # a viewer may look, not fix: refused, nothing planned
    h.slack.press("fix", fixes["osd-remount"], VIEWER, ts)
    h.wait_post("*operator* role", ("chat.postEphemeral",))
    # an operator presses Fix: the plan with Confirm (confirm dialog) and Cancel
    h.slack.press("fix", fixes["osd-remount"], OPS, ts)
    plan = h.wait_post("Plan: osd-remount osd.1", PLAN_CALLS, timeout=120)
    plan_ts = plan.response["ts"]
    confirm = buttons(plan, "confirm")[0]
    assert confirm["confirm"]["confirm"]["text"] == "Run it"
    assert "mount" in all_text(plan)
    # a remount moves no data but needs a second person under two_person (the runbook
    # says so: RunbookInfo.touches_data); the requester's own Confirm is refused
    assert "two-person rule" in all_text(plan)
    h.slack.press("confirm", confirm["value"], OPS, plan_ts)
    h.wait_post("two-person rule on `lab`", ("chat.postEphemeral",))
    # a second operator confirms; a retried delivery of the same press runs once
    body = h.slack.action_body("confirm", confirm["value"], OPS2, plan_ts,
                               trigger_id="confirm.lab.1")
    h.slack.send(body, "application/x-www-form-urlencoded")
    h.slack.send(body, "application/x-www-form-urlencoded", headers={"X-Slack-Retry-Num": "1"})
    closed = h.fake.wait_for(lambda f: [c for c in f.of("chat.update")
                                        if c.params.get("ts") == plan_ts
                                        and "verification" in all_text(c)], 300)[0]
    assert ":white_check_mark:" in all_text(closed), all_text(closed)
    thread = [c for c in h.posts() if c.params.get("thread_ts") == plan_ts]
    assert len(thread) == 2  # progress (edited in place as steps run) and the one result
    assert any("verification" in all_text(c) for c in thread)
    # then the truth after the fix: what the cluster still does, until clean
    h.fake.wait_for(lambda f: [c for c in f.of("chat.postMessage", "chat.update")
                               if "after the fix:" in all_text(c)], 120)
    h.slack.press("confirm", confirm["value"], OPS2, plan_ts)  # the token is spent
    h.wait_post("already", ("chat.postEphemeral",))
    assert len([c for c in thread if "started by" in all_text(c)]) == 1
    # the OSD is really back up, and the audit names the Slack users
    assert lab.osd_up(1)
    from storage.audit import Audit
    runs = [r for r in Audit(h.env.journal).runs(cluster="lab") if r.runbook == "osd-remount"]
    assert len(runs) == 1 and runs[0].user == OPS and runs[0].confirmed_by == OPS2
    assert runs[0].source == "slack"


def test_unknown_osd_named_and_unauthorized_refused(h: BotHarness, lab: Lab) -> None:
    h.slack.slash("osd osd.17", VIEWER)
    call = h.wait_post("unknown OSD", ("chat.postEphemeral",), timeout=60)
    assert f"this cluster has osd.0-osd.{lab.n_osds - 1}" in call.params["text"]
    h.slack.slash("fix osd-start osd.1", STRANGER)
    h.wait_post("is not allowed", ("chat.postEphemeral",))
    h.slack.slash("osd tree", VIEWER)
    tree = h.wait_post(f"{lab.n_osds} OSDs", timeout=60)
    assert "*node2*" in all_text(tree) and "`osd.1`" in all_text(tree)


@pytest.fixture
def cache_misconfigured(lab: Lab) -> Iterator[None]:
    lab.break_("cache-tier-misconfigured")
    try:
        yield
    finally:
        lab.heal("cache-tier-misconfigured")


def test_two_person_rule_then_cancel_runs_nothing(h: BotHarness, lab: Lab,
                                                  cache_misconfigured: None) -> None:
    h.slack.slash("fix cache-tier-tune lab-cache", OPS)
    plan = h.wait_post("Plan: cache-tier-tune lab-cache", PLAN_CALLS, timeout=120)
    plan_ts = plan.response["ts"]
    assert "two-person rule" in all_text(plan)
    confirm = buttons(plan, "confirm")[0]["value"]
    cancel = buttons(plan, "cancel")[0]["value"]
    h.slack.press("confirm", confirm, OPS, plan_ts)  # the requester: refused
    h.wait_post("two-person rule on `lab`", ("chat.postEphemeral",))
    h.slack.press("cancel", cancel, OPS2, plan_ts)
    # the plan's own message may itself be a chat.update (a slow plan first posts "still
    # working..." and replaces it: CI under load); the cancel is the update that follows it
    closed = h.fake.wait_for(lambda f: [c for c in f.of("chat.update")
                                        if c.params.get("ts") == plan_ts
                                        and "Cancelled" in all_text(c)], 60)[0]
    assert "Cancelled by <@UOPSLAB002>; nothing ran." in all_text(closed)
    h.slack.press("confirm", confirm, OPS2, plan_ts)  # too late: cancelled
    h.wait_post("already handled", ("chat.postEphemeral",))
    from storage.audit import Audit
    assert not [r for r in Audit(h.env.journal).runs(cluster="lab")
                if r.runbook == "cache-tier-tune"]
    outcomes = [(x["user"], x["action"], x["outcome"]) for x in h.bot.store.audit_rows()]
    assert (OPS, "confirm", "refused: two-person") in outcomes
    assert (OPS2, "cancel", "cancelled") in outcomes


def test_bench_from_slack_plan_confirm_figures_and_chart(h: BotHarness, lab: Lab) -> None:
    h.slack.slash("bench rados seconds=2 concurrency=4 size=64k", OPS)
    plan = h.wait_post("Plan: bench-rados", PLAN_CALLS, timeout=120)
    plan_ts = plan.response["ts"]
    assert "pool" in all_text(plan)
    h.slack.press("confirm", buttons(plan, "confirm")[0]["value"], OPS2, plan_ts)
    closed = h.fake.wait_for(lambda f: [c for c in f.of("chat.update")
                                        if c.params.get("ts") == plan_ts
                                        and "verdict" in all_text(c)], 300)[0]
    assert ":white_check_mark:" in all_text(closed), all_text(closed)
    thread = "\n".join(all_text(c) for c in h.posts() if c.params.get("thread_ts") == plan_ts)
    assert "ops/s" in thread and "MB/s" in thread and "p99" in thread
    assert "ceph osd perf" in thread  # per-OSD latency while it ran
    up = h.fake.wait_for(lambda f: f.of("files.completeUploadExternal"), 60)
    assert up[0].params["files"][0]["title"] == "bench rados on lab"
    (data,) = h.fake.uploads.values()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    h.slack.slash("bench rados sekonds=2", OPS)
    h.wait_post("did you mean `seconds`", ("chat.postEphemeral",))
