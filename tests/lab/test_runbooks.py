"""Runbooks on the real lab where more than the `next:` line is at stake: a plan gone
stale before its confirmation, a real mid-way failure (a wrong OSD start command in the
settings), locks and confirmation, the ring rebalance (plan-only until applied, its
distribution), and the benchmark after a fix. Every runbook repairing its own fault
through the CLI, on both releases: tests/lab/test_scenarios.py; the plans themselves on
snapshots: tests/unit/test_replay_plans.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pytest

from checks.model import Finding
from core.env import Env
from core.exitstatus import ExitStatus
from core.service import Service
from lab import Lab
from runbooks.api import Plan, Refused, RunContext, RunEvent, execute, plan
from storage.audit import Audit
from tests.support.broken import break_until_teardown
from tests.support.cli import cli
from tests.support.poll import wait_until


@pytest.fixture
def ctx(env: Env) -> RunContext:
    c = env.run_context("lab", source="test")
    c.verify_timeout_s = 90
    return c


def health(lab: Lab) -> str:
    h = lab.ceph_cluster.ask("health")  # librados: a poll of 0.02 s of CPU, not a CLI's 0.45
    return str(h.get("status") if isinstance(h, dict) else h)


def wait_health(lab: Lab, want: str, timeout: float = 120) -> None:
    wait_until(lambda: health(lab) == want, timeout, f"ceph health {want}", 0.5)


def state(lab: Lab) -> dict[str, Any]:
    """What a plan must not change: OSD states and flags, pools, mounts, ring files."""
    dump = lab.ceph("osd", "dump")
    pools = lab.ceph("osd", "pool", "ls", "detail")
    keep = ("pool_name", "pg_num", "pg_placement_num", "pg_num_target",
            "pg_placement_num_target", "size",
            "cache_mode", "target_max_bytes", "target_max_objects",
            "cache_target_dirty_ratio_micro", "cache_target_dirty_high_ratio_micro",
            "cache_target_full_ratio_micro", "hit_set_params", "hit_set_count",
            "hit_set_period")
    with open("/proc/self/mounts") as f:
        mounts = sorted(ln.split()[1] for ln in f if str(lab.base) in ln)
    files = {}
    for p in sorted(lab.swift_etc.glob("*")):
        if p.is_file():
            files[p.name] = hashlib.md5(p.read_bytes()).hexdigest()
    return {
        "flags": dump.get("flags"),
        "osds": [(o["osd"], o["up"], o["in"], o["weight"], tuple(o["state"]))
                 for o in dump["osds"]],
        "pools": [{k: p.get(k) for k in keep} for p in pools],
        "mounts": mounts, "swift": files,
    }


def findings(env: Env, codes: tuple[str, ...] | None = None) -> list[Finding]:
    out = Service(env).check("lab", "test", only=codes)
    return list(out.report.findings)


def find(env: Env, code: str, target: str) -> Finding | None:
    return next((f for f in findings(env, (code,)) if f.target == target), None)


def plan_unchanged(lab: Lab, ctx: RunContext, runbook: str, target: str,
                   options: dict[str, Any] | None = None) -> Plan:
    before = state(lab)
    p = plan(ctx, runbook, target, options)
    assert state(lab) == before, "planning changed the cluster"
    assert p.steps and all(s.command for s in p.steps)
    return p


def run_ok(ctx: RunContext, p: Plan) -> tuple[Any, list[RunEvent]]:
    events: list[RunEvent] = []
    res = execute(ctx, p, confirmed_by="tester", on_event=events.append)
    assert res.outcome == "success", res.message
    assert res.verified is True and not res.not_done
    kinds = [e.kind for e in events]
    assert kinds[0] == "plan" and kinds[-1] == "done"
    assert "verify_started" in kinds and "verify_done" in kinds
    assert kinds.count("step_done") == len(p.steps)
    audit = Audit(ctx.journal)
    run = audit.run(res.run_id)
    assert run is not None and run.outcome == "success" and run.user == ctx.user
    assert run.confirmed_by == "tester"
    steps = audit.steps(res.run_id)
    assert [s.command for s in steps] == [s.command for s in p.steps]
    assert all(s.status == "done" and s.rc == 0 for s in steps)
    assert audit.locks("lab") == []
    return res, events


def flags(lab: Lab) -> list[str]:
    return str(lab.ceph("osd", "dump").get("flags", "")).split(",")


# ------------------------------------------------------------------ OSD runbooks


@pytest.mark.on_reef
def test_a_plan_gone_stale_is_refused_under_the_lock(lab: Lab, ctx: RunContext,
                                                     request: pytest.FixtureRequest) -> None:
    """Planned while osd.2 was out, fixed by someone else before the confirmation: the
    run re-plans under the lock, finds another plan and runs nothing."""
    request.addfinalizer(lambda: lab.ceph("osd", "in", "2", check=False))
    lab.ceph("osd", "out", "2")
    p = plan(ctx, "osd-in", "osd.2")
    assert [s.command for s in p.steps] == ["ceph osd in 2"]
    lab.ceph("osd", "in", "2")
    with pytest.raises(Refused, match="changed since the plan"):
        execute(ctx, p, confirmed_by="tester")
    assert Audit(ctx.journal).locks("lab") == []


@pytest.mark.on_reef
def test_failed_start_stops_reports_audits_and_clears_noout(
        lab: Lab, env: Env, ctx: RunContext, request: pytest.FixtureRequest) -> None:
    wait_health(lab, "HEALTH_OK")
    break_until_teardown(request, lab, "osd-unmounted", osd=1, out=True)
    bad_hosts = tuple(dataclasses.replace(h, osd_start=("ceph-osd", "-c",
                                                         "/nonexistent/ceph.conf", "-i",
                                                         "{id}"))
                      for h in ctx.target.hosts)
    bad = dataclasses.replace(ctx, target=dataclasses.replace(ctx.target, hosts=bad_hosts))
    p = plan(bad, "osd-remount", "osd.1")
    assert "/nonexistent/ceph.conf" in p.steps[2].command
    res = execute(bad, p, confirmed_by="tester")
    assert res.outcome == "failed"
    assert "step 3" in res.message and "Not done" in res.message
    assert res.done == ("1. set noout for the duration",
                        f"2. mount {p.params['device']} on {p.params['data_dir']}",
                        "6. clear noout")
    assert res.not_done == ("3. start the osd.1 daemon", "4. wait until osd.1 is up",
                            "5. mark osd.1 in (it was out)")
    assert "noout" not in flags(lab)
    assert lab.osd_up(1) is False
    audit = Audit(ctx.journal)
    run = audit.run(res.run_id)
    assert run is not None and run.outcome == "failed"
    st = {s.idx: s for s in audit.steps(res.run_id)}
    assert st[3].status == "failed" and st[3].rc not in (0, None)
    assert st[6].status == "done" and 4 not in st and 5 not in st
    assert audit.locks("lab") == []


# ------------------------------------------------------------------ refusals


@pytest.mark.on_reef
def test_refusals_unknown_osd_lock_held_stale_lock_and_no_confirmation(
        lab: Lab, env: Env, ctx: RunContext, cfg: Path,
        request: pytest.FixtureRequest) -> None:
    """(Plans refused on a snapshot, an unknown OSD or a hostile name among them:
    tests/unit/test_replay_plans.py.) Here what needs the running lab: the CLI's
    refusal, and the locks and confirmation around a real run that never starts."""
    r = cli(cfg, "plan", "osd-in", "osd.42")
    assert r.returncode == ExitStatus.REFUSED and "osd.42 does not exist" in r.stderr
    assert "Traceback" not in r.stderr

    break_until_teardown(request, lab, "osd-unmounted", osd=1)
    before = state(lab)
    # no confirmation, no terminal: refused, nothing run
    r = cli(cfg, "fix", "osd-remount", "osd.1")
    assert r.returncode == 64 and "not confirmed" in r.stderr
    assert "$ ceph osd set noout" in r.stdout
    # a live lock held by someone else (this test process)
    p = plan(ctx, "osd-remount", "osd.1")
    audit = Audit(ctx.journal)
    lid = audit.acquire("lab", "osd.1", "alice", "osd-remount osd.1")
    with pytest.raises(Refused, match="locked by alice"):
        execute(ctx, p, confirmed_by="tester")
    assert state(lab) == before
    assert [lk.target for lk in audit.locks("lab")] == ["osd.1"]  # other lock untouched
    r = cli(cfg, "locks", "--clear", "osd.1")
    assert r.returncode == ExitStatus.REFUSED and "still running" in r.stderr
    audit.release(lid)
    # a stale lock: held by a process of another host for longer than a run takes (a
    # lock whose process is gone from this host is taken over instead: the unit tests
    # test_execute_locks/test_runbook_audit kill a real holder; here nothing may run)
    old = audit.acquire("lab", "osd.1", "bob", "osd-remount osd.1")
    with ctx.journal.lock:
        ctx.journal.db.conn.execute(
            "update runbook_locks set host = ?, since = since - ? where id = ?",
            ["another-host", audit.stale_after_s + 60, old])
    assert [lk.target for lk in audit.stale_locks("lab")] == ["osd.1"]
    with pytest.raises(Refused, match="stale"):
        execute(ctx, p, confirmed_by="tester")
    r = cli(cfg, "locks")
    assert "stale" in r.stdout
    r = cli(cfg, "locks", "--clear", "osd.1")
    assert r.returncode == 0, r.stderr
    assert audit.locks("lab") == []
    assert state(lab) == before


@pytest.mark.release
def test_swift_ring_rebalance(lab: Lab, env: Env, ctx: RunContext,
                              request: pytest.FixtureRequest) -> None:
    break_until_teardown(request, lab, "swift-ring-bad", mode="drift")
    fixable = [f for f in findings(env) if f.runbook == "swift-ring-rebalance"]
    assert any(f.target == "object" for f in fixable), fixable
    builder = lab.swift_etc / "object.builder"
    ring = lab.swift_etc / "object.ring.gz"
    p = plan_unchanged(lab, ctx, "swift-ring-rebalance", "object")
    assert "balance %" in p.before_after and "dispersion %" in p.before_after
    with pytest.raises(Refused, match="plan-only"):
        execute(ctx, p, confirmed_by="tester")
    pa = plan(ctx, "swift-ring-rebalance", "object", {"apply": True})
    if pa.params["min_part_seconds_left"] > 0:
        with pytest.raises(Refused, match="min_part_hours"):
            execute(ctx, pa, confirmed_by="tester")
        subprocess.run(["swift-ring-builder", str(builder), "pretend_min_part_hours_passed"],
                       check=True, capture_output=True)
        pa = plan(ctx, "swift-ring-rebalance", "object", {"apply": True})
    ring_md5 = hashlib.md5(ring.read_bytes()).hexdigest()
    # the distribution step: one copy per host, then recon must report it everywhere
    assert [s.where for s in pa.steps if s.title.startswith("copy object.ring.gz")] == \
        ["node1", "node2", "node3"]
    run_ok(ctx, pa)
    new_md5 = hashlib.md5(ring.read_bytes()).hexdigest()
    assert new_md5 != ring_md5
    for kind in ("object", "container", "account"):  # every server's own swift_dir
        assert hashlib.md5((lab.ring_dir(kind) / "object.ring.gz").read_bytes()
                           ).hexdigest() == new_md5
    backups = list((lab.swift_etc / "backups").glob("*.object.builder"))
    assert backups and any((lab.swift_etc / "backups").glob("*.object.ring.gz"))
    assert not [f for f in findings(env) if f.target == "object"
                and f.code in pa.verify_codes]


@pytest.mark.on_reef
def test_bench_after_fix_adds_its_verdict_to_the_result(lab: Lab, env: Env,
                                                         ctx: RunContext) -> None:
    """With [runbooks] bench_after_fix = "rados", a verified fix runs a quick benchmark
    and its verdict joins the result, the events and the audit."""
    wait_health(lab, "HEALTH_OK")
    bctx = dataclasses.replace(ctx, bench_after_fix="rados",
                               bench_limits={"max_duration_s": 30})
    lab.ceph("osd", "out", "2")
    p = plan(bctx, "osd-in", "osd.2")
    events: list[RunEvent] = []
    res = execute(bctx, p, confirmed_by="tester", on_event=events.append)
    assert res.outcome == "success"
    assert res.bench is not None and res.bench["ran"] is True, res.bench
    assert res.bench["verdict"] in {"faster", "slower", "no significant change",
                                    "inconclusive"}
    assert "benchmark after the fix" in res.message
    assert [e for e in events if e.kind == "bench"]
    run = Audit(bctx.journal).run(res.run_id)
    assert run is not None and run.verify["bench"]["ran"] is True
    assert Audit(bctx.journal).locks("lab") == []
    wait_health(lab, "HEALTH_OK")
