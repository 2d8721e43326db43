"""The audit and the target locks, on a real SQLite journal file."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from storage.audit import REDACTED, Audit, LockHeld, redact, redact_obj
from storage.journal import Journal


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    j = Journal(tmp_path / "journal.db")
    yield j
    j.close()


def test_lock_is_exclusive_and_released(journal: Journal) -> None:
    a = Audit(journal)
    lid = a.acquire("lab", "osd.1", "alice", "osd-remount osd.1")
    with pytest.raises(LockHeld) as ei:
        a.acquire("lab", "osd.1", "bob", "osd-start osd.1")
    e = ei.value
    assert (e.holder, e.purpose, e.stale) == ("alice", "osd-remount osd.1", False)
    assert e.pid > 0 and e.host and e.since > 0
    assert "locked by alice" in str(e)
    # another target or another cluster is free
    a.release(a.acquire("lab", "osd.2", "bob", "x"))
    a.release(a.acquire("prod", "osd.1", "bob", "x"))
    a.release(lid)
    a.release(a.acquire("lab", "osd.1", "bob", "osd-start osd.1"))
    assert a.locks() == []


def test_only_one_of_many_concurrent_acquirers_wins(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    # one connection each, like separate processes (the bot, the TUI, the CLI)
    journals = [Journal(path) for _ in range(8)]
    audits = [Audit(j) for j in journals]
    won: list[int] = []
    lost: list[str] = []
    start = threading.Barrier(8, timeout=30)

    def worker(i: int) -> None:
        start.wait()
        try:
            won.append(audits[i].acquire("lab", "pool rbd", f"user{i}", "pool-pg-num rbd"))
        except LockHeld as e:
            lost.append(e.holder)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for j in journals:
        j.close()
    assert len(won) == 1 and len(lost) == 7
    assert len(set(lost)) == 1  # everybody saw the same winner


def test_stale_lock_of_dead_process_is_detected_and_taken_over(journal: Journal) -> None:
    """Issue #37.14: a lock whose holder died on this host is stale: the next acquire
    takes it over and says so (``takeovers``); ``clear`` still removes any lock."""
    a = Audit(journal)
    p = subprocess.Popen(["true"])
    p.wait()
    a.acquire("lab", "osd.1", "carol", "osd-remount osd.1", pid=p.pid)
    live = a.acquire("lab", "osd.2", "dave", "osd-start osd.2")
    stale = a.stale_locks("lab")
    assert [(lk.target, lk.owner, lk.pid, lk.gone) for lk in stale] == [
        ("osd.1", "carol", p.pid, True)]
    b = Audit(journal)  # the next process
    mine = b.acquire("lab", "osd.1", "erin", "x")
    assert [(lk.target, lk.owner, lk.pid) for lk in b.takeovers] == [("osd.1", "carol", p.pid)]
    assert "took over the lock on osd.1: its holder carol (osd-remount osd.1), pid " \
        f"{p.pid} on {b.hostname} since" in b.takeovers[0].line()
    assert {(lk.target, lk.owner) for lk in a.locks("lab")} == {("osd.1", "erin"),
                                                                 ("osd.2", "dave")}
    b.release(mine)
    a.acquire("lab", "osd.1", "carol", "osd-remount osd.1", pid=p.pid)
    assert a.clear("lab", "osd.1") is True
    assert a.clear("lab", "osd.1") is False
    assert [lk.target for lk in a.locks("lab")] == ["osd.2"]
    a.release(live)


def test_a_lock_of_a_live_process_a_reused_pid_or_another_host(journal: Journal) -> None:
    """A live holder refuses; the same pid now another process (its start time differs)
    is gone and taken over; a holder on another host refuses whatever its pid."""
    a = Audit(journal)
    with subprocess.Popen(["sleep", "60"]) as p:
        try:
            a.acquire("lab", "osd.1", "carol", "osd-remount osd.1", pid=p.pid)
            with pytest.raises(LockHeld) as ei:
                Audit(journal).acquire("lab", "osd.1", "erin", "x")
            assert not ei.value.stale and "locked by carol" in str(ei.value)
            # the pid is alive, but not the process that took the lock (reused pid)
            journal.db.conn.execute("update runbook_locks set pid_start = 'another-boot:1' "
                                    "where target = 'osd.1'")
            b = Audit(journal)
            b.acquire("lab", "osd.1", "erin", "x")
            assert [lk.owner for lk in b.takeovers] == ["carol"]
        finally:
            p.kill()
    gone = subprocess.Popen(["true"])
    gone.wait()
    a.acquire("lab", "osd.3", "frank", "y", pid=gone.pid)
    journal.db.conn.execute("update runbook_locks set host = 'elsewhere' "
                            "where target = 'osd.3'")
    c = Audit(journal)
    with pytest.raises(LockHeld) as ei:
        c.acquire("lab", "osd.3", "erin", "x")
    assert "pid" in str(ei.value) and "on elsewhere" in str(ei.value)
    assert c.takeovers == [] and not ei.value.stale


def test_old_lock_is_stale_by_age(journal: Journal) -> None:
    a = Audit(journal, stale_after_s=-1)
    a.acquire("lab", "ring object", "frank", "swift-ring-rebalance object")
    assert [lk.target for lk in a.stale_locks()] == ["ring object"]


def test_runs_and_steps_are_recorded_with_secrets_redacted(journal: Journal) -> None:
    a = Audit(journal, secrets=("s3cr3t-swift-key",))
    rid = a.start_run("lab", "osd-remount", "osd.1", "alice", "cli",
                      {"steps": [{"command": "mount /dev/loop3 /x"}],
                       "options": {"key": "AQBabcdefabcdefabcdefabcdefabcdefabcdef==",
                                   "password": "hunter2"}},
                      confirmed_by="bob")
    a.record_step(rid, 1, "start", "node2", "swift --key s3cr3t-swift-key stat", 0,
                  "[osd.1]\n\tkey = AQBabcdefabcdefabcdefabcdefabcdefabcdef==\n",
                  "X-Auth-Token: AUTH_tk0123456789abcdef0123456789abcdef", 1.5, "done")
    a.finish_run(rid, "success", "done with token=abc123", {"verified": True})
    run = a.run(rid)
    assert run is not None
    assert (run.runbook, run.target, run.user, run.confirmed_by,
            run.outcome) == ("osd-remount", "osd.1", "alice", "bob", "success")
    assert run.plan["options"] == {"key": REDACTED, "password": REDACTED}
    assert run.plan["steps"][0]["command"] == "mount /dev/loop3 /x"
    assert run.verify == {"verified": True}
    assert "abc123" not in run.message
    (step,) = a.steps(rid)
    assert "s3cr3t" not in step.command and step.command.startswith("swift --key ")
    assert "AQBabc" not in step.stdout and "key = ***" in step.stdout
    assert "AUTH_tk" not in step.stderr
    assert (step.idx, step.host, step.rc, step.status) == (1, "node2", 0, "done")
    assert [r.id for r in a.runs(cluster="lab")] == [rid]
    assert a.runs(cluster="prod") == []
    # nothing secret anywhere in the file
    journal.db.conn.execute("pragma wal_checkpoint(full)")
    raw = Path(journal.path).read_bytes()
    for s in (b"s3cr3t-swift-key", b"hunter2", b"AQBabcdef", b"AUTH_tk0123"):
        assert s not in raw


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "mount -t xfs -o noatime /dev/loop3 /var/lib/ceph/osd/ceph-1"
    assert redact(text) == text
    assert redact_obj({"pool": "rbd", "pg_num": 64}) == {"pool": "rbd", "pg_num": 64}
    assert redact("password: x1 and secret=y2") == "password: *** and secret=***"
