"""Many clusters at once (``check --all``): at most ``parallel`` checks running, each
cluster with its own time budget, each result handed over as soon as it is ready.

A check runs in a daemon thread of its own. When its budget runs out the caller gets an
"unreachable after Ns" result at once and the slot goes to the next cluster; the thread
is abandoned (a librados call or a socket it waits on cannot be interrupted from here,
though every one of them has its own timeout, so it ends by itself later). Its late
outcome is dropped. A daemon thread does not keep the process alive, but a thread pool
inside the abandoned check would be joined at interpreter exit: ``abandoned()`` tells the
CLI's entry point to leave without waiting (``stordoc.cli.main``).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from checks.outcome import CheckOutcome

_abandoned_lock = threading.Lock()
_abandoned: list[threading.Thread] = []


def abandoned() -> list[threading.Thread]:
    """Checks given up on that still run (their thread alive)."""
    with _abandoned_lock:
        _abandoned[:] = [t for t in _abandoned if t.is_alive()]
        return list(_abandoned)


@dataclass(frozen=True)
class ClusterResult:
    """One cluster's answer: its outcome, or why there is none (``error``)."""

    cluster: str
    outcome: CheckOutcome | None
    error: str | None
    elapsed_s: float
    timed_out: bool = False


def check_many(names: Sequence[str], check: Callable[[str], CheckOutcome],
               timeout_of: Callable[[str], float], parallel: int) -> Iterator[ClusterResult]:
    """Check ``names`` (started in that order, ``parallel`` at a time) and yield each
    result as soon as it is ready: a finished check, or a check past its cluster's
    ``timeout_of(name)`` seconds (counted from its start), whichever comes first."""
    done: queue.Queue[tuple[int, str, CheckOutcome | None, str | None]] = queue.Queue()
    pending = list(enumerate(names))
    pending.reverse()
    running: dict[int, tuple[str, float, float, threading.Thread]] = {}  # start, deadline

    def work(gen: int, name: str) -> None:
        try:
            out = check(name)
        except Exception as e:  # noqa: BLE001  (one cluster's failure is its own line)
            done.put((gen, name, None, f"{type(e).__name__}: {e}"))
            return
        done.put((gen, name, out, None))

    def start() -> None:
        while pending and len(running) < max(1, parallel):
            gen, name = pending.pop()
            th = threading.Thread(target=work, args=(gen, name), daemon=True,
                                  name=f"check-{name}")
            now = time.monotonic()
            running[gen] = (name, now, now + timeout_of(name), th)
            th.start()

    start()
    while running:
        now = time.monotonic()
        # past their deadline: said now, even while other results keep arriving
        for g, (n, t0, deadline, th) in sorted(running.items(), key=lambda i: i[1][2]):
            if deadline <= now:
                del running[g]
                with _abandoned_lock:
                    _abandoned.append(th)
                start()
                yield ClusterResult(n, None, f"unreachable after {timeout_of(n):g}s "
                                    "(no answer within its check timeout)", now - t0,
                                    timed_out=True)
        if not running:
            break
        nearest = min(d for _, _, d, _ in running.values())
        try:
            gen, name, out, err = done.get(timeout=max(0.0, nearest - time.monotonic()))
        except queue.Empty:
            continue
        if gen not in running:  # an abandoned check that ended after all: dropped
            continue
        t0 = running.pop(gen)[1]
        start()
        yield ClusterResult(name, out, err, time.monotonic() - t0)
