"""``runbooks.execute`` holds the plan's locks for the whole run and frees every one of
them on each way out: a step that raises, a recheck that refuses or fails, a verify that
fails or raises, Ctrl-C (``KeyboardInterrupt``) in a step, another holder's lock on a
later key. A real journal, local steps; the cluster reads are replaced by stand-ins."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import runbooks.execute as execute_mod
from runbooks.api import RunContext, execute
from runbooks.model import Outcome, Plan, PlannedStep, PyOp, Refused, StepEnv
from storage.audit import Audit
from storage.journal import Journal
from storage.targets import ClusterTarget

LOCKS = ("osd.1", "flag noout")


def _ctx(tmp_path: Path) -> RunContext:
    return RunContext("lab", ClusterTarget("lab"), Journal(tmp_path / "journal.db"),
                      user="tester")


def _plan(fns: list[Callable[[StepEnv], tuple[bool, str]]]) -> Plan:
    steps = tuple(PlannedStep(i, f"step {i}", "local", f"step {i}", 5.0, None,
                              PyOp(f"step {i}", fn)) for i, fn in enumerate(fns, 1))
    return Plan(runbook="osd-start", cluster="lab", target="osd.1", params={}, steps=steps,
                verify_codes=("OSD_DOWN_OUT",), locks=LOCKS)


def _verified(ok: bool) -> Callable[..., tuple[bool, tuple[Any, ...], str]]:
    def fake(ctx: RunContext, plan: Plan, cancel: threading.Event | None = None
             ) -> tuple[bool, tuple[Any, ...], str]:
        return (True, (), "verified after 1 check run(s)") if ok else (
            False, (), "still failing after 3 check run(s): OSD_DOWN_OUT osd.1: down")
    return fake


def _raise(exc: BaseException) -> Callable[..., Any]:
    def fn(*_: Any, **__: Any) -> Any:
        raise exc
    return fn


class _Case:
    """One way out of ``execute``: what is patched, what the step does, what comes out."""

    def __init__(self, step: Callable[[StepEnv], tuple[bool, str]] | None = None,
                 recheck: bool = False, patch: dict[str, Any] | None = None,
                 raises: type[BaseException] | None = None, match: str | None = None,
                 outcome: str | None = None, audited: str | None = None,
                 says: str = "") -> None:
        self.step = step
        self.recheck = recheck
        self.patch = patch or {}
        self.raises, self.match = raises, match
        self.outcome = outcome  # the RunResult's, when execute returns
        self.audited = audited  # the audited run's outcome; None: no run was started
        self.says = says  # in the audited run's message


def _ok(env: StepEnv) -> tuple[bool, str]:
    return True, "ok"


def _boom(env: StepEnv) -> tuple[bool, str]:
    raise RuntimeError("disk on fire")


def _ctrl_c(env: StepEnv) -> tuple[bool, str]:
    raise KeyboardInterrupt


CASES = {
    "success": _Case(patch={"verify": _verified(True)}, outcome=Outcome.SUCCESS,
                     audited="success"),
    "exception-in-a-step": _Case(step=_boom, outcome=Outcome.FAILED, audited="failed",
                                 says="step 2 (step 2) failed: RuntimeError: disk on fire"),
    "step-fails": _Case(step=lambda env: (False, "no such device"), outcome=Outcome.FAILED,
                        audited="failed"),
    "ctrl-c-in-a-step": _Case(step=_ctrl_c, raises=KeyboardInterrupt, audited="failed",
                              says="runbook aborted: KeyboardInterrupt"),
    "verify-fails": _Case(patch={"verify": _verified(False)}, outcome=Outcome.VERIFY_FAILED,
                          audited="verify_failed"),
    "verify-raises": _Case(patch={"verify": _raise(RuntimeError("mon gone"))},
                           raises=RuntimeError, match="mon gone", audited="failed",
                           says="runbook aborted: RuntimeError: mon gone"),
    "recheck-steps-differ": _Case(
        recheck=True, raises=Refused, match="steps would differ",
        patch={"collect_snapshot": lambda ctx, host_facts: None,
               "plan_from_snapshot": lambda *a, **k: _plan([_ok])}),
    "recheck-refused": _Case(
        recheck=True, raises=Refused, match="cluster changed since the plan was made: osd.1 "
        "is up", patch={"collect_snapshot": lambda ctx, host_facts: None,
                         "plan_from_snapshot": _raise(Refused("osd.1 is up"))}),
    "recheck-cannot-read": _Case(
        recheck=True, raises=ConnectionError, match="no monitor",
        patch={"collect_snapshot": _raise(ConnectionError("no monitor"))}),
    "ctrl-c-in-recheck": _Case(
        recheck=True, raises=KeyboardInterrupt,
        patch={"collect_snapshot": _raise(KeyboardInterrupt())}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_way_out_of_a_run_frees_all_its_locks(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    ctx = _ctx(tmp_path)
    audit = Audit(ctx.journal)
    held_during: list[list[str]] = []

    def look(env: StepEnv) -> tuple[bool, str]:
        held_during.append(sorted(lk.target for lk in audit.locks("lab")))
        return True, "looked"

    for attr, fake in case.patch.items():
        monkeypatch.setattr(execute_mod, attr, fake)
    if "verify" not in case.patch:  # no cluster here: a run that gets that far verifies
        monkeypatch.setattr(execute_mod, "verify", _verified(True))
    plan = _plan([look] + ([case.step] if case.step else []) + [_ok])
    if case.raises is not None:
        with pytest.raises(case.raises, match=case.match):
            execute(ctx, plan, "tester", recheck=case.recheck)
    else:
        res = execute(ctx, plan, "tester", recheck=case.recheck)
        assert res.outcome == case.outcome
    assert audit.locks() == [], f"{name}: a lock was left behind"
    runs = audit.runs(cluster="lab")
    if case.audited is None:  # refused before it started: nothing ran, nothing audited
        assert runs == [] and held_during == []
    else:
        assert [r.outcome for r in runs] == [case.audited]
        assert case.says in runs[0].message
        assert held_during == [sorted(LOCKS)]  # both locks were held while it ran
        assert all(s.status != "running" for s in audit.steps(runs[0].id))
    # and the next run on the same target is not refused by a lock
    monkeypatch.setattr(execute_mod, "verify", _verified(True))
    assert execute(ctx, _plan([_ok]), "tester", recheck=False).ok
    ctx.journal.close()


def test_a_lock_held_by_another_frees_the_ones_taken_before_it(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    audit = Audit(ctx.journal)
    audit.acquire("lab", "flag noout", "alice", "osd-remount osd.2", pid=1)  # the 2nd key
    ran: list[str] = []

    def step(env: StepEnv) -> tuple[bool, str]:
        ran.append("step")
        return True, "ok"

    with pytest.raises(Refused, match="locked by alice"):
        execute(ctx, _plan([step]), "tester", recheck=False)
    assert ran == [] and audit.runs(cluster="lab") == []
    assert [(lk.target, lk.owner) for lk in audit.locks("lab")] == [("flag noout", "alice")]
    ctx.journal.close()


def test_ctrl_c_while_taking_the_locks_frees_the_ones_already_taken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = _ctx(tmp_path)
    audit = Audit(ctx.journal)
    real = Audit.acquire
    taken: list[str] = []

    def acquire(self: Audit, cluster: str, target: str, *a: Any, **k: Any) -> int:
        if taken:  # the second key: Ctrl-C arrives
            raise KeyboardInterrupt
        taken.append(target)
        return real(self, cluster, target, *a, **k)

    monkeypatch.setattr(Audit, "acquire", acquire)
    with pytest.raises(KeyboardInterrupt):
        execute(ctx, _plan([_ok]), "tester", recheck=False)
    assert taken == ["osd.1"] and audit.locks() == [] and audit.runs(cluster="lab") == []
    ctx.journal.close()


def test_a_lock_left_by_a_killed_run_is_taken_over_and_audited(tmp_path: Path) -> None:
    """Issue #37.14: a stordoc process holding osd.1's lock is killed (SIGKILL: nothing
    frees it); the next run on this host takes it over (its holder's process is gone),
    runs, and its audit says it took the lock over from whom; no `locks --clear`."""
    import os
    import signal
    import subprocess
    import sys

    ctx = _ctx(tmp_path)
    code = ("import sys, time\n"
            "from storage.audit import Audit\nfrom storage.journal import Journal\n"
            "Audit(Journal(sys.argv[1])).acquire('lab', 'osd.1', 'alice', 'osd-start osd.1')\n"
            "print('locked', flush=True)\ntime.sleep(120)\n")
    root = Path(__file__).resolve().parents[2]
    with subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "journal.db")],
                          cwd=root, stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    (left,) = Audit(ctx.journal).locks("lab")
    assert (left.owner, left.pid, left.gone) == ("alice", holder.pid, True)
    events: list[Any] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(execute_mod, "verify", _verified(True))
        res = execute(ctx, _plan([_ok]), "tester", on_event=events.append, recheck=False)
    assert res.outcome == Outcome.SUCCESS
    audit = Audit(ctx.journal)
    (run,) = audit.runs(cluster="lab")
    first = audit.steps(run.id)[0]
    assert (first.idx, first.status) == (0, "done")
    assert first.title.startswith(f"took over the lock on osd.1: its holder alice "
                                  f"(osd-start osd.1), pid {holder.pid} on ")
    assert any("took over the lock on osd.1" in ev.message for ev in events)
    assert audit.locks("lab") == []  # and released at the end
    ctx.journal.close()
