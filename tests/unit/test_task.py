"""The one cancellable runner (core.service.task): a signal cancels, never abandons."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from core.service.task import Task


def _steps(started: threading.Event, release: threading.Event, log: list[str]):  # type: ignore[no-untyped-def]
    """Work with steps that checks its cancel flag between them and always cleans up."""
    def work(cancel: threading.Event) -> str:
        try:
            for i in range(100):
                if cancel.is_set():
                    return f"cancelled before step {i}"
                log.append(f"step {i}")
                started.set()
                release.wait(5)
            return "done"
        finally:
            log.append("cleanup")
    return work


def test_sigint_while_waiting_cancels_between_steps_and_cleanup_runs() -> None:
    started, release, log = threading.Event(), threading.Event(), []
    told: list[int] = []
    task = Task(_steps(started, release, log))

    def interrupt_twice() -> None:
        started.wait(5)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
        task.cancel_event.wait(5)  # the main thread ran our handler
        os.kill(os.getpid(), signal.SIGINT)  # impatient: a second one
        while len(told) < 2:
            task.cancel_event.wait(0.01)
        release.set()

    old = signal.getsignal(signal.SIGINT)
    threading.Thread(target=interrupt_twice).start()
    assert task.wait(told.append, poll_s=0.05) == "cancelled before step 1"
    assert log == ["step 0", "cleanup"] and told == [1, 2] and task.cancelled
    assert signal.getsignal(signal.SIGINT) is old  # the handler is put back


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_cancel_too(sig: signal.Signals) -> None:
    """``kill``, and a dropped SSH session (SIGHUP, whose default ends the process)."""
    started, release, log = threading.Event(), threading.Event(), []
    task = Task(_steps(started, release, log))
    old = signal.getsignal(sig)

    def term() -> None:
        started.wait(5)
        os.kill(os.getpid(), sig)
        task.cancel_event.wait(5)
        release.set()

    threading.Thread(target=term).start()
    assert task.wait(poll_s=0.05).startswith("cancelled") and log[-1] == "cleanup"
    assert signal.getsignal(sig) is old


@pytest.mark.parametrize("raised", [BrokenPipeError(32, "Broken pipe"), SystemExit(1),
                                    KeyboardInterrupt()])
def test_a_failing_notice_never_abandons_the_work(raised: BaseException) -> None:
    """The notice of a Ctrl-C printed into a closed pipe (``| tee log``): rich answered
    SystemExit(1), the process ended mid-step with noout set. The work is cancelled and
    has cleaned up before ``wait`` returns (or raises what nobody could foresee)."""
    started, release, log = threading.Event(), threading.Event(), []
    task = Task(_steps(started, release, log))

    def notice(n: int) -> None:
        raise raised

    def interrupt() -> None:
        started.wait(5)
        os.kill(os.getpid(), signal.SIGINT)
        task.cancel_event.wait(5)
        release.set()

    threading.Thread(target=interrupt).start()
    if isinstance(raised, Exception | SystemExit):
        assert task.wait(notice, poll_s=0.05) == "cancelled before step 1"
    else:
        with pytest.raises(KeyboardInterrupt):
            task.wait(notice, poll_s=0.05)
        assert task.done  # finished, not abandoned to a dying process
    assert log == ["step 0", "cleanup"]


def test_the_works_exception_reaches_the_waiter() -> None:
    def boom(cancel: threading.Event) -> None:
        raise ValueError("refused: lock held")

    with pytest.raises(ValueError, match="lock held"):
        Task(boom).wait()
    t = Task(boom)
    with pytest.raises(ValueError):
        t.run()
    assert t.done


def test_cancel_from_another_thread_stops_run() -> None:
    """The TUI's way: the work runs in a worker thread, a key press cancels it."""
    started, release, log = threading.Event(), threading.Event(), []
    task = Task(_steps(started, release, log))
    out: list[str] = []
    th = threading.Thread(target=lambda: out.append(task.run()))
    th.start()
    started.wait(5)
    assert task.cancel() and not task.cancel()  # the first cancel counts
    release.set()
    th.join(10)
    assert out == ["cancelled before step 1"] and task.result() == out[0]


def test_a_flag_the_caller_holds_cancels_too() -> None:
    """The TUI's screens hold their Cancel key's flag before the task exists."""
    started, release, log = threading.Event(), threading.Event(), []
    flag = threading.Event()
    task = Task(_steps(started, release, log), cancel=flag)
    out: list[str] = []
    th = threading.Thread(target=lambda: out.append(task.run()))
    th.start()
    started.wait(5)
    flag.set()
    release.set()
    th.join(10)
    assert out == ["cancelled before step 1"] and task.cancelled and log[-1] == "cleanup"


def test_result_before_done_is_an_error() -> None:
    ev = threading.Event()
    t = Task(lambda c: ev.wait(5)).start()
    with pytest.raises(RuntimeError, match="still running"):
        t.result()
    ev.set()
    assert t.wait() is True
