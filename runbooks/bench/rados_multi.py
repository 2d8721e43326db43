"""RADOS from many clients: the stock ``rados bench`` started on every client at once.

Each client runs ``rados bench`` with a run name of its own
(``stordoc_rb_<group>_<rep>_<client>``) against a private copy of a minimal ceph.conf and
the configured client's key; all are released by one start barrier. Their per-second rows
stream back and are summed live (progress, the steady-state stop: SIGINT makes rados bench
stop, print its summary and write its metadata). The result's totals are the sums of
the figures each ``rados bench`` printed (ops, bandwidth); reads (``seq``/``rand``) are
verified by rados bench itself (every object read is compared with what the write put
there): a mismatch fails the run. Objects are removed with ``rados cleanup`` per run name
(by object prefix when a run never wrote its metadata), from this host.
"""

from __future__ import annotations

from typing import Any

from runbooks.bench.client_hosts import ceph_client_files
from runbooks.bench.clients import Fleet
from runbooks.bench.common import Session
from runbooks.bench.model import BenchResult, human_size
from runbooks.bench.multi import LiveSeries, PhaseOutcome, multi_result, run_phase
from runbooks.bench.rados import ceph_target, cleanup_objects, from_last_row
from runbooks.model import Refused
from storage.rados_io import (
    RadosBenchOutput,
    RadosIO,
    parse_rados_bench,
    parse_rados_bench_row,
    rados_bench_argv,
)
from storage.targets import CephTarget

MIB = 1024 * 1024
TOOLS = (["rados", "--version"], ["timeout", "--version"])


def client_target(t: CephTarget, stage_dir: str) -> CephTarget:
    """How a client reaches the cluster: its private conf and keyring."""
    return CephTarget(conf=f"{stage_dir}/ceph.conf", keyring=f"{stage_dir}/keyring",
                      client=t.client, timeout_s=t.timeout_s)


def run_name(s: Session, rep: int, client: str) -> str:
    return f"stordoc_rb_{s.group_id}_{rep}_{client}"


def plan_lines(s: Session, pool: str, pool_exists: bool, clients: list[str]) -> list[str]:
    o = s.opts
    t = ceph_target(s)
    lines = [f"clients {', '.join(clients)} (over SSH): private dir <DIR> per client with a "
             "minimal ceph.conf and the key of " + t.client + " (copied over SSH), removed after"]
    if not pool_exists:
        lines.append(f"create pool {pool} (replicated, size fitted to the up hosts, "
                     "application 'stordoc') and wait for active+clean")
    modes = list(o.modes)
    if any(m != "write" for m in modes) and "write" not in modes:
        modes = ["write"] + modes
    for rep in range(1, o.repeat + 1):
        for m in modes:
            argv = rados_bench_argv(client_target(t, "<DIR>"), pool, max(1, round(o.duration_s)),
                                    m, o.concurrency, o.size, run_name(s, rep, "<CLIENT>"))
            lines.append(f"rep {rep}: on every client at once (common start"
                         + (", stop when steady" if o.steady else "") + "): $ "
                         + " ".join(argv))
        if not o.keep or rep < o.repeat:
            lines.append(f"rep {rep}: rados cleanup --run-name per client")
    return lines


def _per_client(c: str, out0: RadosBenchOutput, mode: str, rc: int | None, op_size: int,
                name: str, text: str, stopped: bool) -> dict[str, Any]:
    out = from_last_row(out0) if stopped else out0
    ops = int(out.ops or 0)
    el = float(out.total_time_s or 0.0)
    size = out.op_size or op_size
    d: dict[str, Any] = {
        "client": c, "run_name": name, "object_prefix": out0.object_prefix, "rc": rc, "ops": ops, "bytes": ops * size,
        "elapsed_s": el, "ops_s": ops / el if el else 0.0,
        "mb_s": float(out.bandwidth_mb_s) if out.bandwidth_mb_s is not None else
        (ops * size / MIB / el if el else 0.0),
        "lat_avg_ms": out.lat_avg_s * 1000 if out.lat_avg_s is not None else None,
        "lat_max_ms": out.lat_max_s * 1000 if out.lat_max_s is not None else None,
        "errors": len(out.errors) + len(out.mismatches),
        "error_kinds": {**({"tool": len(out.errors)} if out.errors else {}),
                        **({"verify": len(out.mismatches)} if out.mismatches else {})},
        "status": "ok" if out0.complete else "stopped" if out.complete else "incomplete",
        # the engine's own summary, as printed (fidelity checks compare against these)
        "engine": {"source": "summary" if out0.complete else "last per-second row",
                   "total_time_s": out.total_time_s, "ops": out.ops,
                   "bandwidth_mb_s": out.bandwidth_mb_s, "iops": out.iops,
                   "lat_avg_s": out.lat_avg_s, "lat_max_s": out.lat_max_s},
    }
    if mode != "write":
        d["verify"] = {"checked": True, "reads": ops, "mismatches": len(out.mismatches),
                       "examples": out.mismatches[:3]}
    if out.errors:
        d["error_lines"] = out.errors[:5]
    if not out.complete:
        d["tail"] = text.strip().splitlines()[-3:]
    return d


