"""The journal: what is new, still there and resolved between runs; safe to open from
many threads and processes at once on a fresh file."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from storage.journal import Journal


def f(code: str, entity: str) -> dict:
    return {"code": code, "severity": "warn", "entity": entity, "message": "m"}


def test_delta_and_first_seen(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    r1 = j.record_check_run("lab", 100.0, 1, 1, "warn", [f("A", "osd.1"), f("B", "pool x")])
    d1 = j.delta("lab", r1)
    assert d1.previous_run_id is None and set(d1.new) == {("A", "osd.1"), ("B", "pool x")}
    r2 = j.record_check_run("lab", 200.0, 1, 1, "warn", [f("A", "osd.1"), f("C", "osd.2")])
    d2 = j.delta("lab", r2)
    assert d2.new == (("C", "osd.2"),)
    assert d2.still == (("A", "osd.1"),)
    assert d2.resolved == (("B", "pool x"),)
    assert j.first_seen("lab", "A", "osd.1") == 100.0
    assert j.first_seen("lab", "C", "osd.2") == 200.0
    # another cluster's runs do not interfere
    j.record_check_run("other", 300.0, 1, 0, None, [])
    assert j.previous_run("lab") == r2
    assert j.db.journal_mode == "wal"


def test_many_openers_on_a_fresh_file(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            Journal(path).record_check_run("lab", 1.0, 0, 0, None, [f("A", "x")])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=opener) for _ in range(10)]
    procs = [subprocess.Popen([sys.executable, "-c",
                               "import sys; sys.path.insert(0, sys.argv[2]);"
                               "from storage.journal import Journal;"
                               "Journal(sys.argv[1]).record_check_run('lab',1.0,0,0,None,[])",
                               str(path), str(Path(__file__).resolve().parents[2])])
             for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    assert not errors
    assert len(Journal(path).runs("lab", limit=100)) == 14
