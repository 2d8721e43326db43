"""Have the PGs reported on the current osdmap (storage.ceph.settle): real captures of
Pacific and Reef right after `ceph osd in` (tests/fixtures/ceph-settle), the parsers of
osdmaptool's output and of `pg dump pgs_brief` in every shape and against junk
(hypothesis), the collector with a stand-in osdmaptool, and the collection's gate."""

from __future__ import annotations

import copy
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.ceph import (
    OSDMAP_PGS,
    PGS_BRIEF,
    OsdmapPgs,
    Placement,
    SettleMethod,
    SettleUnavailable,
    build_state,
    compare,
    load_raw_dir,
    parse_osdmaptool_pgs,
    parse_pgs_brief,
    parse_settle,
    read_osdmap_pgs,
    read_pg_settle,
    save_raw_dir,
    settle_from_json,
    settle_from_raw,
    settle_to_json,
)
from storage.ceph import settle as settle_mod
from storage.ceph.client import CephCommandError
from storage.ceph.parse_settle import osdmap_pgs_from_json
from tests.unit.settle_fixtures import SETTLE, settle_of, settle_raw

NOW = 1_795_705_900.0


# --------------------------------------------------------------------------- captures


@pytest.mark.parametrize("name,epoch,unreported,states", [
    # read at once after `osd in`: all clean, but 54 PGs report the map before it
    ("pacific-osd-in/stale-clean", 33, 54, {"active+clean": 65}),
    ("reef-osd-in/stale-clean", 36, 54, {"active+clean": 65}),
    # up sets agree; 9 acting sets still the ones before the map's pg_temp
    ("pacific-osd-in/pg-temp", 35, 9, {"active+clean": 19, "remapped+peering": 35,
                                       "peering": 11}),
    # the map dropped the last pg_temp; one PG still reports its old acting set
    ("pacific-osd-in/pg-temp-removed", 39, 1, {"active+clean": 53, "peering": 11,
                                               "active+clean+remapped": 1}),
    ("reef-osd-in/peering", 37, 31, {"active+clean": 42, "peering": 23}),
    ("pacific-osd-in/settled", 40, 0, {"active+clean": 65}),
    ("reef-osd-in/settled", 37, 0, {"active+clean": 65}),
])
def test_captured_moments_after_osd_in(name: str, epoch: int, unreported: int,
                                       states: dict[str, int]) -> None:
    s = settle_of(name)
    assert s.method is SettleMethod.OSDMAP and s.error is None
    assert (s.epoch, s.num_pgs, s.unreported, dict(s.by_state)) == (epoch, 65, unreported,
                                                                     states)
    assert len(s.unreported_pgids) == min(unreported, 10)


def test_acting_sets_are_compared_not_only_up_sets() -> None:
    """With pg_temp in the map, up agrees while acting does not: not reported yet."""
    raw = settle_raw("pacific-osd-in/pg-temp")
    mapped = osdmap_pgs_from_json(raw[OSDMAP_PGS])
    assert mapped is not None
    reports = parse_pgs_brief(raw[PGS_BRIEF]) or ()
    temp = [p for p, pl in mapped.pgs.items() if pl.up != pl.acting]
    assert len(temp) == 44
    _, bad = compare(mapped, reports)
    by_id = {r.pgid: r for r in reports}
    assert bad and all(by_id[p].placement.up == mapped.pgs[p].up for p in bad)
    assert all(by_id[p].placement.acting != mapped.pgs[p].acting for p in bad)


def test_reef_osdmaptool_versus_pacific_on_a_reef_map_with_upmap_primary() -> None:
    """Why the tool must not be older than the monitors: Pacific's osdmaptool decodes a
    Reef map and ignores pg-upmap-primary, so 2.0 would never look reported."""
    d = SETTLE / "reef-upmap-primary"
    brief = json.loads((d / "pg_dump_pgs_brief.json").read_text())
    reports = parse_pgs_brief(brief) or ()
    reef = parse_osdmaptool_pgs((d / "reef-osdmaptool.txt").read_text())
    pacific = parse_osdmaptool_pgs((d / "pacific-osdmaptool.txt").read_text())
    assert compare(reef, reports) == (65, ())
    assert compare(pacific, reports) == (65, ("2.0",))
    assert pacific.pgs["2.0"].up == (1, 2, 0) and reef.pgs["2.0"].up == (2, 1, 0)


