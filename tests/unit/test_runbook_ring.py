"""swift-ring-rebalance on a real builder in a temp swift_dir (python-swift's RingBuilder):
plan-only by default, min_part_hours refusal, cancel before the first step, and an
applied rebalance that writes a backup and the ring."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest
from swift.common.ring.builder import RingBuilder

from runbooks.api import Refused, RunContext, RunEvent, execute, plan_from_snapshot
from storage.audit import Audit
from storage.journal import Journal
from storage.model import ClusterSnapshot, SwiftState
from storage.swift import read_ring
from storage.targets import ClusterTarget, SwiftTarget


def make_ring(d: Path, min_part_hours: int) -> None:
    b = RingBuilder(8, 3, min_part_hours)
    for i in range(4):
        b.add_dev({"id": i, "region": 1, "zone": i + 1, "ip": f"127.0.0.{i + 2}",
                   "port": 6200, "device": f"d{i + 1}", "weight": 100})
    b.rebalance(seed=1)
    b.save(str(d / "object.builder"))
    b.get_ring().save(str(d / "object.ring.gz"))
    # drift: the builder changes, the ring is not written
    b.set_dev_weight(3, 50)
    b.save(str(d / "object.builder"))


def setup(tmp_path: Path, min_part_hours: int) -> tuple[RunContext, ClusterSnapshot, Path]:
    d = tmp_path / "swift"
    d.mkdir()
    make_ring(d, min_part_hours)
    target = ClusterTarget("lab", swift=SwiftTarget(swift_dir=str(d)))
    ctx = RunContext("lab", target, Journal(tmp_path / "journal.db"), user="tester")
    snap = ClusterSnapshot("lab", 0.0, swift=SwiftState(rings=(read_ring(str(d), "object"),),
                                                         recon=()))
    return ctx, snap, d


def md5(p: Path) -> str:
    return hashlib.md5(p.read_bytes()).hexdigest()


def test_plan_only_by_default_and_min_part_hours(tmp_path: Path) -> None:
    ctx, snap, d = setup(tmp_path, min_part_hours=1)
    before = (md5(d / "object.builder"), md5(d / "object.ring.gz"))
    p = plan_from_snapshot(ctx, snap, "swift-ring-rebalance", "object")
    assert (md5(d / "object.builder"), md5(d / "object.ring.gz")) == before
    # inside min_part_hours the builder may not move a partition: the plan says so
    assert p.before_after["partitions moved"] == (0, 0)
    assert p.params["min_part_seconds_left"] > 0
    assert any("min_part_hours" in w for w in p.warnings)
    with pytest.raises(Refused, match="plan-only"):
        execute(ctx, p, confirmed_by="tester")
    pa = plan_from_snapshot(ctx, snap, "swift-ring-rebalance", "object", {"apply": True})
    with pytest.raises(Refused, match="inside min_part_hours"):
        execute(ctx, pa, confirmed_by="tester")
    with pytest.raises(Refused, match="not confirmed"):
        execute(ctx, pa, confirmed_by="")
    with pytest.raises(Refused, match="not a ring kind"):
        plan_from_snapshot(ctx, snap, "swift-ring-rebalance", "../../etc/passwd")
    assert (md5(d / "object.builder"), md5(d / "object.ring.gz")) == before
    assert not (d / "backups").exists()


def test_cancel_before_the_first_step_runs_nothing(tmp_path: Path) -> None:
    ctx, snap, d = setup(tmp_path, min_part_hours=0)
    before = (md5(d / "object.builder"), md5(d / "object.ring.gz"))
    pa = plan_from_snapshot(ctx, snap, "swift-ring-rebalance", "object", {"apply": True})
    cancel = threading.Event()
    cancel.set()
    events: list[RunEvent] = []
    res = execute(ctx, pa, confirmed_by="tester", on_event=events.append, cancel=cancel)
    assert res.outcome == "cancelled" and res.done == () and len(res.not_done) == 2
    assert [e.kind for e in events] == ["plan", "cancelled", "done"]
    assert (md5(d / "object.builder"), md5(d / "object.ring.gz")) == before
    audit = Audit(ctx.journal)
    run = audit.run(res.run_id)
    assert run is not None and run.outcome == "cancelled" and audit.steps(res.run_id) == []
    assert audit.locks() == []


def test_apply_writes_backup_and_ring(tmp_path: Path) -> None:
    ctx, snap, d = setup(tmp_path, min_part_hours=0)
    old_builder, old_ring = md5(d / "object.builder"), md5(d / "object.ring.gz")
    pa = plan_from_snapshot(ctx, snap, "swift-ring-rebalance", "object", {"apply": True})
    assert pa.before_after["partitions moved"][1] > 0
    assert pa.before_after["balance %"][1] < pa.before_after["balance %"][0]
    # run only the steps (the verification needs a live cluster): a plan whose verify
    # codes are empty verifies against nothing, so check the files directly instead
    from runbooks.api import _run_step
    from runbooks.model import StepEnv
    from storage.runner import DryRunRecorder

    env = StepEnv(ctx, DryRunRecorder())
    for s in pa.steps:
        status, rc, out, err = _run_step(env, s, threading.Event())
        assert (status, rc) == ("done", 0), err
    backups = sorted(p.name for p in (d / "backups").iterdir())
    assert len(backups) == 2 and backups[0].endswith(".object.builder")
    bdir = d / "backups"
    assert md5(bdir / backups[0]) == old_builder and md5(bdir / backups[1]) == old_ring
    assert md5(d / "object.ring.gz") != old_ring
    after = read_ring(str(d), "object")
    assert after.builder_matches_ring is not False
    assert {dev.device: dev.weight for dev in after.devices}["d4"] == 50
    # the builder changed under a stale plan: the apply step refuses to write
    pa2 = plan_from_snapshot(ctx, snap, "swift-ring-rebalance", "object", {"apply": True})
    b = RingBuilder.load(str(d / "object.builder"))
    b.set_dev_weight(0, 80)
    b.save(str(d / "object.builder"))
    status, _, _, err = _run_step(env, pa2.steps[1], threading.Event())
    assert status == "failed" and "changed since the plan" in err
