"""What the TUI needs from the rest of stordoc, as one small protocol.

The App takes a ``Backend`` in its constructor (harlequin-style): a real ``Env``
(``EnvBackend``: the application service, ``core.service``), a saved snapshot
(``tui.saved.SavedSnapshotBackend``), or in tests a double (``SnapshotBackend``,
tests/support/tui_backend.py). Every method may block: the App calls them only from thread
workers, never on the event loop. The adapter only turns the service's objects into what the screens draw.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from checks.outcome import CheckOutcome
from core.env import Env
from core.service import Service
from core.service.actions import ActionPlan, RunReport
from core.service.actions import ActionRefused as ServiceRefused
from core.service.inspect import RecordPolicy
from core.service.records import AlertPost, MuteRefused
from runbooks.bench.model import Progress as BenchProgress
from runbooks.model import EventKind, RunEvent
from storage.audit import AuditRun, AuditStep
from storage.journal import CheckRun, FindingRecord
from storage.targets import ClusterTarget


class ActionRefused(Exception):
    """A runbook refused to plan or run (wrong target, lock held, read-only...)."""


def error_text(err: BaseException | None) -> str:
    """A worker's error in one line: a refusal as it is, anything else with its type."""
    return str(err) if isinstance(err, ActionRefused) else f"{type(err).__name__}: {err}"


@dataclass(frozen=True)
class LogLine:
    """One line of the live step log."""

    kind: str  # an EventKind, or "info" for the aftermath lines
    text: str
    ok: bool | None = None
    index: int | None = None  # the step's number (its text starts "N. title")


@dataclass(frozen=True)
class RunView:
    ok: bool
    summary: str
    verification: tuple[str, ...] = ()
    run_id: int | None = None


LogSink = Callable[[LogLine], None]


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
             options: Mapping[str, Any] | None = None) -> ActionPlan: ...

    def execute(self, cluster: str, plan: ActionPlan, on_event: LogSink,
                cancel: threading.Event) -> RunView: ...

    def history(self, cluster: str, limit: int = 50) -> list[CheckRun]: ...

    def alert_stream(self, limit: int = 20) -> list[AlertPost]: ...

    def findings_of(self, run_id: int) -> list[FindingRecord]: ...

    def audit(self, cluster: str, limit: int = 50) -> list[AuditRun]: ...

    def audit_steps(self, run_id: int) -> list[AuditStep]: ...

    def bench_available(self) -> bool: ...

    def bench_plan(self, cluster: str, kind: str, options: Mapping[str, Any]
                   ) -> ActionPlan: ...

    def bench_run(self, cluster: str, plan: ActionPlan, on_progress: ProgressSink,
                  cancel: threading.Event) -> BenchView: ...

    def bench_history(self, cluster: str, limit: int = 20) -> list[dict[str, Any]]: ...

    def mute(self, cluster: str, code: str, entity: str | None, for_s: float,
             reason: str) -> str: ...

    def follow(self, cluster: str, runbook: str, on_line: Callable[[str, bool], None],
               cancel: threading.Event) -> None: ...


# --------------------------------------------------------------------------- adapters


def log_line(ev: RunEvent) -> LogLine:
    """A runbook's progress event as a line of the step log (``ok`` comes typed from the
    runbook: never read from the wording)."""
    head = f"{ev.index}. {ev.title}" if ev.index is not None else ev.title
    if ev.kind is EventKind.PLAN:
        text = "plan confirmed; running"
    elif ev.kind is EventKind.STEP_STARTED:
        text = f"{head}\n    $ {ev.message}" if ev.message else head
    else:
        text = f"{head}: {ev.message}" if head and ev.message else (head or ev.message)
    ok = ev.ok
    if ok is None:
        ok = {EventKind.STEP_DONE: True, EventKind.STEP_FAILED: False,
              EventKind.CANCELLED: False}.get(EventKind(ev.kind))
    return LogLine(str(ev.kind), text, ok, ev.index)


def _run_view(res: RunReport) -> RunView:
    ver: list[str] = []
    if res.verified is not None:
        ver.append("verified: the triggering checks cleared" if res.verified
                   else "NOT verified: the triggering checks still fail")
    for f in res.remaining:
        ver.append(f"still: {f.code} {f.entity}: {f.message}")
    return RunView(res.ok, res.message or ("succeeded" if res.ok else "failed"), tuple(ver),
                   res.run_id)


def warm_imports() -> None:
    """Import the collectors' C/eventlet-heavy modules on the main thread, once.

    Seen on the lab: the first ``collect()`` run from a worker thread, importing
    ``rados`` and ``swift.common.ring`` in two threads at once, deadlocks at thread exit.
    Importing them up front (as the CLI effectively does) avoids it.
    """
    try:
        import rados  # noqa: F401  (python3-rados, the C module the deadlock was about)
    except ImportError:  # a machine without Ceph's client: nothing to warm
        pass
    import checks.catalog  # noqa: F401
    import storage.ceph  # noqa: F401
    import storage.hostfacts  # noqa: F401
    import storage.swift  # noqa: F401
    import storage.swiftlib  # noqa: F401


