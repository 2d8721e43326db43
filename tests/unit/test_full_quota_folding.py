"""The full ratios and a pool quota as the cause (issue 38.2, 38.3), from the saved
snapshots of both releases, made by plain commands on the lab
(tests/support/fixture_snapshots.py: cluster-full, cluster-backfillfull, pool-quota):
every Ceph full code the lowered ratios raise folds into FULL_RATIO_LOWERED (shown once,
never under a down OSD's incident), and a quota's POOL_FULL / POOL_NEAR_FULL into
POOL_QUOTA_CAUSE, the pool's own incident, whose next step is quota-restore."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from checks.model import Severity
from core.service.snapshots import load
from runbooks.api import plan_from_snapshot
from runbooks.model import Refused
from runbooks.nextstep import planning_context
from runbooks.planning import runbook_for_code
from tests.support.fixture_snapshots import FIXTURES

RELEASES = ("pacific", "reef")
FULL_CODES = ("OSD_NEARFULL", "OSD_BACKFILLFULL", "OSD_FULL", "POOL_NEARFULL",
              "POOL_BACKFILLFULL", "POOL_FULL", "POOL_NEAR_FULL", "PG_BACKFILL_FULL",
              "PG_RECOVERY_FULL")


def _ceph_codes(findings: Any) -> set[str]:
    return {str(f.evidence.get("ceph_code")) for f in findings
            if f.evidence.get("ceph_code")}


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("case,codes", [
    ("cluster-full", {"OSD_FULL", "POOL_FULL"}),
    ("cluster-backfillfull", {"OSD_BACKFILLFULL", "POOL_BACKFILLFULL"}),
])
def test_each_ceph_full_code_of_lowered_ratios_joins_the_ratio(
        release: str, case: str, codes: set[str]) -> None:
    incs = load(str(FIXTURES / release / case)).outcome.incidents
    [inc] = incs  # one problem, one incident
    assert inc.root.code == "FULL_RATIO_LOWERED", [i.id for i in incs]
    assert inc.root.entity == "cluster lab full ratios"
    assert inc.next_step is not None and inc.next_step.command == "stordoc fix ratio-restore lab"
    got = _ceph_codes(inc.consequences)
    assert codes <= got, got
    # each of them once, and no root of its own
    assert not [f for f in inc.consequences if f.code == "CEPH_HEALTH"
                and f.evidence.get("ceph_code") not in FULL_CODES]
    words = " ".join(f.message for f in inc.findings)
    assert "add capacity" not in inc.root.message and "not enough history" not in words
    for name in ("full",) if case == "cluster-full" else ("backfillfull",):
        assert f"`ceph osd set-{name}-ratio" in inc.root.message


@pytest.mark.parametrize("release", RELEASES)
def test_ratio_restore_plans_every_lowered_ratio_in_cephs_order(release: str) -> None:
    rp = load(str(FIXTURES / release / "cluster-full"))
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    plan = plan_from_snapshot(ctx, rp.outcome.snapshot, "ratio-restore", "lab")
    # raised highest first: nearfull <= backfillfull <= full holds at every step
    assert [s.command for s in plan.steps][:3] == [
        "ceph osd set-full-ratio 0.95", "ceph osd set-backfillfull-ratio 0.9",
        "ceph osd set-nearfull-ratio 0.85"]


def _down(d: Path, osd: int) -> None:
    p = d / "ceph" / "osd_dump.json"
    o = json.loads(p.read_text())
    for x in o["osds"]:
        if x["osd"] == osd:
            x["up"] = 0
    p.write_text(json.dumps(o))


def _inject(d: Path, checks: dict[str, tuple[str, str, list[str]]]) -> None:
    p = d / "ceph" / "health_detail.json"
    h = json.loads(p.read_text())
    for code, (sev, summary, detail) in checks.items():
        h["checks"][code] = {"severity": sev, "summary": {"message": summary,
                                                         "count": len(detail) or 1},
                             "detail": [{"message": m} for m in detail], "muted": False}
    p.write_text(json.dumps(h))


@pytest.mark.parametrize("release", RELEASES)
def test_pgs_waiting_for_space_join_the_lowered_backfillfull_ratio_not_a_down_osd(
        tmp_path: Path, release: str) -> None:
    """cluster-backfillfull with osd.0 down and PGs that wait for space to backfill or
    recover: Ceph's PG_BACKFILL_FULL / PG_RECOVERY_FULL are the lowered ratio's, never the
    down OSD's incident (whose next step, daemon-restart, would not free space)."""
    d = tmp_path / "c"
    shutil.copytree(FIXTURES / release / "cluster-backfillfull", d)
    _down(d, 0)
    _inject(d, {
        "OSD_DOWN": ("HEALTH_WARN", "1 osds down", ["osd.0 (root=default,host=lab) is down"]),
        "PG_BACKFILL_FULL": ("HEALTH_WARN", "Low space hindering backfill (add storage if "
                             "this doesn't resolve itself): 1 pg backfill_toofull",
                             ["pg 2.5 is active+remapped+backfill_toofull, acting [1,2,3]"]),
        "PG_RECOVERY_FULL": ("HEALTH_ERR", "Full OSDs blocking recovery: 1 pg "
                             "recovery_toofull",
                             ["pg 2.7 is active+recovery_toofull+degraded, acting [1,2]"])})
    incs = load(str(d)).outcome.incidents
    ratio = [i for i in incs if i.root.code == "FULL_RATIO_LOWERED"]
    assert len(ratio) == 1, [i.id for i in incs]
    assert {"PG_BACKFILL_FULL", "PG_RECOVERY_FULL", "OSD_BACKFILLFULL",
            "POOL_BACKFILLFULL"} <= _ceph_codes(ratio[0].consequences)
    for i in incs:
        if i is not ratio[0]:
            assert not _ceph_codes(i.findings) & set(FULL_CODES), i.id


