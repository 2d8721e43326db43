"""What every multi-client engine shares: running one phase on all clients at once (the
common start, live aggregation, the steady-state stop, Ctrl-C) and folding per-client
figures into one result whose totals are the sums of what the engines reported.

Per-client figures are kept in ``extra["clients"]`` (one dict per client, the engine's
own numbers), the slowest client in ``extra["slowest_client"]``, the orchestration's
timing in ``extra["orchestration"]``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runbooks.bench.clients import Fleet, Launched
from runbooks.bench.common import Session
from runbooks.bench.measure import steady_reached
from runbooks.bench.model import BenchResult, fingerprint_fields

POLL_S = 0.25
MARGIN_S = 60.0  # a phase's commands may run this much past their planned length


class LiveSeries:
    """Per-second ops (and bytes, and latency sums) per client as the engines print them,
    summed into one series over the seconds every client has reported."""

    def __init__(self, clients: Sequence[str]) -> None:
        self.clients = list(clients)
        self.ops: dict[str, dict[int, float]] = {c: {} for c in clients}
        self.bytes: dict[str, dict[int, float]] = {c: {} for c in clients}
        self.lat_sum_ms: dict[str, dict[int, float]] = {c: {} for c in clients}
        self.finished: set[str] = set()
        self.lock = threading.Lock()

    def add(self, client: str, sec: int, ops: float, nbytes: float,
            lat_sum_ms: float = 0.0) -> None:
        with self.lock:
            self.ops[client][sec] = ops
            self.bytes[client][sec] = nbytes
            self.lat_sum_ms[client][sec] = lat_sum_ms

    def done(self, client: str) -> None:
        with self.lock:
            self.finished.add(client)

    def whole_seconds(self) -> int:
        """Seconds 1..N reported by every client still running (a finished client counts
        as 0 from its last second on)."""
        with self.lock:
            ends = [max(self.ops[c], default=0) for c in self.clients
                    if c not in self.finished]
            if not ends:
                return max((max(v, default=0) for v in self.ops.values()), default=0)
            return min(ends)

    def totals(self) -> tuple[float, float]:
        with self.lock:
            return (sum(sum(v.values()) for v in self.ops.values()),
                    sum(sum(v.values()) for v in self.bytes.values()))

    def ops_per_second(self, upto: int | None = None) -> list[float]:
        n = self.whole_seconds() if upto is None else upto
        with self.lock:
            return [sum(self.ops[c].get(k, 0.0) for c in self.clients) for k in range(1, n + 1)]

    def series(self, elapsed_s: float) -> list[dict[str, float]]:
        """The aggregate per-second series (ops/s, MiB/s, mean latency) as results keep
        it; a last second beyond ``elapsed_s`` is marked partial."""
        with self.lock:
            n = max((max(v, default=0) for v in self.ops.values()), default=0)
            out = []
            for k in range(1, n + 1):
                ops = sum(self.ops[c].get(k, 0.0) for c in self.clients)
                by = sum(self.bytes[c].get(k, 0.0) for c in self.clients)
                lat = sum(self.lat_sum_ms[c].get(k, 0.0) for c in self.clients)
                out.append({"t": float(k), "ops_s": ops, "mb_s": by / 1024**2,
                            "lat_ms": lat / ops if ops else 0.0,
                            "partial": float(k > elapsed_s + 0.5)})
            return out


@dataclass
class PhaseOutcome:
    batch: list[Launched]
    started_at: float  # time.time() of the release ("go")
    elapsed_s: float
    stopped_by: str  # duration | steady | cancel | deadline
    outputs: dict[str, str] = field(default_factory=dict)
    rcs: dict[str, int | None] = field(default_factory=dict)
    launch_s: float = 0.0  # from the phase's start to "go" on every client


def run_phase(s: Session, fleet: Fleet, argv_by_client: Mapping[str, Sequence[str]],
              phase: str, rep: int, planned_s: float, live: LiveSeries,
              on_line: Callable[[str, str], None], *, max_s: float | None = None,
              steady_stop: bool = True, op_size: int = 0) -> PhaseOutcome:
    """Start one phase on every client with a common start, watch it (progress from the
    live series, the steady-state stop, Ctrl-C) and wait for every client to end."""
    t0 = time.monotonic()
    limit = max_s if max_s is not None else planned_s + MARGIN_S
    batch = fleet.launch(argv_by_client, limit, on_line=on_line)
    released = batch[0].released_at or time.time() if batch else time.time()
    if s.first_io_at is None:
        s.first_io_at = released
    launch_s = time.monotonic() - t0
    start = time.monotonic()
    stopped_by = "duration"
    signalled = False
    deadline = start + limit + 30
    while any(b.running for b in batch):
        time.sleep(POLL_S)
        el = time.monotonic() - start
        ops, nbytes = live.totals()
        s.progress(phase, rep, el, planned_s, int(ops), int(nbytes or ops * op_size))
        if signalled:
            if time.monotonic() > deadline:
                fleet.stop(batch, grace_s=10)
            continue
        if s.cancelled:
            stopped_by, signalled = "cancel", True
            fleet.signal(batch, "INT")
        elif steady_stop and s.opts.steady and steady_reached(live.ops_per_second()):
            stopped_by, signalled = "steady", True
            fleet.signal(batch, "INT")
        elif time.monotonic() > deadline:
            stopped_by, signalled = "deadline", True
            fleet.stop(batch, grace_s=10)
    elapsed = time.monotonic() - start
    for b in batch:
        live.done(b.client)
    return PhaseOutcome(batch, released, elapsed, stopped_by,
                        {b.client: b.proc.output for b in batch},
                        {b.client: b.proc.rc for b in batch}, launch_s)


def slowest(clients: Sequence[Mapping[str, Any]], key: str = "mb_s") -> dict[str, Any] | None:
    """The client with the lowest throughput, and how far below the mean it was."""
    vals = [(float(c.get(key) or 0.0), c) for c in clients]
    if len(vals) < 2:
        return None
    mean = sum(v for v, _ in vals) / len(vals)
    v, c = min(vals, key=lambda x: x[0])
    return {"client": c["client"], key: v, "mean": mean,
            "below_mean_pct": round(100 * (mean - v) / mean, 1) if mean else None}


def aggregate_fields(per_client: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals from per-client figures: ops, bytes, ops/s and MB/s are sums; the average
    latency is weighted by each client's ops; the maximum is the largest."""
    ops = sum(int(c.get("ops") or 0) for c in per_client)
    lat_w = sum(float(c["lat_avg_ms"]) * int(c.get("ops") or 0) for c in per_client
                if c.get("lat_avg_ms") is not None)
    maxes = [float(c["lat_max_ms"]) for c in per_client if c.get("lat_max_ms") is not None]
    return {"ops": ops, "bytes": sum(int(c.get("bytes") or 0) for c in per_client),
            "ops_s": sum(float(c.get("ops_s") or 0.0) for c in per_client),
            "mb_s": sum(float(c.get("mb_s") or 0.0) for c in per_client),
            "lat_avg_ms": lat_w / ops if ops and lat_w else None,
            "lat_max_ms": max(maxes) if maxes else None,
            "elapsed_s": max((float(c.get("elapsed_s") or 0.0) for c in per_client),
                             default=0.0)}


