"""CPU time stordoc's native RADOS driver spends per operation outside librados.

Both the native driver and the stock `rados bench` use librados; so for the same workload
(same pool, size, concurrency, duration) the difference of CPU time per operation of the
two client processes is what stordoc adds on top of librados (Python submit/reap,
bookkeeping, the python-rados binding). Also printed: the CPU of stordoc's own two kinds of
threads (submitter and reapers, which include the librados submit/complete calls they make).
Runs alternate, --runs of each.

Usage: .venv/bin/python benchmarks/bench_overhead.py --config /var/tmp/sd-lab-bench/stordoc.toml [--runs 3] [--duration 3] [--size 4096]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.settings import load_settings
from storage.rados_io import RadosIO, parse_rados_bench, rados_bench_argv


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="/var/tmp/sd-lab-bench/stordoc.toml")
    ap.add_argument("--cluster")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--pool", default="stordoc-bench")
    ap.add_argument("--max-mib", type=int, default=300)
    a = ap.parse_args()
    s = load_settings(a.config)
    name = s.cluster_name(a.cluster)
    t = s.clusters[name].target(name).ceph
    assert t is not None
    cap = max(a.concurrency, a.max_mib * 1024 * 1024 // a.size)
    ours, ours_threads, tool = [], [], []
    with RadosIO(t) as io:
        io.ensure_pool(a.pool)
        for i in range(a.runs):
            raw = io.run_phase(a.pool, "write", a.size, a.concurrency, a.duration,
                               max_ops=cap, prefix=f"stordoc_bench_ovh_{i}_")
            io.remove_objects(a.pool, raw.objects)
            ours.append(raw.client_cpu_s / raw.ops * 1e6)
            ours_threads.append((raw.submit_cpu_s + raw.reap_cpu_s) / raw.ops * 1e6)
            c0 = _children_cpu()
            p = subprocess.run(rados_bench_argv(t, a.pool, int(a.duration), "write",
                                                a.concurrency, a.size, f"ovh{i}",
                                                no_cleanup=True, max_objects=cap),
                               capture_output=True, text=True, check=False, timeout=300)
            cpu = _children_cpu() - c0
            out = parse_rados_bench(p.stdout)
            subprocess.run(["rados", "-c", t.conf, "-p", a.pool, "cleanup", "--run-name",
                            f"ovh{i}"], capture_output=True, check=False, timeout=300)
            if not out.ops:
                sys.exit(f"rados bench failed: {p.stdout[-300:]}")
            tool.append(cpu / out.ops * 1e6)
            print(f"  run {i + 1}: stordoc {ours[-1]:.1f} us/op (its threads "
                  f"{ours_threads[-1]:.1f}) over {raw.ops} ops; rados bench {tool[-1]:.1f} "
                  f"us/op over {out.ops} ops (incl. process start)", flush=True)
    mo, mt, mth = statistics.median(ours), statistics.median(tool), \
        statistics.median(ours_threads)
    print(f"{a.size} B writes x{a.concurrency}: client CPU per op, median of {a.runs}: "
          f"stordoc {mo:.1f} us, rados bench {mt:.1f} us -> stordoc adds {mo - mt:.1f} us/op "
          f"outside librados ({(mo - mt) / mt:+.0%}); stordoc's submit+reap threads "
          f"{mth:.1f} us/op", flush=True)


if __name__ == "__main__":
    main()
