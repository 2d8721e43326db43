"""Alert coverage counted by behaviour (issue 38 item 8): on each saved scenario, Ceph's own
alert rules are evaluated by ``promtool test rules`` on the metrics the lab's manager (and
node_exporters) served then (``metrics/`` of the snapshot), and each firing group is
POSTed to the real bot's webhook; what Slack receives is read
(tests/support/alert_posts.py). benchmarks/alert_coverage.py prints the counts."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks import alert_map as am
from runbooks.catalog import registry
from storage.snapshot.metrics import (
    only,
    parse_samples,
    read_metrics,
    scrape,
    scraped_samples,
    series_text,
    write_metrics,
)
from tests.support.alert_posts import (
    PROMTOOL,
    attached_runbooks,
    evaluate,
    hold_min,
    posts_of,
    rule_names,
    scenario_dirs,
)
from tests.support.fixture_snapshots import FIXTURES

MGR_TEXT = """# HELP ceph_health_status Cluster health status
# TYPE ceph_health_status untyped
ceph_health_status 1.0
# HELP ceph_health_detail healthcheck status by type (0=inactive, 1=active)
# TYPE ceph_health_detail untyped
ceph_health_detail{name="OSD_DOWN",severity="HEALTH_WARN"} 1.0
ceph_health_detail{name="OBJECT_UNFOUND",severity="HEALTH_WARN"} 1.0
ceph_osd_up{ceph_daemon="osd.0"} 1.0
ceph_osd_up{ceph_daemon="osd.1"} 0.0
ceph_osd_up{ceph_daemon="osd.2"} 1.0
ceph_osd_metadata{back_iface="",ceph_daemon="osd.1",cluster_addr="127.0.0.1",device_class="hdd",front_iface="",hostname="node2",objectstore="bluestore",public_addr="127.0.0.1",ceph_version="ceph version 16.2.15"} 1.0
"""

CASES = [(rel, d.name) for rel in ("pacific", "reef") for d in scenario_dirs(rel)]

needs_promtool = pytest.mark.skipif(not Path(PROMTOOL).exists(),
                                    reason="promtool not installed (Debian's prometheus)")


@pytest.fixture
def exporter() -> Iterator[str]:
    """A real HTTP server on loopback serving MGR_TEXT at /metrics, as the mgr module."""
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            body = MGR_TEXT.encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/metrics"
    srv.shutdown()
    srv.server_close()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _saved(tmp_path: Path, url: str, down: bool = False) -> Path:
    d = tmp_path / "snap"
    d.mkdir()
    scrapes = [scrape("mgr", url, "ceph")]
    if down:  # a node_exporter that does not answer: saved as such
        scrapes.append(scrape("node-node1", f"http://127.0.0.2:{_closed_port()}/metrics",
                              "node", timeout=3))
    write_metrics(str(d), scrapes)
    return d


# ------------------------------------------------------------------ what a snapshot saves
def test_the_metrics_are_saved_with_the_snapshot_and_read_back(tmp_path: Path,
                                                                exporter: str) -> None:
    d = _saved(tmp_path, exporter, down=True)
    got = {s.source: s for s in read_metrics(str(d))}
    assert set(got) == {"mgr", "node-node1"}
    assert got["mgr"].text == MGR_TEXT and got["mgr"].error is None
    assert got["mgr"].instance == exporter.split("//")[1].split("/")[0]
    assert got["node-node1"].text is None and got["node-node1"].error
    assert not (d / "metrics" / "node-node1.prom").exists()
    up = {s.source: [v for n, _, v in scraped_samples(s) if n == "up"] for s in got.values()}
    assert up == {"mgr": [1.0], "node-node1": [0.0]}  # Prometheus's own `up`
    samples = scraped_samples(got["mgr"], {"cluster": "lab"})
    osd1 = [lab for n, lab, v in samples if n == "ceph_osd_up" and v == 0.0]
    assert osd1 == [{"instance": got["mgr"].instance, "job": "ceph", "cluster": "lab",
                     "ceph_daemon": "osd.1"}]
    # every sample line is read: none skipped
    assert len(parse_samples(MGR_TEXT)) == sum(
        1 for ln in MGR_TEXT.splitlines() if ln and not ln.startswith("#"))


def test_a_snapshot_without_metrics_has_none() -> None:
    assert read_metrics("/nonexistent-snapshot-dir") == []


def test_only_keeps_the_families_asked_for() -> None:
    kept = only(MGR_TEXT, ("ceph_osd_up",))
    assert [n for n, _, _ in parse_samples(kept)] == ["ceph_osd_up"] * 3
    assert "# HELP" not in kept and "ceph_health" not in kept
    both = only(MGR_TEXT, ("ceph_health_",))
    assert both.count("# HELP") == 2 and len(parse_samples(both)) == 3


_label = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,12}", fullmatch=True)


@given(st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,20}", fullmatch=True),
       st.dictionaries(_label, st.text(max_size=20), max_size=5),
       st.floats(allow_nan=False))
def test_a_series_written_is_read_back(name: str, labels: dict[str, str], v: float) -> None:
    text = f"# HELP {name} x\n{series_text(name, labels)} {v!r}\n"
    assert parse_samples(text) == [(name, labels, v)]


# ------------------------------------------------------------------ what fires
@needs_promtool
def test_a_rule_fires_on_its_expression_not_on_its_health_code(tmp_path: Path,
                                                                exporter: str) -> None:
    """OBJECT_UNFOUND with an OSD down: CephObjectMissing's expression needs every OSD up,
    so it does not fire (the old replay fired it from the code alone); CephOSDDown does,
    and the OSD map's rules name osd.1 on its host."""
    d = _saved(tmp_path, exporter)
    fired = evaluate("pacific", d)
    assert fired is not None
    names = {f.name for f in fired}
    assert "CephObjectMissing" not in names
    assert {"CephOSDDown", "CephHealthWarning"} <= names
    assert "CephMgrPrometheusModuleInactive" not in names  # scraped: up 1
    down = next(f for f in fired if f.name == "CephOSDDown")
    assert down.labels["name"] == "OSD_DOWN" and down.labels["severity"] == "warning"
    assert "osd.1" in down.annotations["description"]  # promtool templated it


