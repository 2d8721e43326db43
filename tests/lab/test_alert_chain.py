"""The whole alert chain on the lab: a real fault, Ceph's own Prometheus rule firing in a
real Prometheus, a real Alertmanager delivering to the real bot over HTTP, the diagnosis
with its Fix button in the fake Slack's record, the fix through the button, then the
resolved notice in the same thread. Webhook refusals post nothing."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.service import Service
from core.settings import AlertSettings, Secret, load_settings
from lab import Lab
from lab.alerts import AlertChain
from tests.support.cli import cli
from tests.support.fake_slack import BotHarness, all_text, buttons
from tests.support.poll import wait_until

OPS, OPS2 = "UOPSALRT01", "UOPSALRT02"
CHANNEL = "CLABALERT1"


@pytest.fixture(scope="module")
def chain(lab: Lab) -> Iterator[AlertChain]:
    c = AlertChain(lab)
    c.up()
    yield c
    c.down()


def _harness(lab: Lab, chain: AlertChain, tmp_path: Path, port: int) -> BotHarness:
    # each group its own top-level post: these tests follow one incident's message and
    # its thread (one thread per cluster and window: tests/unit/test_alert_windows.py)
    alerts = AlertSettings(token=Secret(file=str(chain.token_file)),
                           alertmanager_url=chain.alertmanager_url, thread_window_s=0)
    return BotHarness(load_settings(lab.config_path),
                      {"lab": {"operators": [OPS, OPS2], "two_person": True}},
                      str(tmp_path / "bot.db"), throttle_s=0.2, port=port,
                      channels={CHANNEL: "lab"}, alerts=alerts)


@pytest.fixture
def private(lab: Lab, chain: AlertChain, tmp_path: Path) -> Iterator[BotHarness]:
    """A bot the lab's Alertmanager does not deliver to (an ephemeral port)."""
    harness = _harness(lab, chain, tmp_path, 0)
    yield harness
    harness.close()


@pytest.fixture
def h(lab: Lab, chain: AlertChain, tmp_path: Path) -> Iterator[BotHarness]:
    """The bot on the port the lab's Alertmanager delivers to."""
    harness = _harness(lab, chain, tmp_path, chain.ports.webhook)
    harness.bot.desk.follow_every_s = 3.0  # follow a cause that outlives its alert briskly
    yield harness
    harness.close()


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _channel_posts(h: BotHarness) -> list[Any]:
    return [c for c in h.posts() if c.params.get("channel") == CHANNEL]


def test_alert_to_diagnosis_fix_and_resolved(h: BotHarness, lab: Lab,
                                             chain: AlertChain) -> None:
    t0 = time.monotonic()
    # down and in, as after a reboot: Ceph's OSD_DOWN fires its rules. Marked out at once,
    # the cluster recovers to HEALTH_OK and Ceph's rules stay silent (watch mode sees it)
    lab.break_("osd-unmounted", osd=1)
    try:
        def diagnosis(f: Any) -> Any:
            for c in _channel_posts(h):
                if not c.params.get("thread_ts") and "OSD_DATA_UNMOUNTED" in all_text(c):
                    return c
            return None
        msg = h.fake.wait_for(diagnosis, 240)
        took = time.monotonic() - t0
        text = all_text(msg)
        assert "firing" in text and "Cause:" in text and "osd.1" in text
        # posted for an alert of Ceph's own rule file, through the real chain
        from lab.alerts import CEPH_RULES
        names = set(re.findall(r'alert: "(\w+)"', CEPH_RULES.read_text()))
        assert any(f"{n} firing" in text for n in names), text[:300]
        # each alert firing is one the map knows, and the one posted names this cause's fix
        from checks.alert_map import MAP
        assert set(chain.firing()) <= set(MAP), set(chain.firing()) - set(MAP)
        posted = next(n for n in names if f"{n} firing" in text)
        assert MAP[posted].any_incident or "osd-remount" in MAP[posted].runbooks, posted
        fix = buttons(msg, "fix")
        assert len(fix) == 1, "one next step, one Fix button"
        b = h.bot.store.button(fix[0]["value"])
        assert b is not None and b.runbook == "osd-remount" and b.target == "osd.1"
        # every other alert about the same fault went into the thread, not the channel
        time.sleep(8)
        tops = [c for c in _channel_posts(h) if not c.params.get("thread_ts")
                and "osd.1" in all_text(c)]
        assert len(tops) == 1, [all_text(c)[:120] for c in tops]
        # the fix through the button: plan, confirm by a second operator, verified
        ts = msg.response["ts"]
        h.slack.press("fix", fix[0]["value"], OPS, ts)
        plan = h.wait_post("Confirm", ("chat.postMessage", "chat.update"), timeout=120)
        conf = buttons(plan, "confirm")
        assert conf
        h.slack.press("confirm", conf[0]["value"], OPS2, plan.response["ts"]
                      if plan.response else ts)
        h.wait_post("verified", ("chat.postMessage", "chat.update"), timeout=300)
        assert lab.osd_up(1) is True
        # Alertmanager says resolved; stordoc checks and says what it saw clear, in the thread
        resolved = h.fake.wait_for(lambda f: [
            c for c in _channel_posts(h) if c.params.get("thread_ts") == ts
            and "resolved" in all_text(c) and "clear" in all_text(c)], 240)
        assert "OSD_DATA_UNMOUNTED osd.1" in all_text(resolved[0])
        print(f"lab break -> diagnosis in Slack: {took:.1f} s")
    finally:
        lab.heal("osd-unmounted", osd=1)  # tests/support/broken.py: always, it is idempotent


