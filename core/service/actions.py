"""Plans and runs for every front end: runbooks and benchmarks alike.

A plan is made, shown (its ``lines``), confirmed by a person and run; the service keeps
the runbooks layer's own plan object inside the ``ActionPlan`` so the exact plan that was
shown is the one that runs. A plan made again (the bot after a restart) is the same plan
exactly when its ``fingerprint`` is equal: the steps, commands, targets and parameters,
not the text or the moment it was made.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from checks.model import Finding
from core.env import Env, missing_change_key
from core.service.errors import ActionRefused, InvalidAction
from runbooks import api as rb_api
from runbooks.aftermath import Aftermath, follow, worth_following
from runbooks.bench import api as bench_api
from runbooks.bench.model import Progress as BenchProgress
from runbooks.bench.stats import Verdict
from runbooks.model import (
    EventKind,
    InvalidRequest,
    Outcome,
    Plan,
    Refused,
    RunContext,
    RunEvent,
)
from storage.audit import LockHeld
from storage.benchstore import BenchStore
from storage.model import ClusterSnapshot

__all__ = ["ActionPlan", "ActionRefused", "Actions", "InvalidAction", "BenchProgress", "BenchSummary",
           "EventKind", "Outcome", "PlanKind", "RunEvent", "RunReport"]

BENCH_PREFIX = "bench-"


def _refusal(e: Exception) -> ActionRefused:
    return InvalidAction(str(e)) if isinstance(e, InvalidRequest) else ActionRefused(str(e))


class PlanKind(StrEnum):
    RUNBOOK = "runbook"
    BENCH = "bench"


@dataclass(frozen=True)
class ActionPlan:
    """A plan as every front end shows it: what runs, where, before confirmation."""

    kind: PlanKind
    cluster: str
    runbook: str  # "osd-remount", or "bench-rados" for a benchmark
    target: str  # the canonical target ("osd.3"), "bench" for a benchmark
    lines: tuple[str, ...]
    destructive: bool
    second_person: bool  # the runbook asks for a second operator (two-person rule)
    data: Mapping[str, Any]  # the plan as JSON-able data (what the audit records)
    fingerprint: str
    user: str  # who asked: the audit's "requested by"
    handle: tuple[RunContext, Any] = field(repr=False, compare=False)

    @property
    def runbook_plan(self) -> Plan | None:
        """The runbooks layer's plan (steps with their exact commands), for a renderer."""
        p = self.handle[1]
        return p if isinstance(p, Plan) else None

    @property
    def context(self) -> RunContext:
        return self.handle[0]


@dataclass(frozen=True)
class BenchSummary:
    """A finished benchmark beside its run: per-phase rows and the comparisons."""

    group_id: str
    rows: tuple[Mapping[str, Any], ...]
    details: tuple[str, ...]  # per-phase figures and efficiency lines
    comparisons: tuple[str, ...]  # the verdict lines against the baseline
    verdicts: tuple[tuple[str, Verdict], ...]  # (workload, verdict)
    report: Any = field(repr=False, compare=False)  # runbooks.bench.api.BenchReport
    compared: tuple[Any, ...] = field(default=(), repr=False, compare=False)  # Comparisons
    no_comparison: str | None = None  # why there is none (no earlier run, no baseline)

    @property
    def slower(self) -> bool:
        """A workload measured slower than its baseline beyond the noise."""
        return any(v is Verdict.SLOWER for _, v in self.verdicts)


@dataclass(frozen=True)
class RunReport:
    """How a confirmed plan ended."""

    kind: PlanKind
    ok: bool
    outcome: str  # an Outcome for runbooks; ok | cancelled | failed for benchmarks
    message: str
    verified: bool | None  # None: not verified (failed, cancelled, a benchmark)
    remaining: tuple[Finding, ...] = ()  # findings verification still saw
    not_done: tuple[str, ...] = ()
    run_id: int | None = None
    bench: BenchSummary | None = None

    @property
    def verification(self) -> str:
        """One phrase for a person: what verification said."""
        left = [f"{f.entity} {f.code}" for f in self.remaining]
        if self.verified is True:
            return "checks pass again" + (f" ({', '.join(left)} remain)" if left else "")
        if self.verified is False:
            return "still failing: " + (", ".join(left) or "the triggering checks")
        return "not verified"


