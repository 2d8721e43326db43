"""Issue 10 on the bot, over real HTTP against the fake Slack: nothing expensive before the
signature (point 5), ephemeral slow refusals, redacted audit, backticks (point 8).

The cluster is configured but unreachable (a monitor nobody listens on), so nothing here
can touch a real cluster.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.app import valid_ids
from bot.server import MAX_BODY
from core.settings import parse_settings
from tests.support.fake_slack import SIGNING_SECRET, TOKEN, BotHarness, all_text, sign

VIEWER, OPERATOR = "UVIEWER01", "UOPERATOR1"


@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\nauth_cluster_required = none\n"
                    "auth_service_required = none\nauth_client_required = none\n")
    settings = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    harness = BotHarness(settings, {"lab": {"viewers": [VIEWER], "operators": [OPERATOR]}},
                         str(tmp_path / "bot.db"), working_after_s=0.3, throttle_s=0.05)
    yield harness
    harness.close()


def raw_post(h: BotHarness, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """A POST with exactly these headers (Content-Length from the body unless given)."""
    u = urllib.parse.urlsplit(h.server.url)
    c = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=30)
    try:
        c.putrequest("POST", u.path)
        hdrs = {"Content-Length": str(len(body)), **headers}
        for k, v in hdrs.items():
            c.putheader(k, v)
        c.endheaders()
        c.send(body)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


FORM = "application/x-www-form-urlencoded"


def _bot_log(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [x for x in caplog.records if x.name.startswith(("stordoc", "slack_bolt"))]


@pytest.mark.parametrize("body,headers,code", [
    # malformed bodies, unsigned: the signature decides first (401, not a parse error)
    (b"payload=%7Bnot-json", {"Content-Type": FORM}, 401),
    (b"{\"type\": ", {"Content-Type": "application/json"}, 401),
    # a non-integer or missing timestamp: 400 before anything else
    (b"text=help", {"Content-Type": FORM, "X-Slack-Request-Timestamp": "12ab",
                    "X-Slack-Signature": "v0=" + "0" * 64}, 400),
    (b"text=help", {"Content-Type": FORM, "X-Slack-Request-Timestamp": "1e9",
                    "X-Slack-Signature": "v0=" + "0" * 64}, 400),
    (b"text=help", {"Content-Type": FORM}, 400),
    (b"text=help", {"Content-Type": FORM, "Content-Length": "-1"}, 400),
])
def test_unsigned_or_malformed_requests_get_4xx_one_bounded_line(
        h: BotHarness, caplog: pytest.LogCaptureFixture, body: bytes,
        headers: dict[str, str], code: int) -> None:
    caplog.set_level(logging.DEBUG)
    if code == 401:
        headers = {**headers, "X-Slack-Request-Timestamp": str(int(time.time())),
                   "X-Slack-Signature": "v0=" + "1" * 64}
    status, _ = raw_post(h, body, headers)
    assert status == code
    recs = _bot_log(caplog)
    assert [x.levelno for x in recs if x.levelno >= logging.WARNING] == [logging.WARNING]
    for x in recs:
        assert x.exc_info is None and "Traceback" not in x.getMessage()
        assert len(x.getMessage()) < 300
    assert not h.fake.of("chat.postMessage", "chat.postEphemeral")


def test_signed_but_malformed_body_is_400_not_500(h: BotHarness,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for body, ctype in [(b"payload=%7Bnot-json", FORM), (b"[1, 2]", "application/json"),
                        (b"{\"type\": ", "application/json"), (b"\xff\xfe", FORM)]:
        status, _ = raw_post(h, body, {"Content-Type": ctype, **sign(SIGNING_SECRET, body)})
        assert status == 400, body
    assert not [x for x in _bot_log(caplog) if x.exc_info or "Traceback" in x.getMessage()]


def test_huge_body_refused_unread_with_413_and_a_short_log_line(
        h: BotHarness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    body = b"text=" + b"A" * (1024 * 1024)
    status, _ = raw_post(h, body, {"Content-Type": FORM, **sign("wrong", body)})
    assert status == 413 and len(body) > MAX_BODY
    logged = sum(len(x.getMessage()) for x in _bot_log(caplog))
    assert 0 < logged < 300  # one bounded line, not a megabyte


def test_signature_checked_before_bolt_parses(h: BotHarness) -> None:
    """A valid signature over a good body still works through the gate."""
    resp = h.slack.slash("help", VIEWER)
    assert resp.status == 200
    h.wait_post("stordoc help", ("chat.postEphemeral",))


def test_unknown_actions_and_unsubscribed_events_get_200_and_do_nothing(
        h: BotHarness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    resp = h.slack.press("nosuch_action", "x", OPERATOR, "1700000000.000001")
    assert resp.status == 200
    ev = json.dumps({"type": "event_callback", "event_id": "Ev0NOPE", "team_id": "T1",
                     "api_app_id": "A1", "event": {"type": "reaction_added", "user": VIEWER,
                                                   "reaction": "eyes"}}).encode()
    assert h.slack.send(ev, "application/json").status == 200
    view = urllib.parse.urlencode({"payload": json.dumps({
        "type": "view_submission", "user": {"id": OPERATOR}, "team": {"id": "T1"},
        "view": {"id": "V1", "type": "modal", "callback_id": "nosuch"}})}).encode()
    assert h.slack.send(view, FORM).status == 200
    h.slack.slash("help", VIEWER)  # a marker: everything before it has been handled
    h.wait_post("stordoc help", ("chat.postEphemeral",))
    assert len(h.fake.of("chat.postEphemeral")) == 1 and not h.posts()
    assert not [x for x in caplog.records if "Unhandled request" in x.getMessage()]


@pytest.mark.parametrize("user,channel,ok", [
    ("UVIEWER01", "C0000TEST", True),
    ("UVIEWER01\n", "C0000TEST", False),
    ("UVIEWER01", "C0000TEST\n", False),
    ("UVIEWER01 ", "C0000TEST", False),
    ("uviewer01", "C0000TEST", False),
    ("U\u0661\u0662\u0663", "C0000TEST", False),
])
def test_ids_match_whole_strings_only(user: str, channel: str, ok: bool) -> None:
    assert valid_ids(user, channel) is ok


def test_user_id_with_trailing_newline_gets_nothing(h: BotHarness) -> None:
    assert h.slack.slash("help", VIEWER + "\n").status == 200
    h.slack.slash("help", VIEWER)
    h.wait_post("stordoc help", ("chat.postEphemeral",))
    assert [c.params["user"] for c in h.ephemerals()] == [VIEWER]


def test_slow_refusal_stays_ephemeral(h: BotHarness) -> None:
    """After "still working…" (public), a refusal goes to the asker only; the public
    placeholder is deleted, never updated into the refusal."""
    h.slack.slash("pools", VIEWER)  # the monitor never answers: a refusal after seconds
    working = h.wait_post("still working")
    ts = working.response["ts"]
    refusal = h.wait_post("not reachable", ("chat.postEphemeral",), timeout=90)
    assert refusal.params["user"] == VIEWER
    h.fake.wait_for(lambda f: [c for c in f.of("chat.delete") if c.params.get("ts") == ts])
    assert not [c for c in h.fake.of("chat.update") if c.params.get("ts") == ts]
    assert not [c for c in h.posts() if "not reachable" in all_text(c)]


def test_secret_typed_as_cluster_is_not_stored(h: BotHarness) -> None:
    for text in (f"health {TOKEN}", f"pools --cluster {TOKEN}"):
        h.slack.slash(text, VIEWER)
    h.fake.wait_for(lambda f: len(f.of("chat.postEphemeral")) >= 2)
    rows = h.bot.store.audit_rows()
    assert len(rows) >= 2
    for row in rows:
        assert TOKEN not in json.dumps(row), row


def test_backtick_in_a_refusal_keeps_formatting(h: BotHarness) -> None:
    h.slack.slash("health lab`;reboot`", VIEWER)
    call = h.wait_post("backtick", ("chat.postEphemeral",))
    text = call.params["text"]
    assert text.count("`") % 2 == 0, text  # every code span closed
    assert "ˋ;rebootˋ" in text


@pytest.mark.parametrize("opt", ["size=inf", "size=1e400", "seconds=nan",
                                 "concurrency=100000000000000000000"])
def test_hostile_bench_number_over_http_is_a_clear_refusal(h: BotHarness, opt: str) -> None:
    h.slack.slash(f"bench rados {opt}", OPERATOR)
    call = h.wait_post(f"bench option `{opt}", ("chat.postEphemeral",))
    assert "Error" not in call.params["text"] and not h.posts()


def test_second_person_is_decided_by_the_runbook_only() -> None:
    import bot.actions
    from runbooks.api import list_runbooks

    need = {i.name: i.needs_second_person for i in list_runbooks()}
    assert need["osd-remount"] and need["swift-device-remount"]  # touch data: two people
    assert need["pool-pg-num"] and need["cache-tier-tune"] and need["swift-ring-rebalance"]
    assert not need["osd-start"] and not need["osd-in"]
    assert not hasattr(bot.actions, "DESTRUCTIVE_DEFAULT")  # no list of the bot's own


def test_concurrent_health_checks_of_one_cluster_share_one_run(h: BotHarness) -> None:
    import threading

    gate = threading.Barrier(6)
    outs = []

    def one() -> None:
        gate.wait()
        outs.append(h.bot.backend.check("lab", "slack"))
    ts = [threading.Thread(target=one) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert len(outs) == 6 and len({id(o) for o in outs}) == 1
    assert len(h.env.journal.runs("lab")) == 1
