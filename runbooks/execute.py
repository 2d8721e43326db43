"""Running a confirmed plan: under its locks, audited, step by step with a cancel between
steps; after a failure only the cleanup steps whose setup was done run (e.g. ``ceph osd
unset noout``); a change a step is about to make is owned in the audit before it is made,
so an interrupted run can be undone later (``runbooks.leftovers``). Each step is audited
``running`` as it starts and its outcome as soon as it is known, before the next step
starts: a process that dies mid-run leaves an audit that says what was done, what was
under way and what never started. Then ``verify``."""

from __future__ import annotations

import threading
import time

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
)
from runbooks.planning import collect_snapshot, plan_from_snapshot, runbook_named
from runbooks.steps import EventFn, NoRunner, default_runner, emit, run_step, short
from runbooks.verify import bench_after, verify
from storage.audit import Audit, LockHeld
from storage.runner import Runner


def execute(ctx: RunContext, plan: Plan, confirmed_by: str,
            on_event: EventFn | None = None,
            cancel: threading.Event | None = None, recheck: bool = True) -> RunResult:
    """Run a confirmed plan. Raises Refused before anything runs (lock held, no
    confirmation, plan for another cluster, the cluster changed since the plan: with
    ``recheck`` the plan is rebuilt from a fresh snapshot under the lock and must give
    the same steps); every other outcome is a RunResult."""
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
    cancel = cancel or threading.Event()
    audit = Audit(ctx.journal, ctx.secrets)
    held: list[int] = []
    purpose = f"{plan.runbook} {plan.target}"
    try:
        for key in plan.locks:
            held.append(audit.acquire(ctx.cluster, key, ctx.user, purpose))
    except LockHeld as e:
        for lid in held:
            audit.release(lid)
        raise Refused(str(e)) from e
    if recheck:
        # under the lock, make sure the plan still holds: someone may have fixed (or
        # changed) the target since it was shown; then nothing runs
        try:
            snap = collect_snapshot(ctx, runbook_named(plan.runbook).needs_host_facts)
            fresh = plan_from_snapshot(ctx, snap, plan.runbook, plan.target, plan.options)
        except Refused as e:
            for lid in held:
                audit.release(lid)
            raise Refused(f"the cluster changed since the plan was made: {e}") from None
        except BaseException:
            for lid in held:
                audit.release(lid)
            raise
        if [s.command for s in fresh.steps] != [s.command for s in plan.steps]:
            for lid in held:
                audit.release(lid)
            raise Refused("the cluster changed since the plan was made (the steps would "
                          "differ now): plan again")

    runner: Runner | None = None
    own_runner = False
    env: StepEnv | None = None
    run_id: int | None = None
    results: list[StepResult] = []
    try:
        run_id = audit.start_run(ctx.cluster, plan.runbook, plan.target, ctx.user, ctx.source,
                                 plan.to_dict(), confirmed_by=confirmed_by)
        emit(on_event, RunEvent(EventKind.PLAN, None, plan.runbook, "\n".join(plan.lines())))
        if any(isinstance(s.op, HostOp) or (isinstance(s.op, PyOp) and s.op.remote)
               for s in plan.steps):
            runner = ctx.runner
            if runner is None:
                runner = default_runner(ctx)
                own_runner = True
        env = StepEnv(ctx, runner if runner is not None else NoRunner())

        undo_of = {s.cleanup_of: s for s in plan.steps if s.cleanup_of is not None}
        done: list[PlannedStep] = []
        stopped: PlannedStep | None = None
        stop_kind: Outcome | None = None
        stop_msg = ""
        for step in plan.steps:
            if cancel.is_set():
                stop_kind, stop_msg = Outcome.CANCELLED, f"cancelled before step {step.index}"
                emit(on_event, RunEvent(EventKind.CANCELLED, step.index, step.title, stop_msg))
                break
            emit(on_event, RunEvent(EventKind.STEP_STARTED, step.index, step.title, step.command))
            undo = undo_of.get(step.index)
            if undo is not None and isinstance(undo.op, MonOp):  # owned before it is made
                audit.own(run_id, ctx.cluster, step.index, step.title, undo.op.prefix,
                          undo.op.args, undo.command)
            row = audit.begin_step(run_id, step.index, step.title, step.where, step.command)
            t0 = time.monotonic()
            status, rc, out, err = run_step(env, step, cancel)
            dur = time.monotonic() - t0
            audit.end_step(row, rc, out, err, dur, status)  # known before the next starts
            results.append(StepResult(step.index, step.title, step.where, step.command,
                                      status, rc, out, err, dur))
            if undo is not None and status != "done":
                audit.set_owned(run_id, step.index, "not_made")
            if status == "done" and step.cleanup_of is not None:
                audit.set_owned(run_id, step.cleanup_of, "undone")
            if status == "done":
                done.append(step)
                emit(on_event, RunEvent(EventKind.STEP_DONE, step.index, step.title,
                                        short(out) or "ok"))
                continue
            stopped = step
            if status == "cancelled":
                stop_kind, stop_msg = Outcome.CANCELLED, f"cancelled during step {step.index}"
                emit(on_event, RunEvent(EventKind.CANCELLED, step.index, step.title, stop_msg))
            else:
                stop_kind = Outcome.FAILED
                detail = short(err or out or "no output")
                stop_msg = (f"step {step.index} ({step.title}) failed"
                            f"{f' with exit status {rc}' if rc not in (None, 0) else ''}: "
                            f"{detail}")
                emit(on_event, RunEvent(EventKind.STEP_FAILED, step.index, step.title, stop_msg))
            break

        cleanup_msgs: list[str] = []
        if stop_kind:
            done_idx = {s.index for s in done}
            after = [s for s in plan.steps if s.index not in done_idx and s is not stopped]
            for step in after:
                if step.cleanup_of is None or step.cleanup_of not in done_idx:
                    continue
                emit(on_event, RunEvent(EventKind.STEP_STARTED, step.index, step.title,
                                        f"cleanup: {step.command}"))
                row = audit.begin_step(run_id, step.index, step.title, step.where,
                                       step.command)
                t0 = time.monotonic()
                status, rc, out, err = run_step(env, step, threading.Event())
                dur = time.monotonic() - t0
                audit.end_step(row, rc, out, err, dur, status)
                results.append(StepResult(step.index, step.title, step.where, step.command,
                                          status, rc, out, err, dur))
                if status == "done":
                    done.append(step)
                    audit.set_owned(run_id, step.cleanup_of, "undone")
                    cleanup_msgs.append(f"cleanup step {step.index} ({step.title}) done")
                    emit(on_event, RunEvent(EventKind.STEP_DONE, step.index, step.title, "cleanup"))
                else:
                    cleanup_msgs.append(f"cleanup step {step.index} ({step.title}) FAILED: "
                                        f"{short(err)}")
                    emit(on_event, RunEvent(EventKind.STEP_FAILED, step.index, step.title,
                                            f"cleanup failed: {short(err)}"))

        done_idx = {s.index for s in done}
        done_t = tuple(f"{s.index}. {s.title}" for s in plan.steps if s.index in done_idx)
        not_done_t = tuple(f"{s.index}. {s.title}" for s in plan.steps
                           if s.index not in done_idx)
        if stop_kind:
            msg = stop_msg
            msg += f". Done: {', '.join(done_t) or 'nothing'}"
            msg += f". Not done: {', '.join(not_done_t) or 'nothing'}"
            if cleanup_msgs:
                msg += ". " + "; ".join(cleanup_msgs)
            audit.finish_run(run_id, stop_kind, msg, {})
            emit(on_event, RunEvent(EventKind.DONE, None, stop_kind, msg, ok=False))
            return RunResult(run_id, stop_kind, msg, tuple(results), done_t, not_done_t, None)

        emit(on_event, RunEvent(EventKind.VERIFY_STARTED, None, "verify",
                                f"re-running {', '.join(plan.verify_codes)}"))
        ok, left, vmsg = verify(ctx, plan, cancel)
        emit(on_event, RunEvent(EventKind.VERIFY_DONE, None, "verify", vmsg, ok=ok))
        outcome = Outcome.SUCCESS if ok else Outcome.VERIFY_FAILED
        msg = (f"{plan.runbook} {plan.target}: {len(done_t)} step(s) done; "
               + (f"verified: {', '.join(plan.verify_codes)} cleared" if ok else vmsg))
        bench = bench_after(ctx, on_event, cancel) if ok else None
        if bench is not None:
            msg += "; benchmark after the fix: " + str(
                bench.get("verdict") if bench.get("ran") else f"not run ({bench.get('reason')})")
        audit.finish_run(run_id, outcome, msg,
                         {"verified": ok, "message": vmsg,
                          "findings": [f.to_dict() for f in left], "bench": bench})
        emit(on_event, RunEvent(EventKind.DONE, None, outcome, msg, ok=ok))
        return RunResult(run_id, outcome, msg, tuple(results), done_t, not_done_t, ok, left,
                         bench)
    except BaseException as e:
        if run_id is not None:
            audit.interrupt_steps(run_id)  # a step under way stays "outcome unknown"
            audit.finish_run(run_id, "failed", f"runbook aborted: {type(e).__name__}: {e}", {})
        raise
    finally:
        if env is not None:
            env.close()
        if own_runner and runner is not None:
            runner.close()
        for lid in held:
            audit.release(lid)
