"""One problem, shown once (#38): each of Ceph's codes that says what a stordoc finding
already says folds inside that finding's incident, and the codes that were misfiled join
their cause. Each case injects Ceph's code, in the format Ceph emits it
(``src/mon/PGMap.cc``, ``src/mon/OSDMonitor.cc``, ``src/mon/MonmapMonitor.cc``), into a
saved snapshot (tests/fixtures/snapshots/reef/) whose JSON is made to hold the same state
stordoc finds on its own (a monitor out of quorum, a pool's pg_num, a pool near its quota),
and replays it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checks.alert_map import MAP as ALERTS
from checks.alert_map import rule_codes
from checks.incidents import Incident
from checks.model import Severity
from core.service.snapshots import load
from tests.support.fixture_snapshots import FIXTURES

REL = "reef"


def _edit(d: Path, name: str, fn: Callable[[Any], Any]) -> None:
    p = d / "ceph" / name
    p.write_text(json.dumps(fn(json.loads(p.read_text()))))


def _with(tmp: Path, case: str, checks: dict[str, tuple[str, str, list[str]]],
          *edits: Callable[[Path], None]) -> tuple[Incident, ...]:
    d = tmp / case
    shutil.copytree(FIXTURES / REL / case, d)

    def health(h: dict[str, Any]) -> dict[str, Any]:
        for code, (sev, summary, detail) in checks.items():
            h["checks"][code] = {"severity": sev, "summary": {"message": summary,
                                                             "count": len(detail) or 1},
                                 "detail": [{"message": m} for m in detail], "muted": False}
        h["status"] = "HEALTH_ERR" if any(c[0] == "HEALTH_ERR" for c in checks.values()) \
            else "HEALTH_WARN"
        return h
    _edit(d, "health_detail.json", health)
    for e in edits:
        e(d)
    return load(str(d)).outcome.incidents


def _one(incs: tuple[Incident, ...], code: str) -> Incident:
    """The one incident Ceph's ``code`` is in; it is never a root of its own."""
    where = [i for i in incs if any(f.evidence.get("ceph_code") == code for f in i.findings)]
    assert len(where) == 1, [i.id for i in where]
    assert where[0].root.code != "CEPH_HEALTH", where[0].id
    return where[0]


def _mon_b_down(d: Path) -> None:
    def qs(q: dict[str, Any]) -> dict[str, Any]:
        b = dict(q["monmap"]["mons"][0], name="b", rank=1)
        q["monmap"]["mons"].append(b)
        return q
    _edit(d, "quorum_status.json", qs)


def _mon_b_skew(d: Path) -> None:
    _mon_b_down(d)

    def qs(q: dict[str, Any]) -> dict[str, Any]:
        q["quorum_names"] = ["a", "b"]
        q["quorum"] = [0, 1]
        return q

    def st(s: dict[str, Any]) -> dict[str, Any]:
        s["quorum_names"] = ["a", "b"]
        return s
    _edit(d, "quorum_status.json", qs)
    _edit(d, "status.json", st)
    _edit(d, "time-sync-status.json", lambda t: {**t, "time_skew_status": {
        "a": {"skew": 0.0, "latency": 0.0, "health": "HEALTH_OK"},
        "b": {"skew": 0.0826, "latency": 0.002, "health": "HEALTH_WARN"}}})


