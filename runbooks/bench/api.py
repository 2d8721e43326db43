"""The benchmark API every front end calls (CLI, Slack bot, TUI).

Benchmarks write to the cluster, so they are runbooks: ``plan_bench`` validates the
options, the caps and the cluster's health and returns the plan without changing
anything; ``run_bench`` takes the per-cluster lock target ``bench``, audits every phase,
stores the results in the journal and cleans up (also after a cancel). ``compare`` gives
the noise-aware verdict against earlier runs of the same fingerprint or a named baseline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runbooks.bench import clients as clients_mod
from runbooks.bench import limits as limits_mod
from runbooks.bench import multi as multi_mod
from runbooks.bench import osdperf, rados_multi, rbd_multi, swift_multi
from runbooks.bench import rados as rados_mod
from runbooks.bench import rbd as rbd_mod
from runbooks.bench import swift as swift_mod
from runbooks.bench.charts import chart_png, chart_text
from runbooks.bench.common import (
    BenchLimits,
    Session,
    ceph_gate,
    check_caps,
    limits_of,
    new_group_id,
)
from runbooks.bench.model import KINDS, BenchOptions, BenchResult, Progress
from runbooks.bench.stats import Comparison, compare_groups, steady_line, steady_state
from runbooks.model import Refused, RunContext
from storage.audit import Audit, LockHeld
from storage.benchstore import BenchStore
from storage.ceph import CephClient, CephError
from storage.rados_io import MODES as RADOS_MODES
from storage.rados_io import RadosBenchError, RadosIO
from storage.runner import Runner

__all__ = ["KINDS", "BenchLimits", "BenchOptions", "BenchPlan", "BenchReport", "BenchResult",
           "Comparison", "Progress", "Refused", "bench_after_fix", "chart_png", "chart_text",
           "compare", "detail_lines", "history", "plan_bench", "run_bench", "set_baseline"]

LOCK_TARGET = "bench"
DEFAULT_MODES = {"rados": ("write",), "swift": ("mix",), "rbd": ("randrw",),
                 "limits": ("disk", "net")}
VALID_MODES = {"rados": set(RADOS_MODES), "swift": {"mix"}, "rbd": set(rbd_mod.MODES),
               "limits": {"disk", "net"}}


@dataclass
class BenchPlan:
    """What a benchmark will do, shown before confirmation (like a runbook plan)."""

    kind: str
    cluster: str
    options: BenchOptions
    where: str
    steps: list[str]
    warnings: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    limits: BenchLimits = field(default_factory=BenchLimits)

    @property
    def planned_s(self) -> float:
        if self.kind == "limits":
            return 0.0
        return self.options.duration_s * len(self.options.modes) * self.options.repeat

    def lines(self) -> list[str]:
        o = self.options
        out = [f"Plan: bench {self.kind} on cluster {self.cluster} ({self.where})",
               (f"  caps: {self.limits.max_duration_s:g} s of I/O, "
                f"{self.limits.max_bytes / 1024**2:,.0f} MiB written; lock '{LOCK_TARGET}'"),
               (f"  engine {o.engine}, modes {', '.join(o.modes)}, concurrency "
                f"{o.concurrency}, repeat {o.repeat}")]
        if self.state.get("health"):
            out.append(f"  cluster: {self.state.get('health')}, "
                       f"{self.state.get('num_up_osds', '?')}/"
                       f"{self.state.get('num_osds', '?')} OSDs up")
        out.append("Steps:")
        out += [f"  {i}. {s}" for i, s in enumerate(self.steps, 1)]
        out += [f"Warning: {w}" for w in self.warnings]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "cluster": self.cluster, "where": self.where,
                "options": self.options.to_dict(), "steps": self.steps,
                "warnings": self.warnings, "state": self.state,
                "limits": self.limits.__dict__, "planned_s": self.planned_s}


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


def _where(ctx: RunContext, kind: str, o: BenchOptions, lim: BenchLimits) -> str:
    by = ""
    if o.clients:
        names = [h.name for h in clients_mod.resolve_clients(ctx, o.clients, lim.clients)]
        by = f" from {len(names)} clients ({', '.join(names)})"
    if kind in ("rados", "rbd"):
        return f"pool {o.pool or lim.pool}{by}"
    if kind == "swift":
        return f"container {o.container or lim.container}{by}"
    return "hosts " + (", ".join(o.hosts) or ", ".join(h.name for h in ctx.target.hosts))


# the tools each client must have for a multi-client run (asked before anything starts)
CLIENT_TOOLS: dict[str, tuple[list[str], ...]] = {"rados": rados_multi.TOOLS,
                                                  "rbd": rbd_multi.TOOLS,
                                                  "swift": swift_multi.TOOLS}


def _fleet(ctx: RunContext, kind: str, o: BenchOptions, lim: BenchLimits,
           on_step: Callable[[str, str, str, int], None] | None = None, probe: bool = True
           ) -> clients_mod.Fleet:
    """The run's clients, connected and checked: one unreachable client, or one without
    the engine's tools, refuses the run before anything is started."""
    fleet = clients_mod.fleet_for(ctx, o.clients, lim.clients, on_step)
    try:
        fleet.probe(CLIENT_TOOLS.get(kind, ()) if probe else ())
    except BaseException:
        fleet.close()
        raise
    return fleet


