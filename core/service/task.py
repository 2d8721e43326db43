"""The one cancellable runner of everything that changes a cluster: ``fix``, ``bench``,
the TUI's runbook and benchmark screens and the bot's runs.

A ``Task`` runs its work with a cancel flag (a ``threading.Event``) that the work checks
between steps: a runbook stops before its next step and still runs its cleanup steps
(``ceph osd unset noout``), releases its locks and audits ``cancelled``; a benchmark
finishes its in-flight operations and removes what it wrote.

``Task.wait`` is for a process's main thread (the CLI): the work runs on a thread of its
own while the main thread waits on an ``Event``, and SIGINT, SIGTERM and SIGHUP (a dropped
SSH session) only set the cancel flag (a handler of ours, not ``KeyboardInterrupt``, not
death). Waiting in ``Thread.join`` instead is what used to go wrong: on Python 3.11 a
Ctrl-C inside ``join()`` can leave the thread looking finished while it still runs, and
the process exited mid-step with ``noout`` set and the lock held. A second Ctrl-C never
abandons the work either, nor does an exception in the waiting thread (a failed print of
the notice): the work is cancelled and its cleanup finishes before ``wait`` returns.

SIGPIPE stays ignored (Python's default): a closed stdout is a failed write, EPIPE, that
``core.streams`` turns into the same cancel (``Terminal.on_stdout_lost``). A handler of
ours would also fire on any socket's EPIPE (an SSH connection a step retries) and cancel
a repair for it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Generic, TypeVar

T = TypeVar("T")

Work = Callable[[threading.Event], T]

# what cancels a task the main thread waits on: Ctrl-C, kill, the terminal hung up
CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Task(Generic[T]):
    def __init__(self, work: Work[T], name: str = "stordoc-task",
                 cancel: threading.Event | None = None) -> None:
        """``cancel``: a flag the caller already holds (a TUI screen's Cancel key)."""
        self._work = work
        self.name = name
        self.cancel_event = cancel if cancel is not None else threading.Event()
        self._done = threading.Event()
        self._running = threading.Event()  # its thread started (``start``)
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self.interrupts = 0  # signals received while waiting

    # ------------------------------------------------------------------ control
    def cancel(self) -> bool:
        """Ask the work to stop before its next step; True the first time."""
        first = not self.cancel_event.is_set()
        self.cancel_event.set()
        return first

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    # ------------------------------------------------------------------ running
    def run(self) -> T:
        """Run the work in the calling thread (a TUI worker, a bot thread) and return its
        result; ``cancel()`` from any other thread stops it between steps."""
        try:
            self._result = self._work(self.cancel_event)
            return self._result
        except BaseException as e:
            self._error = e
            raise
        finally:
            self._done.set()

    def start(self) -> Task[T]:
        """Run the work on a thread of its own (daemon: it never keeps a dead process up,
        but ``wait`` always waits for it)."""
        if self._thread is None:
            def body() -> None:
                self._running.set()
                try:
                    self.run()
                except BaseException:  # kept for result()/wait()
                    pass
            self._thread = threading.Thread(target=body, name=self.name, daemon=True)
            self._thread.start()
        return self

    def result(self) -> T:
        """The work's result, or its exception raised again (only once it is done)."""
        if not self._done.is_set():
            raise RuntimeError(f"task {self.name} is still running")
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    def wait(self, on_interrupt: Callable[[int], None] | None = None,
             poll_s: float = 0.5) -> T:
        """Start the work and wait for it in this (main) thread. SIGINT, SIGTERM and
        SIGHUP cancel it instead of raising or ending the process; ``on_interrupt(n)``
        says so (n = how many so far; its failure is ignored). Returns the result or
        raises the work's exception; whatever else happens here, the work has finished
        (cancelled, its cleanup done) before this returns or raises."""
        main = threading.current_thread() is threading.main_thread()
        old: dict[signal.Signals, object] = {}

        def handler(signum: int, frame: FrameType | None) -> None:
            self.interrupts += 1
            self.cancel()
            if on_interrupt is not None:  # (rich answers a closed stdout with SystemExit)
                with contextlib.suppress(Exception, SystemExit):
                    on_interrupt(self.interrupts)

        if main:  # handlers first, then the thread: no window for a KeyboardInterrupt
            for sig in CANCEL_SIGNALS:
                old[sig] = signal.signal(sig, handler)
        try:
            try:
                self.start()
                while not self._done.wait(poll_s):
                    pass
            except BaseException:  # never leave the work half-done behind a dying process
                self.cancel()
                # (raised while the thread was being started: it reports in at once)
                if self._thread is not None and self._running.wait(1.0):
                    while not self._done.wait(poll_s):
                        pass
                raise
        finally:
            for sig, h in old.items():
                signal.signal(sig, h if callable(h) or isinstance(h, int) else signal.SIG_DFL)
        return self.result()