def test_the_map_and_the_dump_must_hold_the_same_pgs() -> None:
    raw = settle_raw("pacific-osd-in/settled")
    mapped = osdmap_pgs_from_json(raw[OSDMAP_PGS])
    assert mapped is not None
    reports = list(parse_pgs_brief(raw[PGS_BRIEF]) or ())
    # a PG the manager does not list yet (a new pool's, a split) has not reported
    assert compare(mapped, reports[1:]) == (65, (reports[0].pgid,))
    # a PG of a pool the map no longer has (deleted) has not either
    ghost = copy.deepcopy(raw[PGS_BRIEF])
    ghost["pg_stats"].append(dict(ghost["pg_stats"][0], pgid="9.0"))
    assert compare(mapped, parse_pgs_brief(ghost) or ()) == (66, ("9.0",))
    # a report without primaries is judged by its sets
    bare = [dict(e) for e in raw[PGS_BRIEF]["pg_stats"]]
    for e in bare:
        e.pop("up_primary"), e.pop("acting_primary")
    assert compare(mapped, parse_pgs_brief(bare) or ())[1] == ()


def test_every_shape_of_pg_dump_pgs_brief() -> None:
    raw = settle_raw("reef-osd-in/settled")
    entries = raw[PGS_BRIEF]["pg_stats"]
    want = parse_pgs_brief(raw[PGS_BRIEF])
    assert want is not None and len(want) == 65
    assert parse_pgs_brief(entries) == want  # Nautilus and older: a bare list
    assert parse_pgs_brief({"pg_map": {"pg_stats": entries}}) == want  # a full pg dump
    assert parse_pgs_brief({"pg_ready": True, "pg_stats_brief": entries}) == want
    assert parse_pgs_brief({"pg_ready": False, "pg_stats": entries}) is None
    for junk in (None, "dumped pgs_brief", 3, {}, {"pg_stats": "x"}):
        assert parse_pgs_brief(junk) is None, junk
    odd = [{"pgid": "2.0", "up": [1, "x"], "acting": [1]}, {"pgid": "2..0", "up": [],
           "acting": []}, {"pgid": "2.1", "up": [True], "acting": []}, "junk",
           {"pgid": "2.2", "up": [0], "acting": [0], "state": 5}]
    got = parse_pgs_brief(odd)
    assert got is not None and [(r.pgid, r.state) for r in got] == [("2.2", "unknown")]


def test_osdmaptool_dump_all_parse_ignores_everything_else() -> None:
    text = (SETTLE / "pacific-osd-in/settled/osdmaptool.txt").read_text()
    m = parse_osdmaptool_pgs(text, 40)
    assert m.epoch == 40 and dict(m.pools) == {1: 1, 2: 64} and len(m.pgs) == 65
    assert m.pgs["2.3f"] == Placement((1, 3, 0), 1, (1, 3, 0), 1)
    assert m.incomplete() is None
    # the plain --test-map-pgs-dump (acting only, tab separated) is not this format
    assert parse_osdmaptool_pgs("pool 1 pg_num 1\n1.0\t[3,2,1]\t3\n").incomplete() == \
        "osdmaptool printed 0 of pool 1's 1 PGs"
    cut = "\n".join(text.splitlines()[:10])
    assert "of pool 2's 64 PGs" in (parse_osdmaptool_pgs(cut).incomplete() or "")
    lonely = parse_osdmaptool_pgs("7.0 raw ([1], p1) up ([1], p1) acting ([1], p1)\n")
    assert "without their pool line" in (lonely.incomplete() or "")
    # an erasure-coded hole and no primary
    odd = parse_osdmaptool_pgs("pool 3 pg_num 1\n3.0 raw ([2147483647,1], p-1) "
                               "up ([2147483647,1], p-1) acting ([], p-1)\n")
    assert odd.pgs["3.0"] == Placement((2147483647, 1), -1, (), -1)


# --------------------------------------------------------------------------- hypothesis

osd = st.one_of(st.integers(0, 64), st.just(2147483647))
placement = st.builds(Placement, st.lists(osd, max_size=4).map(tuple),
                      st.integers(-1, 64), st.lists(osd, max_size=4).map(tuple),
                      st.integers(-1, 64))
json_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20)


def _tool_text(pools: dict[int, dict[int, Placement]], noise: list[str]) -> str:
    def ls(xs: tuple[int, ...]) -> str:
        return "[" + ",".join(map(str, xs)) + "]"
    lines = list(noise)
    for pool, pgs in sorted(pools.items()):
        lines.append(f"pool {pool} pg_num {len(pgs)}")
        for seed, pl in sorted(pgs.items()):
            lines.append(f"{pool}.{seed:x} raw ({ls(pl.up)}, p{pl.up_primary}) up "
                         f"({ls(pl.up)}, p{pl.up_primary}) acting ({ls(pl.acting)}, "
                         f"p{pl.acting_primary})")
        lines.extend(noise)
    return "\n".join(lines)