def _normalize(kind: str, options: BenchOptions) -> BenchOptions:
    if kind not in KINDS:
        raise Refused(f"unknown benchmark {kind!r}; known: {', '.join(KINDS)}")
    o = options
    if o.modes == ("write",) and kind != "rados":
        o = o.with_(modes=DEFAULT_MODES[kind])
    bad = [m for m in o.modes if m not in VALID_MODES[kind]]
    if bad:
        raise Refused(f"unknown {kind} mode(s) {', '.join(bad)}; known: "
                      f"{', '.join(sorted(VALID_MODES[kind]))}")
    if kind == "rados" and o.engine not in ("native", "rados-bench"):
        raise Refused(f"unknown engine {o.engine!r} (native, rados-bench)")
    if o.clients:
        if kind not in CLIENT_TOOLS:
            raise Refused(f"bench {kind} does not run from clients"
                          + (" (limits: use --host)" if kind == "limits" else ""))
        if kind == "rados" and o.engine != "rados-bench":
            o = o.with_(engine="rados-bench")  # the stock tool runs on each client
    if kind == "swift":
        if len(o.mix) != 3 or any(v < 0 for v in o.mix) or sum(o.mix) != 100:
            raise Refused(f"mix must be three percentages read/write/delete summing to 100, "
                          f"got {'/'.join(map(str, o.mix))}")
        if o.size_max is not None and o.size_max < o.size:
            raise Refused("size range: the maximum is below the minimum")
    return o


