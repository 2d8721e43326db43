"""Parsers of storage.ceph on captured JSON of Octopus (15.2) and Pacific (16.2, the lab)."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from storage import ceph
from storage.ceph import (
    build_state,
    client,
    down_epochs,
    load_raw_dir,
    parse_config_value,
    parse_osd_dump,
    parse_pg_dump_stuck,
    parse_pg_stat,
    parse_pool_ls_detail,
    parse_stamp,
    parse_status,
    parse_time_sync,
    parse_versions,
)
from storage.ceph.parse_daemons import Quorum

FIX = Path(__file__).resolve().parent.parent / "fixtures"
OCT = FIX / "ceph-octopus"
PAC = FIX / "ceph-pacific"


def octopus_raw() -> dict:
    def load(name: str) -> object:
        return json.loads((OCT / name).read_text())

    return {
        "osd dump": load("ceph_osd_dump.json"),
        "osd tree": load("ceph_osd_tree.json"),
        "osd pool ls detail": load("ceph_osd_pool_ls_detail.json"),
        "df": load("ceph_df.json"),
        "pg stat": load("ceph_pg_stat.json"),
        "health detail": load("ceph_health_detail.json"),
        "osd df": load("ceph_osd_df_tree.json"),
    }


def test_octopus_state() -> None:
    st = build_state(octopus_raw())
    assert st.fsid == "eccf3d48-859f-11ec-9de2-d72b3e8a3058"
    assert st.release == "octopus"  # from require_osd_release: no `versions` captured
    assert [(o.id, o.up, o.in_, o.host) for o in st.osds] == [
        (0, True, True, "compute4"), (1, True, True, "compute1"), (2, True, True, "compute2")]
    assert {h.name: h.osd_ids for h in st.hosts} == {
        "compute1": (1,), "compute2": (2,), "compute4": (0,)}
    assert all(o.device_class == "ssd" and o.crush_weight > 0.09 for o in st.osds)
    # float32 in the osdmap: not exactly 0.95
    assert st.full_ratio != 0.95 and st.full_ratio == pytest.approx(0.95, abs=1e-6)
    assert st.nearfull_ratio == pytest.approx(0.85, abs=1e-6)
    assert "sortbitwise" in st.flags
    by_name = {p.name: p for p in st.pools}
    assert by_name["glance"].target_size_ratio == pytest.approx(0.05)
    assert by_name["cinder-ceph"].pg_num == 32 and by_name["cinder-ceph"].size == 3
    assert by_name["device_health_metrics"].application == ("mgr_devicehealth",)
    assert by_name["nova"].max_avail_bytes == 100911382528  # merged from df
    assert st.pgs.num_pgs == 69 and st.pgs.by_state == {"active+clean": 69}
    assert [h.code for h in st.health_checks] == ["AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED"]
    assert len(st.health_checks[0].detail) == 3
    # `osd df tree` has host and root nodes too: only the OSDs are kept
    assert sorted(u.id for u in st.osd_usage) == [0, 1, 2]
    assert st.total_bytes == 322059632640


def test_pool_id_key_differs_between_dump_and_ls_detail() -> None:
    raw = octopus_raw()
    from_dump = parse_osd_dump(raw["osd dump"]).pools
    from_ls = parse_pool_ls_detail(raw["osd pool ls detail"])
    assert "pool" in raw["osd dump"]["pools"][0] and "pool_id" in raw["osd pool ls detail"][0]
    assert [p.id for p in from_ls] == [1, 2, 3, 4]
    assert from_dump == from_ls


@pytest.mark.parametrize("capture", sorted(p.name for p in PAC.iterdir() if p.is_dir()))
def test_every_pacific_capture_builds(capture: str) -> None:
    raw = load_raw_dir(str(PAC / capture))
    st = build_state(raw)
    assert st.version == "16.2.15" and st.release == "pacific"
    assert st.mon_quorum == ("a",) and st.mon_names == ("a",)
    assert st.config["mon_max_pg_per_osd"] == "250"
    assert st.config["mon_osd_down_out_interval"] == "600"
    assert {h.name for h in st.hosts} == {"node1", "node2", "node3"}
    assert {o.id: o.host for o in st.osds} == {0: "node1", 1: "node2", 2: "node3"}
    assert st.pool("rbd") is not None and st.pool("rbd").pg_num == 32  # type: ignore[union-attr]
    assert st.pgs.num_pgs == sum(p.pg_num for p in st.pools)
    assert raw["errors"] == {} and st.errors == {}


def test_pacific_down_out_is_dated_from_its_down_epoch() -> None:
    raw = load_raw_dir(str(PAC / "osd1-down-out"))
    dump = raw["osd dump"]
    o1 = next(o for o in dump["osds"] if o["osd"] == 1)
    x1 = next(x for x in dump["osd_xinfo"] if x["osd"] == 1)
    assert (o1["up"], o1["in"]) == (0, 0)
    assert x1["down_stamp"] == "0.000000"  # Pacific leaves it unset on a clean stop
    assert down_epochs(dump, 16) == [o1["down_at"]]
    st = build_state(raw)
    osd1 = st.osd(1)
    assert osd1 is not None and not osd1.up and not osd1.in_
    assert osd1.down_since == parse_stamp(raw["osdmap_stamps"][str(o1["down_at"])])
    assert osd1.down_since is not None and osd1.down_since > 1.6e9
    assert all(o.down_since is None for o in st.osds if o.up)


def test_down_stamp_used_when_set() -> None:
    raw = octopus_raw()
    dump = json.loads(json.dumps(raw["osd dump"]))
    o1 = next(o for o in dump["osds"] if o["osd"] == 1)
    o1["up"] = 0
    o1["state"] = ["exists"]
    raw["osd dump"] = dump
    assert down_epochs(dump, 16) == []  # osd.1 has a down_stamp: no old osdmap needed
    st = build_state(raw)
    assert st.osd(1).down_since == parse_stamp("2022-02-10T09:19:19.134352+0000")  # type: ignore[union-attr]


def test_parse_stamp() -> None:
    assert parse_stamp("0.000000") is None
    assert parse_stamp(None) is None
    assert parse_stamp("") is None
    assert parse_stamp("2022-02-10T09:19:19.134352+0000") == pytest.approx(1644484759.134352)
    assert parse_stamp("1644484759.5") == pytest.approx(1644484759.5)
    assert parse_stamp("garbage") is None


def test_pg_stat_layouts() -> None:
    pac = {"pg_ready": True, "pg_summary": {"num_pgs": 3, "num_pg_by_state": [
        {"name": "active+clean", "num": 2}, {"name": "peering", "num": 1}]}}
    assert parse_pg_stat(pac) == (3, {"active+clean": 2, "peering": 1})
    old = {"num_pgs": 2, "num_pg_by_state": [{"name": "active+clean", "num": 2}]}
    assert parse_pg_stat(old) == (2, {"active+clean": 2})
    # a manager that has just started: everything "unknown", which says nothing
    restarting = {"pg_ready": False, "pg_summary": {"num_pgs": 33, "num_pg_by_state": [
        {"name": "unknown", "num": 33}]}}
    assert parse_pg_stat(restarting) == (33, {})


def test_pg_dump_stuck_layouts() -> None:
    assert parse_pg_dump_stuck(None) == {}
    assert parse_pg_dump_stuck({"pg_ready": True, "stuck_pg_stats": []}) == {}
    entries = [{"pgid": "1.0", "state": "active+undersized+degraded"},
               {"pgid": "2.3", "state": "stale+peering"},
               {"pgid": "2.1", "state": "active+undersized"}]
    for shape in ({"stuck_pg_stats": entries}, entries):
        got = parse_pg_dump_stuck(shape)
        assert got == {"undersized": ("1.0", "2.1"), "degraded": ("1.0",),
                       "unclean": ("1.0", "2.1", "2.3"), "stale": ("2.3",),
                       "inactive": ("2.3",)}


def test_status_layouts() -> None:
    octopus_status = {"quorum_names": ["a", "b"],
                      "monmap": {"epoch": 1, "min_mon_release_name": "octopus",
                                 "num_mons": 3}}
    assert parse_status(octopus_status) == Quorum(quorum=("a", "b"), mon_names=(), num_mons=3)
    nautilus_status = {"quorum_names": ["a"],
                       "monmap": {"mons": [{"name": "a"}, {"name": "b"}]}}
    assert parse_status(nautilus_status).mon_names == ("a", "b")


def test_versions_takes_lowest() -> None:
    v = {"overall": {
        "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)": 4,
        "ceph version 15.2.17 (8a82819d84cf884bd39c17e3236e0632ac146dc4) octopus (stable)": 1}}
    low = parse_versions(v).lowest()
    assert low is not None and (low.version, low.release) == ("15.2.17", "octopus")
    assert parse_versions({}).lowest() is None
    st = build_state({**octopus_raw(), "versions": v})
    assert (st.version, st.release) == ("15.2.17", "octopus")


def test_config_and_time_sync() -> None:
    assert parse_config_value(250) == "250"
    assert parse_config_value("600\n") == "600"
    assert parse_config_value({"mon_max_pg_per_osd": 300}) == "300"
    assert parse_config_value(None) is None
    assert parse_time_sync({"timechecks": {}}) == {}
    ts = {"time_skew_status": {"a": {"skew": 0.0}, "b": {"skew": -0.3}}}
    assert parse_time_sync(ts) == {"a": 0.0, "b": 0.3}


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    raw = load_raw_dir(str(PAC / "healthy"))
    ceph.save_raw_dir(raw, str(tmp_path))
    assert load_raw_dir(str(tmp_path)) == raw


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_monitor_is_a_fact_not_an_exception(tmp_path: Path) -> None:
    """Real librados against a loopback port nobody listens on: (None, message), no hang."""
    pytest.importorskip("rados")
    from storage.targets import CephTarget

    conf = tmp_path / "ceph.conf"
    conf.write_text(f"[global]\nmon_host = [v2:127.0.0.1:{_free_port()}]\n"
                    "auth_client_required = none\n")
    target = CephTarget(conf=str(conf), timeout_s=1)
    state, err = ceph.collect_ceph(target)
    assert state is None
    assert err is not None and "no monitor answered within 1 s" in err
    with pytest.raises(ceph.CephUnreachable):
        ceph.CephClient(target).connect()


def test_deadline_abandons_a_call_that_never_returns() -> None:
    """The guard around librados: a call blocked for good still gives CephUnreachable."""
    release = threading.Event()
    try:
        with pytest.raises(ceph.CephUnreachable, match="no answer within"):
            client._with_deadline(release.wait, 0.2, "connect")
    finally:
        release.set()
    assert client._with_deadline(lambda: 42, 5.0, "x") == 42
    with pytest.raises(ZeroDivisionError):
        client._with_deadline(lambda: 1 // 0, 5.0, "x")


def test_missing_conf_is_a_fact(tmp_path: Path) -> None:
    pytest.importorskip("rados")
    from storage.targets import CephTarget

    state, err = ceph.collect_ceph(CephTarget(conf=str(tmp_path / "nope.conf"), timeout_s=1))
    assert state is None and err


def test_command_error_message() -> None:
    e = ceph.CephCommandError("osd pool get", -2, "unrecognized pool 'x'\n")
    assert e.rc == -2 and "osd pool get" in str(e) and "unrecognized pool" in str(e)


REEF = FIX / "ceph-reef"
BOTH = [(rel, cap) for rel, d in (("pacific", PAC), ("reef", REEF))
        for cap in sorted(p.name for p in d.iterdir() if p.is_dir())]


@pytest.mark.parametrize(("release", "capture"), BOTH)
def test_every_capture_of_both_releases_builds_without_version_sniffing(
        release: str, capture: str) -> None:
    """One parser for Pacific's and Reef's JSON: the same typed facts from each."""
    raw = load_raw_dir(str(FIX / f"ceph-{release}" / capture))
    st = build_state(raw)
    assert st.release == release and st.version.startswith(
        {"pacific": "16.2.", "reef": "18.2."}[release])
    assert st.require_osd_release == release and not st.versions.mixed
    assert st.mon_quorum == ("a",) and st.mon_names == ("a",)
    assert st.config["mon_max_pg_per_osd"] == "250"
    assert st.config["mon_osd_down_out_interval"] == "600"
    assert st.osds and {o.id: o.host for o in st.osds} == {
        o.id: f"node{o.id + 1}" for o in st.osds}
    rbd = st.pool("rbd")  # the lab sizes it by OSD count (lab/ceph.py up_pools)
    assert rbd is not None and rbd.pg_num == (32 if len(st.osds) == 3 else 64)
    assert st.pgs.num_pgs == sum(p.pg_num for p in st.pools)
    assert 0 < st.nearfull_ratio < st.backfillfull_ratio < st.full_ratio < 1
    assert raw["errors"] == {} and st.errors == {}
    if (FIX / f"ceph-{release}" / capture / "config_show.json").exists():
        assert st.osd_config is not None and st.osd_config.get("osd_max_backfills")


@pytest.mark.parametrize("capture", sorted(p.name for p in REEF.iterdir() if p.is_dir()))
def test_the_same_fault_gives_the_same_findings_on_both_releases(capture: str) -> None:
    """Each scenario captured on both labs: the same codes on the same entities, apart
    from what depends on the release by design (cache tiering's deprecation wording) and
    the OSDs the Reef lab's mixed layout adds."""
    from checks.engine import run_checks
    from storage.model import ClusterSnapshot

    def seen(release: str) -> set[tuple[str, str]]:
        st = build_state(load_raw_dir(str(FIX / f"ceph-{release}" / capture)),
                         collected_at=1.8e9)
        rep = run_checks(ClusterSnapshot("lab", 1.8e9, ceph=st), now=1.8e9)
        # PG states move while a capture is taken (peering, recovery): not compared
        return {(f.code, f.entity) for f in rep.findings
                if "osd.3" not in f.entity and not f.code.startswith("PGS_")}

    if not (PAC / capture).is_dir():
        pytest.skip(f"{capture} is captured on Reef only")
    assert seen("pacific") == seen("reef")
