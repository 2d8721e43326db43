#!/usr/bin/env python3
"""How often a journal write fails while another connection commits, and what it costs.

The bot keeps its own SQLite connection (BotStore: request ids, buttons) beside the
journal's; a retried Slack delivery lands there while a runbook opens its audit. With
sqlite-utils' deferred BEGIN a transaction that read first and another connection's
commit in between failed at once ("database is locked"); the journal now begins
IMMEDIATE. This runs ROUNDS rounds of the writes a fix makes
(tests/support/journal_round.py: an audited run, a mute, a benchmark row, Swift samples, a
check run) while a thread commits on a BotStore as fast as it can, and prints the failures
and the rounds per second. Counts decide; the rate is for a ratio against another commit
on the same machine in the same run.

    .venv/bin/python benchmarks/journal_contention.py [--rounds 500]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.slack.store import BotStore  # noqa: E402
from storage.journal import Journal  # noqa: E402
from tests.support.journal_round import journal_round  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=500)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "stordoc.db"
        Journal(path)
        store = BotStore(Journal(path))
        stop = threading.Event()
        commits = [0]

        def hammer() -> None:
            while not stop.is_set():
                store.first_time(f"delivery-{commits[0]}", "action")
                commits[0] += 1

        th = threading.Thread(target=hammer, daemon=True)
        th.start()
        failed = 0
        t0 = time.perf_counter()
        for i in range(a.rounds):
            try:
                journal_round(path, i)
            except sqlite3.OperationalError:
                failed += 1
        dt = time.perf_counter() - t0
        stop.set()
        th.join(30)
        store.close()
    print(f"journal rounds failed: {failed} of {a.rounds} "
          f"({100.0 * failed / a.rounds:.1f}%) while the other connection committed "
          f"{commits[0]} times")
    print(f"journal rounds per second: {a.rounds / dt:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
