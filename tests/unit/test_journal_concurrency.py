"""The journal's writes while another connection to the same file commits.

CI caught `runbook error: OperationalError: database is locked` in the bot's Fix flow: a
retried Slack delivery wrote to the bot's own connection (BotStore) while the runbook
opened its audit tables on the journal's connection. sqlite-utils' deferred BEGIN read
the schema, the other connection committed, and the write that followed failed at once
(WAL, SQLITE_BUSY_SNAPSHOT) without waiting on the busy timeout. These tests race real
connections to a real file; they count operations, never time them.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from core.slack.store import BotStore
from storage.audit import Audit
from storage.benchstore import BenchStore
from storage.journal import Journal
from storage.mutes import add_mute, list_mutes
from tests.support.journal_round import journal_round

ROUNDS = 150  # the old code failed 1 to 26 of 60


def _hammer(store: BotStore, stop: threading.Event, seen: list[int]) -> None:
    """Commit on the bot's own connection as fast as it can (retried deliveries)."""
    i = 0
    while not stop.is_set():
        store.first_time(f"delivery-{i}", "action")
        i += 1
    seen.append(i)


def test_journal_writes_wait_for_another_connections_commits(tmp_path: Path) -> None:
    path = tmp_path / "stordoc.db"
    Journal(path)  # the file exists, in WAL
    store = BotStore(Journal(path))
    stop = threading.Event()
    seen: list[int] = []
    th = threading.Thread(target=_hammer, args=(store, stop, seen), daemon=True)
    th.start()
    errors: list[str] = []
    done = 0
    try:
        for i in range(ROUNDS):
            try:
                journal_round(path, i)
                done += 1
            except sqlite3.OperationalError as e:
                errors.append(str(e))
    finally:
        stop.set()
        th.join(30)
        store.close()
    assert not errors, f"{len(errors)} of {ROUNDS} rounds failed: {errors[:3]}"
    assert done == ROUNDS
    assert seen and seen[0] > 0  # the other connection did commit meanwhile
    j = Journal(path)
    assert len(Audit(j).runs(limit=1000, cluster="lab")) == ROUNDS
    assert len(list_mutes(j, "lab", limit=1000)) == ROUNDS
    assert j.db.table("bot_requests").count == seen[0]


def test_a_check_run_and_its_findings_are_one_transaction(tmp_path: Path) -> None:
    """A reader never sees a check run without its findings (they used to be two
    transactions: `with conn:` does not open one when isolation_level is None)."""
    path = tmp_path / "stordoc.db"
    j = Journal(path)
    other = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    seen_partial: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            rows = other.execute(
                "select r.id, r.n_findings, (select count(*) from findings f "
                "where f.run_id = r.id) from check_runs r").fetchall()
            seen_partial.extend(rid for rid, n, got in rows if n != got)

    th = threading.Thread(target=read, daemon=True)
    th.start()
    try:
        for i in range(200):
            j.record_check_run("lab", float(i), 0.1, 1, "warn",
                               [{"code": f"C{k}", "severity": "warn", "entity": "e",
                                 "message": "m"} for k in range(20)], source="test")
    finally:
        stop.set()
        th.join(30)
        other.close()
    assert not seen_partial
    assert j.db.table("findings").count == 200 * 20


def test_schema_is_created_once_per_journal_object(tmp_path: Path) -> None:
    """Opening the audit or the mutes again on the same journal issues no CREATE (each
    would take the write lock)."""
    j = Journal(tmp_path / "stordoc.db")
    Audit(j)
    BenchStore(j)
    add_mute(j, "lab", "OSD_DOWN_IN", None, 1e12, "u", "r")
    statements: list[str] = []
    j.db.conn.set_trace_callback(statements.append)
    try:
        for _ in range(5):
            Audit(j)
            BenchStore(j)
            list_mutes(j, "lab")
    finally:
        j.db.conn.set_trace_callback(None)
    assert not [s for s in statements if s.lstrip().upper().startswith(("CREATE", "BEGIN"))]
    # a new journal object on the same file still finds (and keeps) the tables
    j2 = Journal(tmp_path / "stordoc.db")
    assert len(list_mutes(j2, "lab")) == 1
