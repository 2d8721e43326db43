"""`health [CLUSTER] from NAME` in Slack: a saved snapshot's diagnosis through the real bolt
App over real HTTP (a fake Slack API), read-only, named never as a path, only of a
cluster the user may view. The configured cluster itself is unreachable here: nothing in
these tests can touch a real cluster."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.settings import parse_settings
from tests.support.fake_slack import BotHarness, all_text, buttons

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots" / "pacific"
VIEWER, STRANGER = "UVIEWSNAP1", "USTRANGSN1"


@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    settings = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}},
        "prod": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    snaps = tmp_path / "snapshots"
    snaps.mkdir()
    shutil.copytree(FIX / "osd-unmounted-out", snaps / "seed-1")
    (snaps / "outside").symlink_to(FIX / "healthy")
    harness = BotHarness(settings, {"lab": {"viewers": [VIEWER]},
                                    "prod": {"viewers": [VIEWER]}},
                         str(tmp_path / "bot.db"), throttle_s=0.05,
                         snapshots_dir=str(snaps))
    yield harness
    harness.close()


def answer(h: BotHarness, text: str, user: str = VIEWER) -> str:
    n = len(h.posts()) + len(h.ephemerals())
    h.slack.slash(text, user)
    got = h.fake.wait_for(lambda f: (f.of("chat.postMessage") + f.of("chat.postEphemeral")
                                     )[n:], 30)
    return all_text(got[0])


def test_health_from_a_snapshot_leads_with_the_cause_and_offers_no_fix(h: BotHarness) -> None:
    h.slack.slash("health lab from seed-1", VIEWER)
    msg = h.wait_post("from snapshot seed-1", ("chat.postMessage",), timeout=30)
    text = all_text(msg)
    first = msg.params["blocks"][0]["text"]["text"]
    assert "lab: OSD_DATA_UNMOUNTED osd.1" in first.split("\n")[0], first
    assert "next:" in text and "stordoc fix osd-remount osd.1" in text
    assert "nothing runs from here" in text
    assert buttons(msg, "fix") == []  # the past cannot be fixed through a snapshot


@pytest.mark.parametrize("text,why", [
    ("health lab from ../../etc", "is not a snapshot name"),
    ("health lab from /etc/passwd", "is not a snapshot name"),
    ("health lab from nope", "no such directory"),
    ("health lab from outside", "a symlink: refused"),
    ("health prod from seed-1", "is of cluster `lab`, not `prod`"),
])
def test_bad_names_and_other_clusters_are_refused(h: BotHarness, text: str, why: str) -> None:
    assert why in answer(h, text)


def test_a_stranger_may_not_look(h: BotHarness) -> None:
    assert "is not allowed" in answer(h, "health lab from seed-1", STRANGER)
