"""What a fix, `help`, `mute list` and `ring` look like in Slack, through the real bolt App
over real HTTP against the fake Slack API.

A fix's thread is the plan (the parent, closed with the outcome), ONE progress message
edited in place as the steps run, and ONE result message (the follow-up after an OSD fix
edits it). The runbook itself is the replayed swift-device-unmounted plan; its run is a
scripted event stream in the order ``runbooks.execute`` emits it (no cluster here).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.service.actions import ActionPlan, PlanKind, RunReport
from core.settings import parse_settings
from runbooks.aftermath import Aftermath
from runbooks.api import RunContext, plan_from_snapshot
from runbooks.model import EventKind, RunEvent
from storage.journal import Journal
from tests.support.fake_slack import BotHarness, Call, all_text, buttons
from tests.unit.test_replay import replay

OPERATOR, VIEWER = "UOPERATOR7", "UVIEWER007"


class ScriptedActions:
    """``Service.actions`` for one replayed plan: ``execute`` emits the events of a
    successful run step by step; ``follow`` reports peering, then clean."""

    def __init__(self, real: Any, release: str = "pacific", settles: bool = True) -> None:
        self.settles = settles
        self.real = real  # everything else (the runbook names, ...) is the real service's
        rp = replay(release, "swift-device-unmounted")
        ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, user="t")
        self.rb_plan = plan_from_snapshot(ctx, rp.outcome.snapshot, "swift-device-remount",
                                       "d2@node2")
        self.ctx = ctx
        self.followed = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def plan_of(self, user: str) -> ActionPlan:
        p = self.rb_plan
        return ActionPlan(PlanKind.RUNBOOK, "lab", p.runbook, p.target, tuple(p.lines()),
                          False, False, p.to_dict(), "fp-1", user, (self.ctx, p))

    def plan(self, cluster: str, runbook: str, target: str, **kw: Any) -> ActionPlan:
        return self.plan_of(kw.get("user") or "?")

    def execute(self, plan: ActionPlan, confirmed_by: str,
                on_event: Callable[[RunEvent], None], cancel: threading.Event,
                on_progress: Any = None, **kw: Any) -> RunReport:
        p = self.rb_plan
        on_event(RunEvent(EventKind.PLAN, None, p.runbook, "\n".join(p.lines())))
        for s in p.steps:
            on_event(RunEvent(EventKind.STEP_STARTED, s.index, s.title, s.command))
            time.sleep(0.05)  # steps take time: the progress message is edited meanwhile
            on_event(RunEvent(EventKind.STEP_DONE, s.index, s.title, "ok"))
        on_event(RunEvent(EventKind.VERIFY_STARTED, None, "verify", "re-running checks"))
        on_event(RunEvent(EventKind.VERIFY_DONE, None, "verify", "checks pass again",
                          ok=True))
        on_event(RunEvent(EventKind.DONE, None, "success", "d2 mounted on node2", ok=True))
        return RunReport(PlanKind.RUNBOOK, True, "success", "d2 mounted on node2", True,
                         run_id=7)

    def follow(self, cluster: str, runbook: str, on_update: Callable[[Aftermath], None],
               cancel: threading.Event, **kw: Any) -> Aftermath:
        peering = Aftermath(False, 64, 12, 12, {"peering": 12, "active+clean": 52})
        on_update(peering)
        if not self.settles:  # still peering when the follow-up gives up
            self.followed.set()
            return peering
        clean = Aftermath(True, 64, 0, 0, {"active+clean": 64})
        on_update(clean)
        self.followed.set()
        return clean


@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    settings = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    harness = BotHarness(settings, {"lab": {"viewers": [VIEWER], "operators": [OPERATOR]}},
                         str(tmp_path / "bot.db"), throttle_s=0.01)
    yield harness
    harness.close()


def final_texts(h: BotHarness, thread_ts: str) -> dict[str, str]:
    """Each thread message's text as a reader sees it at the end (after its edits)."""
    out: dict[str, str] = {}
    for c in h.fake.of("chat.postMessage", "chat.update"):
        if c.method == "chat.postMessage" and c.params.get("thread_ts") == thread_ts:
            out[str(c.response["ts"])] = all_text(c)
        elif c.method == "chat.update" and c.params.get("ts") in out:
            out[str(c.params["ts"])] = all_text(c)
    return out


