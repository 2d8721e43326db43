"""Per-OSD latency during a benchmark: the ``osd perf`` parser (captured Pacific output and
the pre-Octopus shape), the sampler's window per result, the "slowest OSDs" line and the
note that names the OSDs whose latency rose between compared runs."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from runbooks.bench import osdperf
from runbooks.bench.model import BenchResult
from storage.ceph import parse_osd_perf
from tests.support.poll import wait_until

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "bench"


def test_captured_pacific_osd_perf_parses_every_osd() -> None:
    d = json.loads((FIX / "osd_perf_pacific.json").read_text())
    got = parse_osd_perf(d)
    ids = sorted(e["id"] for e in d["osdstats"]["osd_perf_infos"])
    assert sorted(got) == ids and len(ids) >= 3
    for osd, (commit, apply) in got.items():
        e = next(x for x in d["osdstats"]["osd_perf_infos"] if x["id"] == osd)
        assert commit == e["perf_stats"]["commit_latency_ms"]
        assert apply == e["perf_stats"]["apply_latency_ms"]


def test_pre_octopus_shape_and_junk() -> None:
    d = {"osd_perf_infos": [{"id": 1, "perf_stats": {"commit_latency_ms": 7,
                                                     "apply_latency_ms": 9}},
                            {"id": "x", "perf_stats": {}}, {"perf_stats": {}},
                            {"id": 2, "perf_stats": {"commit_latency_ms": "nan"}},
                            {"id": -1, "perf_stats": {"commit_latency_ms": 1}}, "junk"]}
    assert parse_osd_perf(d) == {1: (7.0, 9.0)}
    assert parse_osd_perf(None) == {} and parse_osd_perf([1, 2]) == {}
    assert parse_osd_perf({"osdstats": None}) == {}


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=20))
def test_parser_never_raises(d: object) -> None:
    for shape in (d, {"osdstats": {"osd_perf_infos": d}}, {"osd_perf_infos": d}):
        parse_osd_perf(shape)


def _perf(**osds: float) -> dict:
    return {"osdstats": {"osd_perf_infos": [
        {"id": int(k[3:]), "perf_stats": {"commit_latency_ms": v, "apply_latency_ms": v}}
        for k, v in osds.items()]}}


def test_sampler_keeps_samples_and_counts_errors() -> None:
    calls = {"n": 0}

    def fetch() -> dict:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("mgr did not answer")
        return _perf(osd0=1, osd1=20, osd2=5)

    with osdperf.OsdLatencySampler(fetch, 0.01) as s:
        wait_until(lambda: len(s.samples) >= 3, 5, "three samples", 0.01)
    n = len(s.samples)
    assert n >= 3 and s.errors >= 1
    time.sleep(0.05)
    assert len(s.samples) == n  # stopped means stopped
    assert not any(t.name == "osd-perf" and t.is_alive() for t in threading.enumerate())


def _result(t0: float, dur: float) -> BenchResult:
    return BenchResult(cluster="c", kind="rados", engine="native", workload="write",
                       group_id="g", rep=1, params={}, fingerprint_fields={},
                       started_at=t0, duration_s=dur)


def test_each_result_gets_its_own_window_and_the_slowest_first() -> None:
    s = osdperf.OsdLatencySampler(lambda: None, 1.0)
    s.samples = [(100.0, {0: (1.0, 1.0), 1: (2.5, 2.5)}),
                 (101.0, {0: (3.0, 3.0), 1: (2.5, 2.5), 2: (0.0, 0.0)}),
                 (110.0, {0: (1.0, 1.0), 1: (50.0, 40.0)})]
    a, b, c = _result(99.5, 2.0), _result(109.0, 2.0), _result(200.0, 1.0)
    osdperf.attach([a, b, c], s)
    ol = a.extra["osd_latency"]
    assert ol["samples"] == 2 and ol["slowest"] == [1, 0]  # osd.2 at 0 ms is not "slow"
    assert ol["osds"]["0"] == {"commit_avg_ms": 2.0, "commit_max_ms": 3.0,
                               "apply_avg_ms": 2.0, "samples": 2}
    assert b.extra["osd_latency"]["slowest"] == [1, 0]
    assert b.extra["osd_latency"]["osds"]["1"]["commit_avg_ms"] == 50.0
    assert "osd_latency" not in c.extra  # no sample in its window: nothing invented
    line = osdperf.line(b.extra["osd_latency"])
    assert line is not None and line.index("osd.1 50.0 ms (max 50.0)") < line.index("osd.0")
    assert osdperf.line(None) is None
    idle = osdperf.summarize([(1.0, {0: (0.0, 0.0)})], 1.0)
    assert "0 ms on every OSD" in (osdperf.line(idle) or "")


def test_change_note_names_the_osd_that_got_slower() -> None:
    def row(**osds: float) -> dict:
        return {"extra": {"osd_latency": {"osds": {
            k[3:]: {"commit_avg_ms": v} for k, v in osds.items()}}}}

    base = [row(osd0=2, osd1=2, osd2=3), row(osd0=2, osd1=4, osd2=3)]
    new = [row(osd0=2.5, osd1=30, osd2=3)]
    note = osdperf.change_note(base, new)
    assert note == "per-OSD commit latency (avg): osd.1 3.0 -> 30.0 ms, osd.0 2.0 -> 2.5 ms"
    assert "no OSD slower" in (osdperf.change_note(new, base) or "")
    assert osdperf.change_note([{"extra": {}}], new) is None


def _series(ops: list[float], partial_tail: bool = True) -> list[dict]:
    out = [{"t": float(i + 1), "ops_s": v, "mb_s": v / 256, "lat_ms": 1.0, "partial": 0.0}
           for i, v in enumerate(ops)]
    if partial_tail:
        out.append({"t": len(ops) + 1.0, "ops_s": 1.0, "mb_s": 0.0, "lat_ms": 1.0,
                    "partial": 1.0})
    return out


def test_steady_state_found_after_a_ramp_and_named_from_its_second() -> None:
    from runbooks.bench.measure import steady_line, steady_state

    st = steady_state(_series([10, 100, 400, 800, 1000, 1010, 995, 1005]))
    assert st["reached"] is True and st["from_s"] == 5  # seconds 5-7: 1000, 1010, 995
    assert abs(st["slope_pct"]) <= 2 and st["cv_pct"] <= 15
    assert "reached from second 5" in (steady_line(st) or "")


def test_steady_state_not_reached_on_a_climb_and_too_short_to_tell() -> None:
    from runbooks.bench.measure import steady_line, steady_state

    st = steady_state(_series([100, 200, 300, 400, 500, 600]))
    assert st["reached"] is False and st["slope_pct"] > 2
    assert "NOT reached" in (steady_line(st) or "")
    short = steady_state(_series([100, 200]))
    assert short["reached"] is None and "too short" in (steady_line(short) or "")
    assert steady_state(_series([0, 0, 0, 0, 0]))["reached"] is False  # nothing moved


@given(st.lists(st.floats(min_value=0, max_value=1e12), max_size=40))
def test_steady_state_never_raises_and_is_consistent(ops: list[float]) -> None:
    from runbooks.bench.measure import steady_line, steady_state

    got = steady_state(_series(ops))
    assert got["reached"] in (True, False, None)
    if got["reached"]:
        assert 2 <= got["from_s"] <= len(ops)
    assert steady_line(got)
