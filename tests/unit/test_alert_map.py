"""Every alert of Ceph's own Prometheus rules has a mapping (checks.alert_map), and the
webhook's diagnosis follows it: on the replayed lab scenarios, each alert Prometheus would
fire there (the rule's Ceph health code is in the snapshot's ``health detail``, labels as
the rule's expression gives them) selects the incident that explains it, naming the
entity, with its Fix where stordoc has one."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checks import alert_map as am
from checks.alert_rules import BY_NAME, RULES, SOURCES
from checks.catalog import finding_codes
from checks.ceph_codes import EXPLAIN
from checks.incidents import Incident
from core.alerts.payload import AmAlert, AmPayload, related
from core.service.snapshots import Replay
from runbooks.catalog import registry
from tests.support.fake_slack import BotHarness, all_text, buttons
from tests.support.fixture_snapshots import FIXTURES, replayed

INSTANCE = "127.0.0.1:9283"  # the mgr prometheus module's address: not an entity


def replay(release: str, name: str) -> Replay:
    return replayed(release, name)  # one replay per session (tests/support)


def alert(rule_name: str, /, **values: str) -> dict[str, Any]:
    """One alert as Alertmanager delivers it: the rule's labels, the labels its
    expression keeps (filled from ``values``), the cluster's external label."""
    name = rule_name
    rule = BY_NAME[name]
    labels = {"alertname": name, "severity": rule.severity, "type": "ceph_default",
              "cluster": "lab"}
    if rule.oid:
        labels["oid"] = rule.oid
    defaults = {"instance": INSTANCE, "job": "ceph"}
    if rule.health_codes:
        defaults["name"] = rule.health_codes[0]
    for key in rule.labels:
        v = values.get(key, defaults.get(key))
        assert v is not None, f"{name}'s alerts carry {key}: give it"
        labels[key] = v
    return {"status": "firing", "labels": labels,
            "annotations": {"summary": f"{name} summary"},
            "startsAt": "2026-11-27T05:00:00.000Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "", "fingerprint": f"{abs(hash(json.dumps(labels))):016x}"[:16]}


def payload(*alerts: dict[str, Any]) -> AmPayload:
    name = alerts[0]["labels"]["alertname"]
    return AmPayload.model_validate({
        "version": "4", "status": "firing", "receiver": "stordoc",
        "groupKey": f'{{}}:{{alertname="{name}", cluster="lab"}}',
        "groupLabels": {"alertname": name, "cluster": "lab"},
        "commonLabels": {"alertname": name, "cluster": "lab"}, "alerts": list(alerts)})


def fired(rp: Replay) -> Iterator[dict[str, Any]]:
    """The alerts Ceph's rules fire on the snapshot's cluster (those read from ``health
    detail``, the OSD map, the pools and the manager), one per series."""
    st = rp.outcome.snapshot.ceph
    if st is None:
        return
    codes = {h.code for h in st.health_checks}
    for r in RULES:
        if "pacific" not in r.releases or not set(r.health_codes) & codes:
            continue
        yield alert(r.name, name=next(c for c in r.health_codes if c in codes))
    if st.health_status in ("HEALTH_WARN", "HEALTH_ERR"):
        yield alert("CephHealthWarning" if st.health_status == "HEALTH_WARN"
                    else "CephHealthError")
    down = [o for o in st.osds if o.exists and not o.up]
    if st.osds and len(down) * 10 >= len(st.osds) and down:
        yield alert("CephOSDDownHigh")
    if "PG_DEGRADED" in codes:
        for p in st.pools:
            yield alert("CephPGsUnclean", name=p.name, pool_id=str(p.id))
    if "MGR_DOWN" in codes:
        yield alert("CephMgrPrometheusModuleInactive")


CEPH_CASES = [(rel, d.name) for rel in ("pacific", "reef") if (FIXTURES / rel).is_dir()
              for d in sorted((FIXTURES / rel).iterdir())
              if d.is_dir() and not d.name.startswith("swift")]


# ------------------------------------------------------------------ the copy, the map

def test_every_rule_has_a_mapping_and_every_mapping_a_rule() -> None:
    missing = [r.name for r in RULES if r.name not in am.MAP]
    assert missing == [], f"rules with no mapping in checks/alert_map.py: {missing}"
    stale = sorted(set(am.MAP) - set(BY_NAME) - set(am.RENAMED))
    assert all(am.MAP[n] == am.MAP[o] and o in BY_NAME for n, o in am.RENAMED.items())
    assert stale == [], f"mappings of no rule: {stale}"


def test_a_rule_without_a_mapping_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = am.AlertMapping()  # the coverage counts see a rule the map lacks
    rule = RULES[0]
    monkeypatch.setattr(am, "RULES", (*RULES, type(rule)("CephNewRule", "x", "warning", "",
                                                          "ceph_x", (), (), ("reef",))))
    assert am.coverage("reef").unmapped == ("CephNewRule",)
    assert not extra.diagnosed


def test_the_copy_is_the_rule_file_the_lab_loads() -> None:
    from lab.alerts import CEPH_RULES

    if not CEPH_RULES.exists():
        pytest.skip(f"{CEPH_RULES} not installed (Debian's ceph-prometheus-alerts)")
    names = set(re.findall(r'alert: "(\w+)"', CEPH_RULES.read_text()))
    assert names == {r.name for r in RULES if "pacific" in r.releases}, \
        "the rule file changed: run scripts/alert_rules.py"
    codes = set(re.findall(r'ceph_health_detail\{name=~?\\?"([A-Z_|]+)', CEPH_RULES.read_text()))
    ours = {c for r in RULES for c in r.health_codes}
    assert {c for x in codes for c in x.split("|")} - ours <= {"OSD_DOWN"}  # in scalar()
    assert "16.2" in SOURCES["pacific"] and "18.2" in SOURCES["reef"]


def test_each_mapping_names_its_rules_health_codes() -> None:
    for r in RULES:
        m = am.MAP[r.name]
        assert set(r.health_codes) <= set(m.ceph), (r.name, r.health_codes, m.ceph)


def test_codes_and_runbooks_exist_or_are_pending() -> None:
    known = set(finding_codes()) | set(am.PENDING_CODES)
    runbooks = set(registry()) | set(am.PENDING_RUNBOOKS)
    for name, m in am.MAP.items():
        assert set(m.codes) <= known, (name, set(m.codes) - known)
        assert set(m.runbooks) <= runbooks, (name, set(m.runbooks) - runbooks)


def test_every_runbook_that_fixes_a_mapped_code_is_named() -> None:
    """The Fix count is honest both ways: a runbook whose ``fixes`` holds a code an alert
    maps to, and that a check attaches to a finding (a Fix button can carry it), is among
    that alert's runbooks."""
    from tests.support.alert_posts import attached_runbooks

    attached = attached_runbooks()
    for name, m in am.MAP.items():
        missing = [rb for rb, r in registry().items()
                   if set(r.info.fixes) & set(m.codes) and rb not in m.runbooks
                   and rb in attached]
        assert missing == [], (name, missing)


def test_pending_names_are_still_missing() -> None:
    """The merge's check: a pending code or runbook that now exists leaves the list."""
    merged = set(am.PENDING_CODES) & set(finding_codes())
    assert not merged, f"now merged: move {sorted(merged)} out of PENDING_CODES"
    merged = set(am.PENDING_RUNBOOKS) & set(registry())
    assert not merged, f"now merged: move {sorted(merged)} out of PENDING_RUNBOOKS"


def test_diagnosed_means_a_finding_or_a_label_names_the_entity() -> None:
    """No claim without its means: a code of stordoc's, an explainer of Ceph's code that
    names OSDs, pools or daemons, or a label naming the entity."""
    ours = set(finding_codes()) | set(am.PENDING_CODES)
    for name, m in am.MAP.items():
        if m.no_data:
            assert not m.diagnosed and len(m.no_data) > 20, name
            continue
        if m.diagnosed and not m.any_incident:
            assert set(m.codes) & ours or set(m.ceph) & set(EXPLAIN) or m.labels, name


def test_coverage_goal() -> None:
    pac, reef = am.coverage("pacific"), am.coverage("reef")
    assert pac.total == 58 and reef.total == 83
    assert pac.unmapped == () and reef.unmapped == ()
    assert pac.diagnosed >= 48 and reef.diagnosed >= 50
    # declared (a runbook listed): what is posted is measured by test_alert_posts.py
    assert pac.with_fix >= 23
    # what stays undiagnosed says why: no CephFS, no NVMe-oF, no rbd-mirror, no cephadm
    assert all(am.MAP[n].no_data for n in reef.no_data)


def test_labels_name_the_entity() -> None:
    f = am.label_entities
    assert f("CephOSDFlapping", {"ceph_daemon": "osd.3", "hostname": "node2",
                                 "instance": INSTANCE}) == {"osd.3", "host node2"}
    assert f("CephDaemonSlowOps", {"ceph_daemon": "osd.12"}) == {"osd.12"}
    assert f("CephPGsInactive", {"name": "rbd", "pool_id": "2"}) == {"pool rbd"}
    assert f("CephNodeNetworkPacketDrops", {"instance": "node2.example.org:9100",
                                            "device": "eth0"}) == {"host node2"}
    assert f("CephNodeRootFilesystemFull", {"instance": "10.0.0.5:9100"}) == {"host 10.0.0.5"}
    # the health-detail rules' `name` is Ceph's code and `instance` the mgr's: no entity
    assert f("CephOSDDown", {"name": "OSD_DOWN", "instance": INSTANCE}) == set()


# ------------------------------------------------------------------ replayed diagnosis

@pytest.mark.parametrize("release,name", CEPH_CASES)
def test_every_fired_alert_selects_its_explaining_incident(release: str, name: str) -> None:
    rp = replay(release, name)
    incidents = list(rp.outcome.incidents)
    for a in fired(rp):
        p = payload(a)
        m = am.MAP[p.name]
        sel = am.select_one(p.name, p.alerts[0].labels, incidents)
        assert sel.how != "none", (p.name, [i.id for i in incidents])
        got = related(incidents, p.alerts)
        assert got == list(sel.incidents)
        for inc in got:
            assert m.any_incident or am.explains(m, inc), (p.name, inc.id)
            if m.diagnosed:  # an OSD, a pool, a daemon, Ceph's code: not "the PGs"; a
                # cluster-wide root (a filling cluster) names its OSDs in what it explains
                names = [inc.root.entity, *(c.entity for c in inc.consequences)]
                assert any(e and e != "cluster lab" and not e.endswith(" pgs")
                           for e in names), (p.name, inc.id)
            if inc.next_step is not None:  # the Fix stordoc offers is one the map names
                assert m.any_incident or inc.next_step.runbook in m.runbooks, \
                    (p.name, inc.next_step.runbook)


def _mixed(release: str) -> list[Incident]:
    """Three faults at once: an unmounted OSD, a monitor's disk filling, read errors."""
    return [i for n in ("osd-unmounted-in", "mon-disk-low", "osd-read-errors")
            for i in replay(release, n).outcome.incidents]


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_an_alert_picks_its_own_incident_among_others(release: str) -> None:
    """Label overlap alone gave all three incidents to each of these alerts (their labels
    name no entity); by name each gets its own."""
    incs = _mixed(release)
    assert len(incs) == 3

    def ids(*alerts: dict[str, Any]) -> list[str]:
        return [i.id for i in related(incs, payload(*alerts).alerts)]

    assert ids(alert("CephOSDDown")) == ["OSD_DATA_UNMOUNTED osd.2"]
    assert ids(alert("CephOSDHostDown")) == ["OSD_DATA_UNMOUNTED osd.2"]
    assert ids(alert("CephOSDDownHigh")) == ["OSD_DATA_UNMOUNTED osd.2"]
    # (its free-space line raised at runtime is the cause, issue 38.2: MON_DISK_LOW in it)
    assert ids(alert("CephMonDiskspaceLow")) == ["CONFIG_OPTION_CAUSE config mon.a"]
    assert ids(alert("CephOSDTooManyRepairs")) == ["CEPH_HEALTH ceph OSD_TOO_MANY_REPAIRS"]
    pools = [p.name for p in replay(release, "osd-unmounted-in").outcome.snapshot.ceph.pools]
    assert ids(alert("CephPGsUnclean", name=pools[0], pool_id="1")) == \
        ["OSD_DATA_UNMOUNTED osd.2"]
    # a flapping OSD's alert names it: that OSD's incident, not the others
    assert ids(alert("CephOSDFlapping", ceph_daemon="osd.2", hostname="nowhere")) == \
        ["OSD_DATA_UNMOUNTED osd.2"]
    # the OSD before its host: a host label naming the read errors' host as well still
    # picks osd.2's incident alone
    other = next(e for e in am.incident_names(incs[2]) if e.startswith("host "))
    assert ids(alert("CephOSDFlapping", ceph_daemon="osd.2", hostname=other[5:])) == \
        ["OSD_DATA_UNMOUNTED osd.2"]
    assert ids(alert("CephNodeNetworkPacketDrops", instance=f"{other[5:]}:9100",
                     device="eth0")) == [incs[2].id]
    # an alert stordoc has no data for here blames none of them (the lab's chain fires
    # PrometheusJobMissing before its first scrape: it was posted with osd.1's incident)
    assert ids(alert("PrometheusJobMissing")) == []
    assert ids(alert("CephFilesystemDegraded")) == []
    # one it maps but whose cause stordoc does not see falls back as before: all of them
    assert len(ids(alert("CephMonClockSkew"))) == 3


def test_the_webhook_posts_the_selected_incident_with_its_fix(tmp_path: Path) -> None:
    """The desk itself (fake Slack, the replayed check): CephOSDDown among three faults
    posts osd.2's incident with its Fix (osd-remount osd.2), nothing else."""
    from core.settings import parse_settings

    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"),
                        "clusters": {"lab": {"ceph": {"conf": str(conf), "timeout": 2}}}})
    h = BotHarness(s, {"lab": {"operators": ["UOPS000001"]}}, str(tmp_path / "bot.db"),
                   throttle_s=0.0, channels={"CLAB000001": "lab"})
    try:
        rp = replay("pacific", "osd-unmounted-in")
        out = rp.outcome
        mixed = dataclasses.replace(out, incidents=tuple(_mixed("pacific")))
        h.bot.backend.check = lambda *a, **k: mixed  # type: ignore[method-assign]
        h.bot.desk.handle(payload(alert("CephOSDDown")), "lab", time.monotonic())
        posts = [c for c in h.posts() if c.params.get("channel") == "CLAB000001"]
        assert len(posts) == 1, [all_text(c)[:100] for c in posts]
        text = all_text(posts[0])
        assert "CephOSDDown firing" in text and "OSD_DATA_UNMOUNTED" in text
        assert "MON_DISK_LOW" not in text and "OSD_TOO_MANY_REPAIRS" not in text
        fix = buttons(posts[0], "fix")
        assert len(fix) == 1
        b = h.bot.store.button(fix[0]["value"])
        assert b is not None and (b.runbook, b.target) == ("osd-remount", "osd.2")
    finally:
        h.close()


