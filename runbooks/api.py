"""The runbook API every front end calls: list, plan, execute.

``plan`` reads a fresh snapshot, validates the typed target against it and returns the
exact steps without touching anything. ``execute`` takes the lock(s), audits, runs the
steps in order with timeouts, stops at the first failure (running only the cleanup steps
whose setup was done, e.g. ``ceph osd unset noout``), honours a cancel between steps, then
verifies by re-running the triggering checks until they pass or the deadline expires.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import runbooks.catalog  # noqa: F401  (registers the runbooks, in the importing thread)
from checks.engine import run_checks
from checks.model import Finding
from runbooks.base import Draft, Runbook, registry
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
    RunbookInfo,
    RunContext,
    RunEvent,
    RunResult,
    StepEnv,
    StepResult,
    StepStatus,
    WaitOp,
)
from runbooks.targets import canonical_target
from storage.audit import Audit, LockHeld
from storage.model import ClusterSnapshot
from storage.runner import HostUnreachable, Runner

__all__ = [
    "Plan", "PlannedStep", "Refused", "RunContext", "RunEvent", "RunResult", "RunbookInfo",
    "StepResult", "execute", "list_runbooks", "plan", "plan_from_snapshot",
    "runbook_for_code", "verify",
]

EventFn = Callable[[RunEvent], None]


def list_runbooks() -> list[RunbookInfo]:
    return [rb.info for rb in registry().values()]


def runbook_for_code(code: str) -> str | None:
    """The runbook that fixes a finding code (the first that declares it), else None."""
    code = code.strip().upper()
    for rb in registry().values():
        if code in rb.info.fixes:
            return rb.info.name
    return None


def _runbook(name: str) -> Runbook:
    reg = registry()
    rb = reg.get(name.strip())
    if rb is None:
        raise InvalidRequest(f"unknown runbook {name!r}; known: {', '.join(sorted(reg))}")
    return rb


def _collect(ctx: RunContext, host_facts: bool) -> ClusterSnapshot:
    from storage.collect import collect

    return collect(ctx.target, host_facts=host_facts)


def plan(ctx: RunContext, runbook: str, target: str,
         options: Mapping[str, Any] | None = None) -> Plan:
    """Plan on a fresh snapshot. Read-only: collecting is the only thing it does."""
    rb = _runbook(runbook)
    snap = _collect(ctx, rb.needs_host_facts)
    return plan_from_snapshot(ctx, snap, runbook, target, options)


def plan_from_snapshot(ctx: RunContext, snap: ClusterSnapshot, runbook: str, target: str,
                       options: Mapping[str, Any] | None = None) -> Plan:
    """Validate ``target`` against ``snap`` and build the steps (no I/O at all)."""
    rb = _runbook(runbook)
    if not (target or "").strip():
        raise InvalidRequest(f"{runbook}: a target is required ({rb.info.target_help})")
    # one spelling per target before anything is locked, planned or audited
    target = canonical_target(rb.info.target_kind, target)
    unknown = sorted(set(options or {}) - set(rb.option_keys) - set(ctx.options))
    if unknown:
        takes = ", ".join(rb.option_keys) or "no options"
        raise InvalidRequest(f"{rb.info.name}: unknown option(s) {', '.join(map(repr, unknown))} "
                      f"(it takes {takes})")
    opts = {**dict(ctx.options), **dict(options or {})}
    draft = Draft(ctx, options=opts)
    rb.build(draft, snap, target)
    if not draft.steps:
        raise Refused(f"{runbook} {target}: nothing to do")
    locks = list(dict.fromkeys(rb.lock_keys(target) + draft.locks))
    return Plan(
        runbook=rb.info.name, cluster=ctx.cluster, target=target, params=dict(draft.params),
        steps=tuple(draft.steps), verify_codes=draft.verify_codes or rb.info.fixes,
        before_after=dict(draft.before_after), warnings=tuple(draft.warnings),
        summary=rb.info.summary, destructive=rb.info.destructive,
        needs_second_person=rb.info.needs_second_person, locks=tuple(locks),
        verify_entities=draft.verify_entities, verify_host_facts=draft.verify_host_facts,
        options=opts)


# ------------------------------------------------------------------ running


def _emit(on_event: EventFn | None, ev: RunEvent) -> None:
    if on_event is None:
        return
    try:
        on_event(ev)
    except Exception:  # a broken renderer must not break a half-done repair
        pass


def _default_runner(ctx: RunContext) -> Runner:
    from storage.ssh import FabricRunner

    return FabricRunner(ctx.target.hosts)


def _short(text: str, n: int = 300) -> str:
    t = " ".join(text.strip().split())
    return t if len(t) <= n else t[: n - 3] + "..."


def _run_step(env: StepEnv, step: PlannedStep,
              cancel: threading.Event) -> tuple[StepStatus, int | None, str, str]:
    """Run one step: (status done|failed|cancelled, rc, stdout, stderr)."""
    from storage.ceph import CephCommandError, CephError

    op = step.op
    try:
        if isinstance(op, MonOp):
            res = env.ceph.mon(op.prefix, **dict(op.args))
            out = res if isinstance(res, str) else json.dumps(res) if res is not None else ""
            return StepStatus.DONE, 0, out, ""
        if isinstance(op, HostOp):
            r = env.runner.run(op.host, op.argv, timeout_s=step.timeout_s)
            err = r.stderr
            if r.timed_out:
                err = f"timed out after {step.timeout_s:g} s\n{err}"
            return (StepStatus.DONE if r.ok else StepStatus.FAILED), r.rc, r.stdout, err
        if isinstance(op, WaitOp):
            deadline = time.monotonic() + step.timeout_s
            last = ""
            while True:
                try:
                    ok, last = op.probe(env)
                except CephCommandError:
                    raise  # a refused command will not start working: fail the step now
                except CephError as e:  # unreachable for a moment: keep polling
                    ok, last = False, f"{type(e).__name__}: {e}"
                if ok:
                    return StepStatus.DONE, 0, last, ""
                if time.monotonic() >= deadline:
                    return StepStatus.FAILED, None, "", f"not reached within {step.timeout_s:g} s: {last}"
                if cancel.wait(op.interval_s):
                    return StepStatus.CANCELLED, None, "", f"cancelled while waiting: {last}"
        if isinstance(op, PyOp):
            ok, msg = op.fn(env)
            return (StepStatus.DONE, 0, msg, "") if ok else (StepStatus.FAILED, 1, "", msg)
        return StepStatus.FAILED, None, "", "this plan has no runnable operation for the step"
    except HostUnreachable as e:
        return StepStatus.FAILED, None, "", f"host unreachable: {e}"
    except CephError as e:
        rc = getattr(e, "rc", None)
        return StepStatus.FAILED, rc if isinstance(rc, int) else None, "", str(e)
    except Refused as e:
        return StepStatus.FAILED, None, "", str(e)
    except Exception as e:  # an unexpected error is a failed step, never a half-run mystery
        return StepStatus.FAILED, None, "", f"{type(e).__name__}: {e}"


def _matches(plan: Plan, f: Finding) -> bool:
    return f.code in plan.verify_codes and (
        f.target == plan.target or f.entity == plan.target or f.entity in plan.verify_entities)


def verify(ctx: RunContext, plan: Plan, cancel: threading.Event | None = None,
           timeout_s: float | None = None) -> tuple[bool, tuple[Finding, ...], str]:
    """Re-run the triggering checks until none matches the plan's target or time runs out."""
    cancel = cancel or threading.Event()
    deadline = time.monotonic() + (ctx.verify_timeout_s if timeout_s is None else timeout_s)
    attempts = 0
    while True:
        attempts += 1
        snap = _collect(ctx, plan.verify_host_facts)
        report = run_checks(snap, ctx.thresholds, only=plan.verify_codes)
        left = tuple(f for f in report.findings if _matches(plan, f))
        blind = [snap.ceph_error] if snap.ceph_error else []
        blind += [f"host {n}: {h.error}" for n, h in snap.hosts.items() if h.error]
        if not left and not blind:
            return True, (), f"verified after {attempts} check run(s)"
        if time.monotonic() >= deadline or cancel.wait(2.0):
            why = "; ".join([f"{f.code} {f.entity}: {f.message}" for f in left] + blind)
            return False, left, f"still failing after {attempts} check run(s): {why}"


