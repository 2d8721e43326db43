"""Issue 38: an osdmap flag is one problem, printed by the name Ceph takes.

``osd dump`` spells ``ceph osd set pause`` as two bits, ``pauserd,pausewr``; Ceph refuses
``ceph osd unset pauserd`` (EINVAL). A saved lab snapshot with both bits set (and Ceph's
own OSDMAP_FLAGS "pauserd,pausewr flag(s) set") is one incident whose next step is
``stordoc fix flag-unset pause``; the runbook plans ``ceph osd unset pause`` and refuses
what it must not unset."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from core.service.snapshots import Replay, load
from runbooks.model import InvalidRequest, Refused, RunContext
from runbooks.planning import plan_from_snapshot
from storage.journal import Journal
from storage.model import ClusterSnapshot, HeldChange, RecentRun
from storage.targets import CephTarget, ClusterTarget, HostTarget
from tests.support.fixture_snapshots import FIXTURES

HOSTS = tuple(HostTarget(f"node{i}", f"127.0.0.{i + 1}") for i in range(1, 5))
# the flags `ceph osd unset x` lists in its EINVAL (Pacific and Reef)
CEPH_TAKES = ("full|pause|noup|nodown|noout|noin|nobackfill|norebalance|norecover|noscrub|"
              "nodeep-scrub|notieragent|nosnaptrim|pglog_hardlimit").split("|")


def _with_flags(tmp: Path, flags: list[str], release: str = "pacific") -> Replay:
    """The saved healthy lab snapshot, with ``flags`` set in osd dump and Ceph's own
    OSDMAP_FLAGS in health detail, as Ceph reports them."""
    d = tmp / "snap"
    shutil.copytree(FIXTURES / release / "healthy", d)
    p = d / "ceph" / "osd_dump.json"
    dump = json.loads(p.read_text())
    dump["flags"] = ",".join([dump["flags"], *flags])
    dump["flags_set"] = sorted([*dump["flags_set"], *flags])
    p.write_text(json.dumps(dump))
    p = d / "ceph" / "health_detail.json"
    hd = json.loads(p.read_text())
    hd["status"] = "HEALTH_WARN"
    hd["checks"]["OSDMAP_FLAGS"] = {
        "severity": "HEALTH_WARN", "muted": False, "detail": [],
        "summary": {"message": f"{','.join(flags)} flag(s) set", "count": len(flags)}}
    p.write_text(json.dumps(hd))
    return load(str(d))


@pytest.fixture
def ctx(tmp_path: Path) -> RunContext:
    return RunContext("lab", ClusterTarget("lab", ceph=CephTarget("/x/ceph.conf"),
                                           hosts=HOSTS), Journal(str(tmp_path / "j.db")))


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_pause_is_one_incident_whose_next_step_unsets_pause(tmp_path: Path,
                                                            release: str) -> None:
    rp = _with_flags(tmp_path, ["pauserd", "pausewr"], release)
    incs = rp.outcome.incidents
    assert len(incs) == 1, [i.headline for i in incs]
    [inc] = incs
    assert inc.root.code == "OSDMAP_FLAGS" and inc.root.entity == "cluster lab flag pause"
    assert {(f.code, f.entity) for f in inc.findings} == {
        ("OSDMAP_FLAGS", "cluster lab flag pause"), ("CEPH_HEALTH", "ceph OSDMAP_FLAGS")}
    assert inc.next_step is not None
    assert inc.next_step.command == "stordoc fix flag-unset pause"
    assert "ceph osd unset pause" in inc.root.message
    # every word printed: no flag name Ceph refuses in a command
    for f in rp.outcome.report.findings:
        assert "unset pauserd" not in f.message and "unset pausewr" not in f.message


def test_every_flag_finding_names_a_flag_ceph_takes(tmp_path: Path) -> None:
    rp = _with_flags(tmp_path, ["noout", "norecover", "pauserd", "pausewr"])
    fs = [f for f in rp.outcome.report.findings if f.code == "OSDMAP_FLAGS"]
    assert sorted(f.evidence["flag"] for f in fs) == ["noout", "norecover", "pause"]
    for f in fs:
        assert f.evidence["flag"] in CEPH_TAKES
        assert (f.runbook, f.target) == ("flag-unset", f.evidence["flag"])
    steps = sorted(i.next_step.command for i in rp.outcome.incidents if i.next_step)
    assert steps == ["stordoc fix flag-unset noout", "stordoc fix flag-unset norecover",
                     "stordoc fix flag-unset pause"]


@pytest.mark.parametrize("spelt", ["pause", "pauserd", "PAUSEWR"])
def test_flag_unset_plan(tmp_path: Path, ctx: RunContext, spelt: str) -> None:
    snap = _with_flags(tmp_path, ["pauserd", "pausewr"]).outcome.snapshot
    p = plan_from_snapshot(ctx, snap, "flag-unset", spelt)
    assert p.target == "pause"
    assert [s.command for s in p.steps] == ["ceph osd unset pause"]
    assert p.params["osdmap_flags"] == ["pauserd", "pausewr"]
    assert p.verify_codes == ("OSDMAP_FLAGS",)
    assert p.verify_entities == ("cluster lab flag pause",)
    assert p.locks == ("flag pause",)
    before, after = p.before_after["osdmap flags"]
    assert "pauserd" in before and "pause" not in after


def _snap(tmp_path: Path, flags: list[str]) -> ClusterSnapshot:
    return _with_flags(tmp_path, flags).outcome.snapshot


def test_flag_unset_refuses_a_flag_that_is_not_set(tmp_path: Path, ctx: RunContext) -> None:
    snap = _snap(tmp_path, ["noout"])
    with pytest.raises(Refused, match="pause is not set on cluster lab"):
        plan_from_snapshot(ctx, snap, "flag-unset", "pause")


@pytest.mark.parametrize("name,msg", [
    ("pauserdx", "not a flag ceph osd unset takes"),
    ("sortbitwise", "not a flag ceph osd unset takes"),
    ("noot", "did you mean noout"),
])
def test_flag_unset_refuses_a_name_ceph_does_not_take(tmp_path: Path, ctx: RunContext,
                                                      name: str, msg: str) -> None:
    snap = _snap(tmp_path, ["noout"])
    with pytest.raises(InvalidRequest, match=msg):
        plan_from_snapshot(ctx, snap, "flag-unset", name)


def test_flag_unset_refuses_a_feature_bit(tmp_path: Path, ctx: RunContext) -> None:
    with pytest.raises(Refused, match="feature bit"):
        plan_from_snapshot(ctx, _snap(tmp_path, ["noout"]), "flag-unset", "pglog_hardlimit")


def test_flag_unset_refuses_noout_of_a_maintenance_window(tmp_path: Path,
                                                          ctx: RunContext) -> None:
    snap = _snap(tmp_path, ["noout"])
    assert snap.ceph is not None
    o = next(o for o in snap.ceph.osds if o.host)
    ch = HeldChange(7, "lab", "osd-flag", "noout", (o.name,), None, None,
                    snap.taken_at + 3600, "alice", snap.taken_at - 60, None, "held",
                    f"maintenance of host {o.host}")
    with pytest.raises(Refused, match=f"stordoc fix maintenance-end {o.host}"):
        plan_from_snapshot(ctx, replace(snap, changes=(ch,)), "flag-unset", "noout")
    # the window's own noout, on its OSDs only (set-group), is not a cluster flag
    osds = tuple(replace(x, state=(*x.state, "noout")) if x.id == o.id else x
                 for x in snap.ceph.osds)
    only_group = replace(snap, ceph=replace(snap.ceph, flags=tuple(
        f for f in snap.ceph.flags if f != "noout"), osds=osds), changes=(ch,))
    with pytest.raises(Refused, match=f"only on {o.name} .*maintenance-end"):
        plan_from_snapshot(ctx, only_group, "flag-unset", "noout")
    # the incident does not offer what would refuse: maintenance-end owns it
    assert plan_from_snapshot(ctx, replace(snap, changes=()), "flag-unset", "noout")


def test_flag_unset_refuses_a_flag_a_running_fix_holds(tmp_path: Path,
                                                       ctx: RunContext) -> None:
    snap = _snap(tmp_path, ["noout"])
    run = RecentRun(3, "osd-start", "osd.1", snap.taken_at - 30, None, "running",
                    ("noout",), ("noout",))
    with pytest.raises(Refused, match="held by stordoc run #3 osd-start osd.1"):
        plan_from_snapshot(ctx, replace(snap, runs=(run,)), "flag-unset", "noout")