def run_fix(h: BotHarness, fake: ScriptedActions, done: str) -> tuple[Call, dict[str, str]]:
    """Fix, Confirm, wait for the follow-up line ``done``: (the plan, thread texts)."""
    h.bot.backend.actions = fake  # type: ignore[assignment]
    h.slack.slash("fix swift-device-remount d2@node2", OPERATOR)
    plan = h.wait_post("Plan: swift-device-remount d2@node2", timeout=30)
    plan_ts = str(plan.response["ts"])
    assert "[swift] wait until recon no longer lists d2" in all_text(plan)
    assert "[ceph]" not in all_text(plan) and "['" not in all_text(plan)
    h.slack.press("confirm", buttons(plan, "confirm")[0]["value"], OPERATOR, plan_ts)
    h.fake.wait_for(lambda f: [c for c in f.of("chat.update") if c.params.get("ts") ==
                               plan_ts and "verification" in all_text(c)], 30)
    assert fake.followed.wait(30)
    h.fake.wait_for(lambda f: [c for c in f.of("chat.update") if done in all_text(c)], 30)
    return plan, final_texts(h, plan_ts)


def test_a_fix_thread_is_progress_edited_in_place_and_one_result(h: BotHarness) -> None:
    fake = ScriptedActions(h.bot.backend.actions)
    _, texts = run_fix(h, fake, "after the fix: clean")
    # the thread: one progress message, one result (the plan is the parent)
    assert len(texts) == 2, list(texts.values())
    progress, result = texts.values()
    assert "started by" in progress and progress.count(":white_check_mark: step") == len(
        fake.rb_plan.steps)
    assert "success" not in progress and "checks pass again" not in progress
    assert result.startswith(":white_check_mark: success: d2 mounted on node2")
    assert "*verification:* checks pass again" in result and "after the fix:" in result
    # success is said once in the thread (the parent's closing line is the plan's own)
    assert sum(t.count("success") for t in texts.values()) == 1
    # the progress message was edited in place, not re-posted per step
    progress_ts = next(iter(texts))
    assert [c for c in h.fake.of("chat.update") if c.params.get("ts") == progress_ts]


def test_progress_message_keeps_its_head_and_fits_slack() -> None:
    from bot.actions import ProgressMessage

    sent: list[tuple[str, str]] = []
    pm = ProgressMessage(lambda t: (sent.append(("post", t)), "1.1")[1],
                         lambda ts, t: sent.append(("update", t)))
    pm.send(":arrow_forward: `osd-remount osd.1` started by <@U1>")
    for i in range(200):
        pm.send(f":arrow_forward: step {i}: a long step title " + "x" * 40)
    assert [k for k, _ in sent].count("post") == 1 and len(sent) == 201
    last = sent[-1][1]
    assert len(last) <= 2900 and last.startswith(":arrow_forward: `osd-remount osd.1`")
    assert "step 199:" in last and "earlier line(s) not shown" in last


def test_help_shows_the_grammar_words_and_secrets_stay_hidden(h: BotHarness) -> None:
    h.slack.slash("help", VIEWER)
    msg = h.fake.wait_for(lambda f: [c for c in f.of("chat.postEphemeral",
                                                     "chat.postMessage")
                                     if "bench KIND" in all_text(c)], 30)[0]
    assert "bench KIND [key=value ...]" in all_text(msg)
    assert "key=***" not in all_text(msg)
    red = h.bot.redactor
    assert red.text("bench KIND [key=value ...]") == "bench KIND [key=value ...]"
    assert red.text("rgw key=AQBsecretsecret password=hunter2") == \
        "rgw key=*** password=***"


