"""Running a confirmed plan: under its locks, audited, step by step with a cancel between
steps; after a failure only the cleanup steps whose setup was done run (e.g. ``ceph osd
unset noout``); a change a step is about to make is owned in the audit before it is made,
so an interrupted run can be undone later (``runbooks.leftovers``). Each step is audited
``running`` as it starts and its outcome as soon as it is known, before the next step
starts: a process that dies mid-run leaves an audit that says what was done, what was
under way and what never started. Then ``verify``.

Read ``execute`` top to bottom: refusals, lock, recheck, steps, cleanup, verify, audit;
each is one function below, in that order."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from checks.model import Finding
from runbooks.base import Runbook
from runbooks.locking import locks_held
from runbooks.model import (
    EventKind,
    HostOp,
    InvalidRequest,
    MonOp,
    Outcome,
    Plan,
    PlannedStep,
    PyOp,
    Refused,
    RunContext,
    RunEvent,
    RunResult,
    StepEnv,
    StepResult,
    StepStatus,
)
from runbooks.planning import collect_snapshot, plan_from_snapshot, runbook_named
from runbooks.steps import EventFn, NoRunner, default_runner, emit, run_step, short
from runbooks.verify import bench_after, verify
from storage.audit import Audit
from storage.runner import Runner


def execute(ctx: RunContext, plan: Plan, confirmed_by: str,
            on_event: EventFn | None = None,
            cancel: threading.Event | None = None, recheck: bool = True) -> RunResult:
    """Run a confirmed plan. Raises Refused before anything runs (lock held, no
    confirmation, plan for another cluster, the cluster changed since the plan: with
    ``recheck`` the plan is rebuilt from a fresh snapshot under the lock and must give
    the same steps); every other outcome is a RunResult."""
    rb = _accepted(ctx, plan, confirmed_by)
    cancel = cancel or threading.Event()
    audit = Audit(ctx.journal, ctx.secrets)
    with locks_held(audit, ctx.cluster, plan.locks, ctx.user, f"{plan.runbook} {plan.target}"):
        if recheck:
            _recheck(ctx, plan, rb)
        run_id = audit.start_run(ctx.cluster, plan.runbook, plan.target, ctx.user, ctx.source,
                                 plan.to_dict(), confirmed_by=confirmed_by)
        with _abort_audited(audit, run_id):
            emit(on_event, RunEvent(EventKind.PLAN, None, plan.runbook, "\n".join(plan.lines())))
            for lk in audit.takeovers:  # a lock left by a process gone (SIGKILL): said
                audit.record_step(run_id, 0, lk.line(), "local", "", None, "", "", 0.0,
                                  StepStatus.DONE)
                emit(on_event, RunEvent(EventKind.STEP_DONE, None, "stale lock", lk.line(),
                                        ok=True))
            with _step_env(ctx, plan) as env:
                run = _Run(ctx, plan, audit, run_id, env, on_event)
                stop = _steps(run, cancel)
                if stop is not None:
                    return _audit_stopped(run, stop, _cleanup(run, stop))
                return _audit_verified(run, _verify(run, cancel))


@dataclass
class _Run:
    """One run under way: where it runs, where it is audited, what it has done so far."""

    ctx: RunContext
    plan: Plan
    audit: Audit
    run_id: int
    env: StepEnv
    on_event: EventFn | None
    results: list[StepResult] = field(default_factory=list)
    done: list[PlannedStep] = field(default_factory=list)

    def emit(self, kind: EventKind, step: PlannedStep, message: str) -> None:
        emit(self.on_event, RunEvent(kind, step.index, step.title, message))


@dataclass(frozen=True)
class _Stop:
    """Why the steps stopped before the end: cancelled or failed, at ``step`` (None when
    cancelled between steps)."""

    kind: Outcome
    message: str
    step: PlannedStep | None


@dataclass(frozen=True)
class _Verified:
    ok: bool
    left: tuple[Finding, ...]
    message: str
    bench: dict[str, Any] | None


def _accepted(ctx: RunContext, plan: Plan, confirmed_by: str) -> Runbook:
    """The plan's runbook, or Refused / InvalidRequest before anything is locked."""
    if not confirmed_by or not confirmed_by.strip():
        raise Refused("not confirmed: nothing was run")
    if plan.cluster != ctx.cluster:
        raise Refused(f"the plan is for cluster {plan.cluster}, not {ctx.cluster}")
    if any(s.op is None for s in plan.steps):
        raise Refused("this plan cannot be run (it was rebuilt from text); plan again")
    rb = runbook_named(plan.runbook)
    rb.check_run(plan)
    if rb.info.two_people and confirmed_by.strip() == ctx.user:
        raise InvalidRequest(f"{plan.runbook} needs two people: {ctx.user} planned it, a "
                             f"second person must approve it; nothing was run")
    return rb