def _bench_after(ctx: RunContext, on_event: EventFn | None,
                 cancel: threading.Event | None) -> dict[str, Any] | None:
    """The optional quick benchmark after a verified fix (``[runbooks] bench_after_fix``);
    its verdict against earlier runs joins the fix's result. Never fails the fix."""
    if ctx.bench_after_fix != "rados" or (cancel is not None and cancel.is_set()):
        return None
    from runbooks.bench.api import BenchLimits, bench_after_fix

    _emit(on_event, RunEvent(EventKind.BENCH, None, "benchmark",
                             "running a quick RADOS write benchmark after the fix"))
    # a fix (an OSD back in, a remount) sets PGs peering and recovering: give the cluster
    # until the verify deadline to settle before measuring it
    deadline = time.monotonic() + ctx.verify_timeout_s
    while True:
        try:
            res = bench_after_fix(ctx, BenchLimits.from_mapping(ctx.bench_limits),
                                  cancel=cancel)
        except Exception as e:  # a benchmark problem must not turn a good fix into a failure
            res = {"ran": False, "reason": f"{type(e).__name__}: {e}"}
            break
        settling = "active+clean" in str(res.get("reason", ""))
        if res.get("ran") or not settling or time.monotonic() > deadline or (
                cancel is not None and cancel.is_set()):
            break
        time.sleep(2)
    _emit(on_event, RunEvent(EventKind.BENCH, None, "benchmark",
                             f"verdict: {res.get('verdict')}; {res.get('headline', '')}"
                             if res.get("ran") else f"not run: {res.get('reason')}"))
    return res


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
    rb = _runbook(plan.runbook)
    rb.check_run(plan)
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
            snap = _collect(ctx, _runbook(plan.runbook).needs_host_facts)
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
        _emit(on_event, RunEvent(EventKind.PLAN, None, plan.runbook, "\n".join(plan.lines())))
        if any(isinstance(s.op, HostOp) or (isinstance(s.op, PyOp) and s.op.remote)
               for s in plan.steps):
            runner = ctx.runner
            if runner is None:
                runner = _default_runner(ctx)
                own_runner = True
        env = StepEnv(ctx, runner if runner is not None else _NoRunner())

        undo_of = {s.cleanup_of: s for s in plan.steps if s.cleanup_of is not None}
        done: list[PlannedStep] = []
        stopped: PlannedStep | None = None
        stop_kind: Outcome | None = None
        stop_msg = ""
        for step in plan.steps:
            if cancel.is_set():
                stop_kind, stop_msg = Outcome.CANCELLED, f"cancelled before step {step.index}"
                _emit(on_event, RunEvent(EventKind.CANCELLED, step.index, step.title, stop_msg))
                break
            _emit(on_event, RunEvent(EventKind.STEP_STARTED, step.index, step.title, step.command))
            undo = undo_of.get(step.index)
            if undo is not None and isinstance(undo.op, MonOp):  # owned before it is made
                audit.own(run_id, ctx.cluster, step.index, step.title, undo.op.prefix,
                          undo.op.args, undo.command)
            t0 = time.monotonic()
            status, rc, out, err = _run_step(env, step, cancel)
            dur = time.monotonic() - t0
            audit.record_step(run_id, step.index, step.title, step.where, step.command, rc,
                              out, err, dur, status)
            results.append(StepResult(step.index, step.title, step.where, step.command,
                                      status, rc, out, err, dur))
            if undo is not None and status != "done":
                audit.set_owned(run_id, step.index, "not_made")
            if status == "done" and step.cleanup_of is not None:
                audit.set_owned(run_id, step.cleanup_of, "undone")
            if status == "done":
                done.append(step)
                _emit(on_event, RunEvent(EventKind.STEP_DONE, step.index, step.title,
                                         _short(out) or "ok"))
                continue
            stopped = step
            if status == "cancelled":
                stop_kind, stop_msg = Outcome.CANCELLED, f"cancelled during step {step.index}"
                _emit(on_event, RunEvent(EventKind.CANCELLED, step.index, step.title, stop_msg))
            else:
                stop_kind = Outcome.FAILED
                detail = _short(err or out or "no output")
                stop_msg = (f"step {step.index} ({step.title}) failed"
                            f"{f' with exit status {rc}' if rc not in (None, 0) else ''}: "
                            f"{detail}")
                _emit(on_event, RunEvent(EventKind.STEP_FAILED, step.index, step.title, stop_msg))
            break

        cleanup_msgs: list[str] = []
        if stop_kind:
            done_idx = {s.index for s in done}
            after = [s for s in plan.steps if s.index not in done_idx and s is not stopped]
            for step in after:
                if step.cleanup_of is None or step.cleanup_of not in done_idx:
                    continue
                _emit(on_event, RunEvent(EventKind.STEP_STARTED, step.index, step.title,
                                         f"cleanup: {step.command}"))
                t0 = time.monotonic()
                status, rc, out, err = _run_step(env, step, threading.Event())
                dur = time.monotonic() - t0
                audit.record_step(run_id, step.index, step.title, step.where, step.command,
                                  rc, out, err, dur, status)
                results.append(StepResult(step.index, step.title, step.where, step.command,
                                          status, rc, out, err, dur))
                if status == "done":
                    done.append(step)
                    audit.set_owned(run_id, step.cleanup_of, "undone")
                    cleanup_msgs.append(f"cleanup step {step.index} ({step.title}) done")
                    _emit(on_event, RunEvent(EventKind.STEP_DONE, step.index, step.title, "cleanup"))
                else:
                    cleanup_msgs.append(f"cleanup step {step.index} ({step.title}) FAILED: "
                                        f"{_short(err)}")
                    _emit(on_event, RunEvent(EventKind.STEP_FAILED, step.index, step.title,
                                             f"cleanup failed: {_short(err)}"))

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
            _emit(on_event, RunEvent(EventKind.DONE, None, stop_kind, msg, ok=False))
            return RunResult(run_id, stop_kind, msg, tuple(results), done_t, not_done_t, None)

        _emit(on_event, RunEvent(EventKind.VERIFY_STARTED, None, "verify",
                                 f"re-running {', '.join(plan.verify_codes)}"))
        ok, left, vmsg = verify(ctx, plan, cancel)
        _emit(on_event, RunEvent(EventKind.VERIFY_DONE, None, "verify", vmsg, ok=ok))
        outcome = Outcome.SUCCESS if ok else Outcome.VERIFY_FAILED
        msg = (f"{plan.runbook} {plan.target}: {len(done_t)} step(s) done; "
               + (f"verified: {', '.join(plan.verify_codes)} cleared" if ok else vmsg))
        bench = _bench_after(ctx, on_event, cancel) if ok else None
        if bench is not None:
            msg += "; benchmark after the fix: " + str(
                bench.get("verdict") if bench.get("ran") else f"not run ({bench.get('reason')})")
        audit.finish_run(run_id, outcome, msg,
                         {"verified": ok, "message": vmsg,
                          "findings": [f.to_dict() for f in left], "bench": bench})
        _emit(on_event, RunEvent(EventKind.DONE, None, outcome, msg, ok=ok))
        return RunResult(run_id, outcome, msg, tuple(results), done_t, not_done_t, ok, left,
                         bench)
    except BaseException as e:
        if run_id is not None:
            audit.finish_run(run_id, "failed", f"runbook aborted: {type(e).__name__}: {e}", {})
        raise
    finally:
        if env is not None:
            env.close()
        if own_runner and runner is not None:
            runner.close()
        for lid in held:
            audit.release(lid)