def test_mute_list_is_readable_blocks(h: BotHarness) -> None:
    h.slack.slash("mute OSD_DOWN_OUT osd.1 for 2h swapping the disk key=AQBsecret", OPERATOR)
    h.wait_post("muted `OSD_DOWN_OUT osd.1`")
    h.slack.slash("mute SWIFT_DEVICE_UNMOUNTED d2@node2 for 30m replacing it", OPERATOR)
    h.wait_post("muted `SWIFT_DEVICE_UNMOUNTED d2@node2`")
    h.slack.slash("unmute SWIFT_DEVICE_UNMOUNTED d2@node2", OPERATOR)
    h.wait_post("unmuted")
    n = len(h.posts())
    h.slack.slash("mute list", VIEWER)
    msg: Call = h.fake.wait_for(lambda f: f.of("chat.postMessage")[n:], 30)[0]
    text = all_text(msg)
    assert "what=" not in text and "state=" not in text
    sections = [b["text"]["text"] for b in msg.params["blocks"] if b["type"] == "section"]
    first = sections[0]
    assert first.startswith(":no_bell: *OSD_DOWN_OUT osd.1*")
    assert f"muted by <@{OPERATOR}> for another 1 h 59 min" in first \
        or f"muted by <@{OPERATOR}> for another 2 h" in first
    assert "<!date^" in first and "UTC>" in first  # each reader's own time zone
    assert "> swapping the disk key=***" in first and "AQBsecret" not in text
    assert f"SWIFT_DEVICE_UNMOUNTED d2@node2: unmuted by <@{OPERATOR}>" in text
    # `silences` lists the active mutes in the same words
    h.slack.slash("silences", VIEWER)
    listed = all_text(h.wait_post("silences and mutes", ("chat.postMessage",
                                                         "chat.postEphemeral")))
    assert f":no_bell: OSD_DOWN_OUT osd.1: muted by <@{OPERATOR}> for another" in listed
    assert "SWIFT_DEVICE_UNMOUNTED" not in listed  # ended: not listed as active


def test_ring_object_marks_the_unmounted_device(h: BotHarness) -> None:
    from bot import render as r
    from checks.swift_names import host_names

    for release in ("pacific", "reef"):
        snap = replay(release, "swift-device-unmounted").outcome.snapshot
        assert snap.swift is not None
        reply = r.ring_reply("lab", snap.swift, "object", host_names(snap))
        lines = "\n".join(all_text_of(m.blocks) for m in reply.messages).splitlines()
        d2 = [ln for ln in lines if "`d2@node2`" in ln]
        assert len(d2) == 1 and ":red_circle: *UNMOUNTED*" in d2[0], d2
        others = [ln for ln in lines if "`d1@node1`" in ln or "`d3@node3`" in ln]
        assert others and all("mounted" in ln and "UNMOUNTED" not in ln for ln in others)
        assert not any("@127." in ln for ln in lines if ln.strip().startswith("`d"))
        # each server on its configured host, its address beside it
        assert any(ln.strip().startswith("object on node2 `127.0.0.3:") for ln in lines)


def all_text_of(blocks: list[dict[str, Any]]) -> str:
    out = []
    for b in blocks:
        t = b.get("text")
        if isinstance(t, dict):
            out.append(str(t.get("text", "")))
    return "\n".join(out)


def test_a_follow_up_that_gives_up_says_still_not_clean(h: BotHarness) -> None:
    fake = ScriptedActions(h.bot.backend.actions, settles=False)
    _, texts = run_fix(h, fake, "still not clean after 3 minutes")
    assert len(texts) == 2
    result = list(texts.values())[1]
    assert "after the fix: still not clean after 3 minutes: peering: 12 of 64 PGs" in result
    assert "unknown" not in result
