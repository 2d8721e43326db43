"""Typed CephState fields that checks used to dig out of raw JSON: versions per daemon
kind and per daemon, crash reports, settings (config dump / config show), the pg
autoscaler's view, PGs per OSD, pgp_num targets, collection errors, clock skew.

The JSON shapes are those the Pacific lab answers (``ceph ... -f json``); the captures of
every release are parsed in test_ceph_releases.py."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from storage.ceph import (
    build_state,
    load_raw_dir,
    parse_autoscale_status,
    parse_config_dump,
    parse_config_show,
    parse_crashes,
    parse_metadata,
    parse_version_string,
    parse_versions,
)
from storage.ceph.collect import _kinds_to_name
from storage.model import release_major

PAC = Path(__file__).resolve().parents[1] / "fixtures" / "ceph-pacific"
V16 = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)"
V18 = "ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)"


def healthy() -> dict[str, Any]:
    return copy.deepcopy(load_raw_dir(PAC / "healthy"))


def test_version_strings() -> None:
    assert parse_version_string(V16) == ("16.2.15", "pacific")
    assert parse_version_string(V18) == ("18.2.7", "reef")
    assert parse_version_string("ceph version Development (no_version) reef (rc)") == (
        "Development", "reef")
    # a release name this table does not know yet keeps its name
    assert parse_version_string(
        "ceph version 21.0.0 (abc) umbrella (dev)") == ("21.0.0", "umbrella")
    assert parse_version_string("garbage") is None
    assert release_major("Reef") == 18 and release_major("nope") is None


def test_versions_per_kind_and_mixed() -> None:
    v = parse_versions({"mon": {V18: 3}, "mgr": {V18: 1, V16: 1}, "osd": {V16: 5, V18: 7},
                        "mds": {}, "overall": {V16: 6, V18: 11}})
    assert set(v.by_kind) == {"mon", "mgr", "osd"}  # mds has none
    assert v.mixed
    low, new = v.lowest(), v.newest()
    assert low is not None and new is not None
    assert (low.version, low.count) == ("16.2.15", 6) and (new.version, new.count) == ("18.2.7", 11)
    osd_low = v.lowest("osd")
    assert osd_low is not None and osd_low.release == "pacific"
    one = parse_versions({"overall": {V16: 4}})  # only the total: kept as "overall"
    assert not one.mixed and set(one.by_kind) == {"overall"}
    assert parse_versions(None).lowest() is None and parse_versions([1, 2]).all() == ()


def test_metadata_names_each_daemon() -> None:
    osds = parse_metadata("osd", [
        {"id": 0, "ceph_version": V16, "hostname": "node1"},
        {"id": 1, "ceph_version_short": "18.2.7", "ceph_release": "reef"},
        {"id": 2, "ceph_version_short": "17.2.7"},  # release from the major number
        {"hostname": "no id"}, "junk"])
    assert [(d.name, d.version, d.release, d.host) for d in osds] == [
        ("osd.0", "16.2.15", "pacific", "node1"), ("osd.1", "18.2.7", "reef", None),
        ("osd.2", "17.2.7", "quincy", None)]
    mons = parse_metadata("mon", [{"name": "a", "ceph_version": V18}])
    assert mons[0].name == "mon.a"


def test_mixed_versions_reach_the_state_with_daemon_names() -> None:
    raw = healthy()
    raw["versions"] = {"mon": {V18: 1}, "mgr": {V18: 1}, "osd": {V16: 1, V18: 2},
                       "overall": {V16: 1, V18: 4}}
    # only kinds with a daemon behind the newest are named (one metadata call each)
    assert _kinds_to_name(raw) == ["osd"]
    raw["osd metadata"] = [{"id": 0, "ceph_version": V16}, {"id": 1, "ceph_version": V18},
                           {"id": 2, "ceph_version": V18}]
    st = build_state(raw)
    assert (st.version, st.release) == ("16.2.15", "pacific")
    assert [d.name for d in st.versions.daemons if d.version == "16.2.15"] == ["osd.0"]
    raw["versions"] = {"overall": {V16: 5}}
    assert _kinds_to_name(raw) == []


def test_crashes_typed() -> None:
    got = parse_crashes([
        {"crash_id": "2026-11-23T18:00:00.000000Z_0e5c", "entity_name": "osd.1",
         "timestamp": "2026-11-23T18:00:00.000000Z", "process_name": "ceph-osd",
         "ceph_version": "16.2.15", "backtrace": ["(abort()+0x1)", "(BlueStore::x()+0x2)"]},
        {"no": "id"}])
    assert got is not None and len(got) == 1
    c = got[0]
    assert (c.crash_id, c.entity, c.process) == ("2026-11-23T18:00:00.000000Z_0e5c", "osd.1",
                                                 "ceph-osd")
    assert c.when == pytest.approx(1795456800.0) and len(c.backtrace) == 2
    assert parse_crashes([]) == ()
    assert parse_crashes(None) is None and parse_crashes({"x": 1}) is None


def test_crashes_in_state_none_when_not_read() -> None:
    raw = healthy()
    assert build_state(raw).crashes == ()  # read, nothing new
    del raw["crash ls-new"]
    assert build_state(raw).crashes is None  # not read


def test_config_dump_and_show() -> None:
    db = parse_config_dump([
        {"section": "osd", "name": "osd_max_backfills", "value": "10", "level": "advanced",
         "can_update_at_runtime": True, "mask": ""},
        {"section": "osd.3", "name": "osd_op_queue", "value": "wpq", "mask": "host:node4"},
        {"section": "global", "value": "no name"}])
    assert [(s.section, s.name, s.value, s.mask) for s in db] == [
        ("osd", "osd_max_backfills", "10", ""), ("osd.3", "osd_op_queue", "wpq", "host:node4")]
    shown = parse_config_show("osd.0", [
        {"name": "osd_max_backfills", "value": "4", "source": "file"},
        {"name": "keyring", "value": "$osd_data/keyring", "source": "file",
         "overrides": [{"source": "default", "value": "$osd_data/keyring"}]}])
    assert shown is not None and shown.daemon == "osd.0"
    mb = shown.get("osd_max_backfills")
    assert mb is not None and (mb.value, mb.source, mb.section) == ("4", "file", "osd.0")
    kr = shown.get("keyring")
    assert kr is not None and kr.overrides == (("default", "$osd_data/keyring"),)
    # a mapping shape is read too
    m = parse_config_show("osd.1", {"osd_op_queue": {"value": "wpq", "source": "mon"},
                                    "osd_max_backfills": 2})
    assert m is not None and m.get("osd_op_queue").value == "wpq"  # type: ignore[union-attr]
    assert m.get("osd_max_backfills").value == "2"  # type: ignore[union-attr]
    assert parse_config_show("osd.0", "text") is None


def test_config_in_state() -> None:
    raw = healthy()
    raw["config dump"] = [{"section": "osd", "name": "osd_recovery_sleep_hdd", "value": "0"}]
    raw["config show"] = {"osd.0": [{"name": "osd_op_queue", "value": "wpq", "source": "file"}]}
    st = build_state(raw)
    assert [s.name for s in st.config_db] == ["osd_recovery_sleep_hdd"]
    assert st.osd_config is not None and st.osd_config.daemon == "osd.0"
    assert st.osd_config.get("osd_op_queue").value == "wpq"  # type: ignore[union-attr]
    assert build_state(healthy()).osd_config is None


def test_autoscale_status() -> None:
    got = parse_autoscale_status([
        {"pool_id": 2, "pool_name": "rbd", "pg_autoscale_mode": "on", "pg_num_final": 32,
         "pg_num_ideal": 3, "would_adjust": True, "bias": 1.0, "bulk": False,
         "target_ratio": 0.0, "effective_target_ratio": 0.0, "capacity_ratio": 0.0},
        {"pool_name": "no id"}])
    a = got[2]
    assert (a.pg_num_final, a.would_adjust, a.mode, a.pg_num_ideal) == (32, True, "on", 3)
    assert parse_autoscale_status(None) == {} and parse_autoscale_status({"x": 1}) == {}
    raw = healthy()
    raw["osd pool autoscale-status"] = [{"pool_id": 2, "pg_num_final": 32,
                                         "pg_autoscale_mode": "off", "would_adjust": False}]
    rbd = build_state(raw).pool("rbd")
    assert rbd is not None and rbd.autoscale is not None and rbd.autoscale.pg_num_final == 32


def test_pgs_per_osd_pgp_target_errors_and_skew_are_typed() -> None:
    raw = healthy()
    raw["errors"] = {"crash ls-new": "manager did not answer: timed out"}
    raw["time-sync-status"] = {"time_skew_status": {"a": {"skew": -0.25}}}
    st = build_state(raw)
    assert all(u.pgs is not None and u.pgs > 0 for u in st.osd_usage)
    assert all(p.pgp_num_target == p.pgp_num for p in st.pools)
    assert st.errors == {"crash ls-new": "manager did not answer: timed out"}
    assert st.mon_time_skew == {"a": 0.25}
    assert st.require_osd_release == "pacific"


@pytest.mark.parametrize("junk", [None, "x", 7, [1], {"nodes": "x"}])
def test_junk_answers_leave_defaults(junk: object) -> None:
    raw = healthy()
    for key in ("osd df", "pg stat", "df", "versions", "crash ls-new", "config dump",
                "osd pool autoscale-status", "time-sync-status", "health detail"):
        raw[key] = junk
    st = build_state(raw)
    assert st.osds and st.pools
