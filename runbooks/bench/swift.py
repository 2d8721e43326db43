"""Swift workloads through python-swiftclient: PUT/GET/DELETE mixes with concurrency.

Shapes follow swift-bench (``-c`` concurrency, ``-s``/``-l`` object size or a size range)
and COSBench (read/write/delete mixes such as 80/15/5). One token is fetched once and
shared; each worker thread has its own ``Connection``. Auth, the container a run may
write into and its cleanup are in ``runbooks.bench.swift_container``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from runbooks.bench.common import Session, result_from_raw
from runbooks.bench.measure import latency_summary
from runbooks.bench.model import BenchOptions, BenchResult, human_size
from runbooks.bench.swift_container import (
    MARK_HEADER,
    auth,
    cleanup,
    cleanup_step,
    connect,
    err_kind,
    open_container,
)
from storage.rados_io import RawRun

__all__ = ["OBJ_PREFIX", "auth", "cleanup", "mix_label", "plan_lines", "run", "s_container"]

OBJ_PREFIX = "stordoc_bench_"

_conn = connect  # the name benchmarks/bench_clients.py imports


def mix_label(mix: tuple[int, int, int]) -> str:
    return f"mix {mix[0]}/{mix[1]}/{mix[2]}"


def plan_lines(s: Session, container: str, owner: str = "absent") -> list[str]:
    o = s.opts
    size = human_size(o.size) + (f"..{human_size(o.size_max)}" if o.size_max else "")
    lines = [f"create container {container} (PUT, marked {MARK_HEADER})" if owner == "absent"
             else f"use container {container} (marked as stordoc's)"]
    r, _, d = o.mix
    for rep in range(1, o.repeat + 1):
        if r or d:
            lines.append(f"rep {rep}: write {o.prefill} objects first ({size}, unmeasured)")
        lines.append(f"rep {rep}: {mix_label(o.mix)} read/write/delete, {size} objects, "
                     f"{o.concurrency} workers, {o.duration_s:g} s"
                     + (f", at most {o.ops} ops" if o.ops else ""))
    if not o.keep:
        lines.append("delete the objects this run wrote" + (
            " and the container, also after a failure or Ctrl-C" if owner == "absent"
            else f" (keep {container})"))
    else:
        lines.append(f"keep the objects this run wrote in {container} (--keep)"
                     + (": the container it creates stays" if owner == "absent" else ""))
    return lines


class _Pool:
    """Names of objects that exist, shared by the workers (reads pick, deletes take).

    A name being read is not handed out for deletion: a GET racing a DELETE of the same
    object would count a 404 that is the workload's doing, not the cluster's."""

    def __init__(self, rng: random.Random) -> None:
        self.names: list[str] = []
        self.reading: dict[str, int] = {}
        self.lock = threading.Lock()
        self.rng = rng

    def add(self, name: str) -> None:
        with self.lock:
            self.names.append(name)

    def pick(self) -> str | None:
        with self.lock:
            if not self.names:
                return None
            name = self.rng.choice(self.names)
            self.reading[name] = self.reading.get(name, 0) + 1
            return name

    def done_reading(self, name: str) -> None:
        with self.lock:
            left = self.reading.get(name, 1) - 1
            if left > 0:
                self.reading[name] = left
            else:
                self.reading.pop(name, None)

    def take(self) -> str | None:
        with self.lock:
            for _ in range(min(8, len(self.names))):
                i = self.rng.randrange(len(self.names))
                if self.names[i] in self.reading:
                    continue
                self.names[i], self.names[-1] = self.names[-1], self.names[i]
                return self.names.pop()
            return None


def _sizes(o: BenchOptions, rng: random.Random) -> int:
    return rng.randint(o.size, o.size_max) if o.size_max else int(o.size)


def run(s: Session, container: str) -> list[BenchResult]:
    o = s.opts
    url, token, st, main, created = open_container(s, container)
    rng = random.Random(o.seed)
    payload = os.urandom(o.size_max or o.size)
    results: list[BenchResult] = []
    counter = [0]
    clock = threading.Lock()
    written: set[str] = set()

    def new_name() -> str:
        with clock:
            counter[0] += 1
            name = f"{OBJ_PREFIX}{s.group_id}_{counter[0]}"
            written.add(name)  # recorded before the PUT: cleanup knows every name tried
            return name

    try:
        for rep in range(1, o.repeat + 1):
            if s.cancelled:
                break
            pool = _Pool(random.Random(rng.random()))
            r_pct, _, d_pct = o.mix
            if (r_pct or d_pct) and o.prefill:
                _prefill(s, url, token, pool, payload, rng, new_name)
            raw, per_op = _drive(s, url, token, pool, payload, rep, new_name)
            res = result_from_raw(s, "swift", "swiftclient", mix_label(o.mix), container, raw,
                                  rep, st, extra={"per_op": per_op})
            if o.size_max:
                res.fingerprint_fields["size"] = [o.size, o.size_max]
            results.append(res)
            s.step(f"rep {rep}: swift {mix_label(o.mix)} x{o.concurrency}",
                   f"swiftclient PUT/GET/DELETE container={container} c={o.concurrency} "
                   f"size={o.size}..{o.size_max or o.size} {o.duration_s:g}s", res.headline())
    finally:
        if not o.keep or s.cancelled:
            cleanup_step(s, main, container, sorted(written), created, url, token)
        main.close()
    return results


def _prefill(s: Session, url: str, token: str, pool: _Pool, payload: bytes,
             rng: random.Random, new_name: Callable[[], str]) -> None:
    o = s.opts
    todo = list(range(o.prefill))
    lock = threading.Lock()

    def worker() -> None:
        c = connect(url, token)
        r = random.Random(rng.random())
        try:
            while not s.cancelled:
                with lock:
                    if not todo:
                        return
                    todo.pop()
                name = new_name()
                try:
                    c.put_object(s_container(s), name, payload[:_sizes(o, r)])
                    pool.add(name)
                except Exception:
                    pass
        finally:
            c.close()

    threads = [threading.Thread(target=worker, daemon=True)
               for _ in range(min(o.concurrency, 32))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def s_container(s: Session) -> str:
    return s.opts.container or s.limits.container


def _drive(s: Session, url: str, token: str, pool: _Pool, payload: bytes, rep: int,
           new_name: Callable[[], str]) -> tuple[RawRun, dict[str, Any]]:
    o = s.opts
    container = s_container(s)
    raw = RawRun("mix", o.size, o.concurrency, time.time())
    lock = threading.Lock()
    start = time.perf_counter_ns()
    deadline = start + int(o.duration_s * 1e9)
    issued = [0]
    budget = [s.bytes_left()]
    per_op: dict[str, list[int]] = {"read": [], "write": [], "delete": []}
    per_bytes = {"read": 0, "write": 0, "delete": 0}
    weights = list(o.mix)
    kinds = ["read", "write", "delete"]

    def record(kind: str, t0: int, t1: int, nbytes: int, err: str | None) -> None:
        with lock:
            if err:
                raw.errors[err] = raw.errors.get(err, 0) + 1
                return
            d = t1 - t0
            raw.lat_ns.append(d)
            per_op[kind].append(d)
            per_bytes[kind] += nbytes
            sec = (t1 - start) // 1_000_000_000
            while len(raw.sec_ops) <= sec:
                raw.sec_ops.append(0)
                raw.sec_bytes.append(0)
                raw.sec_lat_ns.append(0)
            raw.sec_ops[sec] += 1
            raw.sec_bytes[sec] += nbytes
            raw.sec_lat_ns[sec] += d
            raw.ops += 1
            raw.bytes += nbytes

    def worker(seed: float) -> None:
        c = connect(url, token)
        r = random.Random(seed)
        try:
            while True:
                now = time.perf_counter_ns()
                with lock:
                    if now >= deadline:
                        raw.stopped_by = "duration"
                        return
                    if s.cancelled:
                        raw.stopped_by = "cancel"
                        return
                    if o.ops is not None and issued[0] >= o.ops:
                        raw.stopped_by = "ops"
                        return
                    issued[0] += 1
                kind = r.choices(kinds, weights)[0]
                name = pool.pick() if kind == "read" else pool.take() if kind == "delete" \
                    else None
                if kind != "write" and name is None:
                    kind = "write"
                n = 0
                t0 = time.perf_counter_ns()
                err = None
                try:
                    if kind == "write":
                        n = _sizes(o, r)
                        with lock:
                            if budget[0] < n:
                                raw.stopped_by = "bytes"
                                return
                            budget[0] -= n
                        name = new_name()
                        c.put_object(container, name, payload[:n])
                        pool.add(name)
                    elif kind == "read":
                        assert name is not None
                        try:
                            _, body = c.get_object(container, name)
                        finally:
                            pool.done_reading(name)
                        n = len(body)
                    else:
                        c.delete_object(container, name)
                except Exception as e:
                    err = err_kind(e)
                record(kind, t0, time.perf_counter_ns(), n, err)
        finally:
            c.close()

    def ticker() -> None:
        while any(th.is_alive() for th in threads):
            time.sleep(0.5)
            el = (time.perf_counter_ns() - start) / 1e9
            s.progress(mix_label(o.mix), rep, el, o.duration_s, raw.ops, raw.bytes)

    rng = random.Random(o.seed)
    threads = [threading.Thread(target=worker, args=(rng.random(),), daemon=True)
               for _ in range(o.concurrency)]
    cpu0 = time.process_time()
    for th in threads:
        th.start()
    tk = threading.Thread(target=ticker, daemon=True)
    tk.start()
    for th in threads:
        th.join()
    raw.elapsed_s = (time.perf_counter_ns() - start) / 1e9
    raw.client_cpu_s = time.process_time() - cpu0
    s.bytes_written += per_bytes["write"]
    breakdown = {}
    for k in kinds:
        lat = latency_summary(per_op[k])
        breakdown[k] = {"ops": len(per_op[k]), "ops_s": len(per_op[k]) / (raw.elapsed_s or 1),
                        "bytes": per_bytes[k], **lat}
    return raw, breakdown
