"""Issue 39.1: ``stordoc watch`` posts through the core's Slack parts (``core.slack.poster``,
``core.alerts``), never the bot's. A real ``stordoc watch`` process with Slack configured
(a fake Slack over real HTTP) builds its poster, checks, and exits without one ``bot``
module loaded; the bot's desk is that same core part."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.bot_process import ROOT
from tests.support.fake_slack import SIGNING_SECRET, TOKEN, FakeSlack

# run the real command line, then say which of our front ends' modules were loaded
_PROBE = ("import sys\n"
          "from stordoc.cli import main\n"
          "rc = main(sys.argv[1:])\n"
          "print('LOADED', sorted(m for m in sys.modules if m == 'bot' or m.startswith('bot.')))\n"
          "sys.exit(rc)\n")


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    f = FakeSlack().start()
    yield f
    f.stop()


def test_watch_posts_without_loading_the_bot(tmp_path: Path, fake: FakeSlack) -> None:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   f'[clusters.lab.ceph]\nconf = "{conf}"\ntimeout = 1\n'
                   f'[slack]\napi_base_url = "{fake.base_url}"\n'
                   f'[slack.channels]\nC0000TEST = "lab"\n')
    env = {**os.environ, "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([sys.executable, "-c", _PROBE, "-c", str(cfg), "watch", "--count", "1",
                        "--every", "5s"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "lab UNREACHABLE" in out  # the check ran
    assert fake.of("auth.test"), "the poster never reached Slack"  # Slack was set up
    assert "LOADED []" in r.stdout, out


def test_the_bot_posts_through_the_same_core_poster(tmp_path: Path) -> None:
    """``stordoc bot`` (its watch and its Alertmanager path post through ``bot.desk``)
    holds the core's poster and its desk, not a copy of its own."""
    from core.alerts import AlertDesk
    from core.settings import parse_settings
    from core.slack.poster import SlackPoster
    from tests.support.fake_slack import BotHarness

    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    settings = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 1}}}, "default_cluster": "lab"})
    h = BotHarness(settings, {"lab": {"viewers": ["UVIEWER01"]}}, str(tmp_path / "bot.db"))
    try:
        assert isinstance(h.bot.slack, SlackPoster) and type(h.bot.desk) is AlertDesk
        assert h.bot.desk is h.bot.slack.desk and h.bot.desk.bot is h.bot.slack
        assert h.bot.client is h.bot.slack.client and h.bot.store is h.bot.slack.store
    finally:
        h.close()