def client_label(fleet: Fleet) -> str:
    """What the fingerprint records as the client: the set of client hosts."""
    return "clients:" + ",".join(sorted(fleet.names))


def multi_result(s: Session, kind: str, engine: str, workload: str, where: str | None,
                 rep: int, op_size: int | Sequence[int | None], concurrency: int,
                 state: Mapping[str, Any], fleet: Fleet, per_client: list[dict[str, Any]],
                 outcome: PhaseOutcome, series: list[dict[str, float]],
                 extra: Mapping[str, Any] | None = None,
                 notes: Sequence[str] = ()) -> BenchResult:
    agg = aggregate_fields(per_client)
    el = agg["elapsed_s"] or outcome.elapsed_s or 1e-9
    status = "cancelled" if outcome.stopped_by == "cancel" else "ok"
    slow = slowest(per_client)
    res = BenchResult(
        cluster=s.ctx.cluster, kind=kind, engine=engine, workload=workload,
        group_id=s.group_id, rep=rep,
        params={**s.opts.to_dict(), "op_size": op_size, "clients": fleet.names},
        fingerprint_fields=fingerprint_fields(
            s.ctx.cluster, kind, engine, workload, where, op_size, concurrency,
            client_label(fleet), state.get("versions") or []),
        started_at=outcome.started_at, duration_s=el, status=status, user=s.ctx.user,
        ops=agg["ops"], bytes=agg["bytes"], ops_s=agg["ops_s"], mb_s=agg["mb_s"],
        lat_avg_ms=agg["lat_avg_ms"], lat_max_ms=agg["lat_max_ms"],
        errors=sum(int(c.get("errors") or 0) for c in per_client),
        series=series, state=dict(state),
        extra={"clients": per_client, "n_clients": len(per_client),
               "stopped_by": outcome.stopped_by,
               "orchestration": {"launch_s": round(outcome.launch_s, 3)},
               **({"slowest_client": slow} if slow else {}), **dict(extra or {})},
        notes=list(notes))
    kinds: dict[str, int] = {}
    for c in per_client:
        for k, v in (c.get("error_kinds") or {}).items():
            kinds[k] = kinds.get(k, 0) + int(v)
    res.error_kinds = kinds
    return res


def clients_line(r: BenchResult) -> str | None:
    """"3 clients: node1 410 ops/s 1.6 MB/s avg 9.7 ms | ...; slowest node3 (12% below
    the mean)" for a multi-client result, else None."""
    cl = r.extra.get("clients")
    if not cl:
        return None
    parts = []
    for c in cl:
        lat = c.get("lat_avg_ms")
        parts.append(f"{c.get('client')} {float(c.get('ops_s') or 0):,.1f} ops/s "
                     f"{float(c.get('mb_s') or 0):,.2f} MB/s"
                     + (f" avg {float(lat):.2f} ms" if lat is not None else "")
                     + (f" ({c.get('status')})" if c.get("status") not in (None, "ok") else ""))
    line = f"{len(cl)} clients: " + " | ".join(parts) + \
        f"; total {r.ops_s:,.1f} ops/s {r.mb_s:,.2f} MB/s"
    slow = r.extra.get("slowest_client")
    if slow:
        line += (f"; slowest {slow['client']} ({slow.get('below_mean_pct')}% below the "
                 "mean)")
    return line
