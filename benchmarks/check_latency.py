"""`stordoc check` end to end on the lab (all checks, host facts over SSH): the median
over repeated runs, each a fresh process as an operator would run it.

Usage: .venv/bin/python benchmarks/check_latency.py --config /var/tmp/stordoc-lab/stordoc.toml [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="/var/tmp/stordoc-lab/stordoc.toml")
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    exe = [sys.executable, "-W", "ignore", "-m", "stordoc", "--config", a.config, "check",
           "--json"]
    times, inproc = [], []
    for _ in range(a.runs):
        t0 = time.monotonic()
        p = subprocess.run(exe, capture_output=True, text=True, cwd=ROOT, check=False)
        times.append(time.monotonic() - t0)
        if p.returncode not in (0, 1, 2):
            print(f"check failed with {p.returncode}: {p.stderr[-300:]}")
            sys.exit(1)
        import json

        inproc.append(json.loads(p.stdout)["duration_s"])
    print(f"stordoc check end to end (new process, all checks, host facts): median "
          f"{statistics.median(times):.2f}s over {a.runs} runs (min {min(times):.2f}s, max "
          f"{max(times):.2f}s); goal < 1.5s")
    print(f"  of which collect+check inside the process: median {statistics.median(inproc):.2f}s")


if __name__ == "__main__":
    main()
