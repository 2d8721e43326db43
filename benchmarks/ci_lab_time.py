"""What one poll of the lab costs: the lab's waits (OSD up/down, PGs clean, health, the
manager's map) asked the ``ceph`` CLI, a Python process per poll; they now ask through
librados in the test's own process (``CephCluster.ask``). On a running lab, each way
alternately, wall and CPU seconds per poll (CPU: this process and its children).

Usage: .venv/bin/python benchmarks/ci_lab_time.py [--dir /var/tmp/stordoc-lab] [--rounds 5]
(a lab that runs: ``stordoc lab up`` or a test session with STORDOC_LAB_KEEP=1)
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab import Lab  # noqa: E402
from lab.layout import DEFAULT_DIR  # noqa: E402


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def cost(f: Callable[[], Any]) -> tuple[float, float]:
    t, c = time.monotonic(), cpu()
    if f() is None:
        raise SystemExit("ci_lab_time: the lab's Ceph did not answer (is the lab up?)")
    return time.monotonic() - t, cpu() - c


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=str(DEFAULT_DIR))
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    lab = Lab(a.dir)
    if not lab.state_path.exists():
        print(f"ci_lab_time: no lab under {a.dir}", file=sys.stderr)
        return 64
    cc = lab.ceph_cluster
    polls: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("osd dump", lambda: cc.cli("osd", "dump", timeout=10, check=False),
         lambda: cc.ask("osd dump")),
        ("pg stat", lambda: cc.cli("pg", "stat", timeout=10, check=False),
         lambda: cc.ask("pg stat", mgr=True)),
        ("health", lambda: cc.cli("health", timeout=10, check=False),
         lambda: cc.ask("health")),
    ]
    print(f"per poll, median of {a.rounds} (wall s / CPU s)")
    for name, by_cli, by_rados in polls:
        got: dict[str, list[tuple[float, float]]] = {"cli": [], "librados": []}
        for _ in range(a.rounds):  # alternately: the machine's load changes meanwhile
            got["cli"].append(cost(by_cli))
            got["librados"].append(cost(by_rados))
        line = []
        for way, xs in got.items():
            wall = statistics.median(x[0] for x in xs)
            cpu_s = statistics.median(x[1] for x in xs)
            line.append(f"{way} {wall:.3f} / {cpu_s:.3f}")
        print(f"{name:9s}  " + "   ".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
