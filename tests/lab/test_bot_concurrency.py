"""Issue 10.1 on the real lab: the real ``stordoc bot --http`` process answers 20
concurrent ``health`` requests correctly, round after round (it used to wedge for good
after a few rounds: green logging locks shared by OS threads)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lab import Lab
from tests.support.bot_process import BotProcess, bot_config
from tests.support.fake_slack import FakeSlack, SlackSender

N, ROUNDS = 20, 10
USERS = [f"UCONC{i:05d}" for i in range(N)]


@pytest.fixture
def bot(lab: Lab, tmp_path: Path) -> Iterator[tuple[BotProcess, FakeSlack]]:
    fake = FakeSlack().start()
    cfg = bot_config(lab.config_path, tmp_path / "bot.toml", fake.base_url, "lab",
                     viewers=USERS, journal=tmp_path / "j.db")
    proc = BotProcess(cfg)
    try:
        yield proc, fake
    finally:
        proc.stop()
        fake.stop()


ANSWER = re.compile(r"(OK|WARN|CRIT|UNREACHABLE) lab: ")  # the verdict first, then the cluster


def test_twenty_concurrent_health_requests_for_ten_rounds(
        bot: tuple[BotProcess, FakeSlack]) -> None:
    proc, fake = bot
    senders = [SlackSender(proc.url, channel=f"CCONC{i:05d}") for i in range(N)]
    for rnd in range(ROUNDS):
        with ThreadPoolExecutor(N) as pool:
            statuses = list(pool.map(lambda i: senders[i].slash("health lab", USERS[i]).status,
                                     range(N)))
        assert statuses == [200] * N, (rnd, statuses)

        def answers(f: FakeSlack, rnd: int = rnd) -> list[str] | None:
            texts = [str(c.params.get("text", "")) for c in f.of("chat.postMessage",
                                                                 "chat.update")]
            done = [t for t in texts if ANSWER.match(t)]
            return done if len(done) >= N * (rnd + 1) else None
        texts = fake.wait_for(answers, 180)
        wrong = [t for t in texts if not t.startswith("OK lab: no incidents")]
        assert not wrong, (rnd, wrong[:3], "".join(proc.log[-30:]))
    log = "".join(proc.log)
    assert "greenlet.error" not in log and "No existing session" not in log
    assert proc.proc.poll() is None
