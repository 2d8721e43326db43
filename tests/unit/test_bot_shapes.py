"""Issue 37.7: every shape of a signed Slack body is answered 200 or 4xx by the real bolt App
over real HTTP, never a 500 and never a traceback in the answer or the log.

The five bodies the issue found give 500 before the fix; the property test sends signed
bodies of arbitrary JSON shapes for each payload type (slash command form, block_actions,
view_submission, events API, url_verification)."""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.settings import parse_settings
from tests.support.examples import examples
from tests.support.fake_slack import SIGNING_SECRET, BotHarness, sign
from tests.unit.test_bot_hardening import FORM, raw_post

VIEWER = "UVIEWER01"
JSON = "application/json"


@pytest.fixture(scope="module")
def h(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BotHarness]:
    tmp = tmp_path_factory.mktemp("shapes")
    conf = tmp / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    s = parse_settings({"journal": str(tmp / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    harness = BotHarness(s, {"lab": {"viewers": [VIEWER]}}, str(Path(tmp) / "bot.db"),
                         throttle_s=0.05)
    yield harness
    harness.close()


def _payload(obj: Any) -> tuple[bytes, str]:
    return urllib.parse.urlencode({"payload": json.dumps(obj)}).encode(), FORM


def _post(h: BotHarness, body: bytes, ctype: str) -> tuple[int, bytes]:
    return raw_post(h, body, {"Content-Type": ctype, **sign(SIGNING_SECRET, body)})


def _clean_log(caplog: pytest.LogCaptureFixture) -> None:
    for r in caplog.records:
        if r.name.startswith(("stordoc", "slack_bolt")):
            assert r.exc_info is None, r.getMessage()
            assert "Traceback" not in r.getMessage() and "\n" not in r.getMessage()


def _nested(n: int) -> Any:
    o: Any = 1
    for _ in range(n):
        o = [o]
    return o


@pytest.mark.parametrize("body,ctype", [
    _payload({"type": "block_actions", "actions": [], "user": {"id": VIEWER}}),
    _payload({"type": "block_actions", "actions": [None], "user": {"id": VIEWER}}),
    _payload({"type": "view_submission", "view": {"callback_id": "x"}}),
    (json.dumps({"type": "event_callback", "event_id": "Ev60", "event": _nested(60)})
     .encode(), JSON),
    (json.dumps({"type": "event_callback", "event_id": "EvNull", "event": None}).encode(),
     JSON),
], ids=["actions-empty", "actions-null", "view_submission", "event-60-deep", "event-null"])
def test_the_five_bodies_of_the_issue_are_4xx_without_a_traceback(
        h: BotHarness, caplog: pytest.LogCaptureFixture, body: bytes, ctype: str) -> None:
    caplog.set_level(logging.DEBUG)
    status, answer = _post(h, body, ctype)
    assert 400 <= status < 500, (status, answer)
    assert b"Traceback" not in answer and b"Error" not in answer
    _clean_log(caplog)
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 1 and len(refused[0]) < 400, refused
    # and the bot still answers a good request afterwards
    assert h.slack.slash("help", VIEWER).status == 200


# ------------------------------------------------------------------ arbitrary shapes
_scalar = (st.none() | st.booleans() | st.integers(-2, 2**40) | st.floats(allow_nan=False)
           | st.text(max_size=6) | st.sampled_from(["", "message", "app_mention", VIEWER,
                                                    "C0000TEST", "T1", "fix", "1.2"]))
_any = st.recursive(_scalar, lambda kids: st.lists(kids, max_size=3)
                    | st.dictionaries(st.text(max_size=4), kids, max_size=3), max_leaves=12)


def _obj(keys: list[str], inner: st.SearchStrategy[Any] = _any) -> st.SearchStrategy[Any]:
    """A dict over Slack's own keys (and a stray one) with values of any shape."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=3), inner, max_size=6)


_ID = ["id", "name", "team_id", "domain", "username"]
_ACTION = ["action_id", "block_id", "value", "type", "action_ts", "text", "selected_option"]
_VIEW = ["id", "type", "callback_id", "state", "private_metadata", "team_id", "app_id",
         "hash", "root_view_id", "external_id"]
_EVENT = ["type", "user", "channel", "text", "ts", "thread_ts", "event_ts", "subtype",
          "bot_id", "message", "channel_type", "item", "files"]
_ENVELOPE = ["team", "user", "channel", "api_app_id", "token", "trigger_id", "response_url",
             "enterprise", "is_enterprise_install", "container", "message", "state",
             "authorizations", "team_id", "enterprise_id", "context_team_id",
             "workflow_step", "function_data", "bot_access_token", "callback_id"]
_shape = _any | _obj(_ID) | st.lists(_obj(_ACTION) | _any, max_size=3)


def _typed(kind: str | None, fields: dict[str, st.SearchStrategy[Any]]
           ) -> st.SearchStrategy[dict[str, Any]]:
    """``{"type": kind, ...}`` where each named field is present or not, of any shape."""
    base = st.fixed_dictionaries({}, optional={k: v for k, v in fields.items()})
    extra = st.dictionaries(st.sampled_from(_ENVELOPE), _shape, max_size=5)
    typ = st.just(kind) if kind else _any
    return st.builds(lambda t, b, e: {**e, **b, "type": t}, typ, base, extra)


_block_actions = _typed("block_actions", {
    "actions": st.lists(_obj(_ACTION) | _any, max_size=3) | _any,
    "user": _obj(_ID) | _any, "channel": _obj(_ID) | _any,
    "message": _obj(["ts", "thread_ts", "text", "blocks"]) | _any, "view": _obj(_VIEW)})
_view_submission = _typed("view_submission", {"view": _obj(_VIEW) | _any,
                                              "user": _obj(_ID) | _any})
_event = _typed("event_callback", {"event": _obj(_EVENT) | _any,
                                   "event_id": _scalar, "event_time": _scalar})
_url_verification = _typed("url_verification", {"challenge": _any, "token": _any})
_other = _typed(None, {"view": _obj(_VIEW) | _any, "actions": _any, "event": _any})
_form_keys = ["token", "team_id", "team_domain", "channel_id", "channel_name", "user_id",
              "user_name", "command", "text", "api_app_id", "is_enterprise_install",
              "response_url", "trigger_id", "enterprise_id", "ssl_check", "payload"]
_command = st.dictionaries(st.sampled_from(_form_keys) | st.text(max_size=3),
                           st.text(max_size=12) | st.sampled_from(
                               ["/stordoc", VIEWER, "C0000TEST", "true", "help", "{}", "[]"]),
                           max_size=10)


@st.composite
def _bodies(draw: st.DrawFn) -> tuple[bytes, str]:
    kind = draw(st.sampled_from(["command", "block_actions", "view_submission", "event",
                                 "url_verification", "other"]))
    if kind == "command":
        return urllib.parse.urlencode(draw(_command)).encode(), FORM
    obj = draw({"block_actions": _block_actions, "view_submission": _view_submission,
                "event": _event, "url_verification": _url_verification,
                "other": _other}[kind])
    if kind in ("event", "url_verification") or draw(st.booleans()) and kind == "other":
        return json.dumps(obj).encode(), JSON
    return _payload(obj)


@settings(max_examples=examples(300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(body=_bodies())
def test_any_signed_body_shape_is_200_or_4xx(h: BotHarness, body: tuple[bytes, str],
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.clear()
    caplog.set_level(logging.INFO)
    status, answer = _post(h, *body)
    assert 200 <= status < 500, (status, answer, body)
    assert b"Traceback" not in answer
    _clean_log(caplog)
