"""Measure the Reef lab against the Pacific one, in one run: the first build of the Debian
13 root filesystem (into an empty cache: download + unpack + install), a Reef `lab up`
that reuses the cache, and a Pacific `lab up`, each from nothing.

Usage: .venv/bin/python benchmarks/lab_releases.py [--runs 2] [--skip-build]
Prints each figure and the ratio Reef start / Pacific start (machines are noisy: compare
the ratio). The first build goes into a temporary cache (STORDOC_ROOTFS_CACHE) removed at
the end, so the machine's own cache is neither used nor touched by that figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab import Lab  # noqa: E402
from lab.rootfs import CACHE_ENV, REEF, ensure_built  # noqa: E402


def first_build() -> float:
    tmp = tempfile.mkdtemp(prefix="stordoc-rootfs-bench-", dir="/var/tmp")
    old = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = tmp
    try:
        t0 = time.monotonic()
        ensure_built(REEF)
        return time.monotonic() - t0
    finally:
        if old is None:
            del os.environ[CACHE_ENV]
        else:
            os.environ[CACHE_ENV] = old
        shutil.rmtree(tmp, ignore_errors=True)


def lab_up(release: str, base: str, port_base: int) -> float:
    lab = Lab(base, port_base, release=release)
    lab.down(quiet=True)
    try:
        t0 = time.monotonic()
        lab.up()
        return time.monotonic() - t0
    finally:
        lab.down(quiet=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--skip-build", action="store_true", help="do not measure the first build")
    ap.add_argument("--dir", default="/var/tmp/stordoc-lab-bench-rel")
    ap.add_argument("--port-base", type=int, default=19200)
    a = ap.parse_args()
    if not a.skip_build:
        took = first_build()
        print(f"reef root filesystem, first build (empty cache): {took:.1f}s", flush=True)
    ensure_built(REEF)  # the machine's cache, so that the starts below reuse it
    times: dict[str, list[float]] = {"pacific": [], "reef": []}
    for i in range(a.runs):
        for release in ("pacific", "reef"):
            t = lab_up(release, f"{a.dir}-{release}", a.port_base)
            times[release].append(t)
            print(f"run {i + 1}: {release} lab up in {t:.1f}s", flush=True)
    med = {r: statistics.median(v) for r, v in times.items()}
    print(f"lab up median: pacific {med['pacific']:.1f}s, reef {med['reef']:.1f}s "
          f"(cache reused) over {a.runs} runs; reef/pacific = "
          f"{med['reef'] / med['pacific']:.2f}x")


if __name__ == "__main__":
    main()
