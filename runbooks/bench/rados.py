"""RADOS workloads: the native python-rados driver, or the stock ``rados bench``.

Both write into the dedicated pool (created if missing) and clean their objects up
afterwards unless ``keep`` is set (then a later ``seq``/``rand`` run reads them). The stock
tool runs as a child process we started; Ctrl-C sends it SIGINT by its pid, then the
objects are removed with ``rados cleanup``.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from runbooks.bench.common import Session, result_from_raw
from runbooks.bench.measure import MIB, steady_reached
from runbooks.bench.model import BenchResult, fingerprint_fields, human_size
from runbooks.model import Refused
from storage.rados_io import (
    OBJ_PREFIX,
    RadosBenchError,
    RadosBenchOutput,
    RadosIO,
    Tick,
    parse_rados_bench,
    parse_rados_bench_row,
    rados_bench_argv,
    rados_cleanup_argv,
)
from storage.targets import CephTarget


def ceph_target(s: Session) -> CephTarget:
    t = s.ctx.target.ceph
    if t is None:
        raise Refused(f"cluster {s.ctx.cluster} has no Ceph configured")
    return t


def plan_lines(s: Session, pool: str, pool_exists: bool) -> list[str]:
    o = s.opts
    lines = []
    if not pool_exists:
        lines.append(f"create pool {pool} (replicated, size fitted to the up hosts, "
                     "application 'stordoc') and wait for active+clean")
    t = ceph_target(s)
    for rep in range(1, o.repeat + 1):
        for m in o.modes:
            if o.engine == "rados-bench":
                argv = rados_bench_argv(t, pool, int(o.duration_s), m, o.concurrency, o.size,
                                        f"stordoc_rb_<group>_{rep}")
                lines.append("$ " + " ".join(argv))
            else:
                lines.append(f"rep {rep}: {m} {human_size(o.size)} objects, {o.concurrency} "
                             f"in flight, {o.duration_s:g} s (native librados)"
                             + (f", at most {o.ops} ops" if o.ops else ""))
        if not o.keep or rep < o.repeat:
            lines.append(f"rep {rep}: remove the benchmark objects from {pool}")
    return lines


def run_native(s: Session, pool: str) -> list[BenchResult]:
    o = s.opts
    results: list[BenchResult] = []
    with RadosIO(ceph_target(s)) as io:
        if io.ensure_pool(pool):
            s.step(f"create pool {pool}", f"ceph osd pool create {pool}", "created")
        state = io.state(pool)
        s.fit_space(state)
        written: list[str] = []
        try:
            for rep in range(1, o.repeat + 1):
                objects: list[str] = []
                for mode in o.modes:
                    if s.cancelled:
                        break
                    if mode != "write" and not objects:
                        objects = _kept_objects(io, pool)
                        if not objects:
                            raw0 = io.run_phase(
                                pool, "write", o.size, o.concurrency, o.duration_s,
                                max_bytes=s.bytes_left(), cancel=s.cancel,
                                prefix=f"{OBJ_PREFIX}{s.group_id}_{rep}_")
                            written += raw0.objects
                            s.bytes_written += raw0.bytes
                            objects = raw0.objects
                            s.warnings.append(f"rep {rep}: wrote {len(objects)} objects first "
                                              f"(unmeasured) for the {mode} read")
                    raw = io.run_phase(
                        pool, mode, o.size, o.concurrency, o.duration_s, max_ops=o.ops,
                        max_bytes=s.bytes_left() if mode == "write" else None,
                        objects=objects, prefix=f"{OBJ_PREFIX}{s.group_id}_{rep}_",
                        cancel=s.cancel, seed=o.seed,
                        on_tick=_ticker(s, rep))
                    if mode == "write":
                        written += raw.objects
                        objects = list(raw.objects)
                        s.bytes_written += raw.bytes
                    r = result_from_raw(s, "rados", "native", mode, pool, raw, rep, state)
                    results.append(r)
                    s.step(f"rep {rep}: rados {mode} {human_size(o.size)} x{o.concurrency}",
                           f"librados aio {mode} pool={pool} t={o.concurrency} "
                           f"b={o.size} {o.duration_s:g}s", r.headline())
                if s.cancelled:
                    break
                if not o.keep or rep < o.repeat:
                    n = io.remove_objects(pool, written, o.concurrency)
                    s.step(f"rep {rep}: remove benchmark objects", f"rados -p {pool} rm ...",
                           f"removed {n} objects")
                    written = []
        finally:
            if written and (s.cancelled or not o.keep):
                n = io.remove_objects(pool, written, o.concurrency)
                s.step("remove benchmark objects (after stop)", f"rados -p {pool} rm ...",
                       f"removed {n} objects")
    return results


def _ticker(s: Session, rep: int) -> Callable[[Tick], None]:
    def tick(t: Tick) -> None:
        s.progress(t.phase, rep, t.elapsed_s, t.planned_s, t.ops, t.bytes)

    return tick


def _kept_objects(io: RadosIO, pool: str) -> list[str]:
    """Objects a previous ``--keep`` run left, in write order."""
    names = io.list_bench_objects(pool, OBJ_PREFIX)

    def key(n: str) -> tuple[str, int]:
        head, _, tail = n.rpartition("_")
        return (head, int(tail) if tail.isdigit() else -1)

    return sorted(names, key=key)


def run_rados_bench(s: Session, pool: str) -> list[BenchResult]:
    """The stock tool, phase by phase, its output parsed (plain text, not ``-f json``)."""
    o = s.opts
    t = ceph_target(s)
    results: list[BenchResult] = []
    with RadosIO(t) as io:
        if io.ensure_pool(pool):
            s.step(f"create pool {pool}", f"ceph osd pool create {pool}", "created")
        state = io.state(pool)
    s.fit_space(state)
    est = o.concurrency * o.size * 1.0
    if s.bytes_left() < est:
        raise Refused(f"not enough room in {pool} for rados bench ({s.bytes_left()} bytes)")
    for rep in range(1, o.repeat + 1):
        run_name = f"stordoc_rb_{s.group_id}_{rep}_{uuid.uuid4().hex[:6]}"
        wrote = False
        prefix: str | None = None
        try:
            modes = list(o.modes)
            if any(m != "write" for m in modes) and "write" not in modes:
                modes = ["write"] + modes  # rados bench reads only what a write left
                s.warnings.append("rados bench needs a write phase before seq/rand: added")
            for mode in modes:
                if s.cancelled or s.integrity:
                    break
                argv = rados_bench_argv(t, pool, max(1, round(o.duration_s)), mode,
                                        o.concurrency, o.size, run_name,
                                        max_objects=max(1, s.bytes_left() // o.size))
                text, rc, stopped = _run_child(s, argv, mode, rep, o.duration_s)
                wrote = wrote or mode == "write"
                out = parse_rados_bench(text)
                prefix = prefix or out.object_prefix
                if stopped:  # SIGINT: no summary, the figures of its last per-second row
                    out = from_last_row(out)
                if not out.complete:
                    s.step(f"rep {rep}: rados bench {mode}", " ".join(argv), text[-2000:], rc)
                    if s.cancelled:
                        break
                    raise Refused(f"rados bench {mode} failed (rc {rc}): "
                                  f"{(out.errors or [text.strip()[-200:]])[-1]}")
                r = _result_from_tool(s, out, mode, pool, rep, state, o.size)
                r.extra["stopped_by"] = "steady" if stopped and not s.cancelled else \
                    "cancel" if stopped else "duration"
                if mode == "write":
                    s.bytes_written += r.bytes
                if mode != "write":
                    r.extra["verify"] = verify_summary(out, r.ops)
                    if out.mismatches:
                        r.status = "failed"
                        s.integrity.append(
                            f"rados bench {mode} read {len(out.mismatches)} object(s) back "
                            f"with other content than written (e.g. {out.mismatches[0]})")
                if mode not in o.modes and not out.mismatches:
                    continue
                results.append(r)
                s.step(f"rep {rep}: rados bench {mode}", " ".join(argv), r.headline(), rc)
        finally:
            if wrote and (s.cancelled or not o.keep or rep < o.repeat):
                cleanup_objects(s, t, pool, run_name, prefix, f"rep {rep}: rados cleanup")
        if s.cancelled or s.integrity:
            break
    return results


def verify_summary(out: RadosBenchOutput, reads: int) -> dict[str, Any]:
    return {"checked": True, "engine": "rados bench (compares every object read with what "
            "its write put there)", "reads": reads, "mismatches": len(out.mismatches),
            "examples": out.mismatches[:3]}


def from_last_row(out: RadosBenchOutput) -> RadosBenchOutput:
    """rados bench dies on SIGINT without its summary (and without writing its metadata):
    a phase we stopped (steady state, Ctrl-C) takes the engine's own cumulative figures
    from its last per-second row (finished ops, average MB/s, average latency)."""
    rows = [r for r in out.per_second if r.get("sec")]
    if out.complete or not rows:
        return out
    last = rows[-1]
    return RadosBenchOutput(
        total_time_s=float(last["sec"] or 0), ops=int(last["finished"] or 0),
        op_size=out.op_size, bandwidth_mb_s=last["avg_mb_s"], iops=None,
        lat_avg_s=last["avg_lat_s"], lat_max_s=None, per_second=out.per_second,
        errors=out.errors, mismatches=out.mismatches, object_prefix=out.object_prefix)


def _run_child(s: Session, argv: list[str], mode: str, rep: int, planned: float
               ) -> tuple[str, int, bool]:
    """Run the tool, feed progress from its per-second rows, SIGINT it on cancel or, with
    ``--steady``, once its throughput is steady. Returns (output, rc, stopped by us)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1)
    lines: list[str] = []
    per_sec: list[float] = []
    stop_watch = threading.Event()
    stopped = [False]

    def interrupt() -> None:
        if proc.poll() is None and not stopped[0]:
            stopped[0] = True
            proc.send_signal(signal.SIGINT)

    def watch() -> None:
        while not stop_watch.wait(0.2):
            if s.cancelled:
                interrupt()
                return

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    t0 = time.monotonic()
    prev = 0
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            lines.append(line)
            row = parse_rados_bench_row(line)
            if row is not None and row["sec"]:
                el = time.monotonic() - t0
                done = int(row["finished"] or 0)
                per_sec.append(float(done - prev))
                prev = done
                s.progress(mode, rep, el, planned, done, done * s.opts.size)
                if s.opts.steady and steady_reached(per_sec):
                    interrupt()
        rc = proc.wait(timeout=planned + 120)
    finally:
        stop_watch.set()
        if proc.poll() is None:
            stopped[0] = True
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return "".join(lines), rc, stopped[0]


