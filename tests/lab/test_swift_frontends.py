"""The TUI's Swift screen and Slack's `ring` on the real lab show, per storage server,
replication age, async pendings, quarantines and fill, and the dispersion figures: with
one replica of a dispersion object removed, both show the lower percentage."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab import Lab
from storage.dispersion import populate
from stordoc.settings import load_settings
from tests.lab.test_tui_lab import SIZE, _env, plain, wait_until
from tests.support.fake_slack import BotHarness, all_text
from tests.unit.test_tui_app import sync
from tui import screens as S
from tui.app import StordocApp
from tui.backend import EnvBackend
from tui.table import VirtualTable

OPS = "UOPSLAB001"


@pytest.fixture
def one_copy_missing(lab: Lab) -> Iterator[str]:
    """stordoc's dispersion objects there (populated as the runbook would), one replica
    of one of them removed from d2."""
    target = load_settings(lab.config_path).cluster("lab").target("lab")
    assert target.swift is not None
    t0 = time.time()
    populate(target.swift, objects=32, containers=8)
    lab.heal("swift-dispersion-missing")
    # a container copy a busy server missed at populate comes with the next pass
    lab.wait_replication_pass("container", t0, "dispersion containers replicated")
    msg = lab.break_("swift-dispersion-missing", device="d2")
    yield msg
    lab.heal("swift-dispersion-missing")


def test_slack_ring_shows_servers_and_dispersion(lab: Lab, tmp_path: Path,
                                                 one_copy_missing: str) -> None:
    h = BotHarness(load_settings(lab.config_path),
                   {"lab": {"viewers": [], "operators": [OPS]}}, str(tmp_path / "bot.db"),
                   throttle_s=0.2)
    try:
        n = len(h.posts())
        h.slack.slash("ring object --cluster lab", OPS)
        msg = h.fake.wait_for(lambda f: [c for c in f.of("chat.postMessage")[n:]
                                         + f.of("chat.update")
                                         if "dispersion" in all_text(c)], 120)[0]
        text = all_text(msg)
        port = lab.ports.object
        for ip in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
            line = next(ln for ln in text.splitlines() if f"`{ip}:{port}`" in ln)
            assert re.search(r"replicated \d\S* ago", line), line
            assert "async 0" in line and "quarantined" in line and "fill " in line
        assert "dispersion: objects 99.0% of copies (32 sampled)" in text
        assert "1 missing" in text
    finally:
        h.close()


@sync
async def test_tui_swift_screen_shows_servers_and_dispersion(
        lab: Lab, tmp_path: Path, one_copy_missing: str) -> None:
    env = _env(lab, tmp_path)
    app = StordocApp(EnvBackend(env), "lab", refresh_s=0, refresh_timeout_s=120,
                     user="tui-test")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.state.outcome is not None, 120, "first data")
            await pilot.press("w")
            assert isinstance(app.screen, S.SwiftScreen)
            await pilot.pause()
            t = app.screen.query_one("#swift-servers", VirtualTable)
            rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
            port = str(lab.ports.object)
            objs = [r for r in rows if r[0] == "object"]
            assert [r[1].endswith(port) for r in objs] == [True, True, True]
            for r in objs:
                assert r[2] == "ok" and r[3].endswith("ago") and r[4] == "0"
                assert r[5].isdigit() and r[6].endswith("%")
            note = plain(app.screen.query_one("#swift-note"))
            assert "proxy http://127.0.0.1" in note and "healthy" in note
            assert "dispersion: objects 99.0% of copies (32 sampled)" in note
    finally:
        env.close()
