"""Runs whose process died mid-run: ``reconcile`` marks them interrupted and frees their
locks, and returns what they owned and never undid (e.g. ``noout`` they set);
``undo_leftovers`` undoes that once a person said yes, audited as a run of its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runbooks.model import MonOp, PlannedStep, Refused, RunContext, StepEnv, StepStatus
from runbooks.steps import NoRunner, run_step, short
from storage.audit import Audit


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
        audit.finish_run(int(run["id"]), "interrupted", interrupted_message(audit, run))
        audit.release_locks_of(int(run["pid"]), str(run["host"]))
    return [Leftover(int(r["id"]), int(r["run_id"]), r["runbook"], r["target"], r["user"],
                     r["what"], r["undo_command"], r["undo_prefix"], r["undo_args"])
            for r in audit.leftovers(ctx.cluster)]


def interrupted_message(audit: Audit, run: Mapping[str, Any]) -> str:
    """What a dead run did, from its audited steps: done, under way when the process died
    (their outcome unknown: marked ``interrupted``), never started."""
    under_way = {s.idx for s in audit.interrupt_steps(int(run["id"]))}
    steps = audit.steps(int(run["id"]))
    done_idx = {s.idx for s in steps if s.status == StepStatus.DONE}
    done = [f"{s.idx}. {s.title}" for s in steps if s.status == StepStatus.DONE]
    mid = [f"{s.idx}. {s.title}" for s in steps
           if s.idx in under_way and s.idx not in done_idx]
    planned = (run.get("plan") or {}).get("steps", []) if isinstance(run.get("plan"),
                                                                       dict) else []
    not_done = [f"{p['index']}. {p['title']}" for p in planned
                if p.get("index") not in done_idx | under_way]
    return (f"process {run['pid']} on {run['host']} ended mid-run (killed or crashed). "
            f"Done: {', '.join(done) or 'nothing'}. "
            + (f"Under way when it ended (outcome unknown): {', '.join(mid)}. " if mid else "")
            + f"Not done: {', '.join(not_done) or 'nothing'}")


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
    env = StepEnv(ctx, NoRunner())
    out: list[str] = []
    ok = True
    try:
        for i, x in enumerate(leftovers, 1):
            step = PlannedStep(i, f"undo for run #{x.run_id}: {x.what}", "ceph",
                               x.undo_command, 30.0, None, MonOp(x.undo_prefix,
                                                                 dict(x.undo_args)))
            t0 = time.monotonic()
            status, rc, so, se = run_step(env, step, threading.Event())
            audit.record_step(run_id, i, step.title, "ceph", x.undo_command, rc, so, se,
                              time.monotonic() - t0, status)
            if status == "done":
                audit.set_owned_by_id(x.owned_id, "undone")
                out.append(f"undone: {x.undo_command} (run #{x.run_id})")
            else:
                ok = False
                out.append(f"FAILED: {x.undo_command} (run #{x.run_id}): {short(se)}")
    finally:
        env.close()
        audit.finish_run(run_id, "success" if ok else "failed", "; ".join(out))
    return out