def plan_bench(ctx: RunContext, kind: str, options: BenchOptions,
               limits: BenchLimits | None = None) -> BenchPlan:
    """Validate and describe; changes nothing. Raises Refused with a one-line reason."""
    lim = limits_of(ctx, limits)
    o = _normalize(kind, options)
    phases = len(o.modes) if kind != "limits" else 0
    if kind != "limits":
        check_caps(o, lim, phases)
    if kind == "swift" and o.size_max and o.size_max > lim.max_bytes:
        raise Refused("size range above the byte cap")
    s = Session(ctx, o, lim, "<group>", threading.Event())
    state: dict[str, Any] = {}
    warnings: list[str] = []
    clients: list[str] = []
    if o.clients:
        fleet = _fleet(ctx, kind, o, lim)
        clients = fleet.names
        fleet.close()
        if kind == "rbd":
            rbd_multi.check_ports({h.name: h.address for h in fleet.hosts}, lim.fio_port)
    if kind in ("rados", "rbd"):
        pool = o.pool or lim.pool
        try:
            with RadosIO(rados_mod.ceph_target(s)) as io:
                state = io.state(pool if io.pool_exists(pool) else None)
                exists = io.pool_exists(pool)
        except RadosBenchError as e:
            raise Refused(str(e)) from None
        warnings += ceph_gate(state, o.force)
        if kind == "rados" and clients:
            steps = rados_multi.plan_lines(s, pool, exists, clients)
        elif kind == "rados":
            steps = rados_mod.plan_lines(s, pool, exists)
        elif clients:
            steps = rbd_multi.plan_lines(s, pool, clients)
        else:
            steps = rbd_mod.plan_lines(s, pool, "stordoc-bench-<group>")
        if kind == "rbd" and not exists:
            steps.insert(0, f"create pool {pool} (application 'stordoc')")
    elif kind == "swift":
        state = swift_mod.state(s)
        warnings += swift_mod.gate(state, o.force)
        container = o.container or lim.container
        owner = swift_mod.check_container(s, container) if state.get("health") == "ok" \
            else "absent"
        steps = swift_multi.plan_lines(s, container, owner, clients) if clients else \
            swift_mod.plan_lines(s, container, owner)
    else:
        if o.limit_size * 2 > lim.max_bytes:
            raise Refused("limit test size above the byte cap")
        steps = limits_mod.plan_lines(s)
    return BenchPlan(kind, ctx.cluster, o, _where(ctx, kind, o, lim), steps, warnings, state,
                     lim)


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
        sampler = _osd_sampler(ctx) if kind in ("rados", "rbd") else None
        try:
            if o.clients:  # the plan above probed the clients: connect, stage, run
                with _fleet(ctx, kind, o, lim, on_step, probe=False) as fleet:
                    results = _run_multi(s, kind, fleet)
            elif kind == "rados":
                pool = o.pool or lim.pool
                results = rados_mod.run_rados_bench(s, pool) if o.engine == "rados-bench" \
                    else rados_mod.run_native(s, pool)
            elif kind == "rbd":
                results = rbd_mod.run(s, o.pool or lim.pool)
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


def _run_multi(s: Session, kind: str, fleet: clients_mod.Fleet) -> list[BenchResult]:
    o, lim = s.opts, s.limits
    if kind == "rados":
        return rados_multi.run_multi(s, o.pool or lim.pool, fleet)
    if kind == "rbd":
        return rbd_multi.run_multi(s, o.pool or lim.pool, fleet)
    if kind == "swift":
        return swift_multi.run_multi(s, o.container or lim.container, fleet)
    raise Refused(f"bench {kind} does not run from clients")


def detail_lines(r: BenchResult) -> list[str]:
    """What a result says beyond its figures (every front end shows these): the clients
    and their share, the efficiency against the measured limits, whether reads were
    verified, whether throughput reached steady
    state, and the slowest OSDs while it ran."""
    out = []
    for line in (multi_mod.clients_line(r), limits_mod.efficiency_line(r.extra.get("efficiency")),
                 verify_line(r),
                 steady_line(r.extra.get("steady_state")),
                 osdperf.line(r.extra.get("osd_latency"))):
        if line:
            out.append(f"{r.workload} rep {r.rep}: {line}")
    return out


def verify_line(r: BenchResult) -> str | None:
    """"reads verified: ..." or "DATA VERIFICATION FAILED: ..." for a read phase."""
    v = r.extra.get("verify")
    if not v:
        return None
    if not v.get("checked"):
        return f"reads NOT verified: {v.get('why', 'not available')}"
    if v.get("mismatches"):
        ex = ", ".join(v.get("examples") or [])
        return (f"DATA VERIFICATION FAILED: {v['mismatches']} read(s) returned other data "
                f"than written ({v.get('engine', '')}){': ' + ex if ex else ''}")
    return (f"reads verified: {int(v.get('reads') or 0):,} read(s), no mismatch "
            f"({v.get('engine', '')})")


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


