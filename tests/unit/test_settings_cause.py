"""A setting that causes a symptom is its cause (issue 38.2), from the saved snapshots of
both releases: a nearfull ratio lowered under the OSDs' fill (cluster-nearfull) and the
slow heartbeat line lowered under Ceph's default (osd-slow-ops) are the incidents' roots,
named with value, Ceph's default and the undo command, and their next step is a runbook
that plans cleanly (ratio-restore, config-restore) to Ceph's default; full-ratio-raise
never schedules a revert to such a value."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.ceph_config import option_is_fault, ratio_causes
from checks.model import CheckContext
from checks.slow_ops import check_slow_ops
from core.service.snapshots import Replay, load
from runbooks.api import plan_from_snapshot
from runbooks.config import previous_value
from runbooks.model import InvalidRequest, Refused
from runbooks.nextstep import planning_context
from storage import expiring
from storage.journal import Journal
from storage.model import ClusterSnapshot
from storage.snapshot import read_snapshot, replay
from tests.support.fixture_snapshots import FIXTURES, replayed

RELEASES = ("pacific", "reef")


def _replay(release: str, name: str) -> Replay:
    return replayed(release, name)  # one replay per session (tests/support)


@pytest.mark.parametrize("release", RELEASES)
def test_a_lowered_nearfull_ratio_is_the_root_with_ratio_restore(release: str) -> None:
    rp = _replay(release, "cluster-nearfull")
    [inc] = rp.outcome.incidents
    f = inc.root
    assert f.code == "FULL_RATIO_LOWERED", [i.id for i in rp.outcome.incidents]
    ceph = rp.outcome.snapshot.ceph
    assert ceph is not None
    low = round(ceph.nearfull_ratio, 4)
    assert f.evidence["ratios"] == {"nearfull": low} and low < 0.1
    assert f"nearfull ratio {low:g} is below Ceph's default 0.85" in f.message
    assert "`ceph osd set-nearfull-ratio 0.85`" in f.message
    # the fill warnings are in it, "not enough history" and "add capacity" are not said
    folded = {c.code if c.code != "CEPH_HEALTH" else c.entity for c in inc.consequences}
    assert {"ceph OSD_NEARFULL", "ceph POOL_NEARFULL", "OSD_NEAR_FULL"} <= folded, folded
    words = " ".join(x.message for x in inc.findings) + (inc.manual or "")
    assert "not enough history" not in words and "CLUSTER_DAYS_TO_FULL" not in folded
    assert inc.next_step is not None and inc.next_step.command == "stordoc fix ratio-restore lab"
    # the step plans (offline: no osdmap history) to Ceph's default
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    plan = plan_from_snapshot(ctx, rp.outcome.snapshot, "ratio-restore", "lab")
    assert [s.command for s in plan.steps][0] == "ceph osd set-nearfull-ratio 0.85"
    assert plan.before_after["nearfull_ratio"] == (low, 0.85)


@pytest.mark.parametrize("release", RELEASES)
def test_full_ratio_raise_never_reverts_to_the_fault(release: str) -> None:
    """The issue's `plan full-ratio-raise lab -o nearfull=0.85` would have put 0.0142
    back after 4 h: refused, naming ratio-restore."""
    rp = _replay(release, "cluster-nearfull")
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    with pytest.raises(Refused, match="it is the cause.*stordoc fix ratio-restore lab"):
        plan_from_snapshot(ctx, rp.outcome.snapshot, "full-ratio-raise", "lab",
                           {"nearfull": "0.85"})


def test_ratio_restore_takes_the_journals_previous_value_and_refuses_one_under_the_fill(
        ) -> None:
    rp = _replay("pacific", "cluster-nearfull")
    snap = rp.outcome.snapshot
    assert snap.ceph is not None
    cur = snap.ceph.nearfull_ratio
    j = Journal(":memory:")
    ctx = dataclasses.replace(planning_context("lab", rp.target, rp.thresholds, offline=True),
                              journal=j)
    now = time.time()
    # stordoc's own change set the current value, from 0.8: 0.8 is the previous value
    expiring.record(j, "lab", "ratio", "nearfull_ratio", now + 60, "x", (), 0.8, cur, None,
                    "test", now=now)
    plan = plan_from_snapshot(ctx, snap, "ratio-restore", "lab")
    assert plan.steps[0].command == "ceph osd set-nearfull-ratio 0.8"
    assert "previous value, stordoc's change #1" in plan.steps[0].title
    # a previous value under the OSDs' fill is the fault again: Ceph's default instead
    expiring.record(j, "lab", "ratio", "nearfull_ratio", now + 60, "x", (), 0.02, cur, None,
                    "test", now=now)
    plan = plan_from_snapshot(ctx, snap, "ratio-restore", "lab")
    assert plan.steps[0].command == "ceph osd set-nearfull-ratio 0.85"
    assert any("previous value 0.02" in w for w in plan.warnings), plan.warnings
    # a value given under the fill, or one past backfillfull, is refused
    with pytest.raises(InvalidRequest, match="under the fullest OSD"):
        plan_from_snapshot(ctx, snap, "ratio-restore", "lab", {"nearfull": "0.02"})
    with pytest.raises(Refused, match="OSD_OUT_OF_ORDER_FULL"):
        plan_from_snapshot(ctx, snap, "ratio-restore", "lab", {"nearfull": "0.93"})


def test_ratio_restore_refuses_where_no_ratio_is_the_cause() -> None:
    rp = _replay("pacific", "healthy")
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    with pytest.raises(Refused, match="nothing to put back"):
        plan_from_snapshot(ctx, rp.outcome.snapshot, "ratio-restore", "lab")


@pytest.mark.parametrize("release", RELEASES)
def test_the_lowered_slow_ping_line_is_the_heartbeats_root(release: str) -> None:
    """osd-slow-ops: the delay injected on osd.1 is its slow ops' root (config-restore
    osd.1); Ceph's slow heartbeats, every one under Ceph's 1000 ms line, are the lowered
    mon_warn_on_slow_ping_time's (config-restore global), not another OSD's link."""
    rp = _replay(release, "osd-slow-ops")
    by_root = {i.root.code: i for i in rp.outcome.incidents}
    cfg = by_root["CONFIG_OPTION_CAUSE"]
    assert cfg.root.entity == "config global"
    assert "mon_warn_on_slow_ping_time 20 (Ceph's default 0)" in cfg.root.message
    assert "`ceph config rm global mon_warn_on_slow_ping_time`" in cfg.root.message
    folded = {c.code if c.code != "CEPH_HEALTH" else c.entity for c in cfg.consequences}
    assert {"ceph OSD_SLOW_PING_TIME_BACK", "ceph OSD_SLOW_PING_TIME_FRONT",
            "OSD_SLOW_PING"} <= folded, folded
    assert cfg.next_step is not None and \
        cfg.next_step.command == "stordoc fix config-restore global"
    ping = next(c for c in cfg.consequences if c.code == "OSD_SLOW_PING")
    assert "under Ceph's default line of 1000 ms" in ping.message and \
        "network" not in ping.message, ping.message
    slow = by_root["OSD_SLOW_OPS"]
    assert slow.root.entity == "osd.1"
    assert slow.next_step is not None and \
        slow.next_step.command == "stordoc fix config-restore osd.1"
    # no incident of its own blames a network link
    assert not [i.id for i in rp.outcome.incidents if i.root.code == "OSD_SLOW_PING"]
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    snap = rp.outcome.snapshot
    plan = plan_from_snapshot(ctx, snap, "config-restore", "global")
    assert [s.command for s in plan.steps][:1] == [
        "ceph config rm global mon_warn_on_slow_ping_time"]
    plan = plan_from_snapshot(ctx, snap, "config-restore", "osd.1")
    assert sorted(s.command for s in plan.steps if s.command.startswith("ceph config rm")) \
        == [f"ceph config rm osd.1 {n}" for n in (
            "osd_debug_inject_dispatch_delay_duration",
            "osd_debug_inject_dispatch_delay_probability", "osd_op_complaint_time",
            "osd_op_history_slow_op_threshold")]
    assert plan.params["ceph_codes"] == ["SLOW_OPS"]
    with pytest.raises(Refused, match="nothing set for osd.0"):
        plan_from_snapshot(ctx, snap, "config-restore", "osd.0")
    with pytest.raises(InvalidRequest, match="not a configuration section"):
        plan_from_snapshot(ctx, snap, "config-restore", "osd.1; rm -rf /")
    with pytest.raises(Refused, match="not set for global"):
        plan_from_snapshot(ctx, snap, "config-restore", "global", {"option": "debug_osd"})


LOG = [
    {"version": 4, "changes": [{"name": "global/mon_warn_on_slow_ping_time",
                                "previous_value": "25.000000"}]},
    {"version": 3, "changes": [{"name": "global/mon_warn_on_slow_ping_time",
                                "previous_value": "20.000000", "new_value": "25.000000"}]},
    {"version": 2, "changes": [{"name": "global/mon_warn_on_slow_ping_time",
                                "new_value": "20.000000"}]},
]


def test_previous_value_reads_ceph_config_log_as_the_lab_printed_it() -> None:
    """``ceph config log`` (newest first) as Pacific printed it on the lab."""
    assert previous_value(LOG, "global", "mon_warn_on_slow_ping_time", "25.000000") == \
        "20.000000"
    assert previous_value(LOG, "global", "mon_warn_on_slow_ping_time", "20.000000") is None
    assert previous_value(LOG, "osd", "mon_warn_on_slow_ping_time", "25.000000") is None
    assert previous_value({"not": "a list"}, "global", "x", "1") is None


@given(st.floats(0.0001, 0.99), st.floats(0.0, 1.0))
def test_a_ratio_at_or_above_cephs_default_is_never_the_cause(v: float, fill: float) -> None:
    for default in (0.85, 0.90, 0.95):
        if v >= default:
            assert not ratio_causes(v, default, fill)
        if fill >= default:  # Ceph would warn at its default too: the fill is the cause
            assert not ratio_causes(v, default, fill)


@given(st.text(max_size=20))
def test_option_is_fault_takes_any_text(value: str) -> None:
    for name in ("mon_warn_on_slow_ping_time", "osd_op_complaint_time",
                 "osd_debug_inject_dispatch_delay_probability", "osd_debug_inject_x",
                 "debug_osd"):
        assert option_is_fault(name, value) in (True, False)
    assert not option_is_fault("mon_warn_on_slow_ping_time", "0")
    assert option_is_fault("mon_warn_on_slow_ping_time", "20.000000")
    assert not option_is_fault("mon_warn_on_slow_ping_time", "2000")
    assert not option_is_fault("debug_osd", "20/20")


def _young(release: str, age_s: float) -> tuple[ClusterSnapshot, CheckContext]:
    """The osd-slow-ops snapshot without the delay injection (osd_op_complaint_time 1 s
    of osd.1 left) and every op ``age_s`` old."""
    d = str(FIXTURES / release / "osd-slow-ops")
    snap = replay(read_snapshot(d), load(d).target)
    ceph = snap.ceph
    assert ceph is not None
    ops = tuple(replace(o, in_flight=tuple(replace(x, age_s=age_s) for x in o.in_flight),
                        historic=tuple(replace(x, duration_s=age_s) for x in o.historic))
                for o in ceph.slow.ops)
    cfg = tuple(c for c in ceph.config_db if "inject" not in c.name)
    s2 = replace(snap, ceph=replace(ceph, config_db=cfg, slow=replace(ceph.slow, ops=ops)))
    return s2, CheckContext(now=ceph.collected_at)


@pytest.mark.parametrize("release", RELEASES)
def test_slow_ops_younger_than_cephs_complaint_time_name_the_lowered_option(
        release: str) -> None:
    snap, ctx = _young(release, 5.0)
    (f,) = [f for f in check_slow_ops(snap, ctx) if f.code == "OSD_SLOW_OPS"]
    assert "Ceph warns because osd_op_complaint_time is 1 for osd.1" in f.message
    assert (f.runbook, f.target) == ("config-restore", "osd.1")
    assert f.evidence["manual"] == "`ceph config rm osd.1 osd_op_complaint_time`"
    # ops older than Ceph's 30 s would be slow at the default too: no setting to blame
    snap, ctx = _young(release, 45.0)
    (f,) = [f for f in check_slow_ops(snap, ctx) if f.code == "OSD_SLOW_OPS"]
    assert f.runbook is None and "osd_op_complaint_time" not in f.message
