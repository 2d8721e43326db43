"""Issue 26 (2, 6, 9): the bot and `stordoc watch` when Slack fails, under an alert flood and
under a burst of `health`. The real bot (bolt over real HTTP, signed requests) and a fake
Slack Web API on loopback; the cluster's collection is a captured snapshot (the real check
engine and journal) whose runs are counted."""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from checks.outcome import CheckOutcome
from core.env import Env
from core.settings import AlertSettings, Secret, parse_settings
from storage.model import ClusterSnapshot
from storage.targets import ClusterTarget
from tests.support.fake_slack import BotHarness, FakeSlack, SlackSender, all_text
from tests.support.poll import wait_until
from tests.unit.test_tui_data import broken_snapshot

VIEWER = "UVIEWER001"
CH = "COCTOPUS01"  # the cluster's channel (alerts and watch post there)
TOKEN = "alert-token-0123456789"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "alertmanager" / \
    "osd_down_high_resolved.json"


class Collect:
    """Stands for the collection: a captured broken snapshot, counted, optionally held."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.n = 0
        self.gate: threading.Event | None = None
        self.cond = threading.Condition()

    def __call__(self, target: ClusterTarget, host_facts: bool = True) -> ClusterSnapshot:
        with self.cond:
            self.n += 1
            self.cond.notify_all()
        if self.gate is not None:
            assert self.gate.wait(60)
        return replace(broken_snapshot(), taken_at=time.time())

    def wait_started(self, n: int = 1) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.n >= n, 30)


def harness(tmp_path: Path, **kw: Any) -> tuple[BotHarness, Collect]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    tok = tmp_path / "token"
    tok.write_text(TOKEN + "\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"),
                        "clusters": {"octopus": {"ceph": {"conf": str(conf), "timeout": 2}}}})
    h = BotHarness(s, {"octopus": {"viewers": [VIEWER]}}, str(tmp_path / "bot.db"),
                   channels={CH: "octopus"}, alerts=AlertSettings(token=Secret(file=str(tok))),
                   **kw)
    c = Collect(h.env)
    h.env.collect = c  # type: ignore[method-assign]
    return h, c


@pytest.fixture
def hc(tmp_path: Path) -> Iterator[tuple[BotHarness, Collect]]:
    h, c = harness(tmp_path, throttle_s=0.05, working_after_s=30.0, workers=2)
    yield h, c
    if c.gate is not None:
        c.gate.set()
    h.close()


def answers(fake: FakeSlack, channel: str) -> list[str]:
    """The health answers posted in ``channel`` ("CRIT octopus: ...")."""
    return [str(x.params.get("text", "")) for x in fake.of("chat.postMessage", "chat.update")
            if x.params.get("channel") == channel and " octopus: " in
            " " + str(x.params.get("text", "")).split("\n")[0][:40]]


# --------------------------------------------------------------------------- item 9

def test_concurrent_health_requests_share_one_check(hc: tuple[BotHarness, Collect]) -> None:
    """8 `health` at once on a pool of 2 workers: the 6 taken up after the first run ended
    were asked while it ran, so it answers them too: one check, not four."""
    h, c = hc
    c.gate = threading.Event()
    n = 8
    senders = [SlackSender(h.server.url, channel=f"CBURST{i:04d}") for i in range(n)]
    with ThreadPoolExecutor(n) as pool:
        codes = list(pool.map(lambda s: s.slash("health octopus", VIEWER).status, senders))
    assert codes == [200] * n
    c.wait_started()
    c.gate.set()
    h.fake.wait_for(lambda f: all(answers(f, s.channel) for s in senders), 60)
    texts = [answers(h.fake, s.channel)[0] for s in senders]
    assert all(t.startswith("CRIT octopus: ") for t in texts), texts
    assert c.n == 1, f"{c.n} checks for {n} concurrent health requests"
    assert len({t.split("\n")[0] for t in texts}) == 1


# --------------------------------------------------------------------------- item 6

def _firing(group: int, starts: str) -> bytes:
    p = copy.deepcopy(json.loads(FIXTURE.read_text()))
    p.update(status="firing", groupKey=f'{{}}:{{alertname="Flood{group}"}}')
    p["commonLabels"]["cluster"] = "octopus"
    p["groupLabels"] = {"alertname": f"Flood{group}"}
    p["alerts"][0].update(status="firing", startsAt=starts, endsAt="0001-01-01T00:00:00Z",
                          fingerprint=f"{group:016x}")
    p["alerts"][0]["labels"] = {"alertname": f"Flood{group}", "cluster": "octopus"}
    return json.dumps(p).encode()


def _deliver(url: str, body: bytes) -> int:
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return int(resp.status)


def test_alert_flood_is_one_check_and_a_person_does_not_wait_behind_it(
        tmp_path: Path) -> None:
    """40 deliveries starting in 2099: one check for all of them (a future start is now);
    a viewer's `health` meanwhile is answered before the desk has posted the flood (the
    desk's posts are throttled per channel: alert work takes seconds)."""
    h, c = harness(tmp_path, throttle_s=0.1, working_after_s=30.0)
    try:
        c.gate = threading.Event()
        url = h.base_url + "/alertmanager"
        codes = [_deliver(url, _firing(i, "2099-01-01T00:00:00Z")) for i in range(40)]
        assert codes == [200] * 40
        c.wait_started()
        viewer = SlackSender(h.server.url, channel="CVIEWER001")
        assert viewer.slash("health octopus", VIEWER).status == 200
        c.gate.set()
        h.fake.wait_for(lambda f: answers(f, "CVIEWER001"), 60)

        def flood_posts(f: FakeSlack) -> list[Any]:
            return [x for x in f.of("chat.postMessage") if x.params.get("channel") == CH]
        at_answer = len(flood_posts(h.fake))
        # all 40 groups said in the channel (one thread: packed replies, core.alerts.windows)
        h.fake.wait_for(lambda f: all(any(f"*Flood{i}*" in all_text(x) or f"Flood{i}:" in
                                          all_text(x) for x in flood_posts(f))
                                      for i in range(40)), 120)
        assert c.n == 1, f"{c.n} checks for 40 alert deliveries and one health"
        assert at_answer < 20, f"the viewer was answered after {at_answer} alert posts"
        assert all("Flood" in all_text(x) for x in flood_posts(h.fake))
    finally:
        c.gate.set() if c.gate else None
        h.close()