def compare(ctx: RunContext, report: BenchReport | str, baseline: str | None = None,
            limits: BenchLimits | None = None) -> list[Comparison]:
    """One comparison per workload of ``report`` (or a stored group id): against the named
    baseline, or else the most recent runs of the same fingerprint."""
    lim = limits_of(ctx, limits)
    store = BenchStore(ctx.journal)
    if isinstance(report, BenchReport):
        rows = [r.to_row() for r in report.results if r.id is not None] or \
            [r.to_row() for r in report.results]
        group = report.group_id
    else:
        rows = store.group(report)
        group = report
        if not rows:
            raise Refused(f"no stored benchmark group {report!r}")
    base_group: list[dict[str, Any]] | None = None
    label = "earlier runs of the same fingerprint"
    if baseline:
        b = store.baseline(ctx.cluster, baseline)
        if b is None:
            known = ", ".join(x["name"] for x in store.baselines(ctx.cluster)) or "none"
            raise Refused(f"no baseline named {baseline!r} on {ctx.cluster}; known: {known}")
        base_group = store.group(b["group_id"])
        label = f"baseline {baseline!r} (group {b['group_id']})"
    out = []
    for workload in dict.fromkeys(r["workload"] for r in rows):
        new = [r for r in rows if r["workload"] == workload and r.get("status") == "ok"]
        if not new:
            continue
        if base_group is not None:
            base = [r for r in base_group if r["workload"] == workload]
        else:
            fp = new[0]["fingerprint"]
            base = store.same_fingerprint(ctx.cluster, fp, workload, exclude_group=group,
                                          limit=max(3, len(new)))
        hist_rows = store.same_fingerprint(ctx.cluster, new[0]["fingerprint"], workload,
                                           exclude_group=group, limit=60)
        hist: dict[str, list[dict[str, Any]]] = {}
        for r in hist_rows:
            hist.setdefault(r["group_id"], []).append(r)
        c = compare_groups(base, new, lim.k_noise, lim.min_change, label,
                           history=list(hist.values())[:20])
        where = osdperf.change_note(base, new)
        if where:
            c.notes.append(where)
        if not base:
            c.notes.append("nothing stored to compare with yet: this run can become the "
                           "baseline ('stordoc bench baseline set NAME')")
        out.append(c)
    return out


def history(ctx: RunContext, limit: int = 20, kind: str | None = None) -> list[BenchResult]:
    return [BenchResult.from_row(r) for r in BenchStore(ctx.journal).history(
        ctx.cluster, limit, kind)]


def set_baseline(ctx: RunContext, name: str, group_id: str | None = None,
                 kind: str | None = None, note: str = "") -> dict[str, Any]:
    """Name a stored group (default: the latest successful one) as a baseline."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise Refused("baseline names use letters, digits, '-', '_' and '.'")
    store = BenchStore(ctx.journal)
    g = group_id or store.last_group(ctx.cluster, kind)
    if g is None:
        raise Refused(f"no benchmark stored for {ctx.cluster} yet: run one first")
    try:
        return store.set_baseline(ctx.cluster, name, g, ctx.user, note)
    except KeyError:
        raise Refused(f"no stored benchmark group {g!r}") from None


def bench_after_fix(ctx: RunContext, limits: BenchLimits | None = None,
                    options: BenchOptions | None = None,
                    cancel: threading.Event | None = None) -> dict[str, Any]:
    """A short RADOS write benchmark after a runbook fix, compared with the same
    fingerprint; returns a dict to add to the fix's result (never raises Refused)."""
    o = options or BenchOptions(modes=("write",), duration_s=3.0, repeat=3, size=4096,
                                concurrency=16)
    try:
        rep = run_bench(ctx, "rados", o, cancel=cancel, limits=limits)
        comps = compare(ctx, rep, limits=limits)
    except Refused as e:
        return {"ran": False, "reason": str(e)}
    return {"ran": True, "group_id": rep.group_id, "status": rep.status,
            "verdict": comps[0].verdict if comps else "inconclusive",
            "comparison": comps[0].to_dict() if comps else None,
            "headline": rep.results[0].headline() if rep.results else ""}
