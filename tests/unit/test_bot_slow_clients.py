"""Issue 37.8: slow senders cannot starve signed requests. 64 connections that dribble a
request (headers or body) hold sockets, not the workers: a signed request sent while they
are all open gets its answer before any of them is cut, and each slow connection is then
closed by the server (408 or closed) after the request deadline (made short here).
The figures (latency with 0 and 64 slow connections): benchmarks/bot_slow_clients.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.server import HttpServer
from core.settings import parse_settings
from tests.support.fake_slack import BotHarness, SlackSender
from tests.support.slowloris import SlowClients

VIEWER = "UVIEWER01"
DEADLINE_S = 4.0  # the slow ones are cut this long after they began


@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    harness = BotHarness(s, {"lab": {"viewers": [VIEWER]}}, str(tmp_path / "bot.db"),
                         throttle_s=0.05)
    yield harness
    harness.close()


@pytest.mark.parametrize("in_body", [False, True], ids=["headers", "body"])
def test_a_signed_request_is_answered_while_64_slow_clients_hold_connections(
        h: BotHarness, caplog: pytest.LogCaptureFixture, in_body: bool) -> None:
    caplog.set_level(logging.INFO)
    # fewer workers (4) than slow clients (64), a per-read timeout that never fires
    srv = HttpServer(h.bot, "127.0.0.1", 0, read_timeout_s=60, max_workers=4,
                     request_deadline_s=DEADLINE_S).start()
    slow = SlowClients(srv.port, 64, every_s=0.2, in_body=in_body)
    try:
        sender = SlackSender(srv.url, command=h.slack.command)
        resp = sender.slash("help", VIEWER)
        still_open = slow.open_count()  # read right after the answer came
        assert resp.status == 200
        assert still_open == 64  # answered before any slow connection was cut
        h.wait_post("stordoc help", ("chat.postEphemeral",))
        # then the server cuts every slow one (60 s: a hang guard, not a figure)
        assert slow.wait_all_closed(60), f"{slow.open_count()} slow connections left open"
        for c in slow.clients:
            assert c.answer == b"" or c.answer.startswith(b"HTTP/1.0 408 "), c.answer[:80]
            assert c.closed_at is not None and c.closed_at - c.opened_at > DEADLINE_S / 2
        assert sum(c.answer.startswith(b"HTTP/1.0 408") for c in slow.clients) == 64
        assert srv.httpd.late_refusals == 64
        # and the server still answers afterwards
        assert sender.slash("help", VIEWER).status == 200
    finally:
        slow.close()
        srv.stop()
    cut = [r.getMessage() for r in caplog.records if "refused 408" in r.getMessage()]
    assert len(cut) == 64 and all("not complete within 4 s" in m for m in cut)
    for r in caplog.records:
        if r.name.startswith(("stordoc", "waitress")):
            assert r.exc_info is None and "\n" not in r.getMessage()