EventSink = Callable[[RunEvent], None]
ProgressSink = Callable[[BenchProgress], None]


def _fingerprint(data: Mapping[str, Any]) -> str:
    d = {k: v for k, v in data.items() if k != "created_at"}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()


def is_bench(runbook: str) -> bool:
    return runbook.startswith(BENCH_PREFIX)


def bench_option_values(options: Mapping[str, Any]) -> dict[str, Any]:
    """Typed options of ``BenchOptions``; naming the mix implies its mode. A number that
    is not finite (inf, nan, 1e400 read as inf) is refused here for every front end."""
    kw = dict(options)
    for k, v in kw.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{k} must be a finite number, not {v!r}")
    if kw.get("mix") and "modes" not in kw:
        kw["modes"] = ("mix",)
    return kw


def _summary(ctx: RunContext, rep: Any, lim: Any, compare: bool, baseline: str | None,
             strict: bool) -> BenchSummary:
    """A report's rows, details and comparisons. A comparison that cannot be made is a
    ``no_comparison`` reason after a run (``strict=False``: the run itself stands), an
    ``ActionRefused`` when it is what was asked for (``strict``: ``bench show --compare``)."""
    details: list[str] = []
    for r in rep.results:
        details += bench_api.detail_lines(r)
    comps: list[str] = []
    verdicts: list[tuple[str, Verdict]] = []
    found: list[Any] = []
    why_not: str | None = None
    if rep.results and compare:
        try:
            found = list(bench_api.compare(ctx, rep, baseline, lim))
            rep.comparisons = found
            for c in found:
                comps += c.lines()
                if c.has_baseline:  # none yet: no better/worse (this run is the baseline)
                    verdicts.append((c.workload, Verdict(c.verdict)))
            if found and not verdicts:
                why_not = "no baseline yet; this run is the baseline"
        except Refused as e:
            if strict:
                raise _refusal(e) from None
            why_not = f"no comparison: {e}"
            comps.append(why_not)
    return BenchSummary(rep.group_id, tuple(r.to_row() for r in rep.results),
                        tuple(details), tuple(comps), tuple(verdicts), rep, tuple(found),
                        why_not)


