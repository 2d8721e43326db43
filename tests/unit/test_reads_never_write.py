"""A read never writes (issue 39.3): a check, ``maintenance list`` and a Slack ``maintenance
list`` leave an expired temporary change as it is and say it is overdue; reverting it is
its own audited step, run by ``watch`` (before each check), the bot's timer and
``stordoc maintenance sweep``. The real engine and a real SQLite journal; a fake monitor
(tests/unit/test_expiring.py) stands in for Ceph where a revert is sent (the lab test:
tests/lab/test_fill_lab.py, the ratio raise put back by ``maintenance sweep``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from checks import planned
from checks.model import Finding, Severity
from core.env import Env
from core.service import Service
from core.service.watch import loop
from core.settings import parse_settings
from core.terminal import Terminal
from runbooks.model import RunContext
from storage import expiring
from storage.audit import Audit
from storage.journal import Journal
from storage.model import ClusterSnapshot
from storage.targets import CephTarget, ClusterTarget
from stordoc.cli import main
from stordoc.commands.bot import _start_sweeper
from tests.unit.test_expiring import FakeMon, _raise_full, mon  # noqa: F401
from tests.unit.test_tui_data import healthy_snapshot


class SnapEnv(Env):
    """An Env whose collection is a captured snapshot: the real engine and journal."""

    def collect(self, target: ClusterTarget, host_facts: bool = True) -> ClusterSnapshot:
        return replace(healthy_snapshot(), taken_at=time.time())


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    p = tmp_path / "stordoc.toml"
    p.write_text(f'journal = "{tmp_path / "j.db"}"\n[clusters.lab.ceph]\nconf = "{conf}"\n'
                 "timeout = 2\n")
    return p


def _env(cfg: Path) -> SnapEnv:
    s = parse_settings({"journal": str(cfg.parent / "j.db"),
                        "clusters": {"lab": {"ceph": {"conf": str(cfg.parent / "ceph.conf"),
                                                      "timeout": 2}}}})
    return SnapEnv(s)


@pytest.fixture
def overdue(cfg: Path, mon: FakeMon) -> Iterator[int]:  # noqa: F811
    """A full ratio raised by alice for 60 s, made 120 s ago: past its deadline."""
    j = Journal(str(cfg.parent / "j.db"))
    ctx = RunContext("lab", ClusterTarget("lab", ceph=CephTarget(str(cfg.parent / "ceph.conf"))),
                     j, user="alice")
    _raise_full(ctx)
    [ch] = expiring.open_changes(j, "lab")
    with j.db.conn:
        j.db.execute(f"update {expiring.TABLE} set deadline = ? where id = ?",
                     (time.time() - 60, ch.id))
    mon.calls.clear()
    yield ch.id
    j.close()


def _still_held(cfg: Path, change_id: int) -> bool:
    j = Journal(str(cfg.parent / "j.db"))
    try:
        return any(c.id == change_id for c in expiring.open_changes(j, "lab"))
    finally:
        j.close()


def _reverts(cfg: Path) -> list[str]:
    j = Journal(str(cfg.parent / "j.db"))
    try:
        return [r.outcome for r in Audit(j).runs(cluster="lab") if r.runbook == "expiry-revert"]
    finally:
        j.close()


def test_a_check_leaves_an_expired_change_and_sends_nothing(cfg: Path, mon: FakeMon,  # noqa: F811
                                                            overdue: int) -> None:
    env = _env(cfg)
    try:
        Service(env).check("lab", "cli")
    finally:
        env.close()
    assert mon.calls == []  # nothing sent to the cluster
    assert _still_held(cfg, overdue) and _reverts(cfg) == []


def test_maintenance_list_says_overdue_and_sweep_reverts_it_audited(
        cfg: Path, mon: FakeMon, overdue: int) -> None:  # noqa: F811
    term = Terminal.capture(width=200)
    assert main(["--config", str(cfg), "maintenance", "list"], term) == 0
    out = term.stdout.getvalue()
    assert f"#{overdue}" in out and "OVERDUE" in out and "maintenance sweep" in out, out
    assert mon.calls == [] and _still_held(cfg, overdue)
    term = Terminal.capture(width=200)
    assert main(["--config", str(cfg), "maintenance", "sweep"], term) == 0
    out = term.stdout.getvalue()
    assert "expired and reverted" in out, out
    assert [c[0] for c in mon.calls] == ["osd set-full-ratio"]
    assert not _still_held(cfg, overdue) and _reverts(cfg) == ["success"]
    term = Terminal.capture(width=200)  # once, not twice
    assert main(["--config", str(cfg), "maintenance", "sweep"], term) == 0
    assert "nothing past its deadline on lab" in term.stdout.getvalue()
    assert len(mon.calls) == 1


def test_sweep_of_an_unknown_cluster_is_one_line(cfg: Path) -> None:
    term = Terminal.capture(width=200)
    assert main(["--config", str(cfg), "maintenance", "sweep", "--cluster", "nosuch"],
                term) == 64
    assert "Traceback" not in term.stderr.getvalue()


def test_watch_reverts_before_its_check(cfg: Path, mon: FakeMon, overdue: int) -> None:  # noqa: F811
    env = _env(cfg)
    lines: list[str] = []
    try:
        assert loop(Service(env), "lab", 60.0, threading.Event(), lines.append, count=1) == 1
    finally:
        env.close()
    assert any("EXPIRED" in x and "reverted" in x for x in lines), lines
    assert not _still_held(cfg, overdue) and _reverts(cfg) == ["success"]


def test_the_bots_timer_reverts_at_the_deadline(cfg: Path, mon: FakeMon,  # noqa: F811
                                               overdue: int) -> None:
    env = _env(cfg)
    stop = threading.Event()
    try:
        t = _start_sweeper(env, ["lab"], stop, logging.getLogger("test"), poll_s=0.2)
        assert t is not None
        deadline = time.monotonic() + 20
        while _still_held(cfg, overdue) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        env.close()
    assert not _still_held(cfg, overdue) and _reverts(cfg) == ["success"]
    assert [c[0] for c in mon.calls] == ["osd set-full-ratio"]


def test_a_finding_an_overdue_window_explains_says_overdue() -> None:
    snap = healthy_snapshot()
    from storage.model import HeldChange

    ch = HeldChange(id=7, cluster="octopus", kind="osd-flag", key="noout",
                    entities=("osd.1",), before=None, after=None, deadline=2000.0,
                    by="alice", created_at=1000.0, run_id=None, state="held",
                    reason="maintenance of host node2")
    f = Finding("OSDMAP_FLAGS", Severity.WARN, "osd.1 flag noout", "noout on osd.1",
                {"osd": 1, "flag": "noout"})
    during = planned.apply([f], replace(snap, changes=(ch,)), now=1500.0)
    assert [x.severity for x in during] == [Severity.INFO]  # planned: on until 00:33
    [late] = planned.apply([f], replace(snap, changes=(ch,)), now=2600.0)
    assert late.severity is Severity.WARN and "overdue: change #7" in late.message
    assert "10m" in late.message and late.evidence["overdue"]["by"] == "alice"
