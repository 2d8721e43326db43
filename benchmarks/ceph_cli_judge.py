"""What judging a printed ``ceph ...`` command costs (checks/ceph_cli.py): the first one
of a process (the release's command table read and parsed), then each new command, and a
check run's vetting of a text that holds none.

Run: ``.venv/bin/python benchmarks/ceph_cli_judge.py [--release pacific]``. Prints
milliseconds (CPU, time.process_time), best of --repeat for the repeated ones.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

COMMANDS = ("ceph osd unset noout", "ceph osd pool set-quota rbd max_bytes N",
            "ceph tell osd.1 dump_ops_in_flight", "ceph crash info X",
            "ceph osd unset pauserd", "ceph daemon DAEMON dump_ops_in_flight")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", default="pacific")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    t0 = time.process_time()
    from checks import ceph_cli

    t1 = time.process_time()
    ceph_cli.judge("ceph osd dump", a.release)
    t2 = time.process_time()
    print(f"import {1000 * (t1 - t0):.0f} ms; first command (table read and parsed) "
          f"{1000 * (t2 - t1):.0f} ms")
    for cmd in COMMANDS:
        best = min(_time(lambda c=cmd: ceph_cli.judge(c, a.release)) for _ in range(a.repeat))
        print(f"{1000 * best:7.1f} ms  {cmd}")
    text = "osd.1 is down (its data directory is not mounted); " * 4
    best = min(_time(lambda: ceph_cli.vetted(text, a.release)) for _ in range(a.repeat))
    print(f"{1000 * best:7.3f} ms  a finding's text without a command")
    return 0


def _time(fn: object) -> float:
    t = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - t


if __name__ == "__main__":
    sys.exit(main())
