"""Running a benchmark: under the per-cluster lock ``bench``, audited phase by phase,
on this host or from clients; per-OSD latency sampled meanwhile; the results (with their
steady-state and efficiency figures) stored in the journal, cleanup also after a cancel."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runbooks.bench import clients as clients_mod
from runbooks.bench import limits as limits_mod
from runbooks.bench import osdperf, rados_multi, rbd_multi, swift_multi
from runbooks.bench import rados as rados_mod
from runbooks.bench import rbd as rbd_mod
from runbooks.bench import swift as swift_mod
from runbooks.bench.common import BenchLimits, Session, limits_of, new_group_id
from runbooks.bench.measure import steady_state
from runbooks.bench.model import BenchOptions, BenchResult, Progress
from runbooks.bench.planning import LOCK_TARGET, BenchPlan, connect_fleet, plan_bench
from runbooks.bench.stats import Comparison
from runbooks.model import Refused, RunContext
from storage.audit import Audit, LockHeld
from storage.benchstore import BenchStore
from storage.ceph import CephClient, CephError
from storage.rados_io import RadosBenchError, RadosIO
from storage.runner import Runner


@dataclass
class BenchReport:
    """One invocation: its results (one per phase and repetition) and what happened."""

    group_id: str
    kind: str
    cluster: str
    status: str  # ok | cancelled | failed
    results: list[BenchResult]
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    audit_run_id: int | None = None
    comparisons: list[Comparison] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "kind": self.kind, "cluster": self.cluster,
                "status": self.status, "message": self.message, "warnings": self.warnings,
                "audit_run_id": self.audit_run_id,
                "results": [r.to_row() for r in self.results],
                "comparisons": [c.to_dict() for c in self.comparisons]}


def _runner(ctx: RunContext) -> Runner:
    if ctx.runner is not None:
        return ctx.runner
    from storage.ssh import FabricRunner

    return FabricRunner(ctx.target.hosts)


def run_bench(ctx: RunContext, kind: str, options: BenchOptions,
              on_progress: Callable[[Progress], None] | None = None,
              cancel: threading.Event | None = None, limits: BenchLimits | None = None,
              plan: BenchPlan | None = None, confirmed_by: str | None = None) -> BenchReport:
    """Run a benchmark (re-checking the plan's gate), store and return its results.

    Raises Refused before anything is written (bad options, unhealthy cluster, the lock
    held by someone else). ``cancel`` stops it cleanly: objects, containers and images
    are removed and the partial results are kept with status "cancelled"."""
    t_cmd = time.time()
    lim = limits_of(ctx, limits)
    p = plan_bench(ctx, kind, plan.options if plan is not None else options, lim)
    o = p.options
    audit = Audit(ctx.journal, ctx.secrets)
    try:
        lock_id = audit.acquire(ctx.cluster, LOCK_TARGET, ctx.user, f"bench {kind}")
    except LockHeld as e:
        raise Refused(f"another benchmark is running: {e}") from None
    group = new_group_id()
    cancel = cancel or threading.Event()
    store = BenchStore(ctx.journal)
    run_id = None
    results: list[BenchResult] = []
    status, message = "ok", ""
    try:
        run_id = audit.start_run(ctx.cluster, f"bench-{kind}", LOCK_TARGET, ctx.user,
                                 ctx.source, p.to_dict(), confirmed_by)
        for lk in audit.takeovers:  # a benchmark's lock left by a process gone
            audit.record_step(run_id, 0, lk.line(), "local", "", None, "", "", 0.0, "done")
        idx = [0]
        t_last = [time.monotonic()]

        def on_step(title: str, command: str, output: str, rc: int) -> None:
            idx[0] += 1
            now = time.monotonic()
            audit.record_step(run_id or 0, idx[0], title, "local" if kind != "limits"
                              else "hosts", command, rc, output, "", now - t_last[0],
                              "done" if rc == 0 else "failed")
            t_last[0] = now

        s = Session(ctx, o, lim, group, cancel, on_progress, on_step, list(p.warnings))
        pool = p.pool.for_run(group) if p.pool is not None else ""
        own_pool = False
        sampler = _osd_sampler(ctx) if kind in ("rados", "rbd") else None
        try:
            if p.pool is not None and p.pool.create:
                own_pool = _create_pool(s, kind, pool)
            if o.clients:  # the plan above probed the clients: connect, stage, run
                with connect_fleet(ctx, kind, o, lim, on_step, probe=False) as fleet:
                    results = _run_multi(s, kind, fleet, pool)
            elif kind == "rados":
                results = rados_mod.run_rados_bench(s, pool) if o.engine == "rados-bench" \
                    else rados_mod.run_native(s, pool)
            elif kind == "rbd":
                results = rbd_mod.run(s, pool)
            elif kind == "swift":
                results = swift_mod.run(s, o.container or lim.container)
            else:
                runner = _runner(ctx)
                try:
                    results = limits_mod.run(s, runner)
                finally:
                    if ctx.runner is None:
                        runner.close()
        except Refused as e:
            status, message = "failed", str(e)
        except RadosBenchError as e:
            status, message = "failed", str(e)
        finally:
            if own_pool:  # also after a failure or Ctrl-C: never leave the run's pool
                why = _remove_pool(s, pool)
                if why:
                    s.warnings.append(why)
            if sampler is not None:
                sampler.stop()
                osdperf.attach(results, sampler)
            for r in results:
                if r.kind != "limits" and r.series:
                    st = steady_state(r.series)
                    if o.steady:
                        st["stop_enabled"] = True
                        if r.extra.get("stopped_by") == "steady":
                            st["stopped_early"] = True
                            st["stopped_after_s"] = round(float(r.duration_s), 2)
                    r.extra["steady_state"] = st
            if s.first_io_at is not None:
                for r in results:
                    orch = r.extra.setdefault("orchestration", {})
                    orch["command_to_first_io_s"] = round(s.first_io_at - t_cmd, 3)
        if s.integrity and status == "ok":
            status = "failed"
            message = "DATA VERIFICATION FAILED: " + "; ".join(s.integrity)
        if cancel.is_set() and status == "ok":
            status, message = "cancelled", "stopped by the user; cleaned up"
            for r in results:
                if r.status == "ok" and r is results[-1]:
                    r.status = "cancelled"
        if kind in ("rados", "rbd"):
            _add_efficiency(store, ctx.cluster, results)
        for r in results:
            r.id = store.save(r.to_row())
        if not message:
            message = f"{len(results)} result(s) stored as group {group}"
    except BaseException as e:
        status, message = "failed", f"{type(e).__name__}: {e}"
        raise
    finally:
        if run_id is not None:
            audit.finish_run(run_id, "success" if status == "ok" else status, message,
                             {"group_id": group, "results": [r.id for r in results]})
        audit.release(lock_id)
    return BenchReport(group, kind, ctx.cluster, status, results, message, s.warnings, run_id)


def _create_pool(s: Session, kind: str, pool: str) -> bool:
    """Create the run's own pool (announced by the plan); True once it exists."""
    t = rados_mod.ceph_target(s)
    with RadosIO(t) as io:
        if io.pool_exists(pool):  # never adopt a pool someone else made meanwhile
            raise Refused(f"pool {pool} appeared after the plan; not touching it")
        try:
            io.ensure_pool(pool)
            if kind == "rbd":
                io.mon({"prefix": "osd pool application enable", "pool": pool, "app": "rbd",
                        "yes_i_really_mean_it": True})
        except BaseException:  # half made: removed here, the caller never owned it
            if io.pool_exists(pool):
                io.delete_pool(pool)
            raise
    s.step(f"create pool {pool}", f"ceph osd pool create {pool}",
           "created; removed after the run")
    return True


def _remove_pool(s: Session, pool: str) -> str | None:
    """Remove the run's own pool; why not, when the cluster refused."""
    cmd = f"ceph osd pool rm {pool} {pool} --yes-i-really-really-mean-it"
    try:
        with RadosIO(rados_mod.ceph_target(s)) as io:
            why = io.delete_pool(pool)
    except RadosBenchError as e:
        why = str(e)
    s.step(f"remove pool {pool}", cmd, why or "removed", 1 if why else 0)
    return None if why is None else f"pool {pool} this run created is still there ({why}): " \
        f"remove it with: {cmd}"


def _run_multi(s: Session, kind: str, fleet: clients_mod.Fleet, pool: str
               ) -> list[BenchResult]:
    o, lim = s.opts, s.limits
    if kind == "rados":
        return rados_multi.run_multi(s, pool, fleet)
    if kind == "rbd":
        return rbd_multi.run_multi(s, pool, fleet)
    if kind == "swift":
        return swift_multi.run_multi(s, o.container or lim.container, fleet)
    raise Refused(f"bench {kind} does not run from clients")


def _osd_sampler(ctx: RunContext) -> osdperf.OsdLatencySampler | None:
    """``ceph osd perf`` every second on a connection of its own (None without Ceph or
    when the manager cannot be reached: the benchmark runs without per-OSD latency)."""
    if ctx.target.ceph is None:
        return None
    client = CephClient(ctx.target.ceph)
    try:
        client.connect()
    except CephError:
        return None

    class _Sampler(osdperf.OsdLatencySampler):
        def stop(self) -> None:
            super().stop()
            client.close()

    return _Sampler(lambda: client.mgr("osd perf"), 1.0).start()


def _add_efficiency(store: BenchStore, cluster: str, results: Sequence[BenchResult]) -> None:
    g = store.last_group(cluster, "limits")
    if g is None:
        return
    rows = [r for r in store.group(g) if r.get("status") == "ok"]
    for r in results:
        pool = r.state.get("pool") or {}
        eff = limits_mod.efficiency(r, rows, pool.get("size"))
        if eff:
            r.extra["efficiency"] = eff
