"""Alertmanager intake and its helpers, on Alertmanager's real v4 payload (captured from
the lab's Alertmanager 0.25) and Ceph's real rule file; the bot over real HTTP for the
gate's refusals, the channel bindings and `health all`."""

from __future__ import annotations

import copy
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot import grammar as g
from core.alerts import (
    AmPayload,
    Refused,
    cluster_of,
    entities_of,
    parse_payload,
)
from core.alerts.payload import _epoch
from core.settings import AlertSettings, Secret, SettingsError, parse_settings
from lab.alerts import CEPH_RULES, lab_rules
from tests.support.fake_slack import BotHarness, all_text

FIXTURE = Path(__file__).parents[1] / "fixtures" / "alertmanager" / \
    "osd_down_high_resolved.json"
ADMIN, OPS, OTHER = "UADMIN0001", "UOPSLAB001", "UOPSPROD01"
LAB_CH, PROD_CH = "CLABROOM01", "CPRODROOM1"
TOKEN = "alert-token-0123456789"


def payload(**kw: Any) -> dict[str, Any]:
    p = copy.deepcopy(json.loads(FIXTURE.read_text()))
    p["commonLabels"]["cluster"] = "lab"
    p.update(kw)
    return p


def test_real_payload_parses() -> None:
    p = parse_payload(json.dumps(payload()).encode(), 200)
    assert p.status == "resolved" and p.name == "CephOSDDownHigh"
    assert p.alerts[0].fingerprint == "52d8976dd77b7c24"
    assert p.since() == _epoch(p.alerts[0].endsAt)


@pytest.mark.parametrize("body,status", [
    (b"{nope", 400), (b"[1, 2]", 400), (b"\xff\xfe", 400),
    (json.dumps(payload(version="3")).encode(), 400),
    (json.dumps(payload(alerts=[])).encode(), 400),
    (json.dumps(payload(status="pending")).encode(), 400),
    (json.dumps(payload(alerts=[payload()["alerts"][0]] * 201)).encode(), 413),
])
def test_bad_payloads_refused(body: bytes, status: int) -> None:
    with pytest.raises(Refused) as e:
        parse_payload(body, 200)
    assert e.value.status == status


def test_cluster_of_label_mapping_and_refusals() -> None:
    p = AmPayload.model_validate(payload())
    assert cluster_of(p, "cluster", {}, ["lab"]) == "lab"
    fsid = AmPayload.model_validate(payload(commonLabels={"cluster": "a5f6-fsid"}))
    assert cluster_of(fsid, "cluster", {"a5f6-fsid": "prod"}, ["lab", "prod"]) == "prod"
    for bad, why in ((payload(commonLabels={}), "no 'cluster' label"),
                     (payload(commonLabels={"cluster": "other"}), "unknown cluster")):
        with pytest.raises(Refused, match=why) as e:
            cluster_of(AmPayload.model_validate(bad), "cluster", {}, ["lab"])
        assert e.value.status == 422
    two = payload()
    two["alerts"] = [dict(two["alerts"][0], labels={"alertname": "X", "cluster": c})
                     for c in ("lab", "prod")]
    two["commonLabels"] = {"alertname": "X"}
    with pytest.raises(Refused, match="several clusters"):
        cluster_of(AmPayload.model_validate(two), "cluster", {}, ["lab", "prod"])


def test_delivery_key_same_for_a_repeat_different_for_a_change() -> None:
    a = AmPayload.model_validate(payload())
    assert a.delivery_key() == AmPayload.model_validate(payload()).delivery_key()
    firing = payload(status="firing")
    firing["alerts"][0]["status"] = "firing"
    assert AmPayload.model_validate(firing).delivery_key() != a.delivery_key()


def test_entities_from_labels() -> None:
    p = payload()
    p["alerts"][0]["labels"].update(ceph_daemon="osd.07", hostname="node2")
    assert entities_of(AmPayload.model_validate(p).alerts[0]) == {"osd.7", "node2"}