def test_an_alert_without_data_here_says_why_and_blames_nothing(tmp_path: Path) -> None:
    from core.settings import parse_settings

    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"),
                        "clusters": {"lab": {"ceph": {"conf": str(conf), "timeout": 2}}}})
    h = BotHarness(s, {"lab": {"operators": ["UOPS000001"]}}, str(tmp_path / "bot.db"),
                   throttle_s=0.0, channels={"CLAB000001": "lab"})
    try:
        out = dataclasses.replace(replay("pacific", "osd-unmounted-in").outcome,
                                  incidents=tuple(_mixed("pacific")))
        h.bot.backend.check = lambda *a, **k: out  # type: ignore[method-assign]
        h.bot.desk.handle(payload(alert("PrometheusJobMissing")), "lab", time.monotonic())
        posts = [c for c in h.posts() if c.params.get("channel") == "CLAB000001"]
        assert len(posts) == 1
        text = all_text(posts[0])
        assert "PrometheusJobMissing firing" in text and "OSD_DATA_UNMOUNTED" not in text
        assert "3 incidents, none about this alert" in text
        assert "No data for it here: Prometheus has no scrape job" in text
        assert buttons(posts[0], "fix") == []
    finally:
        h.close()


def test_alerts_of_one_group_are_parsed_as_alertmanager_sends_them() -> None:
    a = AmAlert.model_validate(alert("CephDaemonSlowOps", ceph_daemon="osd.1"))
    assert a.labels["ceph_daemon"] == "osd.1" and a.labels["type"] == "ceph_default"