@dataclass(frozen=True)
class Leftover:
    """A cluster change an interrupted run made and never undid (e.g. noout it set)."""

    owned_id: int
    run_id: int
    runbook: str
    target: str
    user: str
    what: str
    undo_command: str
    undo_prefix: str
    undo_args: Mapping[str, Any]

    def line(self) -> str:
        return (f"run #{self.run_id} ({self.runbook} {self.target} by {self.user}) was "
                f"interrupted after: {self.what}; undo: {self.undo_command}")


def reconcile(ctx: RunContext) -> list[Leftover]:
    """Mark runs whose process died ``interrupted`` (what was done, what was not), free
    their locks, and return what they owned and never undid. Changes nothing else: undoing
    is :func:`undo_leftovers`, after the user said yes."""
    audit = Audit(ctx.journal, ctx.secrets)
    for run in audit.dead_runs(ctx.cluster):
        steps = audit.steps(int(run["id"]))
        done = [f"{s.idx}. {s.title}" for s in steps if s.status == "done"]
        planned = (run.get("plan") or {}).get("steps", []) if isinstance(run.get("plan"),
                                                                           dict) else []
        done_idx = {s.idx for s in steps if s.status == "done"}
        not_done = [f"{p['index']}. {p['title']}" for p in planned
                    if p.get("index") not in done_idx]
        audit.finish_run(int(run["id"]), "interrupted",
                         f"process {run['pid']} on {run['host']} ended mid-run (killed or "
                         f"crashed). Done: {', '.join(done) or 'nothing'}. Not done: "
                         f"{', '.join(not_done) or 'nothing'}")
        audit.release_locks_of(int(run["pid"]), str(run["host"]))
    return [Leftover(int(r["id"]), int(r["run_id"]), r["runbook"], r["target"], r["user"],
                     r["what"], r["undo_command"], r["undo_prefix"], r["undo_args"])
            for r in audit.leftovers(ctx.cluster)]