def _result_from_tool(s: Session, out: RadosBenchOutput, mode: str, pool: str, rep: int,
                      state: dict[str, Any], size: int) -> BenchResult:
    el = out.total_time_s or 1e-9
    op_size = out.op_size or size
    series = []
    prev = 0
    for row in out.per_second:
        sec = row["sec"] or 0  # both parsers always set it (an int)
        if sec == 0:
            continue
        fin = int(row["finished"] or 0)
        series.append({"t": float(sec), "ops_s": float(fin - prev),
                       "mb_s": float(row["cur_mb_s"] or 0.0),
                       "lat_ms": float(row["last_lat_s"] or 0.0) * 1000, "partial": 0.0})
        prev = fin
    ops = int(out.ops or 0)
    return BenchResult(
        cluster=s.ctx.cluster, kind="rados", engine="rados-bench", workload=mode,
        group_id=s.group_id, rep=rep, params={**s.opts.to_dict(), "op_size": op_size},
        fingerprint_fields=fingerprint_fields(
            s.ctx.cluster, "rados", "rados-bench", mode, pool, op_size, s.opts.concurrency,
            _client(), state.get("versions") or []),
        started_at=time.time() - el, duration_s=el, status="ok", user=s.ctx.user, ops=ops,
        bytes=ops * op_size, ops_s=ops / el,
        mb_s=out.bandwidth_mb_s if out.bandwidth_mb_s is not None else ops * op_size / MIB / el,
        lat_avg_ms=out.lat_avg_s * 1000 if out.lat_avg_s is not None else None,
        lat_max_ms=out.lat_max_s * 1000 if out.lat_max_s is not None else None,
        errors=len(out.errors), error_kinds={"tool": len(out.errors)} if out.errors else {},
        series=series, state=dict(state),
        extra={"tool_iops": out.iops, "lat_min_ms": (out.lat_min_s or 0) * 1000},
        notes=["rados bench reports no percentiles"])


def _client() -> str:
    from storage.rados_io import client_host

    return client_host()


def pool_exists(s: Session, pool: str) -> bool:
    try:
        with RadosIO(ceph_target(s)) as io:
            return io.pool_exists(pool)
    except RadosBenchError as e:
        raise Refused(str(e)) from None


def cleanup_objects(s: Session, t: CephTarget, pool: str, name: str, prefix: str | None,
                    title: str) -> None:
    if not prefix:
        s.step(title, "(nothing: rados bench printed no object prefix, so it wrote nothing)",
               "", 0)
        return
    # "_object" ends the prefix: benchmark_data_HOST_12 must not match ..._123_object0
    argv = rados_cleanup_argv(t, pool, name, prefix=prefix + "_object")
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    out = (p.stdout + p.stderr)[-500:]
    rm = ["rados", "-c", t.conf, "-n", t.client] + (["--keyring", t.keyring] if t.keyring
                                                    else []) + ["-p", pool, "rm", name]
    q = subprocess.run(rm, capture_output=True, text=True, timeout=60, check=False)
    s.step(title, " ".join(argv) + "; " + " ".join(rm),
           out + ("" if q.returncode == 0 else " (no metadata object)"), p.returncode)
