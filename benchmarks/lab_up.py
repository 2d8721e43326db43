"""Measure `stordoc lab up` from nothing, and the memory the running lab uses.

Usage: .venv/bin/python benchmarks/lab_up.py [--runs 3] [--dir /var/tmp/stordoc-lab-bench-up]
       [--ab]
Prints each run's time, the median, and the lab's total RSS (sum over its processes).
``--ab`` alternates runs with and without the host metrics (a node_exporter per lab host
and the lab's Prometheus, lab/hostmetrics.py) and prints both medians, and the CPU the
exporters and Prometheus use on the idle lab.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab import Lab  # noqa: E402


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def host_metrics_cpu(lab: Lab, seconds: float = 60) -> str:
    """CPU the exporters and Prometheus use on the idle lab over ``seconds``."""
    names = [n for n in lab.known_daemons()
             if n == "prometheus" or n.startswith("node-exporter.")]
    pids = {n: lab.pid(n) for n in names}
    start = {n: cpu_s(p) for n, p in pids.items() if p}
    time.sleep(seconds)
    used = {n: cpu_s(p) - start[n] for n, p in pids.items() if p and n in start}
    total = sum(used.values())
    return (f"host metrics CPU over {seconds:.0f}s idle: {total:.2f} s "
            f"({100 * total / seconds:.1f}% of one core; "
            + ", ".join(f"{n} {v:.2f}" for n, v in used.items()) + ")")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp/stordoc-lab-bench-up")
    ap.add_argument("--port-base", type=int, default=19000)
    ap.add_argument("--ab", action="store_true",
                    help="alternate runs with and without the host metrics")
    a = ap.parse_args()
    lab = Lab(a.dir, a.port_base)
    times = []
    by_mode: dict[bool, list[float]] = {True: [], False: []}
    try:
        for i in range(a.runs * (2 if a.ab else 1)):
            metrics = not a.ab or i % 2 == 0
            lab.down(quiet=True)
            t0 = time.monotonic()
            lab.up(with_metrics=metrics)
            times.append(time.monotonic() - t0)
            by_mode[metrics].append(times[-1])
            print(f"run {i + 1}: lab up in {times[-1]:.1f}s"
                  + (f" ({'with' if metrics else 'without'} host metrics)" if a.ab else ""),
                  flush=True)
        if a.ab:
            for m, ts in by_mode.items():
                print(f"lab up {'with' if m else 'without'} host metrics: median "
                      f"{statistics.median(ts):.1f}s over {len(ts)} runs "
                      f"({', '.join(f'{t:.1f}' for t in ts)})")
            lab.down(quiet=True)
            lab.up(with_metrics=True)
            print(host_metrics_cpu(lab))
        time.sleep(5)  # let the daemons settle before reading memory
        procs = {n: p for n, p in lab.status()["processes"].items() if p}
        per = {n: rss_kib(p) for n, p in procs.items()}
        total = sum(per.values())
        print("memory (RSS, MiB): " + ", ".join(f"{n} {v / 1024:.0f}" for n, v in per.items()))
        print(f"lab up median: {statistics.median(times):.1f}s over {len(times)} runs "
              f"(min {min(times):.1f}s, max {max(times):.1f}s); goal < 90s")
        print(f"lab memory: {total / 1024:.0f} MiB RSS in {len(per)} processes")
    finally:
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
