"""The librados load driver: ``-t`` asynchronous ops in flight, timed per op.

Why this shape: per-op Python callbacks or asyncio cost 2-3x the CPU per op, so the
submitting thread only issues ``aio_*`` calls and a dedicated reaper thread waits for the
completions *in submission order* with ``wait_for_complete`` (which releases the GIL),
like ``rados bench`` keeps its slots full. Latency is stamped when the reaper sees the op
complete. Reads must pass a callback (python-rados delivers read data only through it); it
is a no-op. ``storage.rados_io.RadosIO.run_phase`` opens the pool and calls ``drive``.
"""

from __future__ import annotations

import errno as errno_mod
import os
import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

MODES = ("write", "seq", "rand")


@dataclass
class Tick:
    """Live progress: what the driver has completed so far."""

    elapsed_s: float
    ops: int
    bytes: int
    planned_s: float
    phase: str = ""


@dataclass
class RawRun:
    """What one timed phase measured: every latency, a per-second series, the errors."""

    mode: str
    op_size: int
    concurrency: int
    started_at: float
    elapsed_s: float = 0.0
    ops: int = 0
    bytes: int = 0
    lat_ns: list[int] = field(default_factory=list)
    sec_ops: list[int] = field(default_factory=list)
    sec_bytes: list[int] = field(default_factory=list)
    sec_lat_ns: list[int] = field(default_factory=list)  # sum of latencies per second
    errors: dict[str, int] = field(default_factory=dict)
    objects: list[str] = field(default_factory=list)  # written (for reads and cleanup)
    stopped_by: str = "duration"  # duration | ops | bytes | cancel | objects
    client_cpu_s: float = 0.0  # process CPU time used during the phase (all threads)
    submit_cpu_s: float = 0.0  # CPU of the submitting thread (our Python + aio submit)
    reap_cpu_s: float = 0.0  # CPU of the reaper thread (our Python + completion wait)

    @property
    def n_errors(self) -> int:
        return sum(self.errors.values())


def _err_name(rv: int) -> str:
    code = -rv
    return errno_mod.errorcode.get(code, f"errno {code}")


def _noop_read_cb(completion: Any, data: Any) -> None:
    """python-rados insists on a read callback; the reaper does the bookkeeping."""

def _merge(run: RawRun, parts: Sequence[RawRun]) -> None:
    for p in parts:
        run.lat_ns.extend(p.lat_ns)
        for k, v in p.errors.items():
            run.errors[k] = run.errors.get(k, 0) + v
        for i, (o, b, ln) in enumerate(zip(p.sec_ops, p.sec_bytes, p.sec_lat_ns)):
            while len(run.sec_ops) <= i:
                run.sec_ops.append(0)
                run.sec_bytes.append(0)
                run.sec_lat_ns.append(0)
            run.sec_ops[i] += o
            run.sec_bytes[i] += b
            run.sec_lat_ns[i] += ln
        run.reap_cpu_s += p.reap_cpu_s
    run.ops = sum(run.sec_ops)
    run.bytes = sum(run.sec_bytes)


def default_reapers(op_size: int, concurrency: int) -> int:
    """One in-order reaper keeps pace for small ops (cheapest per op); large ops complete
    out of order often enough that a slow head-of-line op would idle the other slots, so
    they get a few reapers (each still waits in order on what it took)."""
    return 1 if op_size < 1024 * 1024 else max(1, min(4, concurrency))