def test_epoch_reads_alertmanager_times() -> None:
    assert _epoch("2026-11-23T18:29:08.673123456Z") == pytest.approx(1795458548.673123)
    assert _epoch("0001-01-01T00:00:00Z") is None and _epoch("yesterday") is None


def test_lab_rules_shorten_every_for_and_nothing_else() -> None:
    yaml = pytest.importorskip("yaml")
    text = CEPH_RULES.read_text()
    orig, lab = yaml.safe_load(text), yaml.safe_load(lab_rules(text, "5s"))
    rules = [r for grp in orig["groups"] for r in grp["rules"]]
    lrules = [r for grp in lab["groups"] for r in grp["rules"]]
    assert len(rules) == len(lrules) > 40
    for a, b in zip(rules, lrules, strict=True):
        assert b.get("for") == ("5s" if "for" in a else None)
        assert {k: v for k, v in a.items() if k != "for"} == \
            {k: v for k, v in b.items() if k != "for"}


@given(st.text(max_size=60))
def test_silence_grammar_never_crashes(text: str) -> None:
    try:
        cmd = g.parse("silence " + text)
    except g.GrammarError:
        return
    if isinstance(cmd, g.Silence):
        assert g.SILENCE_MIN_S <= cmd.duration_s <= g.SILENCE_MAX_S
        assert cmd.alertname.isascii()


def test_settings_refuse_bad_bindings(tmp_path: Path) -> None:
    base = {"journal": str(tmp_path / "j.db"), "clusters": {"lab": {}}}
    for extra, why in (({"slack": {"channels": {"#ops": "lab"}}}, "not a Slack channel ID"),
                       ({"slack": {"channels": {"C0OPS0001": "prod"}}}, "unknown cluster"),
                       ({"alerts": {"clusters": {"fsid": "prod"}}}, "unknown cluster"),
                       ({"alerts": {"alertmanager_url": "file:///etc/passwd"}}, "http")):
        with pytest.raises(SettingsError, match=why):
            parse_settings({**base, **extra})


# --------------------------------------------------------------------------- over HTTP

@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\nauth_cluster_required = none\n"
                    "auth_service_required = none\nauth_client_required = none\n")
    tok = tmp_path / "token"
    tok.write_text(TOKEN + "\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}},
        "prod": {"ceph": {"conf": str(conf), "timeout": 2}}}})
    harness = BotHarness(s, {"lab": {"operators": [OPS]}, "prod": {"operators": [OTHER]}},
                         str(tmp_path / "bot.db"), admins=(ADMIN,), throttle_s=0.05,
                         channels={LAB_CH: "lab", PROD_CH: "prod"},
                         alerts=AlertSettings(token=Secret(file=str(tok))))
    yield harness
    harness.close()


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_gate_refuses_and_posts_nothing(h: BotHarness) -> None:
    url = h.base_url + "/alertmanager"
    ok = json.dumps(payload()).encode()
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    assert _post(url, ok, {}) == 401
    assert _post(url, ok, {"Authorization": "Bearer " + TOKEN[:-1] + "X"}) == 401
    assert _post(url, ok, {"Authorization": "Bearer " + TOKEN + "0"}) == 401
    assert _post(url, b"{", auth) == 400
    assert _post(url, json.dumps(payload(commonLabels={"cluster": "x"})).encode(), auth) == 422
    assert _post(url, b" " * (1024 * 1024 + 10), auth) == 413
    # Slack's own path still needs Slack's signature
    assert _post(h.base_url + "/slack/events", ok, auth) in (400, 401)
    time.sleep(0.5)
    assert not h.posts()
    # GET of the webhook: refused
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    assert e.value.code == 405


