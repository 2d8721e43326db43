"""``runbooks.execute`` on a real journal with local steps: each step is audited as it
starts and its outcome before the next one starts; a renderer that dies (rich's
SystemExit on a closed stdout, from the run's own thread) cancels nothing by itself and
aborts nothing: the cleanup step of what was done still runs."""

from __future__ import annotations

import threading
from pathlib import Path

from runbooks.api import RunContext, RunEvent, execute
from runbooks.model import EventKind, Plan, PlannedStep, PyOp, StepEnv
from storage.audit import Audit
from storage.journal import Journal
from storage.targets import ClusterTarget


def _ctx(tmp_path: Path) -> RunContext:
    return RunContext("lab", ClusterTarget("lab"), Journal(tmp_path / "journal.db"),
                      user="tester")


def _plan(steps: list[PlannedStep]) -> Plan:
    return Plan(runbook="osd-start", cluster="lab", target="osd.1", params={},
                steps=tuple(steps), verify_codes=("OSD_DOWN_OUT",), locks=("osd.1",))


def _step(i: int, title: str, fn: PyOp, cleanup_of: int | None = None) -> PlannedStep:
    return PlannedStep(i, title, "local", fn.describe, 5.0, cleanup_of, fn)


def test_each_step_is_audited_before_it_runs_and_done_before_the_next(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    audit = Audit(ctx.journal)
    seen: dict[int, list[tuple[int, str]]] = {}

    def look(i: int) -> PyOp:
        def fn(env: StepEnv) -> tuple[bool, str]:
            (run,) = audit.runs(cluster="lab")
            seen[i] = [(s.idx, s.status) for s in audit.steps(run.id)]
            return True, "ok"
        return PyOp(f"step {i}", fn)

    cancel = threading.Event()

    def stop_after_two(ev: RunEvent) -> None:
        if ev.kind == EventKind.STEP_DONE and ev.index == 2:
            cancel.set()

    res = execute(ctx, _plan([_step(1, "set flag", look(1)), _step(2, "mount", look(2)),
                              _step(3, "start", look(3)),
                              _step(4, "clear flag", look(4), cleanup_of=1)]),
                  "tester", on_event=stop_after_two, cancel=cancel, recheck=False)
    assert seen[1] == [(1, "running")]
    assert seen[2] == [(1, "done"), (2, "running")]  # step 1's outcome is already there
    assert seen[4] == [(1, "done"), (2, "done"), (4, "running")]  # the cleanup, after cancel
    assert 3 not in seen
    assert res.outcome == "cancelled"
    assert [(s.idx, s.status) for s in audit.steps(res.run_id)] == [
        (1, "done"), (2, "done"), (4, "done")]
    run = audit.run(res.run_id)
    assert run is not None and "Done: 1. set flag, 2. mount, 4. clear flag" in run.message
    assert "Not done: 3. start" in run.message
    ctx.journal.close()


def test_a_renderer_that_exits_does_not_abort_the_run_before_its_cleanup(
        tmp_path: Path) -> None:
    """Before: rich's SystemExit(1) from the event printer left the run ``failed`` right
    after step 1 with the flag set and its clearing step never run."""
    ctx = _ctx(tmp_path)
    ran: list[str] = []
    cancel = threading.Event()

    def op(name: str) -> PyOp:
        def fn(env: StepEnv) -> tuple[bool, str]:
            ran.append(name)
            return True, "ok"
        return PyOp(name, fn)

    def printer(ev: RunEvent) -> None:
        if ev.kind == EventKind.STEP_DONE and ev.index == 1:
            cancel.set()  # what the closed stdout's listener does (core.streams)
            raise SystemExit(1)  # what rich does on a closed stdout

    res = execute(ctx, _plan([_step(1, "set flag", op("set")), _step(2, "mount", op("mount")),
                              _step(3, "clear flag", op("clear"), cleanup_of=1)]),
                  "tester", on_event=printer, cancel=cancel, recheck=False)
    assert ran == ["set", "clear"]
    assert res.outcome == "cancelled" and res.done == ("1. set flag", "3. clear flag")
    audit = Audit(ctx.journal)
    assert [(s.idx, s.status) for s in audit.steps(res.run_id)] == [(1, "done"), (3, "done")]
    assert audit.locks() == []
    ctx.journal.close()
