"""Swift from many clients: stordoc's Swift mix shipped to every client and started at once.

swift-bench is not packaged for Debian 12 and checks nothing it reads, so each client runs
``agents/swift_mix.py`` (standard library only), copied with its ``config.json`` (storage
URL, this run's token, container, object prefix, workload) into the run's private
directory over SSH: the token never appears on a command line. The agents print their
per-second figures (summed live: progress and the steady-state stop, SIGINT) and a summary;
the result's totals are the sums of the summaries. Every GET is verified against the MD5
of what that agent PUT under the name (and every PUT's ETag against the MD5 sent): a
mismatch fails the run.

The container is claimed here as for one client (created and marked, or already marked as
stordoc's). Cleanup runs here: every name an agent wrote down before its PUT (``names`` in
its directory) and every object listed under this run's prefix (``stordoc_bench_<group>_``,
unique per run) is deleted; the container only if this run created it and it is empty.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from runbooks.bench.clients import Fleet
from runbooks.bench.common import Session
from runbooks.bench.model import MIB, BenchResult, human_size
from runbooks.bench.multi import LiveSeries, PhaseOutcome, multi_result, run_phase
from runbooks.bench.swift import OBJ_PREFIX, mix_label
from runbooks.bench.swift_container import cleanup_step, open_container
from runbooks.model import Refused
from storage.runner import HostUnreachable

TOOLS = (["python3", "--version"], ["timeout", "--version"])
AGENT = Path(__file__).parent / "agents" / "swift_mix.py"
PREFILL_MARGIN_S = 120.0


def run_prefix(s: Session) -> str:
    return f"{OBJ_PREFIX}{s.group_id}_"


def client_prefix(s: Session, i: int) -> str:
    return f"{run_prefix(s)}c{i + 1}_"


def plan_lines(s: Session, container: str, owner: str, clients: list[str]) -> list[str]:
    o = s.opts
    size = human_size(o.size) + (f"..{human_size(o.size_max)}" if o.size_max else "")
    lines = [f"clients {', '.join(clients)} (over SSH): private dir <DIR> per client with "
             "stordoc's Swift mix (swift_mix.py, standard library only) and its config "
             "(storage URL, token; copied over SSH), removed after",
             f"create container {container} (marked as stordoc's)" if owner == "absent"
             else f"use container {container} (marked as stordoc's)"]
    for rep in range(1, o.repeat + 1):
        lines.append(f"rep {rep}: on every client at once (common start"
                     + (", stop when steady" if o.steady else "") + f"): $ python3 "
                     f"<DIR>/swift_mix.py r{rep}  ({mix_label(o.mix)} read/write/delete, "
                     f"{size} objects, {o.concurrency} workers per client, "
                     f"{o.duration_s:g} s, every GET checked against the MD5 written"
                     + (f", {o.prefill} objects written first" if o.mix[0] or o.mix[2]
                        else "") + ")")
    if not o.keep:
        lines.append("delete every object of this run (names the agents wrote down, and "
                     f"the listing under {OBJ_PREFIX}<group>_)"
                     + (" and the container" if owner == "absent" else ""))
    return lines


def run_multi(s: Session, container: str, fleet: Fleet) -> list[BenchResult]:
    o = s.opts
    url, token, st, main, created = open_container(s, container)
    n = len(fleet.names)
    budget = max(1, s.bytes_left() // (n * o.repeat))
    rng = random.Random(o.seed)
    agent = AGENT.read_bytes()

    def files(i: int) -> dict[str, bytes]:
        cfg = {"url": url, "token": token, "container": container,
               "prefix": client_prefix(s, i), "concurrency": o.concurrency, "size": o.size,
               "size_max": o.size_max, "mix": list(o.mix), "duration_s": o.duration_s,
               "ops": o.ops, "prefill": o.prefill, "seed": rng.getrandbits(64),
               "max_bytes": budget}
        return {"swift_mix.py": agent, "config.json": json.dumps(cfg).encode()}

    idx = {c: i for i, c in enumerate(fleet.names)}
    results: list[BenchResult] = []
    try:
        fleet.stage(lambda d: files(idx[_client_of(fleet, d)]))
        for rep in range(1, o.repeat + 1):
            if s.cancelled or s.integrity:
                break
            r = _rep(s, fleet, container, rep, st)
            results.append(r)
    finally:
        if not o.keep or s.cancelled or s.integrity:
            cleanup_step(s, main, container, sorted(_written(s, fleet, main, container)),
                         created, url, token)
        main.close()
    return results


def _client_of(fleet: Fleet, stage_dir: str) -> str:
    """Which client a directory being staged belongs to (``stage`` names it just before
    asking for its files)."""
    for c, d in fleet.dirs.items():
        if d == stage_dir:
            return c
    raise Refused("internal: staged directory of no client")


def parse_line(text: str) -> dict[str, Any] | None:
    """One JSON line of the agent (a per-second row, ``prefilled`` or ``summary``)."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        v = json.loads(text)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