def test_channel_binding_defaults_and_refuses_other_clusters(h: BotHarness) -> None:
    h.slack.channel = LAB_CH
    # in the lab's room, `history` means the lab's
    h.slack.slash("history", OPS)
    h.wait_post("lab", ("chat.postMessage", "chat.postEphemeral"))
    # prod from the lab's room: refused for an operator of prod, allowed for an admin
    h.slack.slash("history --cluster prod", OTHER)
    refusal = h.wait_post("bound to cluster `lab`", ("chat.postEphemeral",
                                                    "chat.postMessage"))
    assert "admin" in all_text(refusal)
    n = len(h.fake.calls)
    h.slack.slash("history --cluster prod", ADMIN)
    h.fake.wait_for(lambda f: [c for c in f.calls[n:] if "prod" in all_text(c)], 30)


def test_duplicate_deliveries_post_once(h: BotHarness) -> None:
    """Alertmanager retries and HA pairs deliver the same group twice: one message. The
    cluster here is unreachable: the post says so instead of inventing a cause."""
    url = h.base_url + "/alertmanager"
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    p = payload(status="firing")
    p["alerts"][0].update(status="firing", endsAt="0001-01-01T00:00:00Z")
    body = json.dumps(p).encode()
    assert _post(url, body, auth) == 200
    assert _post(url, body, auth) == 200
    h.fake.wait_for(lambda f: [c for c in h.posts() if c.params.get("channel") == LAB_CH], 60)
    time.sleep(2)
    posts = [c for c in h.posts() if c.params.get("channel") == LAB_CH]
    assert len(posts) == 1, [all_text(c)[:100] for c in posts]
    assert "CephOSDDownHigh" in all_text(posts[0])


def test_quiet_hours_hold_what_is_below_the_minimum() -> None:
    import calendar

    from checks.model import Severity
    from core.alerts import AlertConfig

    cfg = AlertConfig(quiet_hours="22:00-07:00", quiet_min_severity=Severity.CRIT)
    night = calendar.timegm((2026, 11, 23, 23, 30, 0))
    early = calendar.timegm((2026, 11, 24, 6, 59, 0))
    day = calendar.timegm((2026, 11, 24, 7, 0, 0))
    assert cfg.quiet(Severity.WARN, night) and cfg.quiet(Severity.WARN, early)
    assert not cfg.quiet(Severity.CRIT, night), "critical is always posted"
    assert not cfg.quiet(Severity.WARN, day)
    same_day = AlertConfig(quiet_hours="12:00-13:00")
    assert same_day.quiet(Severity.WARN, calendar.timegm((2026, 11, 24, 12, 30, 0)))
    assert not AlertConfig().quiet(Severity.INFO, night)
    with pytest.raises(SettingsError, match="22:00-07:00"):
        parse_settings({"clusters": {"a": {}}, "alerts": {"quiet_hours": "25:00-07:00"}})


def test_hostile_alert_text_cannot_ping_or_format(h: BotHarness) -> None:
    """Label values are someone else's text: `<!channel>` must not reach Slack as markup."""
    url = h.base_url + "/alertmanager"
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    p = payload(status="firing", groupKey='{}:{alertname="<!channel> x"}',
                groupLabels={"alertname": "<!channel> x"})
    p["alerts"][0].update(status="firing", endsAt="0001-01-01T00:00:00Z",
                          labels={"alertname": "<!channel> x", "cluster": "lab"},
                          annotations={"summary": "<@U0BOSS> *look* <https://evil|here>"})
    p["commonAnnotations"] = p["alerts"][0]["annotations"]
    assert _post(url, json.dumps(p).encode(), auth) == 200
    post = h.fake.wait_for(lambda f: [c for c in h.posts()
                                      if c.params.get("channel") == LAB_CH], 60)[0]
    marked: list[str] = [str(post.params.get("text", ""))]  # fallback text: mrkdwn

    def walk(o: Any) -> None:  # every mrkdwn text (plain_text is shown literally)
        if isinstance(o, dict):
            if o.get("type") == "mrkdwn":
                marked.append(str(o.get("text", "")))
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(post.params.get("blocks"))
    raw = "\n".join(marked)
    assert "<!channel>" not in raw and "<@U0BOSS>" not in raw and "<https://evil" not in raw
    assert "&lt;!channel&gt;" in raw
