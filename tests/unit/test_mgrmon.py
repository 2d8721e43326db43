"""The manager, the monitors and placement (checks/managers.py, checks/mgrmon_codes.py,
checks/placement.py, runbooks/mgr.py) on the captured healthy lab state of each release,
edited into each fault: a manager map with no active manager, a manager that does not
answer, Ceph's manager and monitor codes, CRUSH weight 0, an unused root, a reweight
override, an empty host bucket; and the failover runbook's refusals."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from checks.engine import run_checks
from checks.incidents import correlate
from checks.managers import pg_stats_stale
from checks.model import Finding, Severity
from runbooks.api import plan_from_snapshot
from runbooks.model import InvalidRequest, Refused
from runbooks.nextstep import planning_context
from storage.ceph import build_state, load_raw_dir
from storage.ceph.parse_mgrmon import last_pg_report, parse_crush, parse_mgr_dump
from storage.model import ClusterSnapshot
from storage.targets import CephTarget, ClusterTarget

FIX = Path(__file__).resolve().parents[1] / "fixtures"
RELEASES = ("pacific", "reef")
NOW = 1_795_000_000.0
STAMP = "2026-11-18T11:05:40.000000+0000"  # NOW - 60 s, as Ceph prints it
LAST = NOW - 60

RULES = [{"rule_id": 0, "rule_name": "replicated_rule", "steps": [
    {"op": "take", "item": -1, "item_name": "default"},
    {"op": "chooseleaf_firstn", "num": 0, "type": "host"}, {"op": "emit"}]}]


def healthy(release: str) -> dict[str, Any]:
    raw = load_raw_dir(str(FIX / f"ceph-{release}" / "healthy"))
    raw["osd crush rule dump"] = copy.deepcopy(RULES)
    return raw


def snap_of(raw: dict[str, Any]) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="lab", taken_at=NOW, ceph=build_state(raw, collected_at=NOW),
                           swift=None, hosts={}, host_facts_collected=False)


def findings(raw: dict[str, Any]) -> dict[tuple[str, str], Finding]:
    rep = run_checks(snap_of(raw), now=NOW)
    return {f.key: f for f in (*rep.findings, *rep.muted)}


def log_line(name: str, msg: str, stamp: str = STAMP) -> dict[str, Any]:
    return {"name": name, "stamp": stamp, "channel": "cluster", "priority": "[DBG]",
            "message": msg}


def mgr_gone(raw: dict[str, Any], before_grace: bool, standbys: tuple[str, ...] = ()
             ) -> dict[str, Any]:
    """What a collection reads with the active manager dead: its commands unanswered,
    the map still naming it (before the beacon grace) or not (after)."""
    for k in ("pg stat", "osd df", "pg dump_stuck", "crash ls-new", "osd pool autoscale-status",
              "pg dump pgs_brief", "osdmap pgs", "config show"):
        raw.pop(k, None)
    raw["errors"] = {"pg stat": "manager did not answer: 'pg stat' failed (rc=110)",
                     "osd df": "skipped: manager did not answer"}
    d = raw["mgr dump"]
    d["standbys"] = [{"gid": 5000 + i, "name": s} for i, s in enumerate(standbys)]
    if not before_grace:
        d.update(available=False, active_name="", active_gid=0,
                 active_change="2026-11-18T11:06:10.000000+0000")
    raw["log last"] = [
        log_line("mgr.x", "pgmap v61: 65 pgs: 65 active+clean; 0 B data",
                 "2026-11-18T11:05:38.000000+0000"),
        log_line("mgr.x", "pgmap v62: 65 pgs: 65 active+clean; 0 B data"),
        log_line("mon.a", "Manager daemon x is unresponsive.  No standby daemons available.",
                 "2026-11-18T11:06:10.000000+0000")]
    return raw


@pytest.mark.parametrize("release", RELEASES)
def test_healthy_lab_has_a_manager_that_answered_and_no_finding(release: str) -> None:
    st = build_state(healthy(release))
    assert st.mgr is not None and st.mgr.active == "x" and st.mgr.available
    assert st.mgr.answered is True and st.mgr.standbys == ()
    assert pg_stats_stale(st) is None
    got = {k for k, f in findings(healthy(release)).items() if f.severity > Severity.INFO}
    assert got == set()


@pytest.mark.parametrize("release", RELEASES)
def test_dead_manager_before_the_grace_is_crit_and_pgs_never_clean(release: str) -> None:
    fs = findings(mgr_gone(healthy(release), before_grace=True))
    f = fs[("MGR_NOT_ANSWERING", "mgr.x")]
    assert f.severity == Severity.CRIT and f.runbook is None  # no standby to fail over to
    assert "did not answer" in f.message and "30 s" in f.message
    assert "no standby" in f.message and f.since == LAST
    s = fs[("PGS_STATS_STALE", "cluster lab pgs")]
    assert "since 2026-11-18 11:05:40 UTC (1m 0s ago" in s.message
    assert "65 active+clean" in s.message and "not calling" in s.message
    assert not any(k[0] in ("PGS_NOT_ACTIVE_CLEAN", "PGS_SETTLING") for k in fs)
    incs = correlate(list(fs.values()))
    assert [i.root.code for i in incs] == ["MGR_NOT_ANSWERING"]
    assert {c.code for c in incs[0].consequences} == {"PGS_STATS_STALE"}


@pytest.mark.parametrize("release", RELEASES)
def test_no_active_manager_after_the_grace_names_since_when(release: str) -> None:
    raw = mgr_gone(healthy(release), before_grace=False)
    raw["health detail"] = {"status": "HEALTH_WARN", "checks": {"MGR_DOWN": {
        "severity": "HEALTH_WARN", "summary": {"message": "no active mgr", "count": 1},
        "detail": [], "muted": False}}}
    fs = findings(raw)
    f = fs[("MGR_NO_ACTIVE", "cluster lab mgr")]
    assert f.severity == Severity.CRIT and f.since == NOW - 30
    assert "since 2026-11-18 11:06:10 UTC (30s ago)" in f.message
    assert "stale since 2026-11-18 11:05:40 UTC" in f.message
    assert f.evidence["manual"].startswith("start ceph-mgr")
    inc = correlate(list(fs.values()))[0]
    assert inc.root.code == "MGR_NO_ACTIVE"
    assert {c.entity for c in inc.consequences} == {"cluster lab pgs", "ceph MGR_DOWN"}


def test_stale_since_before_the_oldest_log_line_when_the_report_scrolled_out() -> None:
    raw = mgr_gone(healthy("pacific"), before_grace=False)
    raw["log last"] = raw["log last"][2:]  # only the monitor's line is left
    s = findings(raw)[("PGS_STATS_STALE", "cluster lab pgs")]
    assert "since before 2026-11-18 11:06:10 UTC" in s.message and s.since is None


def test_a_standby_makes_the_failover_the_next_step_and_plans_it() -> None:
    raw = mgr_gone(healthy("reef"), before_grace=True, standbys=("y",))
    snap = snap_of(raw)
    f = {x.key: x for x in run_checks(snap, now=NOW).findings}[("MGR_NOT_ANSWERING", "mgr.x")]
    assert (f.runbook, f.target) == ("mgr-failover", "mgr.x")
    ctx = planning_context("lab", ClusterTarget(name="lab", ceph=CephTarget(conf="/dev/null")))
    p = plan_from_snapshot(ctx, snap, "mgr-failover", "x")
    assert p.target == "mgr.x" and p.locks == ("mgr",)
    assert [s.command for s in p.steps][0] == "ceph mgr fail x"
    with pytest.raises(InvalidRequest, match=r"mgr\.xx is not a manager.*did you mean mgr\.x\?"):
        plan_from_snapshot(ctx, snap, "mgr-failover", "mgr.xx")  # exit 64 at the CLI
    with pytest.raises(InvalidRequest, match="not a manager name"):
        plan_from_snapshot(ctx, snap, "mgr-failover", "mgr.x;reboot")
    with pytest.raises(Refused, match="is a standby"):
        plan_from_snapshot(ctx, snap, "mgr-failover", "mgr.y")


def test_failover_refused_without_a_standby_in_one_line() -> None:
    snap = snap_of(healthy("pacific"))
    ctx = planning_context("lab", ClusterTarget(name="lab", ceph=CephTarget(conf="/dev/null")))
    with pytest.raises(Refused) as e:
        plan_from_snapshot(ctx, snap, "mgr-failover", "mgr.x")
    assert not isinstance(e.value, InvalidRequest)
    assert "no standby manager" in str(e.value) and "\n" not in str(e.value)


def test_parsers_take_junk_as_missing() -> None:
    m = parse_mgr_dump({"active_name": 7, "standbys": "x", "available_modules": [None]})
    assert m.standbys == () and m.failed_modules == ()
    assert last_pg_report([None, {"stamp": "junk"}, "x"]) == (None, None, None)
    c = parse_crush({"nodes": [{"id": -1, "type": "root", "children": [-1]}]}, "x")
    assert c.rules == () and c.osd_root == {}


def test_failed_module_counts_only_when_enabled() -> None:
    m = parse_mgr_dump({"modules": ["influx"], "always_on_modules": {"reef": ["crash"]},
                        "available_modules": [
                            {"name": "influx", "can_run": False, "error_string": "no influxdb"},
                            {"name": "k8sevents", "can_run": False, "error_string": "no k8s"}]},
                       release="reef")
    assert [x.name for x in m.failed_modules] == ["influx"]
    assert "crash" in m.enabled_modules


# ------------------------------------------------------------------ Ceph's own codes
def _health(code: str, sev: str, summary: str, detail: list[str]) -> dict[str, Any]:
    return {"status": sev, "checks": {code: {
        "severity": sev, "summary": {"message": summary, "count": 1},
        "detail": [{"message": d} for d in detail], "muted": False}}}


def test_mgr_module_error_names_the_module_what_stops_and_the_failover() -> None:
    raw = healthy("reef")
    raw["mgr dump"]["standbys"] = [{"gid": 1, "name": "y"}]
    raw["health detail"] = _health(
        "MGR_MODULE_ERROR", "HEALTH_ERR",
        "Module 'pg_autoscaler' has failed: division by zero",
        ["Module 'pg_autoscaler' has failed: division by zero"])
    f = findings(raw)[("CEPH_HEALTH", "ceph MGR_MODULE_ERROR")]
    assert f.severity == Severity.CRIT
    assert "pg_autoscaler (division by zero)" in f.message
    assert "no PG autoscaling" in f.message and "ceph mgr fail x" in f.message
    assert (f.runbook, f.target) == ("mgr-failover", "mgr.x")


def test_recent_mgr_module_crash_names_module_daemon_and_host() -> None:
    raw = healthy("pacific")
    raw["health detail"] = _health(
        "RECENT_MGR_MODULE_CRASH", "HEALTH_WARN", "1 mgr modules have recently crashed",
        ["mgr module balancer crashed in daemon mgr.x on host node1 at "
         "2026-11-17T09:30:00.000000Z"])
    f = findings(raw)[("CEPH_HEALTH", "ceph RECENT_MGR_MODULE_CRASH")]
    assert f.evidence["modules"] == ["balancer"]
    assert "mgr.x on node1" in f.message and "no balancing" in f.message


def test_mon_disk_low_and_big_say_path_size_and_what_to_do() -> None:
    raw = healthy("pacific")
    raw["health detail"] = _health("MON_DISK_LOW", "HEALTH_WARN",
                                   "mon a is low on available space", ["mon.a has 28% avail"])
    raw["mon data"] = {"a": {"mon_data": "/var/lib/ceph/mon/ceph-a",
                             "mon_data_avail_warn": "30", "mon_data_avail_crit": "5"}}
    f = findings(raw)[("CEPH_HEALTH", "ceph MON_DISK_LOW")]
    assert "mon.a: 28% free on the filesystem of /var/lib/ceph/mon/ceph-a" in f.message
    assert "mon_data_avail_warn (30 %)" in f.message and "ceph tell mon.a compact" in f.message
    assert f.evidence["mons"] == {"a": {"avail_pct": 28, "path": "/var/lib/ceph/mon/ceph-a"}}
    raw["health detail"] = _health("MON_DISK_BIG", "HEALTH_WARN",
                                   "mon a is using a lot of disk space",
                                   ["mon.a is 16 GiB >= mon_data_size_warn (15 GiB)"])
    f = findings(raw)[("CEPH_HEALTH", "ceph MON_DISK_BIG")]
    assert "store 16 GiB in /var/lib/ceph/mon/ceph-a (warn at 15 GiB)" in f.message
    assert "ceph tell mon.a compact" in f.message


# ------------------------------------------------------------------ placement
def _tree_node(raw: dict[str, Any], osd: int) -> dict[str, Any]:
    return next(n for n in raw["osd tree"]["nodes"] if n["id"] == osd)


@pytest.mark.parametrize("release", RELEASES)
def test_crush_weight_zero_is_no_data_with_the_command(release: str) -> None:
    raw = healthy(release)
    _tree_node(raw, 1)["crush_weight"] = 0.0
    f = findings(raw)[("OSD_NO_DATA", "osd.1")]
    assert f.severity == Severity.WARN and "CRUSH weight is 0" in f.message
    assert f.evidence["manual"].startswith("ceph osd crush reweight osd.1 0.0")


def test_an_osd_under_a_root_no_rule_takes() -> None:
    raw = healthy("pacific")
    raw["osd crush rule dump"][0]["steps"][0]["item_name"] = "default~ssd"
    f = findings(raw)[("OSD_NO_DATA", "osd.0")]
    assert "device class hdd under root default is taken by no pool's rule" in f.message
    assert "default~ssd" in f.message


def test_reweight_override_below_share_and_empty_host() -> None:
    raw = healthy("pacific")
    for n in raw["osd df"]["nodes"]:
        if n["id"] == 2:
            n["pgs"] = 3
    for o in raw["osd dump"]["osds"]:
        if o["osd"] == 2:
            o["weight"] = 0.3
    raw["osd tree"]["nodes"].append({"id": -20, "name": "node9", "type": "host",
                                     "children": []})
    raw["osd tree"]["nodes"][0]["children"].append(-20)
    fs = findings(raw)
    f = fs[("OSD_BELOW_SHARE", "osd.2")]
    assert "holds 3 PGs" in f.message and "reweight override of 0.30" in f.message
    h = fs[("CRUSH_HOST_EMPTY", "host node9")]
    assert h.severity == Severity.INFO and "ceph osd crush rm node9" in h.message


def test_capture_shapes_parse(tmp_path: Path) -> None:
    """What the lab answered, as saved with each new scenario (both releases)."""
    base = FIX / "snapshots"
    for rel in RELEASES:
        d = base / rel / "mgr-stopped" / "ceph"
        if not d.exists():
            pytest.skip("no saved snapshot")
        raw = load_raw_dir(str(d))
        st = build_state(raw)
        assert st.mgr is not None and st.mgr.last_pg_report is not None
        assert json.dumps(raw["mgr dump"])
        assert time.gmtime(st.mgr.last_pg_report).tm_year >= 2026
