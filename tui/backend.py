"""What the TUI needs from the rest of stordoc, as one small protocol.

The App takes a ``Backend`` in its constructor (harlequin-style), so tests inject a real
lab ``Env`` (``EnvBackend``) or captured data (``SnapshotBackend``: the real check engine
run on a snapshot built from captured JSON). Every method may block: the App calls them
only from thread workers, never on the event loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from checks.engine import CheckReport
from checks.incidents import correlate
from checks.model import Finding
from checks.service import CheckOutcome
from storage.model import ClusterSnapshot
from storage.targets import ClusterTarget


class ActionRefused(Exception):
    """A runbook refused to plan or run (wrong target, lock held, read-only...)."""


@dataclass(frozen=True)
class PlanView:
    """A plan as the TUI shows it: the exact commands, per host, before confirmation."""

    runbook: str
    target: str
    lines: tuple[str, ...]
    destructive: bool = True
    raw: Any = None  # the runbooks layer's own Plan, handed back to execute()


@dataclass(frozen=True)
class RunEvent:
    """One line of the live step log."""

    kind: str  # "step-start", "step-ok", "step-failed", "output", "verify", "info"
    text: str
    ok: bool | None = None


@dataclass(frozen=True)
class RunView:
    ok: bool
    summary: str
    verification: tuple[str, ...] = ()
    run_id: Any = None


EventSink = Callable[[RunEvent], None]


@dataclass(frozen=True)
class BenchProgressView:
    phase: str
    elapsed_s: float
    planned_s: float
    ops_s: float
    mb_s: float


@dataclass(frozen=True)
class BenchView:
    """A finished benchmark: status, one row per phase, and the verdict lines."""

    status: str
    message: str
    results: tuple[dict[str, Any], ...] = ()
    comparison: tuple[str, ...] = ()
    chart: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


ProgressSink = Callable[[BenchProgressView], None]


class Backend(Protocol):
    def clusters(self) -> Sequence[str]: ...

    def target(self, cluster: str) -> ClusterTarget | None: ...

    def refresh(self, cluster: str) -> CheckOutcome: ...

    def runbooks(self) -> Sequence[str]: ...

    def plan(self, cluster: str, runbook: str, target: str,
             options: Mapping[str, Any] | None = None) -> PlanView: ...

    def execute(self, cluster: str, plan: PlanView, on_event: EventSink,
                cancel: threading.Event) -> RunView: ...

    def history(self, cluster: str, limit: int = 50) -> list[dict[str, Any]]: ...

    def alert_stream(self, limit: int = 20) -> list[dict[str, Any]]: ...

    def findings_of(self, run_id: int) -> list[dict[str, Any]]: ...

    def audit(self, cluster: str, limit: int = 50) -> list[dict[str, Any]]: ...

    def audit_steps(self, run_id: int) -> list[dict[str, Any]]: ...

    def bench_available(self) -> bool: ...

    def bench_plan(self, cluster: str, kind: str, options: Mapping[str, Any]) -> PlanView: ...

    def bench_run(self, cluster: str, plan: PlanView, on_progress: ProgressSink,
                  cancel: threading.Event) -> BenchView: ...

    def bench_history(self, cluster: str, limit: int = 20) -> list[dict[str, Any]]: ...

    def mute(self, cluster: str, code: str, entity: str | None, for_s: float,
             reason: str) -> str: ...

    def follow(self, cluster: str, runbook: str, on_line: Callable[[str, bool], None],
               cancel: threading.Event) -> None: ...


# --------------------------------------------------------------------------- adapters


def _plan_lines(plan: Any) -> tuple[str, ...]:
    lines = getattr(plan, "lines", None)
    if callable(lines):
        return tuple(str(x) for x in lines())
    if lines is not None:
        return tuple(str(x) for x in lines)
    steps = getattr(plan, "steps", ()) or ()
    return tuple(str(s) for s in steps)


def _event_text(ev: Any) -> RunEvent:
    """Turn a ``runbooks.model.RunEvent`` (kind, index, title, message) into a log line."""
    if isinstance(ev, RunEvent):
        return ev
    if isinstance(ev, str):
        return RunEvent("info", ev)
    kind = str(getattr(ev, "kind", "info"))
    idx = getattr(ev, "index", None)
    title = str(getattr(ev, "title", "") or "")
    msg = str(getattr(ev, "message", "") or "")
    head = f"{idx}. {title}" if idx is not None else title
    if kind == "plan":
        text = "plan confirmed; running"
    elif kind == "step_started":
        text = f"{head}\n    $ {msg}" if msg else head
    else:
        text = f"{head}: {msg}" if head and msg else (head or msg)
    ok = {"step_done": True, "step_failed": False, "cancelled": False}.get(kind)
    if kind in ("done", "verify_done"):
        ok = title in ("success", "verify") and "still failing" not in msg \
            if kind == "verify_done" else title == "success"
    return RunEvent(kind, text, ok)


def _run_view(res: Any) -> RunView:
    ok = bool(getattr(res, "ok", False))
    msg = str(getattr(res, "message", "") or ("succeeded" if ok else "failed"))
    ver: list[str] = []
    verified = getattr(res, "verified", None)
    if verified is not None:
        ver.append("verified: the triggering checks cleared" if verified
                   else "NOT verified: the triggering checks still fail")
    for f in getattr(res, "verify_findings", ()) or ():
        ver.append(f"still: {f.code} {f.entity}: {f.message}")
    return RunView(ok, msg, tuple(ver), getattr(res, "run_id", None))


def warm_imports() -> None:
    """Import the collectors' C/eventlet-heavy modules on the main thread, once.

    Seen on the lab: the first ``collect()`` run from a worker thread, importing
    ``rados`` and ``swift.common.ring`` in two threads at once, deadlocks at thread exit.
    Importing them up front (as the CLI effectively does) avoids it.
    """
    for mod in ("rados", "storage.swiftlib", "storage.ceph", "storage.swift",
                "storage.hostfacts", "checks.catalog"):
        try:
            __import__(mod)
        except ImportError:
            pass


class EnvBackend:
    """The real thing: checks, runbooks and the journal through ``stordoc.env.Env``."""

    RECORD_EVERY_S = 300.0

    def __init__(self, env: Any, source: str = "tui") -> None:
        self.env = env
        self.source = source
        self._recorded: dict[str, tuple[float, frozenset[tuple[str, str]], Any]] = {}
        warm_imports()

    def clusters(self) -> Sequence[str]:
        return sorted(self.env.settings.clusters)

    def target(self, cluster: str) -> ClusterTarget | None:
        t: ClusterTarget = self.env.target(cluster)
        return t

    def refresh(self, cluster: str) -> CheckOutcome:
        """Collect and check. The journal gets a run when the findings changed (or every
        5 minutes), not every 10 s a TUI is open; "new since last run" stays right."""
        last = self._recorded.get(cluster)
        out: CheckOutcome = self.env.check(cluster, host_facts=True, source=self.source,
                                           record=False)
        keys = frozenset(f.key for f in out.report.findings)
        if last is not None and keys == last[1] and time.time() - last[0] < self.RECORD_EVERY_S:
            return replace(out, delta=last[2])
        journal = self.env.journal
        rep = out.report
        run_id = journal.record_check_run(
            cluster, rep.started_at, rep.duration_s + out.collect_s, rep.verdict,
            rep.worst.label if rep.worst is not None else None,
            (f.to_dict() for f in rep.findings), source=self.source,
            host_facts=out.snapshot.host_facts_collected)
        delta = journal.delta(cluster, run_id)
        self._recorded[cluster] = (time.time(), keys, delta)
        return replace(out, run_id=run_id, delta=delta)

    def _api(self) -> Any:
        try:
            from runbooks import api
        except ImportError as e:
            raise ActionRefused(f"runbooks are not available: {e}") from None
        return api

    def runbooks(self) -> Sequence[str]:
        try:
            api = self._api()
        except ActionRefused:
            return []
        return [str(getattr(r, "name", r)) for r in api.list_runbooks()]

    def plan(self, cluster: str, runbook: str, target: str,
             options: Mapping[str, Any] | None = None) -> PlanView:
        api = self._api()
        refused = getattr(api, "Refused", ActionRefused)
        try:
            ctx = self.env.run_context(cluster, self.source)
            p = api.plan(ctx, runbook, target, dict(options or {}))
        except refused as e:
            raise ActionRefused(str(e)) from None
        return PlanView(runbook, target, _plan_lines(p),
                        bool(getattr(p, "destructive", True)), raw=(ctx, p))

    def execute(self, cluster: str, plan: PlanView, on_event: EventSink,
                cancel: threading.Event) -> RunView:
        api = self._api()
        refused = getattr(api, "Refused", ActionRefused)
        ctx, p = plan.raw
        try:
            res = api.execute(ctx, p, confirmed_by=ctx.user,
                              on_event=lambda ev: on_event(_event_text(ev)), cancel=cancel)
        except refused as e:
            raise ActionRefused(str(e)) from None
        return _run_view(res)

    def follow(self, cluster: str, runbook: str, on_line: Callable[[str, bool], None],
               cancel: threading.Event) -> None:
        """After a successful OSD/pool fix: what the cluster still does, until clean."""
        from runbooks.aftermath import follow, worth_following

        if not worth_following(runbook):
            return
        ctx = self.env.run_context(cluster, source=self.source)
        follow(ctx, lambda am: on_line(f"after the fix: {am.line}", am.clean),
               timeout_s=300.0, interval_s=2.0, cancel=cancel)

    def mute(self, cluster: str, code: str, entity: str | None, for_s: float,
             reason: str) -> str:
        """A mute with expiry in the journal (storage/mutes.py), by the TUI's user."""
        from storage.mutes import add_mute

        user = self.env.settings.user or self.env.user
        try:
            m = add_mute(self.env.journal, cluster, code, entity, time.time() + for_s, user,
                         reason)
        except ValueError as e:
            raise ActionRefused(str(e)) from None
        return (f"muted {m.what} until "
                f"{time.strftime('%H:%M UTC', time.gmtime(m.until))} by {m.by}")

    def history(self, cluster: str, limit: int = 50) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.env.journal.runs(cluster, limit=limit)
        return rows

    def alert_stream(self, limit: int = 20) -> list[dict[str, Any]]:
        """What the bot posted from alerts and watch mode (the journal's alert_threads),
        newest first: the TUI follows the same stream as the on-call channel."""
        db = self.env.journal.db
        with self.env.journal.lock:
            if "alert_threads" not in db.table_names():
                return []
            return list(db.table("alert_threads").rows_where(order_by="opened_at desc",
                                                             limit=limit))

    def findings_of(self, run_id: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.env.journal.findings_of(run_id)
        return rows

    def audit(self, cluster: str, limit: int = 50) -> list[dict[str, Any]]:
        try:
            from storage.audit import Audit
        except ImportError:
            return []
        a = Audit(self.env.journal)
        return [dict(r) for r in a.runs(limit=limit, cluster=cluster)]


    def audit_steps(self, run_id: int) -> list[dict[str, Any]]:
        try:
            from storage.audit import Audit
        except ImportError:
            return []
        return [dict(r) for r in Audit(self.env.journal).steps(run_id)]

    # -- benchmarks (runbooks.bench.api): plan, confirm, run with live progress, compare
    def _bench(self) -> Any:
        try:
            from runbooks.bench import api
        except ImportError as e:
            raise ActionRefused(f"benchmarks are not available: {e}") from None
        return api

    def bench_available(self) -> bool:
        try:
            self._bench()
        except ActionRefused:
            return False
        return True

    def _limits(self, api: Any) -> Any:
        return api.BenchLimits.from_mapping(self.env.settings.bench.model_dump())

    def bench_plan(self, cluster: str, kind: str, options: Mapping[str, Any]) -> PlanView:
        api = self._bench()
        try:
            ctx = self.env.run_context(cluster, self.source)
            opts = api.BenchOptions(**dict(options))
            p = api.plan_bench(ctx, kind, opts, self._limits(api))
        except (api.Refused, TypeError, ValueError) as e:
            raise ActionRefused(str(e)) from None
        return PlanView(f"bench {kind}", p.where, tuple(p.lines()), True, raw=(ctx, p))

    def bench_run(self, cluster: str, plan: PlanView, on_progress: ProgressSink,
                  cancel: threading.Event) -> BenchView:
        api = self._bench()
        ctx, p = plan.raw

        def progress(pr: Any) -> None:
            on_progress(BenchProgressView(str(pr.phase), float(pr.elapsed_s),
                                          float(pr.planned_s), float(pr.ops_s),
                                          float(pr.mb_s)))

        try:
            rep = api.run_bench(ctx, p.kind, p.options, progress, cancel, self._limits(api),
                                plan=p, confirmed_by=ctx.user)
        except api.Refused as e:
            raise ActionRefused(str(e)) from None
        comp: list[str] = []
        chart = ""
        for r in rep.results:
            comp += api.detail_lines(r)
        if rep.results:
            try:
                for c in api.compare(ctx, rep, limits=self._limits(api)):
                    comp += c.lines()
            except api.Refused as e:
                comp.append(f"no comparison: {e}")
            try:
                chart = api.chart_text(rep, width=100, height=16)
            except Exception as e:  # a chart is a nicety; the numbers are shown anyway
                chart = f"(no chart: {type(e).__name__}: {e})"
        return BenchView(rep.status, rep.message, tuple(r.to_row() for r in rep.results),
                         tuple(comp), chart)

    def bench_history(self, cluster: str, limit: int = 20) -> list[dict[str, Any]]:
        try:
            api = self._bench()
        except ActionRefused:
            return []
        ctx = self.env.run_context(cluster, self.source)
        return [r.to_row() for r in api.history(ctx, limit)]


@dataclass
class SnapshotBackend:
    """Captured data: every refresh returns the same snapshot and report.

    Used by snapshot tests and the benchmarks (a synthetic 10,000-OSD cluster). With
    ``work`` set, refresh also spends that many seconds of real CPU (re-running the
    checks) so the keystroke benchmark measures the UI while a refresh really runs.
    """

    snapshot: ClusterSnapshot
    findings: tuple[Finding, ...] = ()
    cluster_target: ClusterTarget | None = None
    history_rows: list[dict[str, Any]] = field(default_factory=list)
    audit_rows: list[dict[str, Any]] = field(default_factory=list)
    bench_rows: list[dict[str, Any]] = field(default_factory=list)
    work: float = 0.0
    fresh: bool = False  # each refresh returns a new snapshot object (new taken_at)
    calls: int = 0
    mutes: list[tuple[str, str | None, float, str]] = field(default_factory=list)

    def clusters(self) -> Sequence[str]:
        return [self.snapshot.cluster]

    def target(self, cluster: str) -> ClusterTarget | None:
        return self.cluster_target

    def refresh(self, cluster: str) -> CheckOutcome:
        self.calls += 1
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < self.work:
            # real work in Python (holds the GIL like a collector's JSON parsing would)
            n += sum(1 for o in (self.snapshot.ceph.osds if self.snapshot.ceph else ())
                     if o.up)
        snap = self.snapshot
        if self.fresh:
            snap = replace(snap, taken_at=snap.taken_at + self.calls)
        report = CheckReport(snap.cluster, self.findings, snap.taken_at, 0.0, ())
        # grouped like a live check; next steps are not planned on captured data
        return CheckOutcome(snap, report, None, None, 0.0, 0.0,
                            correlate(report.findings, snap))

    def runbooks(self) -> Sequence[str]:
        return []

    def plan(self, cluster: str, runbook: str, target: str,
             options: Mapping[str, Any] | None = None) -> PlanView:
        raise ActionRefused("captured data: runbooks cannot run against it")

    def follow(self, cluster: str, runbook: str, on_line: Callable[[str, bool], None],
               cancel: threading.Event) -> None:
        """Captured data: nothing runs, so nothing to follow."""

    def mute(self, cluster: str, code: str, entity: str | None, for_s: float,
             reason: str) -> str:
        """Captured data: mutes hide findings in this session only."""
        if not reason.strip():
            raise ActionRefused("a mute needs a reason")
        self.mutes.append((code, entity, for_s, reason))
        self.findings = tuple(f for f in self.findings
                              if not (f.code == code and entity in (None, f.entity)))
        return f"muted {code} {entity or '(all)'} (captured data: this session only)"

    def execute(self, cluster: str, plan: PlanView, on_event: EventSink,
                cancel: threading.Event) -> RunView:
        raise ActionRefused("captured data: runbooks cannot run against it")

    def history(self, cluster: str, limit: int = 50) -> list[dict[str, Any]]:
        return self.history_rows[:limit]

    def alert_stream(self, limit: int = 20) -> list[dict[str, Any]]:
        return []

    def findings_of(self, run_id: int) -> list[dict[str, Any]]:
        return [f.to_dict() for f in self.findings]

    def audit(self, cluster: str, limit: int = 50) -> list[dict[str, Any]]:
        return self.audit_rows[:limit]

    def audit_steps(self, run_id: int) -> list[dict[str, Any]]:
        return [dict(st) for r in self.audit_rows if r.get("id") == run_id
                for st in r.get("steps", [])]  # type: ignore[attr-defined]

    def bench_available(self) -> bool:
        return True

    def bench_plan(self, cluster: str, kind: str, options: Mapping[str, Any]) -> PlanView:
        raise ActionRefused("captured data: benchmarks cannot run against it")

    def bench_run(self, cluster: str, plan: PlanView, on_progress: ProgressSink,
                  cancel: threading.Event) -> BenchView:
        raise ActionRefused("captured data: benchmarks cannot run against it")

    def bench_history(self, cluster: str, limit: int = 20) -> list[dict[str, Any]]:
        return self.bench_rows[:limit]