# --------------------------------------------------------------------------- item 2: bot

def test_a_failed_slack_call_is_retried_and_said_in_one_line(
        hc: tuple[BotHarness, Collect], caplog: pytest.LogCaptureFixture) -> None:
    h, _ = hc
    caplog.set_level(logging.INFO)
    h.fake.fail("chat.postMessage", 1, 500)
    s = SlackSender(h.server.url, channel="CRETRY0001")
    assert s.slash("health octopus", VIEWER).status == 200
    h.fake.wait_for(lambda f: answers(f, "CRETRY0001"), 60)
    time.sleep(0.5)
    assert len(answers(h.fake, "CRETRY0001")) == 1 and len(h.fake.failed) == 1
    said = [r.getMessage() for r in caplog.records if r.name.startswith("stordoc.bot")
            and r.levelno >= logging.WARNING]
    assert said == ["Slack chat.postMessage failed (HTTP 500): retry 1 of 2"], said


def test_slack_failing_for_every_worker_is_said_once_then_its_end(
        hc: tuple[BotHarness, Collect], caplog: pytest.LogCaptureFixture) -> None:
    """Slack refusing every post (no retry can mend it): 9 answers lost, said in one line,
    not 9 tracebacks; when Slack answers again, one line with the count."""
    h, _ = hc
    caplog.set_level(logging.INFO)
    h.fake.fail("chat.postMessage", -1, 200, "fatal_error")
    senders = [SlackSender(h.server.url, channel=f"CFAIL{i:05d}") for i in range(9)]
    for s in senders:
        assert s.slash("health octopus", VIEWER).status == 200
    h.fake.wait_for(lambda f: len(f.failed) >= 9, 60)
    time.sleep(0.5)
    h.fake.heal()
    ok = SlackSender(h.server.url, channel="CHEALED001")
    ok.slash("health octopus", VIEWER)
    h.fake.wait_for(lambda f: answers(f, "CHEALED001"), 60)
    time.sleep(0.3)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any("Traceback" in m or "worker failed" in m for m in said), said
    failing = [m for m in said if "Slack API calls are failing" in m]
    assert len(failing) == 1 and "fatal_error" in failing[0], said
    back = [m for m in said if "Slack API answers again" in m]
    assert back == ["Slack API answers again; 9 replies were lost while it failed"], said


