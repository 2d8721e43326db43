"""Runbook locks through the service, on a real journal (the CLI's `stordoc locks` and the
bot's start-up reconciliation call these). A killed run on the real lab, cleared and
undone through the CLI: tests/lab/test_crash_midfix.py."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.env import Env
from core.service import Service
from core.service.errors import ActionRefused, InvalidAction
from core.settings import parse_settings
from core.settings_model import SettingsError
from storage.audit import Audit


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    e = Env(parse_settings({"journal": str(tmp_path / "j.db"),
                            "clusters": {"lab": {"ceph": {"conf": str(conf), "timeout": 2}}}}))
    yield e
    e.close()


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_lock_is_cleared_by_the_name_a_person_knows(env: Env) -> None:
    audit = Audit(env.journal)
    live = os.getpid()
    dead = _dead_pid()
    audit.acquire("lab", "osd.2", "alice", "osd-remount", pid=live)
    audit.acquire("lab", "pool rbd", "bob", "pool-pg-num", pid=dead)
    audit.acquire("lab", "flag noout", "carol", "osd-remount", pid=dead)
    locks = Service(env).locks
    assert [lk.target for lk in locks.locks("lab")] == ["osd.2", "pool rbd", "flag noout"]
    assert locks.lock_named("lab", "osd.02").target == "osd.2"
    assert locks.lock_named("lab", " rbd ").target == "pool rbd"
    assert locks.lock_named("lab", "noout").target == "flag noout"
    # refused, and every lock is still there: a live holder, unknown or look-alike names
    with pytest.raises(ActionRefused, match="held by alice.*still running"):
        locks.clear("lab", "osd.2")
    for bad in ("osd.9", "оsd.2", "osd.2\u200b", "", "pool rbd2", "osd.1e20"):
        with pytest.raises(InvalidAction, match="no lock on"):
            locks.clear("lab", bad)
    assert len(locks.locks("lab")) == 3
    # a stale one is cleared; a live one only when forced
    assert locks.clear("lab", "rbd").target == "pool rbd"
    assert locks.clear("lab", "osd.2", force=True).owner == "alice"
    assert [lk.target for lk in locks.locks("lab")] == ["flag noout"]
    with pytest.raises(SettingsError, match="unknown cluster 'nosuch'"):
        locks.locks("nosuch")


def test_an_interrupted_run_is_marked_and_its_leftovers_shown_not_undone(env: Env) -> None:
    audit = Audit(env.journal)
    run = audit.start_run("lab", "osd-remount", "osd.1", "alice", "cli",
                          {"steps": [{"index": 1, "title": "set noout"},
                                     {"index": 2, "title": "mount"}]})
    audit.record_step(run, 1, "set noout", "ceph", "ceph osd set noout", 0, "", "", 0.1,
                      "done")
    audit.own(run, "lab", 1, "flag noout", "osd unset", {"key": "noout"},
              "ceph osd unset noout")
    dead = _dead_pid()
    env.journal.db.execute("update runbook_runs set pid = ? where id = ?", [dead, run])
    audit.acquire("lab", "osd.1", "alice", "osd-remount", pid=dead)
    locks = Service(env).locks
    left = locks.interrupted("lab", source="cli")
    assert [(x.run_id, x.what, x.undo_command) for x in left] == \
        [(run, "flag noout", "ceph osd unset noout")]
    r = audit.run(run)
    assert r is not None and r.outcome == "interrupted"
    assert "Done: 1. set noout" in r.message and "Not done: 2. mount" in r.message
    assert locks.locks("lab") == []  # the dead run's lock went with it
    # shown again until undone: reconciling twice changes nothing more
    assert [x.run_id for x in locks.interrupted("lab", source="cli")] == [run]
    with pytest.raises(ActionRefused, match="not confirmed"):
        locks.undo("lab", left, source="cli", confirmed_by="  ")


def test_a_step_under_way_when_the_process_died_is_not_called_not_done(env: Env) -> None:
    """SIGKILL during `ceph osd set noout`: the flag may well be set. The audit once said
    "Done: nothing. Not done: 1. set noout"; now the step is "under way, outcome unknown"
    (its row ``interrupted``) and what it owned is offered for undoing."""
    audit = Audit(env.journal)
    run = audit.start_run("lab", "osd-remount", "osd.1", "alice", "cli",
                          {"steps": [{"index": 1, "title": "set noout"},
                                     {"index": 2, "title": "mount"},
                                     {"index": 3, "title": "clear noout"}]})
    audit.own(run, "lab", 1, "flag noout", "osd unset", {"key": "noout"},
              "ceph osd unset noout")
    audit.begin_step(run, 1, "set noout", "ceph", "ceph osd set noout")  # then killed
    env.journal.db.execute("update runbook_runs set pid = ? where id = ?", [_dead_pid(), run])
    left = Service(env).locks.interrupted("lab", source="cli")
    assert [x.undo_command for x in left] == ["ceph osd unset noout"]
    r = audit.run(run)
    assert r is not None and r.outcome == "interrupted"
    assert r.message.endswith("Done: nothing. Under way when it ended (outcome unknown): "
                              "1. set noout. Not done: 2. mount, 3. clear noout"), r.message
    assert [(s.idx, s.status) for s in audit.steps(run)] == [(1, "interrupted")]