def test_webhook_refusals_post_nothing(private: BotHarness, chain: AlertChain) -> None:
    h = private
    url = h.base_url + "/alertmanager"
    token = chain.token_file.read_text().strip()
    good = json.loads((Path(__file__).parents[1] / "fixtures" / "alertmanager"
                       / "osd_down_high_resolved.json").read_text())
    good["commonLabels"]["cluster"] = "lab"
    body = json.dumps(good).encode()
    auth = {"Authorization": f"Bearer {token}"}
    cases = [
        (body, {}, 401),
        (body, {"Authorization": "Bearer wrong-token-xxxx"}, 401),
        (body, {"Authorization": f"Basic {token}"}, 401),
        (b"{not json", auth, 400),
        (json.dumps({**good, "version": "3"}).encode(), auth, 400),
        (json.dumps({**good, "alerts": []}).encode(), auth, 400),
        (json.dumps({**good, "commonLabels": {"cluster": "prod"}}).encode(), auth, 422),
        (b"x" * (1024 * 1024 + 1), auth, 413),
    ]
    for raw, hdr, want in cases:
        code, _ = _post(url, raw, hdr)
        assert code == want, (raw[:60], hdr, code)
    no_label = {**good, "commonLabels": {}}
    for a in no_label["alerts"]:
        a["labels"].pop("cluster", None)
    assert _post(url, json.dumps(no_label).encode(), auth)[0] == 422
    time.sleep(2)
    assert not h.posts(), "a refused delivery posts nothing"
    # a good one, delivered twice: handled once
    code, ans = _post(url, body, auth)
    assert code == 200 and ans["detail"].startswith("accepted")
    code, ans = _post(url, body, auth)
    assert code == 200 and "duplicate" in ans["detail"]


def test_watch_posts_incident_then_resolution(private: BotHarness, lab: Lab) -> None:
    """Watch mode (no Prometheus): a new incident is posted once with its Fix button, a
    second round posts nothing new, the heal is announced in the same thread; the CLI's
    `stordoc watch` prints the same incident."""
    import threading

    from core.service.watch import loop

    h = private
    lines: list[str] = []
    lab.break_("osd-unmounted", osd=1)
    try:
        n = loop(h.bot.backend, "lab", 5, threading.Event(), lines.append, h.bot.desk, count=2)
        assert n == 2
        # watch's own posts (the module's alert chain may post alerts meanwhile)
        tops = [c for c in _channel_posts(h) if not c.params.get("thread_ts")
                and "new incident" in all_text(c)]
        assert len(tops) == 1 and "OSD_DATA_UNMOUNTED" in all_text(tops[0])
        assert buttons(tops[0], "fix")
        assert any("OPEN" in x and "OSD_DATA_UNMOUNTED osd.1" in x for x in lines)
        r = cli(lab.config_path, "watch", "--count", "1", "--no-slack", timeout=120,
                columns=None)
        assert r.returncode == 0, r.stderr
        assert "OPEN" in r.stdout and "OSD_DATA_UNMOUNTED osd.1" in r.stdout
    finally:
        lab.heal("osd-unmounted", osd=1)
    ts = tops[0].response["ts"]

    def resolved() -> bool:
        loop(h.bot.backend, "lab", 5, threading.Event(), lines.append, h.bot.desk, count=1)
        return any(c.params.get("thread_ts") == ts and "resolved" in all_text(c)
                   for c in _channel_posts(h))

    wait_until(resolved, 180, "a resolution posted in the incident's thread", 3)
    assert len([c for c in _channel_posts(h) if not c.params.get("thread_ts")
                and "OSD_DATA_UNMOUNTED" in all_text(c)]) == 1, "posted once"


