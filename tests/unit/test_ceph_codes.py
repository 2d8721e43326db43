"""Ceph's own codes through fold/enrich (checks/ceph_codes.py, checks/incidents.py) on
captured ``health detail`` JSON merged into the captured healthy Pacific lab state, and
the cheap checks (checks/ceph_config.py) on edited osdmaps."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

from checks.engine import run_checks
from checks.incidents import correlate
from checks.model import Finding, Severity
from storage.ceph import build_state, load_raw_dir
from storage.model import ClusterSnapshot

FIX = Path(__file__).resolve().parents[1] / "fixtures"
NOW = 1_795_000_000.0


def raw_healthy() -> dict[str, Any]:
    return load_raw_dir(str(FIX / "ceph-pacific" / "healthy"))


def snap_of(raw: dict[str, Any]) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="lab", taken_at=time.time(), ceph=build_state(raw),
                           swift=None, hosts={}, host_facts_collected=False)


def findings(raw: dict[str, Any]) -> dict[str, Finding]:
    rep = run_checks(snap_of(raw), now=NOW)
    return {f.entity: f for f in (*rep.findings, *rep.muted)}


def rare() -> dict[str, Finding]:
    raw = raw_healthy()
    raw["health detail"] = json.loads((FIX / "ceph-codes" / "health_detail_rare.json")
                                      .read_text())
    return findings(raw)


def test_slow_ops_names_osds_hosts_and_what_to_read() -> None:
    f = rare()["ceph SLOW_OPS"]
    assert f.evidence["daemons"] == ["osd.0", "osd.2"]
    assert f.evidence["hosts"] == {"osd.0": "node1", "osd.2": "node3"}
    assert "osd.0 (node1), osd.2 (node3)" in f.message and "dump_ops_in_flight" in f.message
    assert f.since == NOW - 174


def test_pg_damaged_points_to_the_bad_copy_and_pg_repair() -> None:
    f = rare()["ceph PG_DAMAGED"]
    assert f.severity == Severity.CRIT and f.runbook is None
    assert f.evidence["pgs"] == [{"pgid": "2.1b", "state": "active+clean+inconsistent"}]
    assert f.evidence["osds"] == [0, 1, 2]
    assert "`stordoc fix pg-repair 2.1b`" in f.message
    assert "list-inconsistent-obj 2.1b" in f.message and "PG_INCONSISTENT" in f.message
    s = rare()["ceph OSD_SCRUB_ERRORS"]
    assert "pg-repair" in s.message


def test_old_version_spillover_and_flapping_name_their_osds() -> None:
    fs = rare()
    assert fs["ceph DAEMON_OLD_VERSION"].evidence["daemons"] == ["osd.1"]
    assert "osd.1 (node2)" in fs["ceph DAEMON_OLD_VERSION"].message
    sp = fs["ceph BLUEFS_SPILLOVER"]
    assert sp.evidence["osds"] == ["osd.2"] and "ceph tell osd.2 compact" in sp.message
    assert fs["ceph OSD_FLAPPING"].evidence["daemons"] == ["osd.1"]


def test_code_muted_in_ceph_is_shown_as_muted_info() -> None:
    f = rare()["ceph POOL_NEARFULL"]
    assert f.severity == Severity.INFO and f.evidence["muted_in_ceph"] is True
    assert f.message.startswith("muted in Ceph")


# ``health detail`` as the Reef lab printed it: noout set, then ``ceph health mute
# OSDMAP_FLAGS 1h`` (and a sticky mute of a check that is not raised)
MUTED_FLAGS = {"status": "HEALTH_OK", "checks": {"OSDMAP_FLAGS": {
    "severity": "HEALTH_WARN", "summary": {"message": "noout flag(s) set", "count": 5},
    "detail": [], "muted": True}},
    "mutes": [{"code": "OSDMAP_FLAGS", "ttl": "2026-11-26T10:22:23.575335+0000",
               "sticky": False, "summary": "noout flag(s) set", "count": 5},
              {"code": "OSD_NEARFULL", "sticky": True, "summary": "", "count": 0}]}


def test_a_mute_in_ceph_says_how_long_and_that_ceph_lifts_it_when_worse() -> None:
    """A mute that is not --sticky ends by itself when its check's count grows (the Reef
    lab: noout then noin, count 5 -> 10, and the mute was gone): on-call must read that."""
    from storage.ceph import parse_stamp

    raw = raw_healthy()
    raw["health detail"] = copy.deepcopy(MUTED_FLAGS)
    until = parse_stamp("2026-11-26T10:22:23.575335+0000")
    assert until is not None
    rep = run_checks(snap_of(raw), now=until - 3540)
    f = next(x for x in (*rep.findings, *rep.muted) if x.entity == "ceph OSDMAP_FLAGS")
    assert f.severity == Severity.INFO
    assert f.message.startswith("muted in Ceph (ceph health mute, for 59m more, lifted by "
                                "Ceph if it gets worse): "), f.message
    assert (f.evidence["mute_sticky"], f.evidence["mute_count"]) == (False, 5)
    assert f.evidence["mute_until"] == until
    # sticky and without a TTL; a mute whose TTL passed; a check muted without a mutes list
    raw["health detail"]["mutes"] = [{"code": "OSDMAP_FLAGS", "sticky": True, "count": 5}]
    f = findings(raw)["ceph OSDMAP_FLAGS"]
    assert f.message.startswith("muted in Ceph (ceph health mute, sticky): ")
    raw["health detail"]["mutes"] = [dict(MUTED_FLAGS["mutes"][0])]  # type: ignore[index]
    rep = run_checks(snap_of(raw), now=until + 1)
    f = next(x for x in (*rep.findings, *rep.muted) if x.entity == "ceph OSDMAP_FLAGS")
    assert "(ceph health mute, expired, lifted by Ceph if it gets worse)" in f.message
    raw["health detail"].pop("mutes")
    f = findings(raw)["ceph OSDMAP_FLAGS"]
    assert f.message.startswith("muted in Ceph (ceph health mute): ")
    assert "mute_sticky" not in f.evidence


def test_mutes_parse_every_shape_and_junk() -> None:
    from storage.ceph.parse_daemons import parse_health, parse_mutes

    m = parse_mutes(MUTED_FLAGS)
    assert set(m) == {"OSDMAP_FLAGS", "OSD_NEARFULL"}
    assert m["OSD_NEARFULL"].sticky and m["OSD_NEARFULL"].until is None
    assert not m["OSDMAP_FLAGS"].sticky and m["OSDMAP_FLAGS"].count == 5
    for junk in ({}, {"mutes": None}, {"mutes": "x"}, {"mutes": [None, 3, {"code": 7},
                                                                 {"code": ""}]},
                 {"mutes": [{"code": "A", "sticky": "yes", "ttl": "soon", "count": "nan"}]}):
        got = parse_mutes(junk)
        assert all(not x.sticky and x.until is None and x.count == 0 for x in got.values())
    # only a muted check carries its mute; an unmuted one never does
    _, checks = parse_health({"checks": {"OSD_NEARFULL": {"severity": "HEALTH_WARN",
                                                          "summary": "x", "muted": False}},
                              "mutes": MUTED_FLAGS["mutes"]})
    assert checks[0].mute is None and not checks[0].muted


def test_flapping_and_slow_ops_fold_into_the_osd_root() -> None:
    fs = list(rare().values())
    fs.append(Finding("OSD_DAEMON_STOPPED", Severity.CRIT, "osd.1", "osd.1 stopped", {},
                      "osd-start", "osd.1"))
    incs = correlate(fs)
    top = [i for i in incs if i.root.code == "OSD_DAEMON_STOPPED"][0]
    assert ("CEPH_HEALTH", "ceph OSD_FLAPPING") in {f.key for f in top.consequences}
    # a PG damage is its own incident, with its manual repair
    dmg = [i for i in incs if i.root.entity == "ceph PG_DAMAGED"][0]
    assert dmg.severity == Severity.CRIT


def test_recent_crash_names_the_crash_and_offers_the_archive_runbook() -> None:
    raw = raw_healthy()
    raw["health detail"] = {"status": "HEALTH_WARN", "checks": {"RECENT_CRASH": {
        "severity": "HEALTH_WARN", "muted": False,
        "summary": {"message": "1 daemons have recently crashed", "count": 1},
        "detail": [{"message": "osd.1 crashed on host node2 at 2026-11-23T18:00:00.000000Z"}]}}}
    raw["crash ls-new"] = [{"crash_id": "2026-11-23T18:00:00.000000Z_0e5c-4b1f",
                            "entity_name": "osd.1", "timestamp": "2026-11-23T18:00:00.000000Z",
                            "assert_msg": None, "backtrace": ["(abort()+0x1)"]}]
    f = findings(raw)["ceph RECENT_CRASH"]
    assert (f.runbook, f.target) == ("crash-archive", "2026-11-23T18:00:00.000000Z_0e5c-4b1f")
    assert "osd.1 (node2)" in f.message and "ceph crash info" in f.message
    assert f.since is not None


def _dump(raw: dict[str, Any]) -> dict[str, Any]:
    d: dict[str, Any] = copy.deepcopy(raw["osd dump"])
    raw["osd dump"] = d
    return d


def test_cheap_checks_on_edited_osdmaps() -> None:
    raw = raw_healthy()
    d = _dump(raw)
    d["pools"][-1]["min_size"] = d["pools"][-1]["size"]
    d["nearfull_ratio"], d["full_ratio"] = 0.9700000286102295, 0.949999988079071
    d["require_osd_release"] = "octopus"
    for p in raw.get("osd pool ls detail") or ():
        if p.get("pool_id") == d["pools"][-1]["pool"]:
            p["min_size"] = p["size"]
    fs = findings(raw)
    codes = {f.code for f in fs.values()}
    assert {"POOL_SIZE_EQ_MIN_SIZE", "FULL_RATIOS_ORDER", "REQUIRE_OSD_RELEASE_BEHIND"} <= codes
    d["nearfull_ratio"], d["backfillfull_ratio"], d["full_ratio"] = 0.9, 0.93, 0.97
    fs = findings(raw)
    raised = [f for f in fs.values() if f.code == "FULL_RATIOS_RAISED"]
    assert raised and raised[0].evidence["raised"] == {"nearfull": 0.9, "backfillfull": 0.93,
                                                       "full": 0.97}


def test_osd_without_device_class() -> None:
    raw = raw_healthy()
    tree = copy.deepcopy(raw["osd tree"])
    for n in tree["nodes"]:
        if n.get("id") == 1:
            n.pop("device_class", None)
    raw["osd tree"] = tree
    f = findings(raw)["osd.1"]
    assert f.code == "OSD_NO_DEVICE_CLASS" and "node2" in f.message


def test_mgr_module_dependency_names_what_stops_and_the_pyo3_cause() -> None:
    raw = raw_healthy()
    raw["health detail"] = json.loads(
        (FIX / "ceph-codes" / "health_detail_reef_pyo3.json").read_text())
    f = findings(raw)["ceph MGR_MODULE_DEPENDENCY"]
    assert len(f.evidence["modules"]) == 13 and "pg_autoscaler" in f.evidence["acting"]
    assert "no pg autoscaling" in f.message and "subinterpreters" in f.message
    assert f.evidence["pyo3"][0] == "balancer"
    raw["health detail"]["checks"]["MGR_MODULE_DEPENDENCY"]["detail"] = [
        {"message": "Module 'influx' has failed dependency: No module named 'influxdb'"}]
    g = findings(raw)["ceph MGR_MODULE_DEPENDENCY"]
    assert g.evidence["acting"] == [] and g.evidence["pyo3"] == []
    assert "install the missing Python packages" in g.message
