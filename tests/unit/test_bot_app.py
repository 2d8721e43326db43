"""The real bolt App over real HTTP, pointed at a fake Slack API: signatures, grammar
errors, authorization, dedupe of retries, Socket Mode, uploads, "still working".

The cluster here is configured but unreachable (a monitor address nobody listens on), so
nothing in these tests can touch a real cluster; the lab tests cover the live flows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot import render as r
from bot.app import Where
from bot.server import socket_mode
from checks.model import Finding, Severity
from core.settings import parse_settings
from tests.support.fake_slack import (
    APP_TOKEN,
    SIGNING_SECRET,
    TOKEN,
    BotHarness,
    FakeSocketMode,
    all_text,
)

VIEWER, OPERATOR, STRANGER = "UVIEWER01", "UOPERATOR1", "USTRANGER1"


@pytest.fixture
def settings(tmp_path: Path):  # type: ignore[no-untyped-def]
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\nauth_cluster_required = none\n"
                    "auth_service_required = none\nauth_client_required = none\n")
    return parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}},
        "prod": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})


@pytest.fixture
def h(settings, tmp_path: Path) -> Iterator[BotHarness]:  # type: ignore[no-untyped-def]
    harness = BotHarness(settings, {"lab": {"viewers": [VIEWER], "operators": [OPERATOR]}},
                         str(tmp_path / "bot.db"), working_after_s=0.3, throttle_s=0.05)
    yield harness
    harness.close()


def test_auth_test_at_start_uses_the_token(h: BotHarness) -> None:
    calls = h.fake.of("auth.test")
    assert calls and calls[0].headers["Authorization"] == "Bearer " + TOKEN


def test_bad_signature_rejected_and_nothing_runs(h: BotHarness) -> None:
    body = h.slack.command_body("help", VIEWER)
    resp = h.slack.send(body, "application/x-www-form-urlencoded", secret="wrong-secret")
    assert resp.status == 401
    ok = h.slack.send(h.slack.command_body("help", VIEWER), "application/x-www-form-urlencoded")
    assert ok.status == 200
    h.wait_post("stordoc help", ("chat.postEphemeral",))
    assert len(h.ephemerals()) == 1  # only the signed one was answered


def test_stale_timestamp_rejected(h: BotHarness) -> None:
    body = h.slack.command_body("help", VIEWER)
    resp = h.slack.send(body, "application/x-www-form-urlencoded",
                        ts=int(time.time()) - 6 * 60)
    assert resp.status == 401
    tampered = h.slack.command_body("help", VIEWER)
    hdr = {"X-Slack-Signature": "v0=" + "0" * 64}
    assert h.slack.send(tampered, "application/x-www-form-urlencoded", headers=hdr).status == 401


@pytest.mark.parametrize("text,needle", [
    ("osd osd.1; rm -rf /", "unexpected character `;`"),
    ("health $(reboot)", "unexpected character `$`"),
    ("x" * 10_000, "command too long (10000 characters"),
    ("health l\u00e4b", "unexpected character `\u00e4`"),
    ("helth", "did you mean `health`"),
    ("health nowhere", "unknown cluster `nowhere`"),
    # the refusal quotes the user's words mrkdwn-escaped (Slack shows `&`)
    ("fix osd-remount osd.1 && reboot", "unexpected character `&amp;`"),
])
def test_hostile_and_malformed_input_refused_and_nothing_runs(h: BotHarness, text: str,
                                                              needle: str) -> None:
    resp = h.slack.slash(text, OPERATOR)
    assert resp.status == 200 and resp.body == ""
    call = h.wait_post(needle, ("chat.postEphemeral",))
    assert call.params["user"] == OPERATOR
    assert "\n" not in call.params["text"].strip()
    assert not h.posts()  # nothing shown in the channel, no check ran
    assert h.env.journal.runs() == []  # no check run recorded
    rows = h.bot.store.audit_rows()
    assert rows[0]["user"] == OPERATOR and rows[0]["outcome"] in ("bad input", "accepted")


def test_unauthorized_user_refused_with_role_named(h: BotHarness) -> None:
    h.slack.slash("health lab", STRANGER)
    call = h.wait_post("is not allowed", ("chat.postEphemeral",))
    assert "*viewer* role on cluster `lab`" in call.params["text"]
    h.slack.slash("fix osd-start osd.1", VIEWER)
    call = h.wait_post("*operator* role", ("chat.postEphemeral",))
    assert call.params["user"] == VIEWER
    h.slack.slash("health prod", OPERATOR)  # operator on lab only
    h.wait_post("cluster `prod`", ("chat.postEphemeral",))
    assert not h.posts() and h.env.journal.runs() == []
    outcomes = [(x["user"], x["outcome"]) for x in h.bot.store.audit_rows()]
    assert (STRANGER, "refused") in outcomes and (VIEWER, "refused") in outcomes


def test_forged_or_expired_button_refused(h: BotHarness) -> None:
    h.slack.press("confirm", "not-a-real-token", OPERATOR, "1700000000.000001")
    h.wait_post("this button is not known", ("chat.postEphemeral",))
    tok = h.bot.store.new_button("fix", "lab", "osd-start", "osd.1", OPERATOR, -1)  # expired
    h.slack.press("fix", tok, OPERATOR, "1700000000.000001")
    h.wait_post("this button expired", ("chat.postEphemeral",))
    tok2 = h.bot.store.new_button("fix", "lab", "osd-start", "osd.1", OPERATOR, 900)
    h.slack.press("fix", tok2, VIEWER, "1700000000.000001")
    h.wait_post("*operator* role", ("chat.postEphemeral",))
    assert not h.posts()


def test_retried_delivery_runs_once(h: BotHarness) -> None:
    body = h.slack.command_body("help", VIEWER, trigger_id="retry.1.abc")
    first = h.slack.send(body, "application/x-www-form-urlencoded")
    again = h.slack.send(body, "application/x-www-form-urlencoded",
                         headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason":
                                  "http_timeout"})
    assert first.status == again.status == 200
    h.wait_post("stordoc help", ("chat.postEphemeral",))
    ev = h.slack.mention_body("help", VIEWER, event_id="EvSAME0001")
    h.slack.send(ev, "application/json")
    h.slack.send(ev, "application/json", headers={"X-Slack-Retry-Num": "2"})
    h.fake.wait_for(lambda f: len(f.of("chat.postEphemeral")) >= 2)
    # a later unrelated command proves the queue drained before we count
    h.slack.slash("helth", VIEWER)
    h.wait_post("did you mean", ("chat.postEphemeral",))
    assert len([c for c in h.ephemerals() if "stordoc help" in all_text(c)]) == 2
    # and across a restart: a new bot on the same journal still ignores it
    from bot.server import build_bot
    bot2 = build_bot(h.env, working_after_s=0.3)
    try:
        assert not bot2.store.first_time("cmd:retry.1.abc", "command")
    finally:
        bot2.close()


def test_mention_answers_in_its_thread(h: BotHarness) -> None:
    h.slack.mention("help osd", VIEWER, thread_ts="1690000000.000777")
    call = h.wait_post("osd [tree|OSD]", ("chat.postEphemeral",))
    assert call.params["thread_ts"] == "1690000000.000777"


def test_unreachable_cluster_says_still_working_then_answers(h: BotHarness) -> None:
    h.slack.slash("health", VIEWER)  # default cluster lab, mon nobody listens on
    working = h.wait_post("still working")
    ts = working.response["ts"]
    final = h.fake.wait_for(lambda f: [c for c in f.of("chat.update")
                                       if c.params.get("ts") == ts], 90)[0]
    text = all_text(final)
    assert "UNREACHABLE lab: CEPH_UNREACHABLE cluster lab" in text  # the cause first
    assert h.env.journal.runs("lab")[0].source == "slack"


def test_long_answers_are_split_or_uploaded_and_all_within_limits(h: BotHarness) -> None:
    from checks.incidents import correlate
    from core.service.fixes import proposed

    fs = [Finding("OSD_DOWN_OUT", Severity.WARN, f"osd.{i}", f"osd.{i} is down and out",
                  {"host": "node1"}, "osd-start", f"osd.{i}") for i in range(300)]
    w = Where("C0000TEST", OPERATOR)
    incs = proposed(correlate(fs))
    tokens = h.bot.commands.token_for("lab", OPERATOR, incs)
    h.bot.core.post(w, r.findings_reply("lab", fs, tokens))
    up = h.fake.wait_for(lambda f: f.of("files.completeUploadExternal"))
    assert h.fake.of("files.getUploadURLExternal")
    (fid, data), = h.fake.uploads.items()
    assert up[0].params["files"][0]["id"] == fid
    assert data.decode().count("osd-start osd.") == 300
    tokens = h.bot.commands.token_for("lab", OPERATOR, incs)
    h.bot.core.post(w, r.findings_reply("lab", fs[:60], tokens))
    posts = h.posts()
    assert len(posts) == 1 + 3  # the note before the upload, then 3 pages
    assert all(c.params.get("blocks") is not None and len(c.params["blocks"]) <= 50
               for c in posts)
    assert not [c for c in h.fake.calls if c.method.startswith("chat.")
                and "invalid_blocks" in json.dumps(c.params)]


def test_secrets_never_logged(h: BotHarness, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from core.slack.redact import install
    install(h.bot.redactor)  # the caplog handler is one of the root handlers now
    logging.getLogger("stordoc.bot").error("leak %s and %s", TOKEN, SIGNING_SECRET)
    text = caplog.text
    assert TOKEN not in text and SIGNING_SECRET not in text and "***" in text


def test_socket_mode_through_a_local_websocket(h: BotHarness) -> None:
    ws = FakeSocketMode().start()
    h.fake.ws_url = ws.url
    handler = socket_mode(h.bot, APP_TOKEN)
    try:
        handler.connect()
        ws.wait_connected()
        payload = {"token": "x", "team_id": "T0000001", "channel_id": "C0000TEST",
                   "user_id": VIEWER, "command": "/stordoc", "text": "help ring",
                   "trigger_id": "sock.1.trigger", "response_url": "http://127.0.0.1:9/r",
                   "api_app_id": "A0000001"}
        eid = ws.send("slash_commands", payload)
        ack = ws.wait_ack(eid)
        assert ack["envelope_id"] == eid
        h.wait_post("ring [object|account|container]", ("chat.postEphemeral",))
        eid2 = ws.send("slash_commands", payload, retry=1)  # Slack redelivers
        ws.wait_ack(eid2)
        h.slack.slash("helth", VIEWER)
        h.wait_post("did you mean", ("chat.postEphemeral",))
        assert len([c for c in h.ephemerals() if "ring [object" in all_text(c)]) == 1
        assert h.fake.of("apps.connections.open")[0].headers["Authorization"] == \
            "Bearer " + APP_TOKEN
    finally:
        handler.close()
        ws.stop()


def test_user_group_roles_resolved_through_slack(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    harness = BotHarness(settings, {"lab": {"viewers": ["SONCALL01"]}},
                         str(tmp_path / "g.db"), groups={"SONCALL01": ["UINGROUP01"]},
                         working_after_s=0.3)
    try:
        harness.slack.slash("help history --cluster lab", "UINGROUP01")
        harness.wait_post("history [--cluster C]", ("chat.postEphemeral",))
        harness.slack.slash("help history --cluster lab", "UOUTSIDE01")
        harness.wait_post("is not allowed", ("chat.postEphemeral",))
        assert harness.fake.of("usergroups.users.list")[0].params["usergroup"] == "SONCALL01"
    finally:
        harness.close()


def test_secrets_scrubbed_from_posted_messages(h: BotHarness) -> None:
    leak = Finding("SWIFT_PROXY_UNHEALTHY", Severity.WARN, "swift proxy",
                   f"proxy said: bad token {TOKEN} password=hunter22",
                   {"url": "http://127.0.0.1:1/auth", "header": f"X-Auth-Token: {TOKEN}"})
    h.bot.core.post(Where("C0000TEST", VIEWER), r.findings_reply("lab", [leak], lambda f: None))
    call = h.fake.wait_for(lambda f: f.of("chat.postMessage"))[0]
    text = json.dumps(call.params)
    assert TOKEN not in text and "hunter22" not in text and "***" in text