def _pool(**kw: Any) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        def pools(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
            for p in ps:
                if p["pool_name"] == "rbd":
                    p.update(kw)
            return ps
        _edit(d, "osd_pool_ls_detail.json", pools)
    return edit


def _ratios_out_of_order(d: Path) -> None:
    _edit(d, "osd_dump.json", lambda o: {**o, "nearfull_ratio": 0.92,
                                         "backfillfull_ratio": 0.9})


def _pg_ratio_limit(d: Path) -> None:
    _edit(d, "config.json", lambda c: {**c, "mon_max_pg_per_osd": "50"}
          if isinstance(c, dict) else c)


def _rbd_quota(stored_pct: float) -> Callable[[Path], None]:
    """rbd holds ``stored_pct`` of a byte quota set on it."""
    def edit(d: Path) -> None:
        df = json.loads((d / "ceph" / "df.json").read_text())
        stored = next(p["stats"]["stored"] for p in df["pools"] if p["name"] == "rbd")
        stored = stored or 1 << 30
        if not next(p["stats"]["stored"] for p in df["pools"] if p["name"] == "rbd"):
            for p in df["pools"]:
                if p["name"] == "rbd":
                    p["stats"]["stored"] = stored
            (d / "ceph" / "df.json").write_text(json.dumps(df))
        _pool(quota_max_bytes=int(stored / stored_pct))(d)
    return edit


# (Ceph's code, severity, summary, detail, the edits that make stordoc's own finding,
#  stordoc's root code, its entity)
TEN: list[tuple[str, str, str, list[str], tuple[Callable[[Path], None], ...], str, str]] = [
    ("MON_DOWN", "HEALTH_WARN", "1/2 mons down, quorum a",
     ["mon.b (rank 1) addr [v2:127.0.0.1:35002/0,v1:127.0.0.1:35003/0] is down "
      "(out of quorum)"], (_mon_b_down,), "MON_OUT_OF_QUORUM", "mon.b"),
    ("MON_CLOCK_SKEW", "HEALTH_WARN", "clock skew detected on mon.b",
     ["mon.b clock skew 0.0826s > max 0.05s (latency 0.002s)"], (_mon_b_skew,),
     "MON_CLOCK_SKEW", "mon.b"),
    ("OSD_OUT_OF_ORDER_FULL", "HEALTH_ERR", "full ratio(s) out of order",
     ["backfillfull_ratio (0.9) < nearfull_ratio (0.92), increased"],
     (_ratios_out_of_order,), "FULL_RATIOS_ORDER", ""),
    ("POOL_TOO_FEW_PGS", "HEALTH_WARN", "1 pools have too few placement groups",
     ["Pool rbd has 2 placement groups, should have 64"],
     (_pool(pg_num=2, pg_placement_num=2, pg_num_target=2, pg_placement_num_target=2),),
     "POOL_PG_NUM_LOW", "pool rbd"),
    ("TOO_FEW_PGS", "HEALTH_WARN", "too few PGs per OSD (3 < min 30)", [],
     (_pool(pg_num=2, pg_placement_num=2, pg_num_target=2, pg_placement_num_target=2),),
     "POOL_PG_NUM_LOW", "pool rbd"),
    ("POOL_TOO_MANY_PGS", "HEALTH_WARN", "1 pools have too many placement groups",
     ["Pool rbd has 4096 placement groups, should have 64"],
     (_pool(pg_num=4096, pg_placement_num=4096, pg_num_target=4096,
            pg_placement_num_target=4096),), "POOL_PG_NUM_HIGH", "pool rbd"),
    ("TOO_MANY_PGS", "HEALTH_WARN", "too many PGs per OSD (4097 > max 250)", [],
     (_pool(pg_num=4096, pg_placement_num=4096, pg_num_target=4096,
            pg_placement_num_target=4096),), "PGS_PER_OSD_HIGH", ""),
    ("POOL_PG_NUM_NOT_POWER_OF_TWO", "HEALTH_WARN", "1 pool(s) have non-power-of-two pg_num",
     ["pool 'rbd' pg_num 96 is not a power of two"],
     (_pool(pg_num=96, pg_placement_num=96, pg_num_target=96, pg_placement_num_target=96),),
     "POOL_PG_NOT_POWER_OF_TWO", "pool rbd"),
    ("SMALLER_PGP_NUM", "HEALTH_WARN", "1 pools have pg_num > pgp_num",
     ["pool rbd pg_num 64 > pgp_num 32"],
     (_pool(pg_placement_num=32, pg_placement_num_target=32),), "POOL_PGP_BELOW_PG",
     "pool rbd"),
    ("POOL_NEAR_FULL", "HEALTH_WARN", "1 pools nearfull",
     ["pool 'rbd' has 1 GiB (max 1.1 GiB)"], (_rbd_quota(0.9),), "POOL_QUOTA_CAUSE",
     "pool rbd"),  # the quota is the cause (issue 38.2: checks.pool_quota)
]


@pytest.mark.parametrize("code,sev,summary,detail,edits,root,entity", TEN,
                         ids=[t[0] for t in TEN])
def test_ceph_code_folds_inside_stordocs_own_finding(
        tmp_path: Path, code: str, sev: str, summary: str, detail: list[str],
        edits: tuple[Callable[[Path], None], ...], root: str, entity: str) -> None:
    incs = _with(tmp_path, "healthy", {code: (sev, summary, detail)}, *edits)
    inc = _one(incs, code)
    assert inc.root.code == root, [i.id for i in incs]
    if entity:
        assert inc.root.entity == entity
    # the problem is one incident: no other incident of the same root code and entity,
    # and Ceph's code is no root anywhere
    assert [i.id for i in incs if i.root.code == root and i.root.entity == inc.root.entity] \
        == [inc.id]
    assert not [i.id for i in incs if i.root.evidence.get("ceph_code") == code]
    # the CLI's text and JSON carry it inside the incident, as a consequence
    js = inc.to_dict()
    assert {"code": "CEPH_HEALTH", "entity": f"ceph {code}"} in js["consequences"]


def test_pgs_waiting_for_space_join_the_fullness_incident_not_a_down_osd(
        tmp_path: Path) -> None:
    """PG_BACKFILL_FULL / PG_RECOVERY_FULL in a filling cluster with an OSD down (its
    own incident, daemon-restart): they join the fullness incident."""
    pgs = {"PG_BACKFILL_FULL": ("HEALTH_WARN", "Low space hindering backfill (add storage if "
                                "this doesn't resolve itself): 1 pg backfill_toofull",
                                ["pg 2.5 is active+remapped+backfill_toofull, acting [0,1,2]"]),
           "PG_RECOVERY_FULL": ("HEALTH_ERR", "Full OSDs blocking recovery: 1 pg "
                                "recovery_toofull",
                                ["pg 2.7 is active+recovery_toofull+degraded, acting [1,2]"])}
    d = tmp_path
    # the filling cluster (cluster-nearfull) with osd.0 marked down in its osdmap

    def down(p: Path) -> None:
        def dump(o: dict[str, Any]) -> dict[str, Any]:
            for x in o["osds"]:
                if x["osd"] == 0:
                    x["up"] = 0
            return o
        _edit(p, "osd_dump.json", dump)
    incs = _with(d, "cluster-nearfull", {**pgs, "OSD_DOWN": (
        "HEALTH_WARN", "1 osds down", ["osd.0 (root=default,host=lab) is down"])}, down)
    downs = [i for i in incs if any(f.evidence.get("ceph_code") == "OSD_DOWN"
                                    for f in i.findings)]
    assert downs and downs[0].root.code != "CLUSTER_DAYS_TO_FULL"
    for code in pgs:
        inc = _one(incs, code)
        assert inc.root.code in ("CLUSTER_DAYS_TO_FULL", "OSD_IS_FULL", "OSD_NEAR_FULL",
                                 "FULL_RATIO_LOWERED"), \
            (code, inc.id)


def test_slow_ops_on_one_osd_stays_off_another_osds_crash(tmp_path: Path) -> None:
    """osd.2 crashed (osd-crash); SLOW_OPS on osd.0 is not the crash's consequence."""
    slow = ("HEALTH_WARN", "3 slow ops, oldest one blocked for 40 sec, osd.0 has slow ops",
            [])
    incs = _with(tmp_path, "osd-crash", {"SLOW_OPS": slow})
    crash = incs[0]
    assert crash.root.code == "OSD_DAEMON_CRASHED", [i.id for i in incs]
    inc = _one_any(incs, "SLOW_OPS")
    assert inc is not crash, inc.id
    assert "SLOW_OPS" not in {f.evidence.get("ceph_code") for f in crash.findings}


def _one_any(incs: tuple[Incident, ...], code: str) -> Incident:
    where = [i for i in incs if any(f.evidence.get("ceph_code") == code for f in i.findings)]
    assert len(where) == 1, [i.id for i in where]
    return where[0]


def test_quota_pool_near_full_is_the_pools_incident_not_the_cluster_filling(
        tmp_path: Path) -> None:
    near = ("HEALTH_WARN", "1 pools nearfull", ["pool 'rbd' has 1 GiB (max 1.1 GiB)"])
    incs = _with(tmp_path, "cluster-nearfull", {"POOL_NEAR_FULL": near}, _rbd_quota(0.9))
    fill = [i for i in incs if i.root.code in ("CLUSTER_DAYS_TO_FULL", "FULL_RATIO_LOWERED")]
    assert fill, [i.id for i in incs]
    inc = _one(incs, "POOL_NEAR_FULL")
    assert inc.id == "POOL_QUOTA_CAUSE pool rbd", [i.id for i in incs]


def test_quota_pool_full_is_told_set_quota(tmp_path: Path) -> None:
    full = ("HEALTH_ERR", "1 pools full", ["pool 'rbd' has 1.05 GiB (max 1.1 GiB)"])
    incs = _with(tmp_path, "healthy", {"POOL_FULL": full}, _rbd_quota(0.96))
    inc = _one(incs, "POOL_FULL")
    assert inc.id == "POOL_QUOTA_CAUSE pool rbd", [i.id for i in incs]
    f = next(f for f in inc.findings if f.evidence.get("ceph_code") == "POOL_FULL")
    assert f.severity == Severity.CRIT and inc.severity == Severity.CRIT
    assert "ceph osd pool set-quota rbd" in f.message, f.message
    assert "raising the ratios" not in f.message


def test_squid_spelling_of_the_pg_unavailable_alert_is_mapped() -> None:
    old, new = ALERTS["CephPGUnavilableBlockingIO"], ALERTS.get("CephPGUnavailableBlockingIO")
    assert new == old
    assert rule_codes("CephPGUnavailableBlockingIO") == ("PG_AVAILABILITY",)