def test_silence_from_chat_and_button(private: BotHarness, lab: Lab,
                                      chain: AlertChain) -> None:
    """`silence` and the Silence button create a real Alertmanager silence (creator: the
    Slack user) and a stordoc mute of the incident's root, same expiry, audited; a viewer
    cannot; `silences` lists both; a muted cause is never announced as resolved."""
    from core.alerts import AlertmanagerApi
    from storage.mutes import active_mutes

    h = private
    api = AlertmanagerApi(chain.alertmanager_url)
    h.slack.channel = CHANNEL
    before = {s["id"] for s in api.silences("cluster", "lab")}
    h.slack.slash("silence CephOSDDown for=1h planned disk swap", "UVIEWALRT1")
    h.wait_post("operator", ("chat.postEphemeral", "chat.postMessage"))
    assert {s["id"] for s in api.silences("cluster", "lab")} == before, "a viewer cannot"
    h.slack.slash("silence CephOSDDown for=1h planned disk swap", OPS)
    h.wait_post("Silenced `CephOSDDown` on lab")
    new = [s for s in api.silences("cluster", "lab") if s["id"] not in before]
    assert len(new) == 1 and new[0]["createdBy"] == f"slack:{OPS}"
    assert {(m["name"], m["value"]) for m in new[0]["matchers"]} == {
        ("alertname", "CephOSDDown"), ("cluster", "lab")}
    assert "planned disk swap" in new[0]["comment"]
    h.slack.slash("silences", OPS)
    listed = h.wait_post("silences and mutes")
    assert "alertname=CephOSDDown" in all_text(listed)
    # the button on an incident's post: silence + mute of the root, same expiry
    token = chain.token_file.read_text().strip()
    lab.break_("osd-unmounted", osd=1)
    try:
        p = json.loads((Path(__file__).parents[1] / "fixtures" / "alertmanager"
                        / "osd_down_high_resolved.json").read_text())
        p.update(status="firing", groupKey='{}:{alertname="CephOSDDownHigh"}')
        p["commonLabels"]["cluster"] = "lab"
        p["alerts"][0].update(status="firing", endsAt="0001-01-01T00:00:00Z",
                              startsAt="2000-01-01T00:00:00Z")
        code, _ = _post(h.base_url + "/alertmanager", json.dumps(p).encode(),
                        {"Authorization": f"Bearer {token}"})
        assert code == 200
        msg = h.fake.wait_for(lambda f: [c for c in _channel_posts(h)
                                         if "OSD_DATA_UNMOUNTED" in all_text(c)
                                         and buttons(c, "silence")], 180)[0]
        sil = buttons(msg, "silence")[0]["value"]
        h.slack.press("silence", sil, OPS, msg.response["ts"])
        h.wait_post("stordoc muted OSD_DATA_UNMOUNTED osd.1", timeout=180)  # checks first
        mutes = active_mutes(h.env.journal, "lab")
        assert [(m.code, m.entity) for m in mutes] == [("OSD_DATA_UNMOUNTED", "osd.1")]
        assert mutes[0].by == f"slack:{OPS}"
        sils = [s for s in api.silences("cluster", "lab")
                if any(m["value"] == "CephOSDDownHigh" for m in s["matchers"])]
        assert len(sils) == 1
        h.slack.press("silence", sil, OPS, msg.response["ts"])
        h.wait_post("already silenced", ("chat.postEphemeral", "chat.postMessage"))
        # muted, not gone: watch mode must not call it resolved
        ts = msg.response["ts"]
        _, closed = h.bot.desk.sync("lab", Service(h.env).check("lab", "cli"))
        assert closed == 0
        assert not [c for c in _channel_posts(h) if c.params.get("thread_ts") == ts
                    and "resolved" in all_text(c)]
    finally:
        lab.heal("osd-unmounted", osd=1)
        from storage.mutes import remove_mutes
        remove_mutes(h.env.journal, "lab", "OSD_DATA_UNMOUNTED", "osd.1", "test")
