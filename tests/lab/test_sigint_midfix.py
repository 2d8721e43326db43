"""Ctrl-C in the middle of a real ``stordoc fix`` (issue 13.3).

The fix runs in its own process group, as in a terminal, and the whole group gets SIGINT
as soon as the audit shows the mount step done (``noout`` is set then). The run must stop
before its next step, still run its cleanup step (``ceph osd unset noout``), release its
locks, audit ``cancelled`` and exit 130; nothing is left for a later reconcile to undo.
(``test_crash_midfix.py`` is the SIGKILL case: there nothing can run, and the next
command reconciles.)"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from core.exitstatus import ExitStatus
from lab import Lab
from tests.support.cli import ROOT, cli, cli_argv
from tests.support.labtools import (
    cancelled_and_undone,
    osd_flags,
    remount_run_at_mount,
)
from tests.support.poll import wait_until

pytestmark = pytest.mark.timeout(600)




def test_sigint_mid_fix_stops_cleans_up_and_audits_cancelled(
        lab: Lab, osd1_unmounted: None, cfg: Path, tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    assert "noout" not in osd_flags(lab)
    proc = subprocess.Popen(cli_argv(cfg, "fix", "osd-remount", "osd.1", "--yes", "--follow",
                                     "0"), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        def mounted() -> int | None:
            assert proc.poll() is None, "the fix ended before its mount step was seen"
            return remount_run_at_mount(journal, done=True)

        run_id = wait_until(mounted, 120, "the mount step to complete", 0.05)
        assert run_id is not None  # wait_until returns a truthy value
        assert "noout" in osd_flags(lab)  # set by the run, and not undone yet
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    try:
        assert proc.returncode == ExitStatus.INTERRUPTED, out + err
        assert "Traceback" not in out + err
        assert "cancelling after the current step" in out, out
        assert "cancelled:" in out, out
        assert "noout" not in osd_flags(lab)  # the cleanup step ran
        _, steps = cancelled_and_undone(journal, run_id)
        unset = [st for t, st in steps if "noout" in t and t.startswith("clear")]
        assert unset and unset[-1] == "done", steps
        # the next command finds nothing interrupted: no leftover to offer
        p = cli(cfg, "locks", timeout=120, columns=None)
        assert p.returncode == 0 and "interrupted" not in p.stdout, p.stdout + p.stderr
    finally:
        lab.ceph("osd", "unset", "noout", check=False)