def _recheck(ctx: RunContext, plan: Plan, rb: Runbook) -> None:
    """Under the lock, make sure the plan still holds: someone may have fixed (or changed)
    the target since it was shown; then Refused, and nothing runs."""
    try:
        snap = collect_snapshot(ctx, rb.needs_host_facts)
        fresh = plan_from_snapshot(ctx, snap, plan.runbook, plan.target, plan.options)
    except Refused as e:
        raise Refused(f"the cluster changed since the plan was made: {e}") from None
    if [s.command for s in fresh.steps] != [s.command for s in plan.steps]:
        raise Refused("the cluster changed since the plan was made (the steps would "
                      "differ now): plan again")


@contextmanager
def _abort_audited(audit: Audit, run_id: int) -> Iterator[None]:
    """A run ended by an exception (Ctrl-C included) is audited ``failed``, a step under
    way staying "outcome unknown"; the exception goes on."""
    try:
        yield
    except BaseException as e:
        audit.interrupt_steps(run_id)
        audit.finish_run(run_id, Outcome.FAILED, f"runbook aborted: {type(e).__name__}: {e}",
                         {})
        raise


@contextmanager
def _step_env(ctx: RunContext, plan: Plan) -> Iterator[StepEnv]:
    """What the steps run with: one Ceph connection and, for a plan with host steps, the
    context's runner or one of our own; closed after the run."""
    runner: Runner | None = None
    own_runner = False
    if any(isinstance(s.op, HostOp) or (isinstance(s.op, PyOp) and s.op.remote)
           for s in plan.steps):
        runner = ctx.runner
        if runner is None:
            runner = default_runner(ctx)
            own_runner = True
    env = StepEnv(ctx, runner if runner is not None else NoRunner())
    try:
        yield env
    finally:
        env.close()
        if own_runner and runner is not None:
            runner.close()


def _run_audited(run: _Run, step: PlannedStep, cancel: threading.Event) -> StepResult:
    """One step, audited ``running`` before it runs and its outcome as soon as it is
    known (before the next step starts)."""
    row = run.audit.begin_step(run.run_id, step.index, step.title, step.where, step.command)
    t0 = time.monotonic()
    status, rc, out, err = run_step(run.env, step, cancel)
    dur = time.monotonic() - t0
    run.audit.end_step(row, rc, out, err, dur, status)
    res = StepResult(step.index, step.title, step.where, step.command, status, rc, out, err,
                     dur)
    run.results.append(res)
    return res


def _steps(run: _Run, cancel: threading.Event) -> _Stop | None:
    """The plan's steps in order, a cancel honoured between them; None when all were
    done, else where and why they stopped. A change a step will make is owned in the
    audit before it is made (with the step that undoes it)."""
    undo_of = {s.cleanup_of: s for s in run.plan.steps if s.cleanup_of is not None}
    for step in run.plan.steps:
        if cancel.is_set():
            msg = f"cancelled before step {step.index}"
            run.emit(EventKind.CANCELLED, step, msg)
            return _Stop(Outcome.CANCELLED, msg, None)
        run.emit(EventKind.STEP_STARTED, step, step.command)
        undo = undo_of.get(step.index)
        if undo is not None and isinstance(undo.op, MonOp):  # owned before it is made
            run.audit.own(run.run_id, run.ctx.cluster, step.index, step.title,
                          undo.op.prefix, undo.op.args, undo.command)
        res = _run_audited(run, step, cancel)
        if res.status != StepStatus.DONE:
            if undo is not None:
                run.audit.set_owned(run.run_id, step.index, "not_made")
            return _stopped_at(run, step, res)
        if step.cleanup_of is not None:
            run.audit.set_owned(run.run_id, step.cleanup_of, "undone")
        run.done.append(step)
        run.emit(EventKind.STEP_DONE, step, short(res.stdout) or "ok")
    return None


def _stopped_at(run: _Run, step: PlannedStep, res: StepResult) -> _Stop:
    """A step that did not finish: cancelled while it ran, or failed (with its reason)."""
    if res.status == StepStatus.CANCELLED:
        msg = f"cancelled during step {step.index}"
        run.emit(EventKind.CANCELLED, step, msg)
        return _Stop(Outcome.CANCELLED, msg, step)
    rc = f" with exit status {res.rc}" if res.rc not in (None, 0) else ""
    msg = (f"step {step.index} ({step.title}) failed{rc}: "
           f"{short(res.stderr or res.stdout or 'no output')}")
    run.emit(EventKind.STEP_FAILED, step, msg)
    return _Stop(Outcome.FAILED, msg, step)


