"""Issue 37 item 11: alert groups of one cluster within ``alerts.thread_window_s`` are one
thread. The real bot (bolt over real HTTP), the real webhook, Alertmanager's captured v4
payload, a fake Slack on loopback; the cluster's collection is a captured healthy
snapshot (the real check engine and journal)."""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.settings import AlertSettings, Secret, parse_settings
from storage.ceph import build_state
from storage.model import ClusterSnapshot
from storage.targets import ClusterTarget
from tests.support.fake_slack import BotHarness, Call, FakeSlack, all_text
from tests.unit.test_tui_data import healthy_snapshot, octopus_raw

TOKEN = "alert-token-0123456789"
EAST, WEST = "CEASTROOM1", "CWESTROOM1"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "alertmanager" / \
    "osd_down_high_resolved.json"
STARTED = dt.datetime.fromtimestamp(time.time() - 60, dt.UTC).isoformat().replace(
    "+00:00", "Z")


def _healthy() -> ClusterSnapshot:
    """The captured octopus cluster with its one warning (insecure global_id reclaim)
    cleared: a healthy cluster, no incident."""
    raw = octopus_raw()
    raw["health detail"] = {"status": "HEALTH_OK", "checks": {}, "mutes": []}
    snap = healthy_snapshot()
    return replace(snap, ceph=build_state(raw, collected_at=snap.taken_at))


HEALTHY = _healthy()


def harness(tmp_path: Path, window_s: float = 300.0, throttle_s: float = 0.05
            ) -> BotHarness:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    tok = tmp_path / "token"
    tok.write_text(TOKEN + "\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "east": {"ceph": {"conf": str(conf), "timeout": 2}},
        "west": {"ceph": {"conf": str(conf), "timeout": 2}}}})
    h = BotHarness(s, {"east": {"viewers": ["UVIEWER001"]}}, str(tmp_path / "bot.db"),
                   throttle_s=throttle_s, channels={EAST: "east", WEST: "west"},
                   alerts=AlertSettings(token=Secret(file=str(tok)), thread_window_s=window_s))

    def collect(target: ClusterTarget, host_facts: bool = True) -> ClusterSnapshot:
        return replace(HEALTHY, taken_at=time.time())
    h.env.collect = collect  # type: ignore[method-assign]
    h.bot.desk.outbox.summary_every_s = 0.3
    return h


def group(name: str, cluster: str, status: str = "firing", started: str = STARTED,
          fingerprint: str | None = None) -> bytes:
    p = copy.deepcopy(json.loads(FIXTURE.read_text()))
    p.update(status=status, groupKey=f'{{}}:{{alertname="{name}", cluster="{cluster}"}}')
    p["commonLabels"] = {"alertname": name, "cluster": cluster}
    p["groupLabels"] = {"alertname": name, "cluster": cluster}
    fp = fingerprint or f"{abs(hash((name, cluster))) % 16**16:016x}"
    p["alerts"][0].update(status=status, startsAt=started, fingerprint=fp,
                          labels={"alertname": name, "cluster": cluster})
    if status == "firing":
        p["alerts"][0]["endsAt"] = "0001-01-01T00:00:00Z"
    return json.dumps(p).encode()


