"""One round of the journal writes a fix makes, on a fresh connection: what
tests/unit/test_journal_concurrency.py and benchmarks/journal_contention.py race against
another connection's commits."""

from __future__ import annotations

from pathlib import Path

from storage.audit import Audit
from storage.benchstore import BenchStore
from storage.journal import Journal
from storage.mutes import add_mute
from storage.swifthist import SwiftHistory


def journal_round(path: Path, i: int) -> None:
    """Open the journal (its schema on a new connection), write an audited run with a
    step, a mute, a benchmark row, Swift samples and a check run, close it."""
    j = Journal(path)
    try:
        audit = Audit(j)
        run = audit.start_run("lab", "osd-remount", "osd.1", "u", "slack", {"i": i})
        audit.record_step(run, 0, "mount", "node2", "mount", 0, "", "", 0.1, "done")
        audit.finish_run(run, "success", "ok")
        add_mute(j, "lab", "OSD_DOWN_IN", "osd.1", 1e12, "u", "maintenance")
        BenchStore(j).save({"cluster": "lab", "kind": "rados", "group_id": f"g{i}"})
        SwiftHistory(j).record("lab", 1000.0 + i, [("node1", "async", 1.0)], 60.0)
        j.record_check_run("lab", 1000.0 + i, 0.1, 0, "ok",
                           [{"code": "X", "severity": "warn", "entity": "e",
                             "message": "m"}], source="test")
    finally:
        j.close()