def _cleanup(run: _Run, stop: _Stop) -> list[str]:
    """After a stop, the cleanup steps whose setup was done (``ceph osd unset noout``),
    never cancelled; one line each on how it went."""
    done_idx = {s.index for s in run.done}
    notes: list[str] = []
    for step in run.plan.steps:
        if step.index in done_idx or step is stop.step:
            continue
        if step.cleanup_of is None or step.cleanup_of not in done_idx:
            continue
        run.emit(EventKind.STEP_STARTED, step, f"cleanup: {step.command}")
        res = _run_audited(run, step, threading.Event())
        if res.status == StepStatus.DONE:
            run.done.append(step)
            run.audit.set_owned(run.run_id, step.cleanup_of, "undone")
            notes.append(f"cleanup step {step.index} ({step.title}) done")
            run.emit(EventKind.STEP_DONE, step, "cleanup")
        else:
            notes.append(f"cleanup step {step.index} ({step.title}) FAILED: "
                         f"{short(res.stderr)}")
            run.emit(EventKind.STEP_FAILED, step, f"cleanup failed: {short(res.stderr)}")
    return notes


def _verify(run: _Run, cancel: threading.Event) -> _Verified:
    """All steps done: re-run the triggering checks, then the optional benchmark."""
    plan = run.plan
    emit(run.on_event, RunEvent(EventKind.VERIFY_STARTED, None, "verify",
                                f"re-running {', '.join(plan.verify_codes)}"))
    ok, left, msg = verify(run.ctx, plan, cancel)
    emit(run.on_event, RunEvent(EventKind.VERIFY_DONE, None, "verify", msg, ok=ok))
    bench = bench_after(run.ctx, run.on_event, cancel) if ok else None
    return _Verified(ok, left, msg, bench)


def _done_and_not_done(run: _Run) -> tuple[tuple[str, ...], tuple[str, ...]]:
    done_idx = {s.index for s in run.done}
    return (tuple(f"{s.index}. {s.title}" for s in run.plan.steps if s.index in done_idx),
            tuple(f"{s.index}. {s.title}" for s in run.plan.steps if s.index not in done_idx))


def _audit_stopped(run: _Run, stop: _Stop, cleanup_notes: list[str]) -> RunResult:
    """The end of a stopped run: why, what was done, what not, how the cleanup went."""
    done, not_done = _done_and_not_done(run)
    msg = (f"{stop.message}. Done: {', '.join(done) or 'nothing'}"
           f". Not done: {', '.join(not_done) or 'nothing'}")
    if cleanup_notes:
        msg += ". " + "; ".join(cleanup_notes)
    return _audit_end(run, stop.kind, msg, {}, ok=False)


def _audit_verified(run: _Run, v: _Verified) -> RunResult:
    """The end of a run whose steps were all done: verified or not, and the benchmark."""
    plan = run.plan
    done, _ = _done_and_not_done(run)
    msg = (f"{plan.runbook} {plan.target}: {len(done)} step(s) done; "
           + (f"verified: {', '.join(plan.verify_codes)} cleared" if v.ok else v.message))
    if v.bench is not None:
        msg += "; benchmark after the fix: " + str(
            v.bench.get("verdict") if v.bench.get("ran")
            else f"not run ({v.bench.get('reason')})")
    record = {"verified": v.ok, "message": v.message,
              "findings": [f.to_dict() for f in v.left], "bench": v.bench}
    return _audit_end(run, Outcome.SUCCESS if v.ok else Outcome.VERIFY_FAILED, msg, record,
                      ok=v.ok, verified=v.ok, left=v.left, bench=v.bench)


def _audit_end(run: _Run, outcome: Outcome, msg: str, record: dict[str, Any], ok: bool,
               verified: bool | None = None, left: tuple[Finding, ...] = (),
               bench: dict[str, Any] | None = None) -> RunResult:
    """The run's outcome in the audit, the last event, and the result."""
    run.audit.finish_run(run.run_id, outcome, msg, record)
    emit(run.on_event, RunEvent(EventKind.DONE, None, outcome, msg, ok=ok))
    done, not_done = _done_and_not_done(run)
    return RunResult(run.run_id, outcome, msg, tuple(run.results), done, not_done, verified,
                     left, bench)
