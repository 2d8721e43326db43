"""Benchmarks on the real lab: each workload briefly, checked against the stock tool run in
the same test, cleanup, refusals (unhealthy cluster, the lock), and the verdict on a real
slowdown versus an unchanged cluster. Runs are kept short: the machine is shared."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(300)

from lab import Lab
from runbooks.bench import api
from runbooks.bench.api import BenchOptions, Refused
from runbooks.bench.measure import steady_state
from storage.rados_io import RadosIO, parse_rados_bench, rados_bench_argv
from tests.support.cli import cli
from tests.support.labtools import config_with_journal, wait_osds_up_pgs_clean
from tests.support.poll import wait_until

POOL = "labtest-bench"  # named in the tests' settings: used as it is, never removed


@pytest.fixture(scope="module")
def named_pool(lab: Lab) -> Any:
    """A pool the settings name ([bench] pool), made by the test (not by stordoc)."""
    t = _ceph_target(lab)
    with RadosIO(t) as io:
        io.ensure_pool(POOL, wait_s=120)
    yield POOL
    with RadosIO(t) as io:
        io.delete_pool(POOL)


def _ceph_target(lab: Lab) -> Any:
    from core.env import Env
    from core.settings import load_settings

    e = Env(load_settings(lab.config_path))
    try:
        return e.run_context(None, source="test").target.ceph
    finally:
        e.close()


def _pools(ctx: Any) -> list[str]:
    with RadosIO(ctx.target.ceph) as io:
        return sorted(io.cluster.list_pools())



@pytest.fixture
def ctx(env: Any, lab: Lab, named_pool: str) -> Any:
    c = env.run_context(None, source="test")
    c.bench_limits = {**c.bench_limits, "pool": named_pool}

    wait_osds_up_pgs_clean(c.target.ceph, lab.n_osds)  # a fresh lab is still peering
    return c


def _bench_objects(ctx: Any) -> list[str]:
    with RadosIO(ctx.target.ceph) as io:
        if not io.pool_exists(POOL):
            return []
        ioctx = io.cluster.open_ioctx(POOL)
        try:
            return [o.key for o in ioctx.list_objects()
                    if o.key.startswith(("stordoc_bench_", "benchmark_data", "stordoc_rb_"))]
        finally:
            ioctx.close()


@pytest.mark.release
def test_rados_native_consistent_with_rados_bench_and_cleans_up(lab: Lab, ctx: Any) -> None:
    o = BenchOptions(modes=("write", "seq", "rand"), duration_s=3, size=4 * 2**20,
                     concurrency=16)
    rep = api.run_bench(ctx, "rados", o)
    assert rep.status == "ok", rep.message
    by = {r.workload: r for r in rep.results}
    assert set(by) == {"write", "seq", "rand"}
    w = by["write"]
    assert w.ops > 0 and w.errors == 0 and all(r.id for r in rep.results)
    assert w.lat_p50_ms <= w.lat_p99_ms <= w.lat_max_ms
    # Little's law: ops in flight = ops_s x avg latency, at most the 16 asked for (our
    # bookkeeping is coherent); a CPU-starved client resubmits late, so fewer may be in
    # flight on a loaded machine (CI saw 12), never more, never a handful
    in_flight = w.ops_s * w.lat_avg_ms / 1000
    assert 0.4 * 16 <= in_flight <= 1.25 * 16, (in_flight, w.ops_s, w.lat_avg_ms)
    assert w.state["num_osds"] == lab.n_osds and w.state["versions"]
    # per-OSD latency sampled from the manager while the phase ran (`ceph osd perf`)
    ol = w.extra["osd_latency"]
    assert set(ol["osds"]) == {str(i) for i in range(lab.n_osds)}
    assert 1 <= ol["samples"] <= w.duration_s / ol["interval_s"] + 2
    assert all(0 <= v["commit_avg_ms"] <= v["commit_max_ms"] for v in ol["osds"].values())
    # whether throughput settled, judged on the run's own per-second series
    assert w.extra["steady_state"] == steady_state(w.series)
    assert any(line.startswith("write rep 1: steady state:") for line in api.detail_lines(w))
    assert _bench_objects(ctx) == []
    # the stock tool, same pool and parameters, right after
    t = ctx.target.ceph
    p = subprocess.run(rados_bench_argv(t, POOL, 3, "write", 16, 4 * 2**20, "lab_test_rb",
                                        no_cleanup=False), capture_output=True, text=True,
                       timeout=120, check=False)
    out = parse_rados_bench(p.stdout)
    assert p.returncode == 0 and out.complete, p.stdout + p.stderr
    # the two run one after the other on a shared 2-core machine whose load changes
    # between them (CI saw 0.47): within a factor of 3, which still catches a unit slip
    # (bits for bytes, ms for s, per-op for per-second)
    ratio = w.mb_s / out.bandwidth_mb_s
    assert 1 / 3 < ratio < 3.0, (w.mb_s, out.bandwidth_mb_s)
    assert 1 / 3 < w.lat_avg_ms / (out.lat_avg_s * 1000) < 3.0
    assert _bench_objects(ctx) == []


@pytest.mark.release
def test_rados_bench_engine_parsed_and_cleaned(ctx: Any) -> None:
    o = BenchOptions(modes=("write", "rand"), duration_s=2, size=4096, concurrency=16,
                     engine="rados-bench")
    rep = api.run_bench(ctx, "rados", o)
    assert rep.status == "ok", rep.message
    w = next(r for r in rep.results if r.workload == "write")
    assert w.engine == "rados-bench" and w.ops > 0
    assert w.ops_s == pytest.approx(w.ops / w.duration_s)
    assert w.series and w.lat_avg_ms and w.lat_avg_ms > 0
    assert _bench_objects(ctx) == []


@pytest.mark.release
def test_swift_mix_consistent_with_swift_bench_and_cleans_up(lab: Lab, ctx: Any) -> None:
    from swiftclient.client import Connection

    o = BenchOptions(modes=("mix",), mix=(80, 15, 5), duration_s=2, size=4096,
                     size_max=16384, concurrency=4, prefill=40)
    rep = api.run_bench(ctx, "swift", o)
    assert rep.status == "ok", rep.message
    r = rep.results[0]
    per = r.extra["per_op"]
    assert r.ops == sum(v["ops"] for v in per.values()) and r.errors == 0
    assert per["read"]["ops"] > per["write"]["ops"] > 0  # 80/15/5 shape
    sw = ctx.target.swift
    conn = Connection(authurl=sw.auth_url, user=sw.user, key=sw.key, auth_version="1.0")
    _, containers = conn.get_account()
    assert not [c for c in containers if c["name"].startswith("stordoc-bench")]
    # PUT-only run, then swift-bench with the same shape: same order of magnitude
    put = api.run_bench(ctx, "swift", BenchOptions(modes=("mix",), mix=(0, 100, 0),
                                                    duration_s=2, size=4096, concurrency=4))
    ours = put.results[0].ops_s
    exe = shutil.which("swift-bench") or str(Path(os.sys.executable).parent / "swift-bench")
    if not Path(exe).exists():
        pytest.skip("swift-bench is not installed (pip install swift-bench)")
    p = subprocess.run([exe, "-A", sw.auth_url, "-U", sw.user, "-K", sw.key, "-c", "4",
                        "-s", "4096", "-n", "200", "-g", "0"], capture_output=True, text=True,
                       timeout=180, check=False)
    m = re.search(r"(\d+) PUTS \*\*FINAL\*\* \[(\d+) failures\], ([\d.]+)/s", p.stderr + p.stdout)
    assert m, p.stderr[-500:]
    theirs = float(m.group(3))
    # the same order of magnitude, not a timing race: a 2 s run beside two other test
    # sessions on 2 cores measured 11.5 against swift-bench's 34.9 PUT/s in CI
    assert 1 / 10 < ours / theirs < 10, (ours, theirs)
    _, containers = conn.get_account()
    assert not [c for c in containers if c["name"].startswith("stordoc-bench")]
    conn.close()


def _images(ctx: Any) -> dict[str, list[str]]:
    import rbd

    out = {}
    with RadosIO(ctx.target.ceph) as io:
        for pool in io.cluster.list_pools():
            ioctx = io.cluster.open_ioctx(pool)
            try:
                out[pool] = sorted(rbd.RBD().list(ioctx))
            except rbd.Error:
                out[pool] = []
            finally:
                ioctx.close()
    return out


@pytest.mark.release
def test_rbd_fio_and_image_removed(ctx: Any) -> None:
    import rbd

    # no pool named: the run makes one of its own, the plan says so, and afterwards the
    # cluster's pools and RBD images are what they were (issue 27: a stordoc-bench pool
    # left behind took the lab from 65 to 97 PGs)
    own = ctx.bench_limits
    ctx.bench_limits = {k: v for k, v in own.items() if k != "pool"}
    pools_before, images_before = _pools(ctx), _images(ctx)
    try:
        o = BenchOptions(modes=("randrw",), duration_s=2, concurrency=8,
                         image_size=64 * 2**20)
        plan = api.plan_bench(ctx, "rbd", o)
        assert any(line.startswith("creates pool stordoc-bench-<run>") for line in plan.steps)
        assert plan.steps[-1] == "remove pool stordoc-bench-<run>"
        rep = api.run_bench(ctx, "rbd", o)
        assert rep.status == "ok", rep.message
        assert rep.results[0].state["pool"]["size"] >= 1  # measured in its own pool
        assert _pools(ctx) == pools_before
        assert _images(ctx) == images_before
        nat = api.run_bench(ctx, "rados", BenchOptions(duration_s=1, size=4096))
        assert nat.status == "ok", nat.message
        assert _pools(ctx) == pools_before
        # the second run of the same kind is compared with the first (other pool name)
        c = api.compare(ctx, api.run_bench(ctx, "rados", BenchOptions(duration_s=1,
                                                                      size=4096)))[0]
        assert c.has_baseline and nat.group_id in c.baseline, c.lines()
        assert _pools(ctx) == pools_before
    finally:
        ctx.bench_limits = own
    r = rep.results[0]
    assert r.workload == "randrw 4K" and r.ops > 0 and r.errors == 0
    assert set(r.extra["per_dir"]) == {"read", "write"}
    # read share close to --rwmixread 70
    share = r.extra["per_dir"]["read"]["ops"] / r.ops
    assert 0.6 < share < 0.8
    assert r.lat_p50_ms and r.lat_p99_ms and r.lat_p50_ms <= r.lat_p99_ms
    with RadosIO(ctx.target.ceph) as io:
        ioctx = io.cluster.open_ioctx(POOL)
        try:
            assert [i for i in rbd.RBD().list(ioctx) if i.startswith("stordoc-bench")] == []
        finally:
            ioctx.close()


@pytest.mark.on_reef
def test_limits_disk_and_network_leave_no_scratch_file(lab: Lab, ctx: Any) -> None:
    rep = api.run_bench(ctx, "limits", BenchOptions(modes=("disk", "net"), hosts=("node2",),
                                                    limit_size=16 * 2**20))
    assert rep.status == "ok", rep.message
    r = rep.results[0]
    assert r.status == "ok", r.notes
    assert r.extra["osds"] == [1]
    assert r.extra["disk"]["write_mb_s"] > 0 and r.extra["disk"]["read_mb_s"] > 0
    assert r.extra["net"]["mb_s"] > 0 and r.extra["net"]["client_ip"].startswith("127.")
    assert not (lab.osd_dir(1) / ".stordoc-bench-limit.tmp").exists()
    # a following RADOS run is stated as an efficiency against these limits
    w = api.run_bench(ctx, "rados", BenchOptions(duration_s=1, size=4 * 2**20))
    eff = w.results[0].extra.get("efficiency")
    assert eff and eff["limit_mb_s"] > 0 and eff["efficiency"] == pytest.approx(
        w.results[0].mb_s / eff["limit_mb_s"])


@pytest.mark.on_reef
def test_refuses_on_degraded_cluster_unless_forced(lab: Lab, ctx: Any) -> None:
    def healthy() -> bool:
        with RadosIO(ctx.target.ceph) as io:
            st = io.state()
        return st["num_up_osds"] == lab.n_osds and st["pgs_by_state"].get("active+clean") == \
            st["num_pgs"]

    lab.break_("osd-unmounted", osd=1)
    try:
        wait_until(lambda: not healthy(), 60, "PGs degraded", 0.5)
        with pytest.raises(Refused) as e:
            api.plan_bench(ctx, "rados", BenchOptions(duration_s=1))
        assert "not active+clean" in str(e.value) or "down" in str(e.value)
        assert "--force" in str(e.value)
        with pytest.raises(Refused):
            api.run_bench(ctx, "rados", BenchOptions(duration_s=1))
        plan = api.plan_bench(ctx, "rados", BenchOptions(duration_s=1, force=True))
        assert any("forced despite" in w for w in plan.warnings)
    finally:
        lab.heal("osd-unmounted", osd=1)
    wait_until(healthy, 120, "healthy again", 0.5)


@pytest.mark.on_reef
def test_lock_refuses_a_second_benchmark_and_cancel_cleans_up(ctx: Any, env: Any) -> None:
    started = threading.Event()
    cancel = threading.Event()
    box: dict[str, Any] = {}

    def progress(p: Any) -> None:
        if p.ops > 0:
            started.set()

    def first() -> None:
        box["report"] = api.run_bench(ctx, "rados", BenchOptions(duration_s=30, size=4096),
                                      on_progress=progress, cancel=cancel)

    th = threading.Thread(target=first)
    th.start()
    try:
        assert started.wait(60), "first benchmark never made progress"
        other = env.run_context(None, source="test-2")
        with pytest.raises(Refused) as e:
            api.run_bench(other, "rados", BenchOptions(duration_s=1))
        assert "another benchmark is running" in str(e.value)
    finally:
        cancel.set()
        th.join(120)
    rep = box["report"]
    assert rep.status == "cancelled"
    assert rep.results and rep.results[0].duration_s < 30
    assert _bench_objects(ctx) == []
    # the lock is free again, and the audit kept the cancelled run
    from storage.audit import Audit

    a = Audit(ctx.journal)
    assert not [lk for lk in a.locks(ctx.cluster) if lk.target == "bench"]
    assert a.run(rep.audit_run_id).outcome == "cancelled"


@pytest.mark.on_reef
def test_verdict_unchanged_vs_real_slowdown(lab: Lab, ctx: Any) -> None:
    o = BenchOptions(duration_s=2, size=4096, concurrency=16, repeat=3)
    # one invocation first, not kept as the baseline: the run right after the previous
    # tests' cleanup (object deletion still going on in the OSDs) measured 523 ops/s in a
    # CI run where the next ones did 1,000
    api.run_bench(ctx, "rados", o)
    base = api.run_bench(ctx, "rados", o)
    api.set_baseline(ctx, "before", base.group_id)
    # a few unchanged invocations: the stored history tells how much invocations drift.
    # On a shared 2-core machine one of them may still land outside the noise; none may
    # be called slower (the false alarm that sends someone hunting)
    verdicts = []
    for _ in range(3):
        same = api.run_bench(ctx, "rados", o)
        c_same = api.compare(ctx, same)[0]
        assert c_same.basis == "runs"
        assert c_same.verdict != "slower", c_same.lines()
        verdicts.append(c_same.verdict)
    assert sum(v in ("no significant change", "inconclusive") for v in verdicts) >= 2, \
        verdicts
    # a slowdown far above any noise a shared machine shows: every op (and sub-op) waits
    # 10 ms in each OSD's dispatch; the waits add up along an op (measured on Pacific:
    # 988 -> 40 ops/s at 10 ms, 1,002 -> 83 at 5 ms, 764 -> 1.8 at 50 ms). The verdict
    # needs a change beyond 3x the measured noise: 10 ms on 30% of the ops moved the
    # figures by +1.6% in a run beside two other labs whose noise was 62% (a threshold
    # of a 6.4x change): "inconclusive" was the honest answer there; 25x is not
    lab.ceph("config", "set", "osd", "osd_debug_inject_dispatch_delay_probability", "1")
    lab.ceph("config", "set", "osd", "osd_debug_inject_dispatch_delay_duration", "0.01")
    try:
        slow = api.run_bench(ctx, "rados", o)
    finally:
        lab.ceph("config", "rm", "osd", "osd_debug_inject_dispatch_delay_probability")
        lab.ceph("config", "rm", "osd", "osd_debug_inject_dispatch_delay_duration")
    c_slow = api.compare(ctx, slow, baseline="before")[0]
    ops = next(m for m in c_slow.metrics if m.metric == "ops_s")
    # the injection worked (the figures, not the verdict): a third of the ops or fewer
    assert ops.change is not None and ops.change < -0.66, c_slow.lines()
    # what an honest verdict may say: "slower" when the drop is beyond the threshold the
    # measured noise sets, else "inconclusive" (CI beside other loads measured 42% noise,
    # a threshold of -72%: no drop short of that may be called slower); never "faster" or
    # "no significant change"
    beyond = abs(math.log1p(ops.change)) >= ops.threshold and (ops.p_value or 1.0) < 0.05
    assert c_slow.verdict == ("slower" if beyond else "inconclusive"), c_slow.lines()
    word = "SLOWER" if beyond else "INCONCLUSIVE"
    text = "\n".join(c_slow.lines())
    assert "threshold" in text and "noise" in text and word in text
    if beyond:  # where to look, from both sides' samples
        assert "per-OSD commit latency" in text
    png = api.chart_png(c_slow, str(Path(ctx.journal.path).parent / "cmp.png"))
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "MB/s" in api.chart_text(c_slow)
    # the same stored groups through the real CLI (the service's stored_bench, baselines)
    r = _cli(lab, ctx, "bench", "show", slow.group_id, "--compare", "before")
    assert r.returncode == (1 if beyond else 0) and word in r.stdout, r.stdout + r.stderr
    r = _cli(lab, ctx, "bench", "show", base.group_id)
    assert r.returncode == 0 and f"ok: {len(base.results)} stored result(s)" in r.stdout
    assert "SLOWER" not in r.stdout and "Traceback" not in r.stderr
    r = _cli(lab, ctx, "bench", "history", "--json")
    assert r.returncode == 0
    assert {slow.group_id, base.group_id} <= {x["group_id"] for x in json.loads(r.stdout)}
    # the refusals (a look-alike baseline name, an unknown group or baseline) read only the
    # journal: tests/unit/test_bench_cli.py; here the baselines are what the runs stored
    r = _cli(lab, ctx, "bench", "baseline", "list")
    assert r.returncode == 0 and r.stdout.splitlines() == [
        f"before: group {base.group_id} fingerprint {base.results[0].fingerprint} set by "
        f"{ctx.user}"]


def _cli(lab: Lab, ctx: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI on the lab, on this test's journal."""
    journal = Path(ctx.journal.path)
    return cli(config_with_journal(lab.config_path, journal, journal.parent / "stordoc.toml"),
               *args)