@given(st.dictionaries(st.integers(1, 40), st.dictionaries(st.integers(0, 300), placement,
                                                           max_size=6), max_size=4),
       st.lists(st.text(max_size=30).filter(lambda t: "\n" not in t and "\r" not in t),
                max_size=3))
@settings(max_examples=150, deadline=None)
def test_osdmaptool_text_round_trips(pools: dict[int, dict[int, Placement]],
                                     noise: list[str]) -> None:
    noise = [n for n in noise if not n.strip().startswith("pool ")]
    m = parse_osdmaptool_pgs(_tool_text(pools, noise), 7)
    want = {f"{p}.{s:x}": pl for p, pgs in pools.items() for s, pl in pgs.items()}
    assert dict(m.pgs) == want and m.incomplete() is None
    assert osdmap_pgs_from_json(json.loads(json.dumps(m.to_json()))) == m
    # the manager reporting exactly the map: every PG reported; one moved: not
    reports = [parse_settle.PgReport(k, "active+clean", v) for k, v in want.items()]
    assert compare(m, reports) == (len(want), ())
    if reports:
        r0 = reports[0]
        moved = Placement(r0.placement.up + (99,), r0.placement.up_primary,
                          r0.placement.acting, r0.placement.acting_primary)
        assert compare(m, [parse_settle.PgReport(r0.pgid, "x", moved)] + reports[1:])[1] == (
            r0.pgid,)


@given(st.text(max_size=400))
@settings(max_examples=300, deadline=None)
def test_osdmaptool_parser_never_raises_on_text(text: str) -> None:
    m = parse_osdmaptool_pgs(text)
    m.incomplete()
    for pgid in m.pgs:
        assert parse_settle.canonical_pgid(pgid) == pgid


@given(json_junk, json_junk, json_junk, json_junk)
@settings(max_examples=300, deadline=None)
def test_raw_junk_never_raises(brief: Any, mapping: Any, errors: Any, status: Any) -> None:
    assert isinstance(parse_pgs_brief(brief), tuple | type(None))
    osdmap_pgs_from_json(mapping)
    s = settle_from_raw({PGS_BRIEF: brief, OSDMAP_PGS: mapping, "errors": errors,
                         "status": status})
    assert s is not None
    assert settle_from_json(settle_to_json(s)) == s
    settle_from_json(mapping)


@given(st.lists(st.fixed_dictionaries({
    "pgid": st.one_of(st.sampled_from(["2.0", "2.1", "2.1f", "1.0"]), st.text(max_size=5)),
    "state": st.one_of(st.text(max_size=12), st.none()),
    "up": st.one_of(st.lists(osd, max_size=3), json_junk),
    "acting": st.one_of(st.lists(osd, max_size=3), json_junk),
    "up_primary": st.one_of(st.integers(-1, 5), json_junk),
}), max_size=6))
@settings(max_examples=200, deadline=None)
def test_pgs_brief_entries_of_any_shape(entries: list[dict[str, Any]]) -> None:
    got = parse_pgs_brief({"pg_ready": True, "pg_stats": entries})
    assert got is not None and len(got) <= len(entries)
    for r in got:
        assert parse_settle.canonical_pgid(r.pgid) == r.pgid and r.state


# --------------------------------------------------------------------------- collector

FAKE_TOOL = r'''
import os, stat, sys
if sys.argv[1:] == ["--version"]:
    print(os.environ.get("FAKE_VERSION", "ceph version 16.2.15 (abc) pacific (stable)"))
    sys.exit(0)
assert sys.argv[1:] == ["/dev/stdin", "--test-map-pgs-dump-all"], sys.argv
st = os.fstat(0)
assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, st
data = sys.stdin.buffer.read()
if data != b"MAP-BYTES":
    print("osdmaptool: error decoding osdmap", file=sys.stderr)
    sys.exit(1)
sys.stdout.write(open(os.environ["FAKE_OUTPUT"]).read())
'''


