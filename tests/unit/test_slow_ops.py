"""Slow requests: the parser of an OSD's ops and of Ceph's slow heartbeat lines on JSON
captured from the lab (tests/fixtures/slow_ops/reef: osd.1 delayed by Ceph's dispatch
delay injection, osd.3 waiting on it), the bounded collection, and the check
(OSD_SLOW_OPS / OSD_SLOW_PING / PGS_LAGGY) on the saved osd-slow-ops snapshots."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.model import CheckContext, Severity
from checks.osd import pg_state_is_clean
from checks.pgs import check_pgs
from checks.slow_ops import check_slow_ops
from core.service.snapshots import load
from storage.ceph import collect as ceph_collect
from storage.ceph.client import CephCommandError
from storage.ceph.parse_ops import parse_op, parse_osd_ops, parse_ping_lines, parse_slow
from storage.model import ClusterSnapshot
from storage.snapshot import read_snapshot, replay
from tests.support.fixture_snapshots import FIXTURES

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "slow_ops" / "reef"


def captured(name: str) -> Any:
    return json.loads((CAPTURED / name).read_text())


# ------------------------------------------------------------------ parsing
def test_in_flight_ops_of_the_delayed_osd() -> None:
    o = parse_osd_ops(1, captured("osd1_dump_ops_in_flight.json"), None)
    assert o.osd == 1 and o.error is None
    assert o.in_flight_total == len(o.in_flight) > 0
    assert all(op.in_flight for op in o.in_flight)
    # oldest first, every op named by its message type
    ages = [op.age_s for op in o.in_flight]
    assert ages == sorted(ages, reverse=True) and o.oldest_s == ages[0] > 1
    assert {op.kind for op in o.in_flight} <= {"osd_op", "osd_repop", "osd_repop_reply"}
    assert "queued for pg" in o.waits()
    # an op not decoded yet says what it is in its flags only
    undecoded = [op for op in o.in_flight if "(undecoded)" in op.description]
    assert all(op.ops == ("write",) for op in undecoded)
    assert all(op.pg and op.pg.startswith("2.") for op in o.in_flight)


def test_historic_slow_ops_slowest_first() -> None:
    o = parse_osd_ops(1, None, captured("osd1_dump_historic_slow_ops.json"))
    assert o.in_flight == () and o.historic
    durs = [op.duration_s for op in o.historic]
    assert durs == sorted(durs, reverse=True)  # type: ignore[type-var]
    assert o.oldest_s == durs[0]
    assert not any(op.in_flight for op in o.historic)


def test_the_waiting_osd_waits_for_readable() -> None:
    o = parse_osd_ops(3, captured("osd3_dump_ops_in_flight.json"), None)
    assert set(o.waits()) == {"waiting for readable"}
    assert all("omap-get-vals" in op.ops for op in o.in_flight)


def test_ping_lines_of_both_releases_shapes() -> None:
    h = captured("health_detail.json")["checks"]
    lines = [d["message"] for c in ("OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT")
             for d in h[c]["detail"]]
    pings = parse_ping_lines(lines)
    assert len(pings) == len(lines) > 0
    assert all(1 in (p.osd, p.peer) for p in pings)  # every slow pair goes through osd.1
    assert {p.iface for p in pings} == {"back", "front"}
    # Ceph's format with CRUSH locations (they differ) and a trend
    (p,) = parse_ping_lines(["Slow OSD heartbeats on back from osd.0 [dc1,rack1] to osd.1 "
                             "[dc1,rack2] 1118.001 msec possibly improving"])
    assert (p.osd, p.peer, p.iface, p.ms, p.trend) == (0, 1, "back", 1118.001,
                                                       "possibly improving")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(max_size=12), kids, max_size=4), max_leaves=20))
def test_parsers_never_raise(value: Any) -> None:
    parse_op(value, True)
    parse_osd_ops(0, value, value)
    parse_slow(value, {}, [str(value)])
    parse_slow({"osd.2": value}, {}, [])


@given(st.text(max_size=200))
def test_ping_lines_never_raise(text: str) -> None:
    for p in parse_ping_lines([text, f"Slow OSD heartbeats on back {text}"]):
        assert p.ms >= 0


# ------------------------------------------------------------------ collecting
class _Target:
    timeout_s = 1.0


class _Client:
    def __init__(self, fail: set[int]) -> None:
        self.target = _Target()
        self.fail = fail
        self.asked: list[tuple[int, str]] = []

    def tell_osd(self, osd: int, prefix: str) -> Any:
        self.asked.append((osd, prefix))
        if osd in self.fail:
            raise CephCommandError(prefix, -110, "timed out")
        return captured(f"osd1_{prefix}.json")

    def mgr(self, prefix: str, **args: Any) -> Any:
        return captured("osd_perf.json")

    def mon(self, prefix: str, **args: Any) -> Any:
        raise AssertionError(prefix)


def _raw(summary: str) -> dict[str, Any]:
    return {"health detail": {"checks": {"SLOW_OPS": {"summary": {"message": summary},
                                                      "detail": []}}}}


def test_only_the_named_osds_are_asked_and_a_failure_is_said() -> None:
    client = _Client(fail={3})
    s = ceph_collect._Session(client)  # type: ignore[arg-type]
    raw = _raw("4 slow ops, oldest one blocked for 9 sec, daemons [osd.1,osd.3] have "
               "slow ops.")
    ceph_collect._slow_ops(s, raw)
    assert {o for o, _ in client.asked} == {1, 3}
    assert (3, "dump_historic_slow_ops") not in client.asked  # a failed OSD is left
    assert set(raw["osd slow ops"]) == {"osd.1", "osd.3"}
    assert "timed out" in raw["osd slow ops"]["osd.3"]["error"]
    assert "osd perf" in raw
    state = parse_slow(raw["osd slow ops"], {}, [])
    assert [o.error is None for o in state.ops] == [True, False]


def test_nothing_is_asked_of_a_healthy_cluster() -> None:
    client = _Client(fail=set())
    raw: dict[str, Any] = {"health detail": {"checks": {}}}
    ceph_collect._slow_ops(ceph_collect._Session(client), raw)  # type: ignore[arg-type]
    assert client.asked == [] and "osd slow ops" not in raw and "osd perf" not in raw


def test_at_most_max_slow_osds_are_read() -> None:
    client = _Client(fail=set())
    many = ",".join(f"osd.{i}" for i in range(ceph_collect.MAX_SLOW_OSDS + 3))
    raw = _raw(f"9 slow ops, oldest one blocked for 9 sec, daemons [{many}] have slow ops.")
    s = ceph_collect._Session(client)  # type: ignore[arg-type]
    ceph_collect._slow_ops(s, raw)
    assert len(raw["osd slow ops"]) == ceph_collect.MAX_SLOW_OSDS
    assert "osd slow ops" in s.errors


# ------------------------------------------------------------------ the check
def snap_of(release: str) -> ClusterSnapshot:
    d = str(FIXTURES / release / "osd-slow-ops")
    return replay(read_snapshot(d), load(d).target)


def ctx_of(snap: ClusterSnapshot) -> CheckContext:
    assert snap.ceph is not None
    return CheckContext(now=snap.ceph.collected_at)


@pytest.mark.parametrize("release", ["reef", "pacific"])
def test_the_delayed_osd_is_named_with_its_latency_device_and_next_step(release: str
                                                                        ) -> None:
    if not (FIXTURES / release / "osd-slow-ops").is_dir():
        pytest.skip(f"no {release} snapshot")
    snap = snap_of(release)
    found = list(check_slow_ops(snap, ctx_of(snap)))
    slow = [f for f in found if f.code == "OSD_SLOW_OPS"]
    assert [f.entity for f in slow] == ["osd.1"], [f.message for f in slow]
    f = slow[0]
    assert f.severity is Severity.WARN
    assert f.evidence["commit_latency_ms"] is not None
    assert str(f.evidence["device"]).startswith("/dev/loop")
    assert "osd_debug_inject_dispatch_delay_probability" in str(f.evidence["manual"])
    assert "ceph config rm osd.1" in str(f.evidence["manual"])
    assert f.evidence["kinds"] and f.since is not None
    pings = [f for f in found if f.code == "OSD_SLOW_PING"]
    assert [p.entity for p in pings] == ["osd.1"]


def test_a_failed_read_is_said_not_a_crash() -> None:
    snap = snap_of("reef")
    assert snap.ceph is not None
    bad = replace(snap.ceph, slow=replace(snap.ceph.slow, ops=tuple(
        replace(o, in_flight=(), historic=(), error="ceph tell osd.1: timed out")
        for o in snap.ceph.slow.ops)))
    s2 = replace(snap, ceph=bad)
    (f,) = [f for f in check_slow_ops(s2, ctx_of(s2)) if f.code == "OSD_SLOW_OPS"
            and f.entity == "osd.1"]
    assert "could not be read" in f.message and f.evidence["read_error"]


def test_with_a_slow_disk_the_next_step_is_the_disk() -> None:
    snap = snap_of("reef")
    assert snap.ceph is not None
    perf = dict(snap.ceph.slow.perf) | {1: (850.0, 850.0)}
    cfg = tuple(c for c in snap.ceph.config_db if "inject" not in c.name)
    s2 = replace(snap, ceph=replace(snap.ceph, config_db=cfg,
                                    slow=replace(snap.ceph.slow, perf=perf)))
    (f,) = [f for f in check_slow_ops(s2, ctx_of(s2)) if f.code == "OSD_SLOW_OPS"]
    assert "the disk is slow" in f.message
    assert str(f.evidence["manual"]).startswith(f"look at disk {f.evidence['device']}")


def test_laggy_and_wait_are_not_clean() -> None:
    for state in ("active+clean+laggy", "active+clean+wait", "active+clean+scrubbing+laggy"):
        assert not pg_state_is_clean(state)
    assert pg_state_is_clean("active+clean+scrubbing")
    snap = snap_of("reef")
    found = list(check_pgs(snap, ctx_of(snap)))
    (lag,) = [f for f in found if f.code == "PGS_LAGGY"]
    assert lag.severity is Severity.WARN and lag.evidence["pgids"]
    assert not [f for f in found if f.code in ("PGS_NOT_ACTIVE_CLEAN", "PGS_SETTLING")]


def test_ceph_codes_explained_with_what_the_osds_said() -> None:
    from checks.ceph_codes import ceph_health_finding

    snap = snap_of("reef")
    assert snap.ceph is not None
    by = {hc.code: ceph_health_finding(hc, snap.ceph, ctx_of(snap))
          for hc in snap.ceph.health_checks}
    slow = by["SLOW_OPS"]
    assert "osd.1: " in slow.message and "in flight" in slow.message
    assert slow.evidence["ops_read"]
    for code in ("OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT"):
        f = by[code]
        assert "osd.1" in f.message and " ms" in f.message and f.evidence["pairs"]
        assert ("cluster (back)" if code.endswith("BACK") else "public (front)") in f.message