@needs_promtool
def test_a_manager_that_does_not_answer_fires_the_module_inactive_rule(tmp_path: Path) -> None:
    d = tmp_path / "snap"
    d.mkdir()
    write_metrics(str(d), [scrape("mgr", f"http://127.0.0.1:{_closed_port()}/metrics",
                                  "ceph", timeout=3)])
    names = {f.name for f in evaluate("pacific", d) or []}
    assert "CephMgrPrometheusModuleInactive" in names
    assert "CephHealthWarning" not in names  # no metric of Ceph's at all


@needs_promtool
def test_the_saved_unfound_objects_fire_no_object_missing_while_an_osd_is_down() -> None:
    """Issue 38's case on the saved scenario: its health codes hold OBJECT_UNFOUND, so the
    guess from codes fired CephObjectMissing; its metrics show osd.2 down, and the rule's
    expression (every OSD up) does not fire."""
    from tests.unit.test_alert_map import fired, replay

    d = FIXTURES / "pacific" / "pg-unfound"
    if d not in scenario_dirs("pacific"):
        pytest.skip("pg-unfound saved without metrics")
    guessed = {a["labels"]["alertname"] for a in fired(replay("pacific", "pg-unfound"))}
    real = {f.name for f in evaluate("pacific", d) or []}
    assert "CephObjectMissing" in guessed and "CephObjectMissing" not in real
    assert {"CephOSDDown", "CephPGsDamaged"} <= real


def test_squids_renamed_rules_are_evaluated_with_reefs() -> None:
    assert set(am.RENAMED) <= set(rule_names("reef"))
    assert not set(am.RENAMED) & set(rule_names("pacific"))