def run_multi(s: Session, pool: str, fleet: Fleet) -> list[BenchResult]:
    o = s.opts
    t = ceph_target(s)
    results: list[BenchResult] = []
    with RadosIO(t) as io:
        if io.ensure_pool(pool):
            s.step(f"create pool {pool}", f"ceph osd pool create {pool}", "created")
        state = io.state(pool)
        fleet.stage(lambda d: ceph_client_files(t, io.cluster, d))
    s.fit_space(state)
    n = len(fleet.hosts)
    if s.bytes_left() < o.concurrency * o.size * n:
        raise Refused(f"not enough room in {pool} for rados bench on {n} clients "
                      f"({s.bytes_left()} bytes)")
    for rep in range(1, o.repeat + 1):
        names = {c: run_name(s, rep, c) for c in fleet.names}
        prefixes: dict[str, str] = {}
        wrote = False
        try:
            modes = list(o.modes)
            if any(m != "write" for m in modes) and "write" not in modes:
                modes = ["write"] + modes
                s.warnings.append("rados bench needs a write phase before seq/rand: added")
            for mode in modes:
                if s.cancelled or s.integrity:
                    break
                secs = max(1, round(o.duration_s))
                cap = max(1, s.bytes_left() // o.size // n)
                argv = {c: rados_bench_argv(client_target(t, fleet.dirs[c]), pool, secs, mode,
                                            o.concurrency, o.size, names[c], max_objects=cap)
                        for c in fleet.names}
                wrote = wrote or mode == "write"
                outcome, live = _phase(s, fleet, argv, mode, rep, secs)
                outs = {c: parse_rados_bench(outcome.outputs.get(c, "")) for c in fleet.names}
                for c, out in outs.items():
                    if out.object_prefix:
                        prefixes[c] = out.object_prefix
                stopped = outcome.stopped_by in ("steady", "cancel", "deadline")
                per = [_per_client(c, outs[c], mode, outcome.rcs.get(c), o.size, names[c],
                                   outcome.outputs.get(c, ""), stopped) for c in fleet.names]
                bad = [p for p in per if p["status"] == "incomplete"]
                if bad and not s.cancelled:
                    b = bad[0]
                    s.step(f"rep {rep}: rados bench {mode} on {b['client']}",
                           " ".join(argv[b["client"]]), "\n".join(b.get("tail") or []),
                           int(b.get("rc") or 1))
                    raise Refused(f"rados bench {mode} failed on client {b['client']} "
                                  f"(rc {b.get('rc')}): {' | '.join(b.get('tail') or [])[-200:]}")
                r = _result(s, mode, pool, rep, state, fleet, per, outcome, live)
                if mode == "write":
                    s.bytes_written += r.bytes
                mism = [(p["client"], p["verify"]) for p in per
                        if p.get("verify", {}).get("mismatches")]
                if mism:
                    total = sum(v["mismatches"] for _, v in mism)
                    ex = mism[0][1]["examples"][0] if mism[0][1]["examples"] else "?"
                    s.integrity.append(
                        f"rados bench {mode} read {total} object(s) back with other content "
                        f"than written (on {', '.join(c for c, _ in mism)}; e.g. {ex})")
                    r.status = "failed"
                if mode not in o.modes and not mism:
                    continue
                results.append(r)
                s.step(f"rep {rep}: rados bench {mode} on {n} clients "
                       f"{human_size(o.size)} x{o.concurrency}",
                       " ".join(argv[fleet.names[0]]).replace(fleet.dirs[fleet.names[0]],
                                                              "<DIR>"),
                       r.headline())
        finally:
            if wrote and (s.cancelled or not o.keep or rep < o.repeat or s.integrity):
                for c in fleet.names:
                    _cleanup(s, t, pool, names[c], prefixes.get(c), rep, c)
        if s.cancelled or s.integrity:
            break
    return results


def _phase(s: Session, fleet: Fleet, argv: dict[str, list[str]], mode: str, rep: int,
           secs: int) -> tuple[PhaseOutcome, LiveSeries]:
    live = LiveSeries(fleet.names)
    last: dict[str, tuple[int, float]] = {}  # client -> (finished, sum of latency in ms)
    size = s.opts.size

    def on_line(host: str, text: str) -> None:
        row = parse_rados_bench_row(text)
        if row is None or not row["sec"]:
            return
        fin = int(row["finished"] or 0)
        lat_sum = float(row["avg_lat_s"] or 0.0) * 1000 * fin
        f0, l0 = last.get(host, (0, 0.0))
        last[host] = (fin, lat_sum)
        live.add(host, int(row["sec"] or 0), fin - f0, (fin - f0) * size,
                 max(0.0, lat_sum - l0))

    outcome = run_phase(s, fleet, argv, mode, rep, float(secs), live, on_line,
                        op_size=size)
    return outcome, live


def _result(s: Session, mode: str, pool: str, rep: int, state: dict[str, Any], fleet: Fleet,
            per: list[dict[str, Any]], outcome: PhaseOutcome, live: LiveSeries
            ) -> BenchResult:
    r = multi_result(s, "rados", "rados-bench", mode, pool, rep, s.opts.size,
                     s.opts.concurrency, state, fleet, per, outcome,
                     live.series(outcome.elapsed_s),
                     notes=["rados bench reports no percentiles; totals are the sums of "
                            "what each client's rados bench printed"])
    if mode != "write":
        mism = sum(int(p.get("verify", {}).get("mismatches", 0)) for p in per)
        r.extra["verify"] = {"checked": True, "engine": "rados bench (compares every "
                             "object read with what its write put there)",
                             "reads": r.ops, "mismatches": mism,
                             "examples": [e for p in per
                                          for e in p.get("verify", {}).get("examples", [])][:3]}
    return r


def _cleanup(s: Session, t: CephTarget, pool: str, name: str, prefix: str | None, rep: int,
             client: str) -> None:
    """Remove one client's objects: by its exact object prefix (``benchmark_data_HOST_PID``,
    printed by rados bench) and its metadata object. Never ``cleanup --run-name`` alone: a
    run stopped by a signal wrote no metadata, and then rados falls back to removing every
    ``benchmark_data*`` object of the pool, other people's included."""
    cleanup_objects(s, t, pool, name, prefix, f"rep {rep}: rados cleanup ({client})")
