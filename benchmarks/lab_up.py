"""Measure `stordoc lab up` from nothing, and the memory the running lab uses.

Usage: .venv/bin/python benchmarks/lab_up.py [--runs 3] [--dir /var/tmp/stordoc-lab-bench-up]
Prints each run's time, the median, and the lab's total RSS (sum over its processes).
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp/stordoc-lab-bench-up")
    ap.add_argument("--port-base", type=int, default=19000)
    a = ap.parse_args()
    lab = Lab(a.dir, a.port_base)
    times = []
    try:
        for i in range(a.runs):
            lab.down(quiet=True)
            t0 = time.monotonic()
            lab.up()
            times.append(time.monotonic() - t0)
            print(f"run {i + 1}: lab up in {times[-1]:.1f}s", flush=True)
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
