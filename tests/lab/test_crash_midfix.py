"""Issue 10.4 on the real lab: `stordoc fix` SIGKILLed mid-run.

It used to leave `noout` set and the run "running" forever, and the retry said "noout is
already set… left as it is". Now the run records what it owns before changing it; the
next `locks --clear` (or fix) marks the dead run interrupted and, after a yes, undoes
exactly what it owned, never a flag an operator set before."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from lab import Lab
from storage.audit import Audit
from storage.journal import Journal
from tests.conftest import ROOT
from tests.support.cli import cli, cli_argv
from tests.support.labtools import osd_flags, remount_run_at_mount
from tests.support.poll import wait_until

pytestmark = pytest.mark.timeout(600)


def _kill_after_mount(cfg: Path, journal: Path) -> int:
    """Start the fix, SIGKILL it as soon as the audit shows the mount step done."""
    proc = subprocess.Popen(cli_argv(cfg, "fix", "osd-remount", "osd.1", "--yes"), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    try:
        def mounted() -> int | None:
            assert proc.poll() is None, "the fix ended before the mount step was seen"
            return remount_run_at_mount(journal, done=True)

        run_id = wait_until(mounted, 120, "the mount step to complete", 0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        return run_id
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


@pytest.fixture
def cfg_journal(cfg: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The test's config (conftest's ``cfg``) and the journal it names."""
    return cfg, tmp_path / "journal.db"


def test_sigkill_mid_fix_then_reconcile_undoes_own_noout(
        lab: Lab, osd1_unmounted: None, cfg_journal: tuple[Path, Path]) -> None:
    conf, journal = cfg_journal
    assert "noout" not in osd_flags(lab)
    run_id = _kill_after_mount(conf, journal)
    try:
        assert "noout" in osd_flags(lab)  # the dead run's flag, still set
        # without a yes and no terminal: shown, nothing undone
        p = cli(conf, "locks", "--clear", "osd.1", timeout=180)
        assert "interrupted" in p.stdout and "ceph osd unset noout" in p.stdout, p.stdout
        assert p.returncode == 64 and "not confirmed" in p.stderr
        assert "noout" in osd_flags(lab)
        p = cli(conf, "locks", "--yes", timeout=180)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "undone: ceph osd unset noout" in p.stdout, p.stdout
        assert "noout" not in osd_flags(lab)
        j = Journal(str(journal))
        try:
            a = Audit(j)
            run = a.run(run_id)
            assert run is not None and run.outcome == "interrupted"
            assert "Done:" in run.message and "Not done:" in run.message
            assert not a.locks("lab")  # the dead run's locks are gone
            undo = [r for r in a.runs(cluster="lab") if r.runbook == "undo-interrupted"]
            assert len(undo) == 1 and undo[0].outcome == "success"
            assert not a.leftovers("lab")
        finally:
            j.close()
    finally:
        lab.ceph("osd", "unset", "noout", check=False)


def test_operator_noout_is_never_undone(lab: Lab, osd1_unmounted: None,
                                        cfg_journal: tuple[Path, Path]) -> None:
    conf, journal = cfg_journal
    lab.ceph("osd", "set", "noout")
    try:
        run_id = _kill_after_mount(conf, journal)
        p = cli(conf, "locks", "--yes", timeout=180)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "undone" not in p.stdout
        assert "noout" in osd_flags(lab)  # the operator's flag stays
        j = Journal(str(journal))
        try:
            run = Audit(j).run(run_id)
            assert run is not None and run.outcome == "interrupted"
        finally:
            j.close()
    finally:
        lab.ceph("osd", "unset", "noout", check=False)