def undo_leftovers(ctx: RunContext, leftovers: list[Leftover], confirmed_by: str
                   ) -> list[str]:
    """Undo what interrupted runs owned (confirmed by a person), audited as a run."""
    if not confirmed_by or not confirmed_by.strip():
        raise Refused("not confirmed: nothing was undone")
    if not leftovers:
        return []
    audit = Audit(ctx.journal, ctx.secrets)
    run_id = audit.start_run(ctx.cluster, "undo-interrupted", ", ".join(
        f"run #{x.run_id}" for x in leftovers), ctx.user, ctx.source,
        {"undo": [x.undo_command for x in leftovers]}, confirmed_by=confirmed_by)
    env = StepEnv(ctx, _NoRunner())
    out: list[str] = []
    ok = True
    try:
        for i, x in enumerate(leftovers, 1):
            step = PlannedStep(i, f"undo for run #{x.run_id}: {x.what}", "ceph",
                               x.undo_command, 30.0, None, MonOp(x.undo_prefix,
                                                                 dict(x.undo_args)))
            t0 = time.monotonic()
            status, rc, so, se = _run_step(env, step, threading.Event())
            audit.record_step(run_id, i, step.title, "ceph", x.undo_command, rc, so, se,
                              time.monotonic() - t0, status)
            if status == "done":
                audit.set_owned_by_id(x.owned_id, "undone")
                out.append(f"undone: {x.undo_command} (run #{x.run_id})")
            else:
                ok = False
                out.append(f"FAILED: {x.undo_command} (run #{x.run_id}): {_short(se)}")
    finally:
        env.close()
        audit.finish_run(run_id, "success" if ok else "failed", "; ".join(out))
    return out


class _NoRunner:
    """Stands in when a plan has no host steps; any host call is a bug."""

    def run(self, host: str, argv: Any, timeout_s: float = 30.0) -> Any:
        raise HostUnreachable(host, "no runner configured for this plan")

    def put(self, host: str, local_path: str, remote_path: str,
            timeout_s: float = 60.0) -> None:
        raise HostUnreachable(host, "no runner configured for this plan")

    def close(self) -> None:
        pass