class FakeMon:
    """The monitor as ``read_osdmap_pgs`` asks it."""

    def __init__(self, blob: bytes = b"MAP-BYTES", version: str = "16.2.15 (x) pacific",
                 brief: Any = None) -> None:
        self.blob, self.version, self.brief = blob, version, brief
        self.asked: list[str] = []

    def mon(self, prefix: str, **args: Any) -> Any:
        self.asked.append(prefix)
        if prefix == "version":
            return {"version": f"ceph version {self.version} (stable)"}
        if prefix == "osd stat":
            return {"osd_up_since": NOW - 100, "osd_in_since": NOW - 3}
        raise CephCommandError(prefix, -22, "unknown")

    def mgr(self, prefix: str, **args: Any) -> Any:
        self.asked.append(f"{prefix} {args}")
        return self.brief

    def mon_bytes(self, prefix: str, **args: Any) -> tuple[bytes, str]:
        self.asked.append(prefix)
        return self.blob, "got osdmap epoch 40"


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    script = tmp_path / "fake_osdmaptool.py"
    script.write_text(FAKE_TOOL)
    monkeypatch.setenv("FAKE_OUTPUT", str(SETTLE / "pacific-osd-in/settled/osdmaptool.txt"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    settle_mod.tool_version.cache_clear()
    return (sys.executable, str(script))


def test_the_collector_runs_the_tool_on_a_private_file_and_removes_it(
        tool: tuple[str, ...], tmp_path: Path) -> None:
    got = read_osdmap_pgs(FakeMon(), tool, 10.0)
    m = osdmap_pgs_from_json(got)
    assert m is not None and m.epoch == 40 and len(m.pgs) == 65
    assert json.loads(json.dumps(got)) == got  # plain JSON for snapshots
    assert os.listdir(tmp_path / "tmp") == []  # the map file is gone


def test_the_collector_says_why_it_cannot(tool: tuple[str, ...], tmp_path: Path) -> None:
    with pytest.raises(SettleUnavailable, match=r"osdmaptool exited 1: osdmaptool: error "
                                                r"decoding osdmap"):
        read_osdmap_pgs(FakeMon(blob=b"not a map"), tool, 10.0)
    with pytest.raises(SettleUnavailable, match="older than the monitors .reef 18.2.7.*"
                                                "pg-upmap-primary"):
        read_osdmap_pgs(FakeMon(version="18.2.7 (y) reef"), tool, 10.0)
    with pytest.raises(SettleUnavailable, match="no-such-osdmaptool not found .Debian/Ubuntu "
                                                "package ceph-base."):
        read_osdmap_pgs(FakeMon(), ("no-such-osdmaptool",), 10.0)
    with pytest.raises(SettleUnavailable, match="no osdmaptool configured"):
        read_osdmap_pgs(FakeMon(), (), 10.0)
    with pytest.raises(SettleUnavailable, match="no map"):
        read_osdmap_pgs(FakeMon(blob=b""), tool, 10.0)
    assert os.listdir(tmp_path / "tmp") == []


def test_read_pg_settle_falls_back_and_says_why(tool: tuple[str, ...]) -> None:
    raw = settle_raw("pacific-osd-in/settled")
    src = FakeMon(brief=raw[PGS_BRIEF])
    s = read_pg_settle(src, tool, 10.0)
    assert (s.method, s.epoch, s.unreported) == (SettleMethod.OSDMAP, 40, 0)
    assert src.asked[:2] == ["osd stat", "pg dump {'dumpcontents': ['pgs_brief']}"]
    s = read_pg_settle(FakeMon(brief=raw[PGS_BRIEF], version="18.2.7 (y) reef"), tool, 10.0)
    assert s.method is SettleMethod.STAMP and s.last_change == NOW - 3
    assert s.error is not None and "older than the monitors" in s.error
    # a manager that has just started: no map is read at all
    s = read_pg_settle(FakeMon(brief={"pg_ready": False}), tool, 10.0)
    assert s.method is SettleMethod.STAMP and "not ready" in (s.error or "")


class FakeClient(FakeMon):
    """``collect_raw``'s view of a connection, answering from the Pacific capture."""

    def __init__(self, target: Any, pg_stat: Any, brief: Any) -> None:
        super().__init__(brief=brief)
        self.target = target
        self.raw = load_raw_dir(Path(__file__).resolve().parents[1] /
                                "fixtures/ceph-pacific/healthy")
        self.raw["pg stat"] = pg_stat

    def mon(self, prefix: str, **args: Any) -> Any:
        if prefix in ("version", "osd stat"):
            return super().mon(prefix)
        self.asked.append(prefix)
        return self.raw.get(prefix if prefix != "osd pool ls" else "osd pool ls detail")

    def mgr(self, prefix: str, **args: Any) -> Any:
        self.asked.append(prefix if prefix != "pg dump" else f"{prefix} {args}")
        return self.brief if prefix == "pg dump" else self.raw.get(prefix)


def _pg_stat(states: dict[str, int]) -> dict[str, Any]:
    return {"pg_ready": True, "pg_summary": {
        "num_pg_by_state": [{"name": k, "num": v} for k, v in states.items()],
        "num_pgs": sum(states.values())}}


def test_collect_raw_compares_only_when_every_pg_reads_clean(tool: tuple[str, ...]) -> None:
    from storage.ceph import collect as collect_mod
    from storage.targets import CephTarget

    target = CephTarget("/nonexistent/ceph.conf", osdmaptool=tool)
    brief = settle_raw("pacific-osd-in/stale-clean")[PGS_BRIEF]
    c = FakeClient(target, _pg_stat({"active+clean": 65}), brief)
    raw = collect_mod.collect_raw(c)  # type: ignore[arg-type]
    assert PGS_BRIEF in raw and OSDMAP_PGS in raw and not raw["errors"]
    st_ = build_state(raw, collected_at=NOW)
    # the settled map against the stale reports: the PGs have not reported on it
    assert st_.pg_settle is not None and st_.pg_settle.unreported == 54
    assert "osd getmap" in c.asked
    # PGs read unclean: not asked (the check reports them anyway)
    c = FakeClient(target, _pg_stat({"active+clean": 60, "peering": 5}), brief)
    raw = collect_mod.collect_raw(c)  # type: ignore[arg-type]
    assert PGS_BRIEF not in raw and OSDMAP_PGS not in raw and "osd getmap" not in c.asked
    assert build_state(raw).pg_settle is None
    # too many PGs to compare on every check: the stamp rule, said so
    c = FakeClient(target, _pg_stat({"active+clean": collect_mod.MAX_PGS_FOR_SETTLE + 1}),
                   brief)
    raw = collect_mod.collect_raw(c)  # type: ignore[arg-type]
    assert "not compared" in raw["errors"][OSDMAP_PGS] and "osd getmap" not in c.asked
    s = build_state(raw).pg_settle
    assert s is not None and s.method is SettleMethod.STAMP and "not compared" in (s.error or "")


def test_mapping_json_stays_small_and_plain() -> None:
    m = parse_osdmaptool_pgs((SETTLE / "reef-osd-in/settled/osdmaptool.txt").read_text(), 37)
    j = m.to_json()
    assert isinstance(m, OsdmapPgs) and set(j) == {"epoch", "pools", "pgs"}
    assert j["pgs"]["2.0"] == [[1, 2, 0], 1, [1, 2, 0], 1]
    assert len(json.dumps(j)) < 100 * len(m.pgs)


def test_the_temp_file_mode_is_private() -> None:
    """mkstemp's promise the collector relies on (the fake tool checks it too)."""
    fd, path = tempfile.mkstemp(prefix="stordoc-osdmap-")
    try:
        assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600
    finally:
        os.close(fd)
        os.unlink(path)


def test_captures_save_and_replay_the_computed_mapping(tmp_path: Path) -> None:
    raw = settle_raw("reef-osd-in/stale-clean")
    save_raw_dir(raw, str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "errors.json", "osdmap_pgs.json", "pg_dump_pgs_brief.json"]
    back = load_raw_dir(tmp_path)
    assert settle_from_raw(back) == settle_from_raw(raw)




def test_the_osdmaptool_setting(tmp_path: Path) -> None:
    from core.settings import SettingsError, parse_settings

    def target(ceph: dict[str, Any]) -> Any:
        s = parse_settings({"journal": str(tmp_path / "j.db"),
                            "clusters": {"c": {"ceph": {"conf": "/etc/ceph/ceph.conf",
                                                        **ceph}}}})
        return s.clusters["c"].target("c").ceph

    assert target({}).osdmaptool == ("osdmaptool",)
    chroot = ["chroot", "/srv/reef", "osdmaptool"]
    assert target({"osdmaptool": chroot}).osdmaptool == tuple(chroot)
    assert target({"osdmaptool": []}).osdmaptool == ()  # the stamp rule, said so
    with pytest.raises(SettingsError):
        target({"osdmaptool": ["osdmaptool", ""]})


def test_worth_comparing_only_when_every_pg_reads_clean() -> None:
    from storage.ceph import worth_comparing

    assert worth_comparing({"active+clean": 60, "active+clean+scrubbing": 5})
    assert worth_comparing({"active+clean": 65, "peering": 0})  # a zero count says nothing
    assert not worth_comparing({"active+clean": 60, "peering": 5})
    assert not worth_comparing({})  # pg_ready false: nothing read