@pytest.mark.parametrize("release", RELEASES)
def test_a_pool_quota_under_its_use_is_the_pools_root_with_quota_restore(
        release: str) -> None:
    rp = load(str(FIXTURES / release / "pool-quota"))
    incs = rp.outcome.incidents
    inc = incs[0]
    assert inc.id == "POOL_QUOTA_CAUSE pool rbd", [i.id for i in incs]
    assert inc.severity == Severity.CRIT
    f = inc.root
    assert f.evidence["quota"] == {"max_objects": 4} and f.evidence["use"]["max_objects"] == 4
    assert "max_objects 4 with 4 objects in it (100%)" in f.message, f.message
    assert "`ceph osd pool set-quota rbd max_objects 0`" in f.message
    assert inc.next_step is not None and inc.next_step.command == "stordoc fix quota-restore rbd"
    # Ceph's POOL_FULL (running out of quota) and stordoc's POOL_NEAR_FULL of the pool are
    # in it, and in no other incident
    assert "POOL_FULL" in _ceph_codes(inc.consequences)
    assert "POOL_NEAR_FULL" in {c.code for c in inc.consequences}
    for i in incs[1:]:
        assert not _ceph_codes(i.findings) & set(FULL_CODES), i.id
        assert "POOL_NEAR_FULL" not in {c.code for c in i.findings}, i.id
        assert "POOL_QUOTA_CAUSE" not in {c.code for c in i.findings}, i.id


@pytest.mark.parametrize("release", RELEASES)
def test_quota_restore_puts_back_the_value_the_osdmap_history_shows(release: str) -> None:
    """The check read the osdmap history with the snapshot (quota_history.json): the
    pool had no quota before, so the plan sets 0, naming the epoch."""
    rp = load(str(FIXTURES / release / "pool-quota"))
    ceph = rp.outcome.snapshot.ceph
    assert ceph is not None
    prev = ceph.quota_history["rbd"]["max_objects"]
    assert prev.value == 0 and prev.epoch is not None and prev.epoch < ceph.epoch
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    plan = plan_from_snapshot(ctx, rp.outcome.snapshot, "quota-restore", "rbd")
    assert [s.command for s in plan.steps][0] == "ceph osd pool set-quota rbd max_objects 0"
    assert f"osdmap epoch {prev.epoch}, no quota" in plan.steps[0].title
    assert plan.before_after["pool rbd quota max_objects"] == (4, 0)


def _history(d: Path, value: Any) -> None:
    """The snapshot's quota_history.json: None = the check read none (a snapshot saved
    before it, or none asked)."""
    (d / "ceph" / "quota_history.json").write_text(json.dumps(value or {}))


@pytest.mark.parametrize("history,match", [
    (None, r"previous max_objects quota of pool rbd is unknown \(the osdmap history"),
    ({"rbd": {"max_objects": {"why": "the osdmap history stops at epoch 9 (trimmed)"}}},
     r"unknown \(the osdmap history stops at epoch 9 \(trimmed\)\)"),
    ({"rbd": {"max_objects": {"value": 3, "epoch": 9}}},
     r"previous max_objects quota of pool rbd, 3 \(osdmap epoch 9\), is itself at or near"),
])
def test_quota_restore_refuses_when_it_cannot_tell_a_good_previous_value(
        tmp_path: Path, history: Any, match: str) -> None:
    """Offline with no history read, history trimmed, or a previous value itself under
    the use: refused, with the command that removes the quota by hand."""
    d = tmp_path / "q"
    shutil.copytree(FIXTURES / "pacific" / "pool-quota", d)
    _history(d, history)
    rp = load(str(d))
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    with pytest.raises(Refused, match=match) as e:
        plan_from_snapshot(ctx, rp.outcome.snapshot, "quota-restore", "rbd")
    if "unknown" in match:
        assert "`ceph osd pool set-quota rbd max_objects 0` removes it" in str(e.value)