def deliver(h: BotHarness, body: bytes) -> int:
    req = urllib.request.Request(h.base_url + "/alertmanager", data=body, method="POST",
                                 headers={"Authorization": f"Bearer {TOKEN}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return int(resp.status)


def in_channel(f: FakeSlack, ch: str, *methods: str) -> list[Call]:
    return [c for c in f.of(*(methods or ("chat.postMessage",)))
            if c.params.get("channel") == ch]


def top_level(f: FakeSlack, ch: str) -> list[Call]:
    return [c for c in in_channel(f, ch) if not c.params.get("thread_ts")]


def named(f: FakeSlack, ch: str, names: list[str]) -> bool:
    """Every one of ``names`` said in the channel's posts (top level or thread)."""
    text = "\n".join(all_text(c) for c in in_channel(f, ch))
    return all(f"*{n}*" in text or f"{n} firing" in text for n in names)


def settle(h: BotHarness, pred: Any, timeout: float = 120.0) -> None:
    """Until ``pred`` holds and the desk's thread sender has nothing queued."""
    h.fake.wait_for(pred, timeout)
    assert h.bot.desk.outbox.wait_idle(timeout)


def test_500_groups_of_a_cluster_are_one_top_level_post(tmp_path: Path) -> None:
    h = harness(tmp_path)
    try:
        names = [f"Flood{i:03d}" for i in range(500)]
        with ThreadPoolExecutor(4) as pool:
            codes = list(pool.map(lambda n: deliver(h, group(n, "east")), names))
        assert codes == [200] * 500
        settle(h, lambda f: named(f, EAST, names) and any(
            "500 alert groups on east" in all_text(c) for c in in_channel(f, EAST,
                                                                          "chat.update")))
        tops = top_level(h.fake, EAST)
        assert len(tops) == 1, [all_text(c)[:80] for c in tops]
        root = tops[0]
        first = re.findall(r"Flood[0-9]{3} firing on east", all_text(root))
        assert first and first[0][:8] in names  # whichever the desk handled first
        assert "stordoc's check finds no finding" in all_text(root)  # healthy: no cause
        ts = root.response.get("ts") or "1700000000.000001"
        posts = in_channel(h.fake, EAST)
        replies = [c for c in posts if c.params.get("thread_ts")]
        assert all(c.params["thread_ts"] == ts for c in replies)
        # every group said in one message, none in two
        texts = [all_text(c) for c in posts]
        assert all(sum(n in t for t in texts) == 1 for n in names)
        updates = in_channel(h.fake, EAST, "chat.update")
        assert updates and all(c.params.get("ts") == ts for c in updates)
        last = all_text(updates[-1])
        assert "500 alert groups on east* since" in last and "500 firing, 0 resolved" in last
        assert "… and" in last  # 500 lines do not fit a section: the rest "in the thread"
        # within Slack's limits: packed replies at the throttle's pace, paced updates
        assert len(posts) + len(updates) < 100, (len(posts), len(updates))
        span = posts[-1].at - posts[0].at
        assert len(posts) - 1 <= span / 0.05 + 1
        uspan = updates[-1].at - updates[0].at
        assert len(updates) - 1 <= uspan / 0.3 + 1
        assert not in_channel(h.fake, WEST, "chat.postMessage", "chat.update")
    finally:
        h.close()


def test_two_clusters_are_two_threads(tmp_path: Path) -> None:
    h = harness(tmp_path)
    try:
        for i in range(6):
            assert deliver(h, group(f"Both{i}", "east" if i % 2 else "west")) == 200
        settle(h, lambda f: named(f, EAST, ["Both1", "Both3", "Both5"])
               and named(f, WEST, ["Both0", "Both2", "Both4"]))
        for ch in (EAST, WEST):
            tops = top_level(h.fake, ch)
            assert len(tops) == 1, (ch, [all_text(c)[:80] for c in tops])
            ts = tops[0].response["ts"]
            assert all(c.params["thread_ts"] == ts for c in in_channel(h.fake, ch)
                       if c.params.get("thread_ts"))
        assert top_level(h.fake, EAST)[0].response["ts"] != \
            top_level(h.fake, WEST)[0].response["ts"]
    finally:
        h.close()


def test_a_group_after_the_window_is_a_new_top_level_post(tmp_path: Path) -> None:
    h = harness(tmp_path, window_s=1.0)
    try:
        assert deliver(h, group("First", "east")) == 200
        settle(h, lambda f: named(f, EAST, ["First"]))
        assert deliver(h, group("Second", "east")) == 200
        settle(h, lambda f: named(f, EAST, ["Second"]))
        assert len(top_level(h.fake, EAST)) == 1, "Second came within the window"
        opened = h.bot.desk.windows.current("east")
        assert opened is not None
        time.sleep(max(0.0, opened.opened_at + 1.1 - time.time()))
        assert deliver(h, group("Third", "east")) == 200
        settle(h, lambda f: named(f, EAST, ["Third"]))
        tops = top_level(h.fake, EAST)
        assert len(tops) == 2 and "Third firing on east" in all_text(tops[1])
    finally:
        h.close()


def test_the_window_thread_is_found_again_after_a_restart(tmp_path: Path) -> None:
    h = harness(tmp_path)
    try:
        assert deliver(h, group("BeforeRestart", "east")) == 200
        settle(h, lambda f: named(f, EAST, ["BeforeRestart"]))
        ts = top_level(h.fake, EAST)[0].response["ts"]
    finally:
        h.close()
    h = harness(tmp_path)  # a new bot process on the same journal, a new Slack connection
    try:
        assert deliver(h, group("AfterRestart", "east")) == 200
        settle(h, lambda f: named(f, EAST, ["AfterRestart"]) and any(
            "2 alert groups on east" in all_text(c)
            for c in in_channel(f, EAST, "chat.update")))
        assert not top_level(h.fake, EAST)
        assert [c.params["thread_ts"] for c in in_channel(h.fake, EAST)] == [ts]
        up = in_channel(h.fake, EAST, "chat.update")[-1]
        assert up.params["ts"] == ts and "BeforeRestart" in all_text(up)
    finally:
        h.close()


def test_repeats_fold_into_the_summary_and_resolved_updates_the_thread(
        tmp_path: Path) -> None:
    h = harness(tmp_path)
    try:
        assert deliver(h, group("Disk", "east", fingerprint="00000000000000aa")) == 200
        assert deliver(h, group("Net", "east")) == 200
        settle(h, lambda f: named(f, EAST, ["Disk", "Net"]))
        n = len(in_channel(h.fake, EAST))
        # the same group again, its alert re-started (a new delivery, not a duplicate)
        later = dt.datetime.fromtimestamp(time.time() - 5, dt.UTC).isoformat().replace(
            "+00:00", "Z")
        assert deliver(h, group("Disk", "east", started=later,
                                fingerprint="00000000000000aa")) == 200
        # the same alert (fingerprint) in another group (a second route)
        p = json.loads(group("Disk", "east", fingerprint="00000000000000aa"))
        p["groupKey"] = '{}/{severity="critical"}:{alertname="Disk", cluster="east"}'
        assert deliver(h, json.dumps(p).encode()) == 200
        settle(h, lambda f: any("Disk* firing (1 alert, 1 repeat)" in all_text(c)
                                for c in in_channel(f, EAST, "chat.update")))
        assert len(in_channel(h.fake, EAST)) == n, "repeats are counted, not posted"
        assert deliver(h, group("Disk", "east", status="resolved",
                                fingerprint="00000000000000aa")) == 200
        settle(h, lambda f: any("resolved: *Disk*" in all_text(c)
                                for c in in_channel(f, EAST)) and any(
            ":white_check_mark: *Disk* resolved" in all_text(c)
            for c in in_channel(f, EAST, "chat.update")))
        ts = top_level(h.fake, EAST)[0].response["ts"]
        resolved = [c for c in in_channel(h.fake, EAST) if "resolved: *Disk*" in all_text(c)]
        assert [c.params.get("thread_ts") for c in resolved] == [ts]
        assert len(top_level(h.fake, EAST)) == 1
    finally:
        h.close()