def drive(ioctx: Any, mode: str, op_size: int, concurrency: int, duration_s: float,
          max_ops: int | None, max_bytes: int | None, objects: list[str], prefix: str,
          cancel: threading.Event | None, on_tick: Callable[[Tick], None] | None,
          tick_s: float, seed: int | None, reapers: int = 1) -> RawRun:
    """Run one timed phase on an open ioctx (``RadosIO.run_phase`` checks the mode and
    the objects first)."""
    run = RawRun(mode, op_size, concurrency, time.time())
    slots = threading.Semaphore(concurrency)
    inflight: queue.SimpleQueue[tuple[Any, int] | None] = queue.SimpleQueue()
    perf_ns = time.perf_counter_ns
    data = os.urandom(op_size) if mode == "write" else b""  # made before the clock starts
    start_ns = perf_ns()
    done = [[0, 0] for _ in range(reapers)]  # per reaper: ops, bytes (progress only)
    parts: list[RawRun] = [RawRun(mode, op_size, concurrency, 0.0) for _ in range(reapers)]

    def reap(k: int) -> None:
        # each reaper keeps its own tallies (merged at the end): no lock on the hot path
        part = parts[k]
        lat, errors = part.lat_ns, part.errors
        sec_ops, sec_bytes, sec_lat = part.sec_ops, part.sec_bytes, part.sec_lat_ns
        mine = done[k]
        c0 = time.thread_time()
        while True:
            item = inflight.get()
            if item is None:
                part.reap_cpu_s = time.thread_time() - c0
                return
            comp, t0 = item
            comp.wait_for_complete()
            t1 = perf_ns()
            rv = comp.get_return_value()
            if rv < 0:
                e = _err_name(rv)
                errors[e] = errors.get(e, 0) + 1
            else:
                d = t1 - t0
                lat.append(d)
                s = (t1 - start_ns) // 1_000_000_000
                while len(sec_ops) <= s:
                    sec_ops.append(0)
                    sec_bytes.append(0)
                    sec_lat.append(0)
                sec_ops[s] += 1
                sec_bytes[s] += op_size
                sec_lat[s] += d
                mine[0] += 1
                mine[1] += op_size
            slots.release()

    threads = [threading.Thread(target=reap, args=(k,), name=f"rados-reaper-{k}", daemon=True)
               for k in range(reapers)]
    for th in threads:
        th.start()
    rng = random.Random(seed)
    end_ns = start_ns + int(duration_s * 1e9)
    next_tick = start_ns + int(tick_s * 1e9)
    cpu0 = time.process_time()
    tcpu0 = time.thread_time()
    i = 0
    submitted_bytes = 0
    n_obj = len(objects)
    try:
        while True:
            slots.acquire()
            now = perf_ns()
            if now >= end_ns:
                run.stopped_by = "duration"
            elif cancel is not None and cancel.is_set():
                run.stopped_by = "cancel"
            elif max_ops is not None and i >= max_ops:
                run.stopped_by = "ops"
            elif max_bytes is not None and submitted_bytes + op_size > max_bytes:
                run.stopped_by = "bytes"
            elif mode == "seq" and i >= n_obj:
                run.stopped_by = "objects"
            else:
                if mode == "write":
                    name = f"{prefix}{i}"
                    run.objects.append(name)
                    c = ioctx.aio_write_full(name, data)
                elif mode == "seq":
                    c = ioctx.aio_read(objects[i], op_size, 0, _noop_read_cb)
                else:
                    c = ioctx.aio_read(objects[rng.randrange(n_obj)], op_size, 0,
                                       _noop_read_cb)
                inflight.put((c, now))
                i += 1
                submitted_bytes += op_size
                if on_tick is not None and now >= next_tick:
                    next_tick = now + int(tick_s * 1e9)
                    on_tick(Tick((now - start_ns) / 1e9, sum(d[0] for d in done),
                                 sum(d[1] for d in done), duration_s, mode))
                continue
            slots.release()
            break
    finally:
        run.submit_cpu_s = time.thread_time() - tcpu0
        for _ in threads:
            inflight.put(None)
        for th in threads:
            th.join()
    run.elapsed_s = (perf_ns() - start_ns) / 1e9
    run.client_cpu_s = time.process_time() - cpu0
    _merge(run, parts)
    if on_tick is not None:
        on_tick(Tick(run.elapsed_s, run.ops, run.bytes, duration_s, mode))
    return run
