"""The Ceph checks on captured lab JSON (Pacific) and Octopus, plus variations of that JSON
for states no capture shows. Every agreed Ceph code is produced at least once here."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checks.engine import run_checks
from checks.model import REGISTRY, Finding, Severity, Thresholds
from storage.ceph import build_state, load_raw_dir, parse_stamp
from storage.model import ClusterSnapshot

FIX = Path(__file__).resolve().parent.parent / "fixtures"
PAC = FIX / "ceph-pacific"
OCT = FIX / "ceph-octopus"

CEPH_CODES = {
    "OSD_DOWN_IN", "OSD_DOWN_OUT", "OSD_UP_OUT", "OSD_NEVER_UP", "OSD_DESTROYED",
    "OSD_HOST_DOWN", "OSDMAP_FLAGS",
    "POOL_PG_NUM_LOW", "POOL_PG_NUM_HIGH", "POOL_PG_NOT_POWER_OF_TWO", "POOL_PGP_BELOW_PG",
    "PGS_PER_OSD_HIGH", "PGS_NOT_ACTIVE_CLEAN", "PGS_STUCK", "PGS_SETTLING",
    "CACHE_NO_TARGET", "CACHE_RATIO_ORDER", "CACHE_NO_HIT_SET", "CACHE_PROMOTE_RECENCY",
    "CACHE_TARGET_TOO_BIG", "CACHE_NEAR_TARGET", "CACHE_TIER_DEPRECATED",
    "CEPH_HEALTH", "MON_OUT_OF_QUORUM", "OSD_NEAR_FULL", "OSD_IS_FULL", "POOL_NEAR_FULL",
    "MON_CLOCK_SKEW", "OSD_FILL_SPREAD", "CLUSTER_DAYS_TO_FULL",
    "POOL_SIZE_EQ_MIN_SIZE", "FULL_RATIOS_RAISED", "FULL_RATIOS_ORDER",
    "REQUIRE_OSD_RELEASE_BEHIND", "OSD_NO_DEVICE_CLASS",
    "FULL_RATIO_LOWERED", "CONFIG_OPTION_CAUSE", "POOL_QUOTA_CAUSE",  # issue 38.2
    "CEPH_VERSIONS_MIXED", "OSD_RECOVERY_SETTINGS_IGNORED", "OSD_RECOVERY_MCLOCK_PROFILE",
    "MGR_NO_ACTIVE", "MGR_NOT_ANSWERING", "PGS_STATS_STALE", "PG_INCONSISTENT",
    "OSD_NO_DATA", "OSD_BELOW_SHARE", "CRUSH_HOST_EMPTY",
    "OSD_SLOW_OPS", "OSD_SLOW_PING", "PGS_LAGGY",
    "OSD_FLAPPING", "PG_STUCK",
}
NOW = 1_800_000_000.0


def raw_of(capture: str) -> dict[str, Any]:
    return load_raw_dir(str(PAC / capture))


def octopus_raw() -> dict[str, Any]:
    names = {"osd dump": "ceph_osd_dump", "osd tree": "ceph_osd_tree",
             "osd pool ls detail": "ceph_osd_pool_ls_detail", "df": "ceph_df",
             "pg stat": "ceph_pg_stat", "health detail": "ceph_health_detail",
             "osd df": "ceph_osd_df_tree"}
    return {k: json.loads((OCT / f"{v}.json").read_text()) for k, v in names.items()}


def findings(raw: dict[str, Any], now: float = NOW,
             thresholds: Thresholds | None = None) -> list[Finding]:
    snap = ClusterSnapshot("lab", now, ceph=build_state(raw, collected_at=now))
    return list(run_checks(snap, thresholds=thresholds, now=now).findings)


def variant(capture: str, edit: Callable[[dict[str, Any]], None]) -> list[Finding]:
    raw = copy.deepcopy(raw_of(capture))
    edit(raw)
    return findings(raw)


def by_code(fs: list[Finding], code: str) -> list[Finding]:
    return [f for f in fs if f.code == code]


def osd_entry(raw: dict[str, Any], osd: int) -> dict[str, Any]:
    return next(o for o in raw["osd dump"]["osds"] if o["osd"] == osd)


def pool_entry(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in raw["osd pool ls detail"] if p["pool_name"] == name)


# --------------------------------------------------------------------------- registry


def test_every_agreed_ceph_code_is_registered_once() -> None:
    import checks.catalog  # noqa: F401

    registered = {ci.code for chk in REGISTRY.checks for ci in chk.codes
                  if chk.name.startswith("ceph-")}
    assert registered == CEPH_CODES
    runbooks = {ci.code: ci.runbook for chk in REGISTRY.checks for ci in chk.codes}
    assert runbooks["OSD_DOWN_IN"] == runbooks["OSD_DOWN_OUT"] == "osd-start"
    assert runbooks["OSD_UP_OUT"] == "osd-in"
    assert runbooks["POOL_PG_NUM_LOW"] == runbooks["POOL_PGP_BELOW_PG"] == "pool-pg-num"
    assert runbooks["CACHE_NO_TARGET"] == runbooks["CACHE_RATIO_ORDER"] == "cache-tier-tune"
    assert runbooks["CACHE_NO_HIT_SET"] == "cache-tier-tune"


# --------------------------------------------------------------------------- healthy


def test_healthy_lab_gives_nothing() -> None:
    assert findings(raw_of("healthy")) == []


def test_healthy_octopus_gives_only_cephs_own_warning() -> None:
    fs = findings(octopus_raw())
    assert [(f.code, f.entity, f.severity) for f in fs] == [
        ("CEPH_HEALTH", "ceph AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED", Severity.WARN)]
    ev = fs[0].evidence
    assert ev["ceph_code"] == "AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED"
    assert ev["detail_count"] == 3 and "insecure global_id" in fs[0].message


# --------------------------------------------------------------------------- OSDs


def test_down_in_is_critical_names_host_and_time() -> None:
    raw = raw_of("osd1-down-in")
    fs = findings(raw)
    [f] = by_code(fs, "OSD_DOWN_IN")
    assert (f.entity, f.severity, f.runbook, f.target) == (
        "osd.1", Severity.CRIT, "osd-start", "osd.1")
    assert "node2" in f.message and f.evidence["host"] == "node2"
    down_at = osd_entry(raw, 1)["down_at"]
    assert f.since == parse_stamp(raw["osdmap_stamps"][str(down_at)])
    assert "down for" in f.message
    assert not by_code(fs, "OSD_DOWN_OUT")
    # one OSD per host in the lab: the OSD finding says it all, no OSD_HOST_DOWN of ours
    assert not by_code(fs, "OSD_HOST_DOWN")
    assert any(f.entity == "ceph OSD_DOWN" for f in by_code(fs, "CEPH_HEALTH"))


def test_down_in_says_when_ceph_marks_it_out() -> None:
    raw = raw_of("osd1-down-in")
    since = build_state(raw).osd(1).down_since  # type: ignore[union-attr]
    assert since is not None
    [f] = by_code(findings(raw, now=since + 60), "OSD_DOWN_IN")
    assert "down for 1m 0s" in f.message and "marks it out in about 9m 0s" in f.message


def test_down_out_is_ours_when_ceph_is_silent() -> None:
    raw = raw_of("osd1-down-out")
    since = build_state(raw).osd(1).down_since  # type: ignore[union-attr]
    assert since is not None
    fs = findings(raw, now=since + 3725)
    [f] = by_code(fs, "OSD_DOWN_OUT")
    assert (f.entity, f.severity, f.runbook, f.target, f.since) == (
        "osd.1", Severity.WARN, "osd-start", "osd.1", since)
    assert "down for 1h 2m" in f.message and "node2" in f.message
    assert "still degraded/undersized" in f.message
    # Ceph's OSD_DOWN only counts OSDs that are in: it says nothing about osd.1 now
    assert not [x for x in by_code(fs, "CEPH_HEALTH") if x.evidence["ceph_code"] == "OSD_DOWN"]
    assert not by_code(fs, "OSD_DOWN_IN")


def test_down_out_with_stale_pgs_does_not_claim_re_replication() -> None:
    def stale(raw: dict[str, Any]) -> None:
        raw["pg stat"]["pg_summary"]["num_pg_by_state"] = [
            {"name": "active+clean", "num": 22}, {"name": "stale+active+clean", "num": 11}]
    [f] = by_code(variant("osd1-down-out", stale), "OSD_DOWN_OUT")
    assert "11 PGs are not active+clean yet" in f.message
    assert "re-replicated" not in f.message

    def clean(raw: dict[str, Any]) -> None:
        raw["pg stat"]["pg_summary"]["num_pg_by_state"] = [{"name": "active+clean", "num": 33}]
    [g] = by_code(variant("osd1-down-out", clean), "OSD_DOWN_OUT")
    assert "re-replicated elsewhere" in g.message


def test_up_out() -> None:
    def edit(raw: dict[str, Any]) -> None:
        o = osd_entry(raw, 2)
        o["in"], o["weight"] = 0, 0
    [f] = by_code(variant("healthy", edit), "OSD_UP_OUT")
    assert (f.entity, f.runbook, f.target) == ("osd.2", "osd-in", "osd.2")
    assert "node3" in f.message


def test_never_up_and_destroyed() -> None:
    def edit(raw: dict[str, Any]) -> None:
        tmpl = osd_entry(raw, 2)
        new = dict(tmpl, osd=3, uuid="u3", up=0, up_from=0, up_thru=0, down_at=0,
                   state=["exists", "new"])
        dead = dict(tmpl, osd=4, uuid="u4", up=0, **{"in": 0}, weight=0,
                    state=["exists", "destroyed"])
        raw["osd dump"]["osds"] += [new, dead]
    fs = variant("healthy", edit)
    assert [f.entity for f in by_code(fs, "OSD_NEVER_UP")] == ["osd.3"]
    assert [f.entity for f in by_code(fs, "OSD_DESTROYED")] == ["osd.4"]
    assert not by_code(fs, "OSD_DOWN_IN") and not by_code(fs, "OSD_DOWN_OUT")
    assert "not in the CRUSH map" in by_code(fs, "OSD_NEVER_UP")[0].message


def test_host_down_needs_every_osd_of_a_multi_osd_host() -> None:
    def move_osd0_to_node2(raw: dict[str, Any]) -> None:
        nodes = raw["osd tree"]["nodes"]
        for n in nodes:
            if n.get("name") == "node1":
                n["children"] = []
            if n.get("name") == "node2":
                n["children"] = [0, 1]

    def one_down(raw: dict[str, Any]) -> None:
        move_osd0_to_node2(raw)
        o = osd_entry(raw, 1)
        o["up"], o["state"] = 0, ["exists"]

    def both_down(raw: dict[str, Any]) -> None:
        one_down(raw)
        o = osd_entry(raw, 0)
        o["up"], o["state"] = 0, ["exists"]

    assert not by_code(variant("healthy", one_down), "OSD_HOST_DOWN")
    [f] = by_code(variant("healthy", both_down), "OSD_HOST_DOWN")
    assert (f.entity, f.severity) == ("host node2", Severity.CRIT)
    assert f.evidence["osds"] == [0, 1] and "all 2 OSDs of host node2" in f.message


def test_osdmap_flags() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["osd dump"]["flags_set"] += ["noout", "pause"]
        osd_entry(raw, 0)["state"].append("noin")
    fs = by_code(variant("healthy", edit), "OSDMAP_FLAGS")
    got = {(f.entity, f.severity) for f in fs}
    assert got == {("cluster lab flag noout", Severity.WARN),
                   ("cluster lab flag pause", Severity.CRIT),
                   ("osd.0 flag noin", Severity.WARN)}
    assert all("sortbitwise" not in f.entity for f in fs)


# --------------------------------------------------------------------------- PGs


def test_pool_few_pgs_capture() -> None:
    fs = findings(raw_of("pool-few-pgs"))
    [f] = by_code(fs, "POOL_PG_NUM_LOW")
    assert (f.entity, f.runbook, f.target) == ("pool lab-fewpg", "pool-pg-num", "lab-fewpg")
    # 3 in OSDs * 100 / size 3 -> 128, shared equally by rbd and lab-fewpg -> 64
    assert f.evidence["ideal_pg_num"] == 64 and f.evidence["share_rule"] == "equal shares"
    assert f.evidence["pg_num"] == 2
    assert {x.code for x in fs} == {"POOL_PG_NUM_LOW"}  # rbd (32) is within the factor


def test_share_by_target_size_ratio_on_octopus() -> None:
    from checks.pgs import data_pools, ideal_pg_num, pool_shares

    st = build_state(octopus_raw())
    pools = data_pools(st)
    assert [p.name for p in pools] == ["glance", "cinder-ceph", "nova"]  # no system pool
    shares, rule = pool_shares(pools)
    assert rule == "target_size_ratio"
    ideal = {p.name: ideal_pg_num(3, p.size, shares[p.id], 100) for p in pools}
    assert ideal == {"glance": 8, "cinder-ceph": 64, "nova": 32}


def test_share_by_stored_bytes() -> None:
    def edit(raw: dict[str, Any]) -> None:
        for p in raw["df"]["pools"]:
            if p["name"] == "rbd":
                p["stats"]["stored"] = 50 << 30
        few = copy.deepcopy(pool_entry(raw, "rbd"))
        few.update(pool_id=9, pool_name="small", pg_num=32, pg_placement_num=32,
                   pg_num_target=32, pg_placement_num_target=32)
        raw["osd pool ls detail"].append(few)
        raw["df"]["pools"].append({"name": "small", "id": 9, "stats": {
            "stored": 1 << 20, "objects": 3, "max_avail": 1 << 30, "percent_used": 0.0}})
    fs = variant("healthy", edit)
    # an almost empty pool at Ceph's default 32 PGs is not "too many"
    assert not by_code(fs, "POOL_PG_NUM_HIGH") and not by_code(fs, "POOL_PG_NUM_LOW")


def test_pg_num_high() -> None:
    def edit(raw: dict[str, Any]) -> None:
        p = pool_entry(raw, "rbd")
        p.update(pg_num=1024, pg_placement_num=1024, pg_num_target=1024,
                 pg_placement_num_target=1024)
    fs = variant("healthy", edit)
    [f] = by_code(fs, "POOL_PG_NUM_HIGH")
    assert f.entity == "pool rbd" and f.evidence["ideal_pg_num"] == 128
    # 1024*3 + 3 replicas over 3 OSDs = 1025 per OSD, far above 250
    [g] = by_code(fs, "PGS_PER_OSD_HIGH")
    assert g.evidence["limit"] == 250 and g.evidence["average"] == pytest.approx(1025.0)


def test_autoscaler_target_is_judged() -> None:
    def edit(raw: dict[str, Any]) -> None:
        p = pool_entry(raw, "rbd")
        p.update(pg_autoscale_mode="on", pg_num=4, pg_placement_num=4, pg_num_target=128)
    assert not by_code(variant("healthy", edit), "POOL_PG_NUM_LOW")


def test_not_power_of_two_unless_changing() -> None:
    def fixed(raw: dict[str, Any]) -> None:
        pool_entry(raw, "rbd").update(pg_num=48, pg_placement_num=48, pg_num_target=48,
                                      pg_placement_num_target=48)

    def changing(raw: dict[str, Any]) -> None:
        pool_entry(raw, "rbd").update(pg_num=40, pg_placement_num=40, pg_num_target=64,
                                      pg_placement_num_target=64)
    [f] = by_code(variant("healthy", fixed), "POOL_PG_NOT_POWER_OF_TWO")
    assert f.entity == "pool rbd" and "(use 64)" in f.message
    assert not by_code(variant("healthy", changing), "POOL_PG_NOT_POWER_OF_TWO")


def test_pgp_below_pg_unless_converging() -> None:
    def stuck(raw: dict[str, Any]) -> None:
        pool_entry(raw, "rbd").update(pg_placement_num=16, pg_placement_num_target=16)

    def converging(raw: dict[str, Any]) -> None:
        pool_entry(raw, "rbd").update(pg_placement_num=16, pg_placement_num_target=32)
    [f] = by_code(variant("healthy", stuck), "POOL_PGP_BELOW_PG")
    assert (f.entity, f.runbook, f.target) == ("pool rbd", "pool-pg-num", "rbd")
    assert not by_code(variant("healthy", converging), "POOL_PGP_BELOW_PG")


def test_pgs_per_osd_limit_comes_from_the_cluster() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["config"]["mon_max_pg_per_osd"] = 30
    [f] = by_code(variant("healthy", edit), "PGS_PER_OSD_HIGH")
    assert f.evidence["limit"] == 30 and f.evidence["max_osd"] == {"osd": 0, "pgs": 33}


def test_pg_states() -> None:
    down_in = by_code(findings(raw_of("osd1-down-in")), "PGS_NOT_ACTIVE_CLEAN")
    down_out = by_code(findings(raw_of("osd1-down-out")), "PGS_NOT_ACTIVE_CLEAN")
    assert len(down_out) == 1 and down_out[0].severity == Severity.WARN
    assert "active+undersized" in down_out[0].message
    assert all(f.entity == "cluster lab pgs" for f in down_in + down_out)

    def blocked(raw: dict[str, Any]) -> None:
        raw["pg stat"]["pg_summary"]["num_pg_by_state"] = [
            {"name": "active+clean", "num": 20}, {"name": "peering", "num": 10},
            {"name": "active+undersized+degraded", "num": 3}]
    [f] = by_code(variant("healthy", blocked), "PGS_NOT_ACTIVE_CLEAN")
    assert f.severity == Severity.CRIT and f.evidence["blocking"] == 10
    assert f.evidence["not_clean"] == {"peering": 10, "active+undersized+degraded": 3}

    def scrubbing(raw: dict[str, Any]) -> None:
        raw["pg stat"]["pg_summary"]["num_pg_by_state"] = [
            {"name": "active+clean", "num": 30},
            {"name": "active+clean+scrubbing+deep", "num": 3}]
    assert not by_code(variant("healthy", scrubbing), "PGS_NOT_ACTIVE_CLEAN")

    def mgr_restarting(raw: dict[str, Any]) -> None:
        raw["pg stat"]["pg_ready"] = False
        raw["pg stat"]["pg_summary"]["num_pg_by_state"] = [{"name": "unknown", "num": 33}]
    assert variant("healthy", mgr_restarting) == []


def test_pgs_stuck() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["pg dump_stuck"] = {"pg_ready": True, "stuck_pg_stats": [
            {"pgid": "2.1", "state": "active+undersized+degraded"},
            {"pgid": "2.7", "state": "peering"}]}
    fs = by_code(variant("healthy", edit), "PGS_STUCK")
    got = {f.entity: (f.severity, f.evidence["count"]) for f in fs}
    assert got == {
        "cluster lab pgs stuck inactive": (Severity.CRIT, 1),
        "cluster lab pgs stuck unclean": (Severity.WARN, 2),
        "cluster lab pgs stuck undersized": (Severity.WARN, 1),
        "cluster lab pgs stuck degraded": (Severity.WARN, 1)}


# --------------------------------------------------------------------------- cache tiers


def test_cache_tier_capture() -> None:
    fs = findings(raw_of("cache-tier-misconfigured"))
    ours = {f.code: f for f in fs if f.entity == "pool lab-cache"}
    assert set(ours) == {"CACHE_NO_TARGET", "CACHE_RATIO_ORDER", "CACHE_NO_HIT_SET",
                         "CACHE_TIER_DEPRECATED"}
    for code in ("CACHE_NO_TARGET", "CACHE_RATIO_ORDER", "CACHE_NO_HIT_SET"):
        assert (ours[code].runbook, ours[code].target) == ("cache-tier-tune", "lab-cache")
    assert "dirty 0.80 > full 0.50" in ours["CACHE_RATIO_ORDER"].message
    assert "dirty_high 0.90 > full 0.50" in ours["CACHE_RATIO_ORDER"].message
    assert ours["CACHE_RATIO_ORDER"].evidence["full_ratio"] == pytest.approx(0.5)
    dep = ours["CACHE_TIER_DEPRECATED"]
    assert dep.severity == Severity.INFO and "pacific" in dep.message
    # the base pool is not a cache: no cache finding on it
    assert not [f for f in fs if f.entity == "pool lab-base" and f.code.startswith("CACHE")]
    assert any(f.entity == "ceph CACHE_POOL_NO_HIT_SET" for f in fs)


def _tune_cache(**kv: Any) -> Callable[[dict[str, Any]], None]:
    def edit(raw: dict[str, Any]) -> None:
        p = pool_entry(raw, "lab-cache")
        p.update(target_max_bytes=1 << 30, cache_target_dirty_ratio_micro=400000,
                 cache_target_dirty_high_ratio_micro=600000,
                 cache_target_full_ratio_micro=800000, hit_set_params={"type": "bloom"},
                 hit_set_count=4, hit_set_period=1200)
        p.update(kv)
    return edit


def test_tuned_cache_is_only_deprecated() -> None:
    fs = [f for f in variant("cache-tier-misconfigured", _tune_cache())
          if f.code.startswith("CACHE")]
    assert [f.code for f in fs] == ["CACHE_TIER_DEPRECATED"]


def test_cache_promote_recency() -> None:
    fs = variant("cache-tier-misconfigured", _tune_cache(min_read_recency_for_promote=6))
    [f] = by_code(fs, "CACHE_PROMOTE_RECENCY")
    assert f.entity == "pool lab-cache" and "6 hit sets" in f.message


def test_cache_target_too_big_and_near_target() -> None:
    def big(raw: dict[str, Any]) -> None:
        _tune_cache(target_max_bytes=100 << 40)(raw)
    [f] = by_code(variant("cache-tier-misconfigured", big), "CACHE_TARGET_TOO_BIG")
    assert f.evidence["target_max_bytes"] == 100 << 40

    def near(raw: dict[str, Any]) -> None:
        _tune_cache(target_max_objects=1000)(raw)
        for p in raw["df"]["pools"]:
            if p["name"] == "lab-cache":
                p["stats"]["objects"] = 950
    [g] = by_code(variant("cache-tier-misconfigured", near), "CACHE_NEAR_TARGET")
    assert g.evidence["by"] == "objects" and g.evidence["fill"] == pytest.approx(0.95)


def test_cache_deprecated_wording_on_reef() -> None:
    def reef(raw: dict[str, Any]) -> None:
        raw["versions"] = {"overall": {
            "ceph version 18.2.4 (e7ad5345525c7aa95470c26863873b581076945d) reef (stable)": 5}}
    [f] = by_code(variant("cache-tier-misconfigured", reef), "CACHE_TIER_DEPRECATED")
    assert "deprecated in reef" in f.message


# --------------------------------------------------------------------------- cluster


def test_ceph_health_severity_and_mutes() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["health detail"] = {"status": "HEALTH_ERR", "mutes": [], "checks": {
            "OSD_FULL": {"severity": "HEALTH_ERR",
                         "summary": {"message": "1 full osd(s)", "count": 1},
                         "detail": [{"message": "osd.2 is full"}], "muted": False},
            "POOL_NO_REDUNDANCY": {"severity": "HEALTH_WARN",
                                   "summary": {"message": "1 pool(s) have no replicas"},
                                   "detail": [], "muted": True}}}
    f, m = by_code(variant("healthy", edit), "CEPH_HEALTH")
    assert (f.entity, f.severity) == ("ceph OSD_FULL", Severity.CRIT)
    assert f.evidence["detail"] == ["osd.2 is full"]
    # the muted one is shown as muted (info), not dropped
    assert (m.entity, m.severity) == ("ceph POOL_NO_REDUNDANCY", Severity.INFO)
    assert m.message.startswith("muted in Ceph") and m.evidence["muted_in_ceph"] is True


def test_mon_out_of_quorum() -> None:
    def edit(raw: dict[str, Any]) -> None:
        mons = raw["quorum_status"]["monmap"]["mons"]
        mons += [dict(mons[0], name="b", rank=1), dict(mons[0], name="c", rank=2)]
    fs = by_code(variant("healthy", edit), "MON_OUT_OF_QUORUM")
    assert sorted(f.entity for f in fs) == ["mon.b", "mon.c"]
    assert "1 of 3 in" in fs[0].message


def _utilization(osd: int, pct: float) -> Callable[[dict[str, Any]], None]:
    def edit(raw: dict[str, Any]) -> None:
        for n in raw["osd df"]["nodes"]:
            if n["id"] == osd:
                n["utilization"] = pct
    return edit


def test_osd_fullness_with_float32_ratios() -> None:
    assert not [f for f in variant("healthy", _utilization(1, 84.0))
                if f.code in ("OSD_NEAR_FULL", "OSD_IS_FULL")]
    [near] = by_code(variant("healthy", _utilization(1, 86.0)), "OSD_NEAR_FULL")
    assert near.entity == "osd.1" and "nearfull" in near.message and "node2" in near.message
    [bf] = by_code(variant("healthy", _utilization(1, 91.0)), "OSD_NEAR_FULL")
    assert "backfillfull" in bf.message
    # exactly 95 % is full even though the osdmap says 0.949999988079071
    raw = raw_of("healthy")
    assert raw["osd dump"]["full_ratio"] < 0.95
    fs = variant("healthy", _utilization(1, 95.0))
    [full] = by_code(fs, "OSD_IS_FULL")
    assert full.severity == Severity.CRIT and not by_code(fs, "OSD_NEAR_FULL")


def test_pool_near_full() -> None:
    def edit(raw: dict[str, Any]) -> None:
        for p in raw["df"]["pools"]:
            if p["name"] == "rbd":
                p["stats"].update(percent_used=0.9, stored=900, objects=10)
        pool_entry(raw, "device_health_metrics")["quota_max_objects"] = 1
        for p in raw["df"]["pools"]:
            if p["name"] == "device_health_metrics":
                p["stats"]["objects"] = 1
    fs = by_code(variant("healthy", edit), "POOL_NEAR_FULL")
    got = {f.entity: f.message for f in fs}
    assert set(got) == {"pool rbd", "pool device_health_metrics"}
    assert "90% of the space" in got["pool rbd"]
    assert "object quota" in got["pool device_health_metrics"]


def test_mon_clock_skew() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["time-sync-status"] = {"time_skew_status": {
            "a": {"skew": 0.0, "latency": 0.0, "health": "HEALTH_OK"},
            "b": {"skew": -0.2, "latency": 0.001, "health": "HEALTH_WARN"}}}
    [f] = by_code(variant("healthy", edit), "MON_CLOCK_SKEW")
    assert f.entity == "mon.b" and "200 ms" in f.message