# --------------------------------------------------------------------------- item 2: watch

def test_watch_keeps_checking_and_posts_once_after_slack_failed(
        hc: tuple[BotHarness, Collect]) -> None:
    """`stordoc watch`'s loop with an incident open: chat.postMessage fails past
    slack_sdk's retries; the loop says so in one line, goes on checking, and posts each
    incident once when Slack answers again."""
    from core.service.watch import loop

    h, c = hc
    h.fake.fail("chat.postMessage", 3, 503, "service_unavailable")
    lines: list[str] = []
    warned: list[str] = []
    stop = threading.Event()
    ran: list[int] = []
    t = threading.Thread(target=lambda: ran.append(loop(
        h.bot.backend, "octopus", 0.2, stop, lines.append, h.bot.desk, warn=warned.append)))
    t.start()
    try:
        h.fake.wait_for(lambda f: [x for x in f.of("chat.postMessage")
                                   if x.params.get("channel") == CH], 60)
        n_at_post = c.n
        c.wait_started(n_at_post + 2)  # and it keeps checking afterwards
        assert t.is_alive()
    finally:
        stop.set()
        t.join(30)
    assert ran and ran[0] >= 3
    posts = [all_text(x) for x in h.fake.of("chat.postMessage")
             if x.params.get("channel") == CH]
    opened = [ln for ln in lines if " OPEN " in ln]
    assert opened and len(posts) == len(h.bot.desk.threads.open_of("octopus"))
    assert len(set(posts)) == len(posts), "an incident posted twice"
    assert len(h.fake.failed) == 3
    assert len(warned) == 2, warned
    assert "SLACK posting failed (service_unavailable, HTTP 503)" in warned[0]
    assert "SLACK posting works again" in warned[1]


# --------------------------------------------------------------------------- the rule

def test_a_run_under_way_when_asked_answers_and_a_later_ask_checks_again(
        tmp_path: Path) -> None:
    """`since` is met by a run that ended at or after it (it was under way then, or began
    later), never by one that ended before it."""
    from core.service import Service
    from tests.unit.test_service import CapturedEnv

    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    env = CapturedEnv(parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "octopus": {"ceph": {"conf": str(conf), "timeout": 2}}}}))
    env.snapshots, env.collects, env.gate = [broken_snapshot()], 0, threading.Event()
    try:
        svc = Service(env)
        first: list[CheckOutcome] = []
        t = threading.Thread(target=lambda: first.append(svc.check("octopus", "slack")))
        t.start()
        wait_until(lambda: env.collects >= 1, 30, "the first check to collect",
                   interval=0.01)
        asked = time.time()  # while the first run is under way
        env.gate.set()
        t.join(20)
        assert not t.is_alive() and first, "the first check did not finish within 20 s"
        assert svc.check("octopus", "slack", since=asked) is first[0]
        later = svc.check("octopus", "slack", since=time.time())
        assert later is not first[0] and env.collects == 2
        assert svc.inspector.runs == 2
    finally:
        env.close()
