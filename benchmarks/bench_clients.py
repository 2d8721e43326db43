"""Multi-client benchmarks on the lab: scaling, orchestration overhead, fidelity.

For each engine (rados: rados bench per client; rbd: fio client/server; swift: the shipped
Swift mix), interleaved pairs of runs with 1 client (node1) and 3 clients (node1..3):

- **scaling**: the ratio of the medians of total throughput (3 clients / 1 client), with
  the machine's CPU use during the 3-client runs (on one machine the lab's daemons and
  all clients share its cores: that is what limits it);
- **overhead**: the time from the command to the first I/O (the common start released),
  the median of the 3-client runs, beside the 1-client runs;
- **fidelity**: the totals against an independent count. rados: the objects the cluster
  holds (run with --keep) against the ops reported; rbd: fio's own "All clients" sum
  against stordoc's sum of the per-client figures; swift: the objects listed in the
  container after a write-only run (--keep) against the PUTs reported.

Usage: .venv/bin/python benchmarks/bench_clients.py --config /var/tmp/stordoc-lab/stordoc.toml [--pairs 2] [--duration 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.env import Env
from core.settings import load_settings
from runbooks.bench import api
from runbooks.bench.api import BenchOptions
from runbooks.bench.common import Session
from runbooks.bench.rados import cleanup_objects
from runbooks.bench.swift import _conn, auth, cleanup
from storage.rados_io import RadosIO

ONE, THREE = ("node1",), ("node1", "node2", "node3")


def _cpu() -> tuple[float, float]:
    with open("/proc/stat") as f:
        v = [float(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


class CpuWatch:
    def __enter__(self) -> CpuWatch:
        self.a = _cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        b = _cpu()
        self.busy = (b[0] - self.a[0]) / max(1e-9, b[1] - self.a[1])


def _opts(kind: str, clients: tuple[str, ...], duration: float, keep: bool = False
          ) -> BenchOptions:
    if kind == "rados":
        return BenchOptions(modes=("write",), duration_s=duration, size=64 * 1024,
                            concurrency=8, clients=clients, keep=keep)
    if kind == "rbd":
        return BenchOptions(modes=("randwrite",), duration_s=duration, concurrency=8,
                            image_size=64 * 2**20, clients=clients)
    return BenchOptions(modes=("mix",), mix=(0, 100, 0), duration_s=duration, size=16384,
                        concurrency=4, clients=clients, keep=keep)


def _run(ctx: Any, kind: str, o: BenchOptions) -> Any:
    rep = api.run_bench(ctx, kind, o)
    if rep.status != "ok":
        sys.exit(f"{kind} with {len(o.clients)} client(s) failed: {rep.message}")
    return rep.results[0]


def scaling(ctx: Any, kind: str, pairs: int, duration: float) -> None:
    mb: dict[int, list[float]] = {1: [], 3: []}
    first_io: dict[int, list[float]] = {1: [], 3: []}
    busy: list[float] = []
    for _ in range(pairs):
        for clients in (ONE, THREE):
            with CpuWatch() as w:
                r = _run(ctx, kind, _opts(kind, clients, duration))
            mb[len(clients)].append(r.mb_s)
            first_io[len(clients)].append(r.extra["orchestration"]["command_to_first_io_s"])
            if len(clients) == 3:
                busy.append(w.busy)
    m1, m3 = statistics.median(mb[1]), statistics.median(mb[3])
    print(f"{kind}: scaling 3 clients / 1 client = {m3 / m1:.2f}x "
          f"({m3:,.1f} vs {m1:,.1f} MB/s, medians of {pairs}); machine CPU busy during the "
          f"3-client runs {statistics.median(busy):.0%}")
    print(f"{kind}: command to first I/O: {statistics.median(first_io[3]):.2f} s with 3 "
          f"clients, {statistics.median(first_io[1]):.2f} s with 1 (medians)")


def fidelity(ctx: Any, kind: str, duration: float) -> None:
    if kind == "rados":
        o = _opts(kind, THREE, duration, keep=True)
        r = _run(ctx, kind, o)
        s = Session(ctx, o, api.BenchLimits(), r.group_id, threading.Event())
        with RadosIO(ctx.target.ceph) as io:
            ioctx = io.cluster.open_ioctx(r.state.get("pool", {}).get("name") or "stordoc-bench")
            try:
                prefixes = [c["object_prefix"] + "_object" for c in r.extra["clients"]]
                held = sum(1 for x in ioctx.list_objects()
                           if any(x.key.startswith(p) for p in prefixes))
            finally:
                ioctx.close()
        for c in r.extra["clients"]:
            cleanup_objects(s, ctx.target.ceph, r.state.get("pool", {}).get("name")
                            or "stordoc-bench", c["run_name"], c["object_prefix"], "bench")
        print(f"rados: fidelity: {r.ops:,} ops reported, {held:,} objects held by the "
              f"cluster (ratio {r.ops / held if held else float('nan'):.4f})")
    elif kind == "rbd":
        r = _run(ctx, kind, _opts(kind, THREE, duration))
        fio_ops = r.extra["fio_all_clients"]["ops"]
        print(f"rbd: fidelity: stordoc's sum {r.ops:,} ops, fio's own 'All clients' "
              f"{fio_ops:,} (ratio {r.ops / fio_ops:.4f}); MB/s {r.mb_s:,.2f} vs "
              f"{r.extra['fio_all_clients']['mb_s']:,.2f}")
    else:
        o = _opts(kind, THREE, duration, keep=True)
        r = _run(ctx, kind, o)
        url, token = auth(ctx.target.swift)
        conn = _conn(url, token)
        try:
            container = "stordoc-bench"
            _, objs = conn.get_container(container, prefix=f"stordoc_bench_{r.group_id}_",
                                         full_listing=True)
            names = [x["name"] for x in objs]
            puts = r.extra["per_op"]["write"]["ops"]
            cleanup(conn, container, names, True, 8, url, token)
        finally:
            conn.close()
        print(f"swift: fidelity: {puts:,} PUTs reported, {len(names):,} objects listed "
              f"(ratio {puts / len(names) if names else float('nan'):.4f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="/var/tmp/stordoc-lab/stordoc.toml")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--kinds", default="rados,rbd,swift")
    a = ap.parse_args()
    env = Env(load_settings(a.config))
    ctx = env.run_context(None, source="benchmark")
    t0 = time.monotonic()
    for kind in a.kinds.split(","):
        scaling(ctx, kind, a.pairs, a.duration)
        fidelity(ctx, kind, a.duration)
    print(f"total {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