def _dump(epoch: int, quotas: dict[str, int] | None) -> dict[str, Any]:
    pools = [] if quotas is None else [{"pool": 2, "pool_name": "rbd",
                                        **{f"quota_{k}": v for k, v in quotas.items()}}]
    return {"epoch": epoch, "pools": pools}


@pytest.mark.parametrize("maps,want", [
    # set at epoch 50 from 0: 0 at epoch 49
    ({49: {"max_objects": 0, "max_bytes": 0}}, {"value": 0, "epoch": 49}),
    # raised from 10 long ago, unchanged since
    ({**{e: {"max_objects": 4, "max_bytes": 0} for e in range(40, 50)},
      39: {"max_objects": 10, "max_bytes": 0}}, {"value": 10, "epoch": 39}),
    # the monitor trimmed epoch 47 and older
    ({49: {"max_objects": 4, "max_bytes": 0}, 48: {"max_objects": 4, "max_bytes": 0}},
     {"why": "the osdmap history stops at epoch 48 (trimmed)"}),
    # the pool was created at epoch 49 with the quota
    ({49: {"max_objects": 4, "max_bytes": 0}, 48: None},
     {"why": "pool rbd has had it since it was created (epoch 49)"}),
])
def test_the_quota_history_finds_the_last_epoch_it_differed(
        maps: dict[int, dict[str, int] | None], want: dict[str, Any]) -> None:
    from storage.ceph.quota_history import read_quota_history

    asked: list[int] = []

    def ask(epoch: int) -> tuple[bool, Any]:
        asked.append(epoch)
        if epoch not in maps:
            return False, None
        return True, _dump(epoch, maps[epoch])

    got = read_quota_history(f"fsid-{id(maps)}", 50, {"rbd": {"max_objects": 4,
                                                             "max_bytes": 0}}, ask)
    assert got == {"rbd": {"max_objects": want}}
    assert asked == sorted(asked, reverse=True) and asked[0] == 49  # newest first, each once


def test_quota_restore_refuses_a_pool_without_a_quota_at_its_use() -> None:
    rp = load(str(FIXTURES / "pacific" / "healthy"))
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    with pytest.raises(Refused, match="nothing to put back"):
        plan_from_snapshot(ctx, rp.outcome.snapshot, "quota-restore", "rbd")
    with pytest.raises(Refused, match="does not exist"):
        plan_from_snapshot(ctx, rp.outcome.snapshot, "quota-restore", "nosuchpool")
    assert runbook_for_code("POOL_QUOTA_CAUSE") == "quota-restore"


@pytest.mark.parametrize("release", RELEASES)
def test_a_pool_near_its_quota_is_the_quotas_warning_not_the_cluster_filling(
        release: str) -> None:
    """pool-quota-near: 4 objects under max_objects 6, Ceph warning at 50% of a quota
    (mon_pool_quota_warn_threshold): Ceph's POOL_NEAR_FULL ("has 4 objects (max 6)") is
    the quota's, WARN, with quota-restore; no other incident says it."""
    rp = load(str(FIXTURES / release / "pool-quota-near"))
    [inc] = rp.outcome.incidents
    assert inc.id == "POOL_QUOTA_CAUSE pool rbd" and inc.severity == Severity.WARN
    assert "max_objects 6 with 4 objects in it (67%)" in inc.root.message
    assert _ceph_codes(inc.consequences) == {"POOL_NEAR_FULL"}
    assert inc.next_step is not None and inc.next_step.command == "stordoc fix quota-restore rbd"
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    plan = plan_from_snapshot(ctx, rp.outcome.snapshot, "quota-restore", "rbd")
    assert plan.steps[0].command == "ceph osd pool set-quota rbd max_objects 0"


@pytest.mark.parametrize("release", RELEASES)
def test_pgs_that_cannot_recover_onto_full_osds_join_the_lowered_ratio_not_the_out_osd(
        release: str) -> None:
    """cluster-full-out: the ratios under the fill and osd.3 out; its PGs' objects wait
    for space on the full OSDs (Ceph's PG_RECOVERY_FULL, recovery_toofull): the ratio's
    incident, CRIT, first; the OSD out is its own incident (osd-in) with the degraded
    PGs, and no full code."""
    incs = load(str(FIXTURES / release / "cluster-full-out")).outcome.incidents
    assert [i.id for i in incs] == ["FULL_RATIO_LOWERED cluster lab full ratios",
                                    "OSD_UP_OUT osd.3"]
    ratio, out = incs
    assert {"PG_RECOVERY_FULL", "OSD_FULL", "POOL_FULL"} <= _ceph_codes(ratio.consequences)
    assert ratio.severity == Severity.CRIT
    assert ratio.next_step is not None and \
        ratio.next_step.command == "stordoc fix ratio-restore lab"
    assert not _ceph_codes(out.findings) & set(FULL_CODES), out.id
    assert out.next_step is not None and out.next_step.command == "stordoc fix osd-in osd.3"
