"""Running one planned step: a monitor command, a host command, a wait on a probe or a
library action, each with its timeout; every error becomes a failed step with its reason,
never an exception out of a half-done run. Also what the execute loop and the undo of
interrupted runs share: progress events and the runner of a run."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence

from runbooks.model import (
    HostOp,
    MonOp,
    PlannedStep,
    PyOp,
    Refused,
    RunContext,
    RunEvent,
    StepEnv,
    StepStatus,
    WaitOp,
)
from storage.runner import CommandResult, HostUnreachable, Runner

EventFn = Callable[[RunEvent], None]


def emit(on_event: EventFn | None, ev: RunEvent) -> None:
    if on_event is None:
        return
    try:
        on_event(ev)
    except (Exception, SystemExit):  # a broken renderer must not break a half-done repair
        pass  # (rich raises SystemExit from any thread when its stdout's reader is gone)


def default_runner(ctx: RunContext) -> Runner:
    from storage.ssh import FabricRunner

    return FabricRunner(ctx.target.hosts)


def short(text: str, n: int = 300) -> str:
    t = " ".join(text.strip().split())
    return t if len(t) <= n else t[: n - 3] + "..."


def run_step(env: StepEnv, step: PlannedStep,
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


class NoRunner:
    """Stands in when a plan has no host steps; any host call is a bug."""

    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        raise HostUnreachable(host, "no runner configured for this plan")

    def put(self, host: str, local_path: str, remote_path: str,
            timeout_s: float = 60.0) -> None:
        raise HostUnreachable(host, "no runner configured for this plan")

    def close(self) -> None:
        pass
