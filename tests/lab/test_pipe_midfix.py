"""A real ``stordoc fix`` whose stdout goes away mid-run (issue 27.4).

``stordoc fix ... | tee log`` then Ctrl-C: the whole pipeline gets SIGINT, tee exits,
stordoc's stdout is a closed pipe. rich answered the first line printed there with
``SystemExit(1)``, the process ended mid-run, ``noout`` stayed set and the audit said
"Done: nothing. Not done: 1. set noout". A dropped SSH session is the same with SIGHUP
and a terminal that answers EIO. Here the fix runs in its own session; as soon as the
audit shows its mount step under way (``noout`` is set then), the reader goes (the pipe's
read end is closed, or the pseudo-terminal's master) and the session gets the signal.
The run must stop before its next step, clear ``noout``, release its locks, audit each
step's outcome and exit 130; a second fix then runs on the same OSD.
(test_sigint_midfix.py: SIGINT with stdout read; test_crash_midfix.py: SIGKILL.)"""

from __future__ import annotations

import os
import pty
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

pytestmark = [pytest.mark.timeout(600), pytest.mark.on_reef]




@pytest.mark.parametrize("how", ["ctrl-c-in-a-pipeline", "ssh-session-dropped"])
def test_fix_whose_reader_goes_away_cleans_up_and_audits_what_it_did(
        lab: Lab, osd1_unmounted: None, cfg: Path, tmp_path: Path, how: str) -> None:
    journal = tmp_path / "journal.db"
    assert "noout" not in osd_flags(lab)
    argv = cli_argv(cfg, "fix", "osd-remount", "osd.1", "--yes", "--follow", "0")
    err_path = tmp_path / "stderr.txt"
    if how == "ctrl-c-in-a-pipeline":
        with open(err_path, "wb") as err:
            proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=err,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        reader = proc.stdout
        assert reader is not None
        os.set_blocking(reader.fileno(), False)  # read as tee does, never blocking here

        def drain() -> None:
            try:
                reader.read()
            except (BlockingIOError, TypeError):
                pass

        def reader_goes() -> None:  # Ctrl-C: tee exits first
            reader.close()
        sig = signal.SIGINT
    else:
        master, slave = pty.openpty()
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=slave, stderr=slave, stdin=slave,
                                start_new_session=True)
        os.close(slave)
        os.set_blocking(master, False)

        def drain() -> None:
            try:
                os.read(master, 65536)
            except (BlockingIOError, OSError):
                pass

        def reader_goes() -> None:  # the SSH connection drops: the terminal hangs up
            os.close(master)
        sig = signal.SIGHUP
    try:
        def started() -> int | None:
            assert proc.poll() is None, "the fix ended before its mount step"
            drain()
            return remount_run_at_mount(journal, done=False)

        run_id = wait_until(started, 120, "the mount step to start", 0.05)
        assert run_id is not None  # wait_until returns a truthy value
        reader_goes()
        os.killpg(proc.pid, sig)
        proc.wait(180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    try:
        err_text = err_path.read_text() if err_path.exists() else ""
        assert proc.returncode == ExitStatus.INTERRUPTED, err_text
        assert "Traceback" not in err_text and "BrokenPipe" not in err_text, err_text
        if how == "ctrl-c-in-a-pipeline":  # what the run says next went to stderr
            assert "cancelling after the current step" in err_text, err_text
            assert f"audit: stordoc audit --run {run_id}" in err_text, err_text
        assert "noout" not in osd_flags(lab)  # the cleanup step ran
        message, steps_done = cancelled_and_undone(journal, run_id)
        steps = dict(steps_done)
        set_noout = next(t for t in steps if "noout" in t and not t.startswith("clear"))
        assert steps[set_noout] == "done" and steps["clear noout"] == "done", steps
        assert "running" not in steps.values(), steps
        assert f"Done: 1. {set_noout}" in message, message
        assert "clear noout" in message.split("Not done:")[0], message
        # the cancel landed during the mount (an SSH round trip): osd.1 is mounted and
        # down; a second fix on the same OSD takes the same locks and runs to the end
        assert lab.osd_up(1) is False
        p = cli(cfg, "fix", "osd-start", "osd.1", "--yes", "--follow", "0", timeout=300,
                columns=None)
        assert p.returncode == 0, p.stdout + p.stderr
    finally:
        lab.ceph("osd", "unset", "noout", check=False)
