"""After the steps: re-run the triggering checks until the plan's findings are gone (or
time runs out), then the optional quick benchmark (``[runbooks] bench_after_fix``)."""

from __future__ import annotations

import threading
import time
from typing import Any

from checks.engine import run_checks
from checks.model import Finding
from runbooks.model import EventKind, Plan, RunContext, RunEvent
from runbooks.planning import collect_snapshot
from runbooks.steps import EventFn, emit


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
        snap = collect_snapshot(ctx, plan.verify_host_facts)
        report = run_checks(snap, ctx.thresholds, only=plan.verify_codes)
        left = tuple(f for f in report.findings if _matches(plan, f))
        blind = [snap.ceph_error] if snap.ceph_error else []
        blind += [f"host {n}: {h.error}" for n, h in snap.hosts.items() if h.error]
        if not left and not blind:
            return True, (), f"verified after {attempts} check run(s)"
        if time.monotonic() >= deadline or cancel.wait(2.0):
            why = "; ".join([f"{f.code} {f.entity}: {f.message}" for f in left] + blind)
            return False, left, f"still failing after {attempts} check run(s): {why}"


def bench_after(ctx: RunContext, on_event: EventFn | None,
                cancel: threading.Event | None) -> dict[str, Any] | None:
    """The optional quick benchmark after a verified fix (``[runbooks] bench_after_fix``);
    its verdict against earlier runs joins the fix's result. Never fails the fix."""
    if ctx.bench_after_fix != "rados" or (cancel is not None and cancel.is_set()):
        return None
    from runbooks.bench.api import BenchLimits, bench_after_fix

    emit(on_event, RunEvent(EventKind.BENCH, None, "benchmark",
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
        settling = bool(res.get("settling"))  # PGs not yet active+clean: wait
        if res.get("ran") or not settling or time.monotonic() > deadline or (
                cancel is not None and cancel.is_set()):
            break
        if cancel is None:
            time.sleep(2)
        elif cancel.wait(2.0):  # Ctrl-C ends the wait at once
            break
    emit(on_event, RunEvent(EventKind.BENCH, None, "benchmark",
                            f"verdict: {res.get('verdict')}; {res.get('headline', '')}"
                            if res.get("ran") else f"not run: {res.get('reason')}"))
    return res
