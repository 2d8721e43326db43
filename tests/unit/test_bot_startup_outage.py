"""Issue 37.13: a Slack that answers 5xx or drops connections at start-up is an outage, not
a bad token. ``stordoc bot --http`` (a real process) says so in one line, serves, and
answers once Slack does; ``stordoc watch`` keeps checking the cluster. Only a real
``invalid_auth``/``not_authed`` answer is "the Slack bot token is invalid" (exit 64)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.exitstatus import ExitStatus
from tests.support.bot_process import ROOT, BotProcess, free_port
from tests.support.fake_slack import SIGNING_SECRET, TOKEN, FakeSlack, SlackSender
from tests.support.poll import wait_until

VIEWER = "UVIEWER01"


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    f = FakeSlack().start()
    yield f
    f.stop()


def _config(tmp: Path, fake: FakeSlack) -> Path:
    conf = tmp / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    cfg = tmp / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp / "j.db"}"\ndefault_cluster = "lab"\n'
                   f'[clusters.lab.ceph]\nconf = "{conf}"\ntimeout = 1\n'
                   f'[slack]\napi_base_url = "{fake.base_url}"\n'
                   f'[slack.channels]\nC0000TEST = "lab"\n'
                   f'[slack.roles.lab]\nviewers = ["{VIEWER}"]\n')
    return cfg


@pytest.mark.parametrize("status", [500, 0], ids=["http-500", "dropped"])
def test_the_bot_serves_through_a_slack_outage_at_startup(
        tmp_path: Path, fake: FakeSlack, status: int) -> None:
    # auth.test fails more often than slack_sdk retries in place (1 + 2 attempts)
    fake.fail("auth.test", 5, status=status)
    bot = BotProcess(_config(tmp_path, fake))
    try:
        assert bot.proc.poll() is None  # still running: listening
        said = [x for x in bot.log if "Slack is not answering at start-up" in x]
        assert len(said) == 1 and "\n" not in said[0].rstrip("\n")
        assert not [x for x in bot.log if "invalid" in x or "Traceback" in x]
        # a slash command: acked now, answered once Slack does
        resp = SlackSender(bot.url).slash("help", VIEWER)
        assert resp.status == 200
        fake.wait_for(lambda f: f.of("chat.postEphemeral"), 60)
        wait_until(lambda: [x for x in bot.log if "Slack answers again" in x], 120,
                   lambda: "no 'Slack answers again' in " + "".join(bot.log[-5:]),
                   interval=0.1)
        assert len(fake.failed) == 5
    finally:
        bot.stop()
    assert not [x for x in bot.log if "Traceback" in x]


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "stordoc", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("error", ["invalid_auth", "not_authed"])
def test_only_a_real_invalid_auth_answer_is_a_bad_token(
        tmp_path: Path, fake: FakeSlack, error: str) -> None:
    fake.fail("auth.test", -1, status=200, error=error)
    cfg = _config(tmp_path, fake)
    for args in (["bot", "--http", "--port", str(free_port())], ["watch", "--count", "1"]):
        r = _run(["-c", str(cfg), *args])
        assert r.returncode == ExitStatus.USAGE, (args, r.stdout, r.stderr)
        assert "the Slack bot token is invalid" in r.stderr and error in r.stderr
        assert "Traceback" not in r.stderr
    assert len(fake.failed) == 2  # one answer each: an invalid token is not retried


@pytest.mark.parametrize("status", [503, 0], ids=["http-503", "dropped"])
def test_watch_keeps_checking_through_a_slack_outage_at_startup(
        tmp_path: Path, fake: FakeSlack, status: int) -> None:
    fake.fail("auth.test", 3, status=status)
    r = _run(["-c", str(_config(tmp_path, fake)), "watch", "--count", "2", "--every", "5s"])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "invalid" not in out and "Traceback" not in out
    assert out.count("Slack is not answering at start-up") == 1
    assert out.count("lab UNREACHABLE") == 2  # both checks of the cluster ran