# ------------------------------------------------------------------ the claims
def test_every_listed_runbook_is_attached_to_a_finding() -> None:
    """checks/alert_map.py claims a Fix only through a runbook some check attaches to a
    finding: one named only in a finding's text is never a button."""
    attached = attached_runbooks()
    assert {"osd-remount", "pg-repair", "daemon-restart"} <= attached
    assert "osd-replace-disk" not in attached  # only said in text (checks/disks.py)
    listed = {rb: n for n, m in am.MAP.items() for rb in m.runbooks}
    assert {rb: n for rb, n in listed.items() if rb not in attached} == {}
    assert set(listed) <= set(registry())


# ------------------------------------------------------------------ the real posts
@needs_promtool
@pytest.mark.parametrize("release,name", CASES)
def test_each_firing_group_is_posted_once_with_the_fix_the_map_names(
        release: str, name: str, tmp_path: Path) -> None:
    got = posts_of(release, FIXTURES / release / name, tmp_path, scenario_dirs(release))
    assert got is not None
    fired, posts = got
    assert {p.rule for p in posts} == {f.name for f in fired}  # each group posted
    for p in posts:
        m = am.MAP[p.rule]
        assert f"{p.rule} firing" in p.text, p.text[:300]
        if p.cause is None:  # no incident about it: never a Fix, never an entity
            assert p.fix is None and not p.names_entity, p.text[:300]
            continue
        assert len(p.incidents) == 1, p.rule  # one message per incident
        if p.fix is not None:
            rb, target = p.fix
            assert rb in registry() and target, p.fix
            # the map's claim holds in what is posted (and the other way: test_alert_map)
            assert m.any_incident or rb in m.runbooks, (p.rule, p.fix, m.runbooks)


def test_the_hold_is_the_longest_wait_of_a_rule_that_can_fire_on_what_is_served() -> None:
    # Reef's NVMe-oF version rule waits 1h: only when a gateway's metric is served
    assert hold_min("reef", frozenset({"ceph_health_status"})) == 20
    assert hold_min("reef", frozenset({"ceph_nvmeof_gateway_info"})) == 65
    assert hold_min("reef") == 65  # every rule
    # a rule asking for an absent metric can fire on nothing served
    assert hold_min("pacific", frozenset()) >= 5


# issue 38.2: the full ratios and a pool quota as causes: the alerts of fullness reach a
# post with the Fix that undoes the setting (cluster-full, cluster-backfillfull, pool-quota)
FULLNESS = [
    ("cluster-full", {"CephOSDFull": ("ratio-restore", "lab"),
                      "CephPoolFull": ("ratio-restore", "lab")}),
    ("cluster-backfillfull", {"CephOSDBackfillFull": ("ratio-restore", "lab"),
                              "CephPoolBackfillFull": ("ratio-restore", "lab")}),
    ("pool-quota", {"CephPoolFull": ("quota-restore", "rbd")}),
    ("pool-quota-near", {"CephPoolNearFull": ("quota-restore", "rbd")}),
    ("cluster-full-out", {"CephPGRecoveryAtRisk": ("ratio-restore", "lab"),
                          "CephOSDFull": ("ratio-restore", "lab")}),
]


@needs_promtool
@pytest.mark.parametrize("release", ["pacific", "reef"])
@pytest.mark.parametrize("name,want", FULLNESS, ids=[n for n, _ in FULLNESS])
def test_fullness_alerts_post_the_fix_of_the_setting_that_causes_them(
        release: str, name: str, want: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    got = posts_of(release, FIXTURES / release / name, tmp_path, scenario_dirs(release))
    assert got is not None
    _, posts = got
    by_rule = {p.rule: p for p in posts}
    for rule, fix in want.items():
        assert rule in by_rule, sorted(by_rule)
        p = by_rule[rule]
        assert p.fix == fix and p.names_entity, (rule, p.fix, p.text[:300])
