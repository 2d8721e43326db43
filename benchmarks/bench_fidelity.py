"""Fidelity of the native RADOS driver against the stock `rados bench`: interleaved pairs
(stordoc, rados bench, stordoc, ...) on the same pool and parameters, 4 KB and 4 MB writes
at 16 in flight. Prints, per size, the ratio of the medians (stordoc / rados bench) of
throughput and of average latency, and the spread of the per-pair ratios.

Both sides stop at the same object count too (--max-objects / max_ops) so a 4 MB run
cannot fill a small lab.

Usage: .venv/bin/python benchmarks/bench_fidelity.py --config /var/tmp/sd-lab-bench/stordoc.toml [--pairs 5] [--duration 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.settings import load_settings
from runbooks.bench.measure import latency_summary
from storage.rados_io import RadosIO, parse_rados_bench, rados_bench_argv

MIB = 1024 * 1024


def _room(io: RadosIO, min_free_gib: float) -> None:
    """Refuse to go on when raw free space is low (checked before every run)."""
    st = io.mon({"prefix": "df"}) or {}
    free = st.get("stats", {}).get("total_avail_bytes", 0) / 1024**3
    if free < min_free_gib:
        sys.exit(f"only {free:.2f} GiB raw free: stopping before the OSDs fill up")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="/var/tmp/sd-lab-bench/stordoc.toml")
    ap.add_argument("--cluster")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--pool", default="stordoc-bench")
    ap.add_argument("--max-mib", type=int, default=200, help="bytes cap per run (MiB)")
    ap.add_argument("--min-free-gib", type=float, default=2.0,
                    help="stop when the cluster has less raw space free (small lab OSDs "
                         "abort on ENOSPC)")
    ap.add_argument("--sizes", default="4096,4194304", help="op sizes in bytes")
    a = ap.parse_args()
    s = load_settings(a.config)
    name = s.cluster_name(a.cluster)
    t = s.clusters[name].target(name).ceph
    assert t is not None
    with RadosIO(t) as io:
        io.ensure_pool(a.pool)
        for size in [int(x) for x in a.sizes.split(",")]:
            cap = max(a.concurrency, a.max_mib * MIB // size)
            ours_bw, ours_lat, rb_bw, rb_lat, r_bw, r_lat = [], [], [], [], [], []
            for i in range(a.pairs):
                _room(io, a.min_free_gib)
                raw = io.run_phase(a.pool, "write", size, a.concurrency, a.duration,
                                   max_ops=cap, prefix=f"stordoc_bench_fid_{i}_")
                io.remove_objects(a.pool, raw.objects)
                bw = raw.bytes / MIB / raw.elapsed_s
                lat = latency_summary(raw.lat_ns)["lat_avg_ms"] or 0.0
                _room(io, a.min_free_gib)
                p = subprocess.run(rados_bench_argv(t, a.pool, int(a.duration), "write",
                                                    a.concurrency, size, f"fid{i}",
                                                    no_cleanup=False, max_objects=cap),
                                   capture_output=True, text=True, check=False, timeout=300)
                out = parse_rados_bench(p.stdout)
                if not out.complete or out.bandwidth_mb_s is None or out.lat_avg_s is None:
                    sys.exit(f"rados bench failed: {p.stdout[-300:]} {p.stderr[-300:]}")
                ours_bw.append(bw)
                ours_lat.append(lat)
                rb_bw.append(out.bandwidth_mb_s)
                rb_lat.append(out.lat_avg_s * 1000)
                r_bw.append(bw / out.bandwidth_mb_s)
                r_lat.append(lat / (out.lat_avg_s * 1000))
                print(f"  {size // 1024:>5} KiB pair {i + 1}: stordoc {bw:8.2f} MB/s "
                      f"{lat:8.2f} ms | rados bench {out.bandwidth_mb_s:8.2f} MB/s "
                      f"{out.lat_avg_s * 1000:8.2f} ms", flush=True)
            tr = statistics.median(ours_bw) / statistics.median(rb_bw)
            lr = statistics.median(ours_lat) / statistics.median(rb_lat)
            print(f"{size // 1024} KiB x{a.concurrency}, {a.pairs} pairs: throughput ratio of "
                  f"medians {tr:.3f} (per-pair {min(r_bw):.2f}..{max(r_bw):.2f}, median "
                  f"{statistics.median(r_bw):.2f}); avg latency ratio of medians {lr:.3f} "
                  f"(per-pair {min(r_lat):.2f}..{max(r_lat):.2f}); stordoc spread "
                  f"{min(ours_bw):.1f}..{max(ours_bw):.1f} MB/s, rados bench "
                  f"{min(rb_bw):.1f}..{max(rb_bw):.1f} MB/s", flush=True)


if __name__ == "__main__":
    main()