class EnvBackend:
    """The real thing: the application service (``core.service``) for one Env."""

    def __init__(self, env: Env, source: str = "tui") -> None:
        self.env = env
        self.source = source
        self.service = Service(env)
        warm_imports()

    def clusters(self) -> Sequence[str]:
        return self.service.clusters()

    def target(self, cluster: str) -> ClusterTarget | None:
        return self.service.target(cluster)

    def refresh(self, cluster: str) -> CheckOutcome:
        """Collect and check; recorded when the findings changed (or every 5 minutes),
        not every 10 s a TUI is open (the rule lives in core.service.inspect)."""
        return self.service.check(cluster, self.source, RecordPolicy.ON_CHANGE)

    def runbooks(self) -> Sequence[str]:
        return self.service.actions.runbooks()

    def plan(self, cluster: str, runbook: str, target: str,
             options: Mapping[str, Any] | None = None) -> ActionPlan:
        try:
            return self.service.actions.plan(cluster, runbook, target, source=self.source,
                                             options=options)
        except ServiceRefused as e:
            raise ActionRefused(str(e)) from None

    def execute(self, cluster: str, plan: ActionPlan, on_event: LogSink,
                cancel: threading.Event) -> RunView:
        try:
            res = self.service.actions.execute(plan, plan.user,
                                               lambda ev: on_event(log_line(ev)), cancel)
        except ServiceRefused as e:
            raise ActionRefused(str(e)) from None
        return _run_view(res)

    def follow(self, cluster: str, runbook: str, on_line: Callable[[str, bool], None],
               cancel: threading.Event) -> None:
        """After a successful OSD/pool fix: what the cluster still does, until clean."""
        self.service.actions.follow(
            cluster, runbook, lambda am: on_line(f"after the fix: {am.line}", am.clean),
            cancel, source=self.source)

    def mute(self, cluster: str, code: str, entity: str | None, for_s: float,
             reason: str) -> str:
        """A mute with expiry in the journal, by the TUI's user."""
        user = self.env.settings.user or self.env.user
        try:
            m = self.service.records.mute(cluster, code, entity, for_s, reason, user)
        except MuteRefused as e:
            raise ActionRefused(str(e)) from None
        return (f"muted {m.what} until "
                f"{time.strftime('%H:%M UTC', time.gmtime(m.until))} by {m.by}")

    def history(self, cluster: str, limit: int = 50) -> list[CheckRun]:
        return self.service.records.history(cluster, limit)

    def alert_stream(self, limit: int = 20) -> list[AlertPost]:
        return self.service.records.alert_stream(limit)

    def findings_of(self, run_id: int) -> list[FindingRecord]:
        return self.service.records.findings_of(run_id)

    def audit(self, cluster: str, limit: int = 50) -> list[AuditRun]:
        return self.service.records.audit(cluster, limit)

    def audit_steps(self, run_id: int) -> list[AuditStep]:
        return self.service.records.audit_steps(run_id)

    # -- benchmarks: plan, confirm, run with live progress, compare
    def bench_available(self) -> bool:
        return bool(self.service.actions.bench_kinds())

    def bench_plan(self, cluster: str, kind: str, options: Mapping[str, Any]) -> ActionPlan:
        try:
            return self.service.actions.plan_bench(cluster, kind, source=self.source,
                                                   options=options)
        except ServiceRefused as e:
            raise ActionRefused(str(e)) from None

    def bench_run(self, cluster: str, plan: ActionPlan, on_progress: ProgressSink,
                  cancel: threading.Event) -> BenchView:
        def progress(pr: BenchProgress) -> None:
            on_progress(BenchProgressView(str(pr.phase), float(pr.elapsed_s),
                                          float(pr.planned_s), float(pr.ops_s),
                                          float(pr.mb_s)))

        acts = self.service.actions
        try:
            res = acts.execute(plan, plan.user, lambda _ev: None, cancel, progress)
        except ServiceRefused as e:
            raise ActionRefused(str(e)) from None
        b = res.bench
        if b is None:
            return BenchView(res.outcome, res.message)
        chart = ""
        if b.rows:
            try:
                chart = acts.chart_text(b, width=100, height=16)
            except Exception as e:  # a chart is a nicety; the numbers are shown anyway
                chart = f"(no chart: {type(e).__name__}: {e})"
        return BenchView(res.outcome, res.message, tuple(dict(r) for r in b.rows),
                         b.details + b.comparisons, chart)

    def bench_history(self, cluster: str, limit: int = 20) -> list[dict[str, Any]]:
        return [r.to_row() for r in self.service.actions.bench_history(cluster, limit)]