class Actions:
    def __init__(self, env: Env) -> None:
        self.env = env

    # ------------------------------------------------------------------ catalogue
    def runbooks(self) -> list[str]:
        """Runbook names a person may ask for (benchmarks are asked for as such)."""
        return [rb.name for rb in rb_api.list_runbooks() if not is_bench(rb.name)]

    def runbook_for_code(self, code: str) -> str | None:
        return rb_api.runbook_for_code(code)

    def bench_kinds(self) -> tuple[str, ...]:
        return tuple(bench_api.KINDS)

    # ------------------------------------------------------------------ planning
    def _ctx(self, cluster: str, user: str | None, source: str) -> RunContext:
        ctx = self.env.run_context(cluster, source=source)
        if user:
            ctx.user = user  # the audit records who asked (a Slack ID), not the OS user
        return ctx

    def _need_change_key(self, cluster: str, on_ceph: bool) -> None:
        """A plan that changes Ceph is refused, naming the key, where this stordoc holds
        only the read-only user (``ceph.fix_client`` configured, its keyring absent)."""
        if not on_ceph:
            return
        n = self.env.cluster_name(cluster)
        lacking = missing_change_key(self.env.settings.clusters[n], n)
        if lacking:
            raise ActionRefused(lacking)

    def plan(self, cluster: str, runbook: str, target: str, *, source: str,
             user: str | None = None,
             options: Mapping[str, Any] | bench_api.BenchOptions | None = None,
             snapshot: ClusterSnapshot | None = None) -> ActionPlan:
        """Plan ``runbook`` on ``target`` (read-only). ``bench-KIND`` plans a benchmark.
        ``snapshot``: a check's, seconds old, planned on instead of collecting again (the
        run re-plans on a fresh one under its lock and refuses if the cluster moved)."""
        if is_bench(runbook):
            return self.plan_bench(cluster, runbook[len(BENCH_PREFIX):], source=source,
                                   user=user, options=options)
        if isinstance(options, bench_api.BenchOptions):
            raise ActionRefused(f"{runbook} takes no benchmark options")
        info = next((rb for rb in rb_api.list_runbooks() if rb.name == runbook), None)
        self._need_change_key(cluster, info is not None
                              and not info.target_kind.startswith("swift"))
        ctx = self._ctx(cluster, user, source)
        try:
            p = rb_api.plan(ctx, runbook, target, dict(options or {})) if snapshot is None \
                else rb_api.plan_from_snapshot(ctx, snapshot, runbook, target,
                                               dict(options or {}))
        except (Refused, LockHeld) as e:
            raise _refusal(e) from None
        data = p.to_dict()
        return ActionPlan(PlanKind.RUNBOOK, ctx.cluster, p.runbook, p.target, tuple(p.lines()),
                          bool(p.destructive), bool(p.needs_second_person), data,
                          _fingerprint(data), ctx.user, (ctx, p))

    def plan_bench(self, cluster: str, kind: str, *, source: str, user: str | None = None,
                   options: Mapping[str, Any] | bench_api.BenchOptions | None = None
                   ) -> ActionPlan:
        """A benchmark's plan; ``options`` typed already, or ``BenchOptions`` fields."""
        self._need_change_key(cluster, kind != "swift")
        ctx = self._ctx(cluster, user, source)
        lim = self._limits()
        try:
            opts = options if isinstance(options, bench_api.BenchOptions) else \
                bench_api.BenchOptions(**bench_option_values(options or {}))
            p = bench_api.plan_bench(ctx, kind, opts, lim)
        except (Refused, LockHeld) as e:
            raise _refusal(e) from None
        except (TypeError, ValueError) as e:
            raise ActionRefused(f"bench options: {e}") from None
        data = p.to_dict()
        return ActionPlan(PlanKind.BENCH, ctx.cluster, BENCH_PREFIX + p.kind, "bench",
                          tuple(p.lines()), True, False, data, _fingerprint(data), ctx.user,
                          (ctx, p))

    def _limits(self) -> Any:
        return bench_api.BenchLimits.from_mapping(self.env.settings.bench.model_dump())

    # ------------------------------------------------------------------ running
    def execute(self, plan: ActionPlan, confirmed_by: str, on_event: EventSink,
                cancel: threading.Event, on_progress: ProgressSink | None = None,
                compare: bool = True, baseline: str | None = None) -> RunReport:
        """Run a confirmed plan; ``cancel`` stops it before its next step (cleanup steps
        still run, locks are released, the audit says cancelled). Raises ActionRefused
        when it never started (lock held, cluster changed since the plan). A benchmark
        is compared with ``baseline`` (a name; None: its earlier runs) when ``compare``."""
        if plan.kind is PlanKind.BENCH:
            return self._run_bench(plan, confirmed_by, cancel, on_progress, compare,
                                   baseline)
        ctx, p = plan.handle
        try:
            res = rb_api.execute(ctx, p, confirmed_by=confirmed_by, on_event=on_event,
                                 cancel=cancel)
        except (Refused, LockHeld) as e:
            raise _refusal(e) from None
        return RunReport(PlanKind.RUNBOOK, res.ok, res.outcome, res.message, res.verified,
                         tuple(res.verify_findings), tuple(res.not_done), res.run_id)

    def _run_bench(self, plan: ActionPlan, confirmed_by: str, cancel: threading.Event,
                   on_progress: ProgressSink | None, compare: bool, baseline: str | None
                   ) -> RunReport:
        ctx, p = plan.handle
        lim = self._limits()
        try:
            rep = bench_api.run_bench(ctx, p.kind, p.options, on_progress or (lambda _p: None),
                                      cancel, lim, plan=p, confirmed_by=confirmed_by)
        except (Refused, LockHeld) as e:
            raise _refusal(e) from None
        summary = _summary(ctx, rep, lim, compare, baseline, strict=False)
        return RunReport(PlanKind.BENCH, rep.ok, rep.status, rep.message, None,
                         run_id=rep.audit_run_id, bench=summary)

    def require_baseline(self, cluster: str, name: str) -> None:
        """A named baseline must exist before anything runs (InvalidAction names the
        known ones)."""
        store = BenchStore(self.env.journal)
        if store.baseline(self.env.cluster_name(cluster), name) is None:
            known = ", ".join(x["name"] for x in store.baselines(
                self.env.cluster_name(cluster))) or "none"
            raise InvalidAction(f"no baseline named {name!r} on "
                                f"{self.env.cluster_name(cluster)}; known: {known}")

    def follow(self, cluster: str, runbook: str, on_update: Callable[[Aftermath], None],
               cancel: threading.Event, *, source: str, timeout_s: float = 300.0,
               interval_s: float = 2.0) -> Aftermath | None:
        """After a successful OSD/pool fix: what the cluster still does (peering,
        recovery, Ceph's ETA), until clean or ``timeout_s``. None when the runbook's
        aftermath is not worth following."""
        if not worth_following(runbook):
            return None
        ctx = self.env.run_context(cluster, source=source)
        return follow(ctx, on_update, timeout_s=timeout_s, interval_s=interval_s,
                      cancel=cancel)

    # ------------------------------------------------------------------ benchmarks' extras
    def bench_history(self, cluster: str, limit: int = 20, kind: str | None = None
                      ) -> list[Any]:
        """Stored benchmark results, newest first (``BenchResult``s)."""
        ctx = self.env.run_context(cluster, source="history", discover=False)
        return list(bench_api.history(ctx, limit, kind))

    def stored_bench(self, cluster: str, group: str, compare: bool = False,
                     baseline: str | None = None) -> BenchSummary:
        """A stored group as a finished benchmark, compared on request (against
        ``baseline``, or earlier runs of the same fingerprint)."""
        ctx = self.env.run_context(cluster, source="history", discover=False)
        rows = BenchStore(ctx.journal).group(group)
        if not rows:
            raise InvalidAction(f"no stored benchmark group {group!r}")
        results = [bench_api.BenchResult.from_row(r) for r in rows]
        rep = bench_api.BenchReport(group, results[0].kind, ctx.cluster, "ok", results,
                                    f"{len(results)} stored result(s)")
        return _summary(ctx, rep, self._limits(), compare, baseline, strict=True)

    def set_baseline(self, cluster: str, name: str, group: str | None = None,
                     kind: str | None = None, user: str | None = None) -> Mapping[str, Any]:
        """Name a stored group (default: the latest one of ``kind``) as a baseline."""
        ctx = self._ctx(cluster, user, "cli")
        try:
            return bench_api.set_baseline(ctx, name, group, kind)
        except Refused as e:
            raise _refusal(e) from None

    def baselines(self, cluster: str) -> list[Mapping[str, Any]]:
        return list(BenchStore(self.env.journal).baselines(self.env.cluster_name(cluster)))

    @staticmethod
    def chart_png(summary: BenchSummary, path: str) -> None:
        bench_api.chart_png(summary.report, path)

    @staticmethod
    def chart_text(summary: BenchSummary, width: int = 100, height: int = 16) -> str:
        return str(bench_api.chart_text(summary.report, width=width, height=height))