def per_client(c: str, summary: dict[str, Any] | None, rc: int | None, tail: list[str],
               checks_reads: bool) -> dict[str, Any]:
    """A client's figures from its agent's summary (None: it died without one)."""
    if summary is None:
        return {"client": c, "rc": rc, "ops": 0, "bytes": 0, "elapsed_s": 0.0, "ops_s": 0.0,
                "mb_s": 0.0, "errors": 0, "status": "incomplete", "tail": tail[-3:]}
    el = float(summary.get("elapsed_s") or 0.0)
    ops, nbytes = int(summary.get("ops") or 0), int(summary.get("bytes") or 0)
    errs = {str(k): int(v) for k, v in (summary.get("errors") or {}).items()}
    mism = int(summary.get("mismatches") or 0)
    d: dict[str, Any] = {
        "client": c, "rc": rc, "ops": ops, "bytes": nbytes, "elapsed_s": el,
        "ops_s": ops / el if el else 0.0, "mb_s": nbytes / MIB / el if el else 0.0,
        "lat_avg_ms": summary.get("lat_avg_ms"), "lat_max_ms": summary.get("lat_max_ms"),
        "lat_p99_ms": summary.get("lat_p99_ms"),
        "errors": sum(errs.values()) + mism,
        "error_kinds": {**errs, **({"verify": mism} if mism else {})},
        "per_op": summary.get("per_op") or {},
        "status": "ok" if summary.get("stopped_by") == "duration" else "stopped",
        "engine": {"source": "agent summary", "ops": ops, "bytes": nbytes,
                   "elapsed_s": el},
    }
    if checks_reads or mism:
        d["verify"] = {"checked": True, "reads": int(summary.get("reads_checked") or 0),
                       "mismatches": mism, "examples": list(summary.get("examples") or [])}
    return d


def _rep(s: Session, fleet: Fleet, container: str, rep: int, st: dict[str, Any]
         ) -> BenchResult:
    o = s.opts
    live = LiveSeries(fleet.names)
    summaries: dict[str, dict[str, Any]] = {}
    last_sec: dict[str, int] = {}

    def on_line(host: str, text: str) -> None:
        v = parse_line(text)
        if v is None:
            return
        if "summary" in v and isinstance(v["summary"], dict):
            summaries[host] = v["summary"]
        elif "sec" in v:
            sec = int(v.get("sec") or 0)
            if sec > last_sec.get(host, 0):
                last_sec[host] = sec
                live.add(host, sec, float(v.get("ops") or 0), float(v.get("bytes") or 0),
                         float(v.get("lat_ms") or 0))

    argv = {c: ["python3", f"{fleet.dirs[c]}/swift_mix.py", f"r{rep}"] for c in fleet.names}
    prefill = PREFILL_MARGIN_S if (o.mix[0] or o.mix[2]) and o.prefill else 0.0
    outcome: PhaseOutcome = run_phase(s, fleet, argv, mix_label(o.mix), rep, o.duration_s,
                                      live, on_line, max_s=o.duration_s + 60 + prefill,
                                      op_size=o.size)
    checks_reads = o.mix[0] > 0
    per = [per_client(c, summaries.get(c), outcome.rcs.get(c),
                      outcome.outputs.get(c, "").splitlines()[-3:], checks_reads)
           for c in fleet.names]
    bad = [p for p in per if p["status"] == "incomplete"]
    if bad and not s.cancelled:
        b = bad[0]
        s.step(f"rep {rep}: swift mix on {b['client']}", " ".join(argv[b["client"]]),
               "\n".join(b.get("tail") or []), int(b.get("rc") or 1))
        raise Refused(f"the Swift mix failed on client {b['client']} (rc {b.get('rc')}): "
                      f"{' | '.join(b.get('tail') or [])[-200:]}")
    merged: dict[str, dict[str, int]] = {}
    for p in per:
        for k, v in (p.get("per_op") or {}).items():
            m = merged.setdefault(k, {"ops": 0, "bytes": 0})
            m["ops"] += int(v.get("ops") or 0)
            m["bytes"] += int(v.get("bytes") or 0)
    size: int | list[int | None] = [o.size, o.size_max] if o.size_max else o.size
    r = multi_result(s, "swift", "swift-mix-agent", mix_label(o.mix), container, rep,
                     size, o.concurrency, st, fleet,
                     per, outcome, live.series(outcome.elapsed_s), extra={"per_op": merged},
                     notes=["totals are the sums of each client's agent summary"])
    if o.size_max:
        r.fingerprint_fields["size"] = size
    s.bytes_written += merged.get("write", {}).get("bytes", 0)
    mism = sum(int(p.get("verify", {}).get("mismatches", 0)) for p in per)
    if checks_reads or mism:
        r.extra["verify"] = {"checked": True, "engine": "MD5 of every GET against what that "
                             "client PUT (and every PUT's ETag against the MD5 sent)",
                             "reads": sum(int(p.get("verify", {}).get("reads", 0))
                                          for p in per),
                             "mismatches": mism,
                             "examples": [e for p in per
                                          for e in p.get("verify", {}).get("examples", [])][:3]}
    if mism:
        bad_c = [p["client"] for p in per if p.get("verify", {}).get("mismatches")]
        ex = r.extra["verify"]["examples"]
        s.integrity.append(f"Swift mix read {mism} object(s) back with other content than "
                           f"written (on {', '.join(bad_c)}; e.g. {ex[0] if ex else '?'})")
        r.status = "failed"
    s.step(f"rep {rep}: swift {mix_label(o.mix)} on {len(per)} clients x{o.concurrency}",
           f"python3 <DIR>/swift_mix.py r{rep}", r.headline())
    return r


def _written(s: Session, fleet: Fleet, conn: Any, container: str) -> set[str]:
    """Every object this run may have written: the names the agents wrote down before
    each PUT, and the container's listing under this run's prefix."""
    prefix = run_prefix(s)
    names: set[str] = set()
    for c, d in fleet.dirs.items():
        try:
            r = fleet.runner.run(c, ["cat", "--", f"{d}/names"], timeout_s=60)
        except HostUnreachable:
            continue
        if r.ok:
            names.update(x for x in r.stdout.splitlines() if x.startswith(prefix))
    try:
        _, listed = conn.get_container(container, prefix=prefix, full_listing=True)
        names.update(str(x["name"]) for x in listed if str(x["name"]).startswith(prefix))
    except Exception:  # noqa: BLE001  (the names files still hold every name)
        pass
    return names
