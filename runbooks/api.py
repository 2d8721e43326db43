"""The runbook API every front end calls: list, plan, execute.

``plan`` reads a fresh snapshot, validates the typed target against it and returns the
exact steps without touching anything. ``execute`` takes the lock(s), audits, runs the
steps in order with timeouts, stops at the first failure (running only the cleanup steps
whose setup was done, e.g. ``ceph osd unset noout``), honours a cancel between steps, then
verifies by re-running the triggering checks until they pass or the deadline expires.

This module is the one place front ends import from; the parts live beside it:
``runbooks.planning`` (list, plan), ``runbooks.steps`` (one step run),
``runbooks.execute`` (the run), ``runbooks.verify`` (re-checking after it) and
``runbooks.leftovers`` (runs interrupted mid-way).
"""

from __future__ import annotations

from runbooks.execute import execute
from runbooks.leftovers import Leftover, reconcile, undo_leftovers
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
from runbooks.planning import list_runbooks, plan, plan_from_snapshot, runbook_for_code
from runbooks.steps import EventFn
from runbooks.steps import run_step as _run_step  # the name tests know the step runner by
from runbooks.verify import verify

__all__ = [
    "EventFn", "EventKind", "HostOp", "InvalidRequest", "Leftover", "MonOp", "Outcome", "Plan",
    "PlannedStep", "PyOp", "Refused", "RunContext", "RunEvent", "RunResult", "RunbookInfo",
    "StepEnv", "StepResult", "StepStatus", "WaitOp", "_run_step", "execute", "list_runbooks",
    "plan", "plan_from_snapshot", "reconcile", "runbook_for_code", "undo_leftovers", "verify",
]
