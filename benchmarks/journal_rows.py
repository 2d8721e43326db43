"""How much one check adds to the journal when its Prometheus scrapes many instances
that are not the cluster's (issue #37 item 9): the biggest ``findings`` row and the
journal file's growth per check (after a WAL checkpoint), for N unmatched series.

The Prometheus is ``tests.support.prom_server.FakeProm`` on 127.0.0.1, answering for the
saved Reef ``healthy`` lab's 4 hosts and N other node_exporters of the same job; the
check is ``core.service.pipeline.run_check`` on that snapshot with a real journal
file. Bytes, not times: one run says it.

    .venv/bin/python benchmarks/journal_rows.py [--series 200000] [--checks 6]

Measured (200,000 unmatched series, 6 checks, this 2-core machine): before the bound,
the PROMETHEUS_UNMATCHED row 8,512,961 bytes and the file +8.5 MB per check (51 MB after
six); after it (counts per port and 20 names; ``storage.rowcap`` caps any row under 64 KiB)
the row 1,345 bytes and the file +4..12 KiB per check (64 KiB after six).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _size(path: Path) -> int:
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal")
               if os.path.exists(f"{path}{s}"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=200_000)
    ap.add_argument("--checks", type=int, default=6)
    a = ap.parse_args()
    os.chdir(ROOT)
    from core.service.pipeline import CheckRequest, run_check
    from storage.journal import Journal
    from tests.support.prom_server import FakeProm, Node
    from tests.unit.test_prom_facts import at, nodes_of, saved, via_prom

    snap, target, _ = saved("reef", "healthy")
    others = [Node(f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}:9100", f"other{i}")
              for i in range(a.series)]
    with FakeProm(nodes_of(snap.hosts) + others, clock=at(snap)).serve() as url:
        got, _ = via_prom(snap, target, url, timeout_s=300.0)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "journal.db"
        j = Journal(path)
        sizes = [_size(path)]
        for _ in range(a.checks):
            run_check(CheckRequest(replace(target, prometheus=None), snapshot=got, journal=j,
                      now=snap.taken_at))
            sizes.append(_size(path))
        j.close()
        with sqlite3.connect(path) as c:
            big = c.execute("select code, length(cast(entity as blob)) + length(cast("
                            "message as blob)) + length(cast(evidence as blob)) as n "
                            "from findings order by n desc limit 1").fetchone()
    growth = [b - a_ for a_, b in pairwise(sizes)]
    print(f"{a.series} unmatched series, {a.checks} checks: biggest row {big[1]} bytes "
          f"({big[0]}); journal growth per check {min(growth)}..{max(growth)} bytes, "
          f"{sizes[-1]} bytes after {a.checks} checks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
