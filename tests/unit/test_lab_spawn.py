"""A lab daemon whose program is missing (rsync, memcached not installed): one LabError
that names the program and scripts/setup, no traceback, nothing recorded as started."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import Lab, LabError


def test_missing_program_is_a_lab_error_naming_setup(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", 29000, "xfs")
    lab.log_dir.mkdir(parents=True)
    lab.pids.mkdir(parents=True)
    with pytest.raises(LabError, match=r"stordoc-no-such-rsync not found: install the lab "
                                       r"packages \(scripts/setup\)"):
        lab.procs.spawn("rsyncd", ["/nonexistent/stordoc-no-such-rsync", "--daemon"], "start rsyncd")
    assert lab.pid("rsyncd") is None


def test_recreating_with_fewer_osds_still_stops_the_old_layouts_osds(tmp_path: Path) -> None:
    """A mixed lab (osd.3 raw) recreated as xfs (3 OSDs): down() goes by the pid files it
    finds, not only by the new layout, so osd.3's process does not outlive its lab (it
    kept its ports and broke the next lab's sshd)."""
    import subprocess
    import sys

    base = tmp_path / "lab"
    lab = Lab(base, 29000, "mixed")
    lab.run_dir.mkdir(parents=True)
    # a real process standing in for ceph-osd: its command line names the lab's base
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                          str(lab.conf)])
    try:
        (lab.run_dir / "ceph-osd.3.pid").write_text(f"{p.pid}\n")
        again = Lab(base, 29000, "xfs")  # what `lab up --recreate --osd-layout xfs` makes
        assert "osd.3" in again.known_daemons() and again.n_osds == 3
        assert "osd.3" in again.down(quiet=True)["stopped"]
        assert p.wait(timeout=30) is not None
    finally:
        if p.poll() is None:
            p.kill()


def _loop(lab: Lab, tmp_path: Path) -> tuple[int, int]:
    """A supervisor as osd-restart-loop spawns it, its child a stand-in for ceph-osd whose
    command line names the lab's base; returns (supervisor pid, child pid)."""
    import time

    lab.log_dir.mkdir(parents=True)
    lab.pids.mkdir(parents=True)
    child_pid = tmp_path / "child.pid"
    script = (f'while true; do sleep 300 & echo $! > {child_pid}; wait; done')
    sup = lab.procs.spawn("osd-1-loop", ["sh", "-c", script, str(lab.base)], "break")
    for _ in range(100):
        if child_pid.exists() and child_pid.read_text().strip():
            break
        time.sleep(0.05)
    return sup, int(child_pid.read_text())


def _end_group(pgid: int) -> None:
    """The test's own process group, ended whatever the assertions said."""
    import os
    import signal

    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_a_restart_loop_is_stopped_with_the_daemon_it_started(tmp_path: Path) -> None:
    """Heal stopped the supervisor alone; the ceph-osd it had just started kept the OSD's
    pid-file lock and the next start failed (Reef CI: "failed to lock pidfile")."""
    from lab.procs import group_members
    from storage.procs import pid_alive

    lab = Lab(tmp_path / "lab", 29000, "xfs")
    sup, child = _loop(lab, tmp_path)
    try:
        assert set(group_members(sup)) >= {sup, child}
        assert lab.procs.stop_group("osd-1-loop")
        assert not pid_alive(sup) and not pid_alive(child)
        assert not group_members(sup)
        assert lab.pid("osd-1-loop") is None
        assert not lab.procs.stop_group("osd-1-loop")  # a second stop: nothing running
    finally:
        _end_group(sup)


def test_down_stops_a_restart_loop_left_by_a_break(tmp_path: Path) -> None:
    """A break not healed: down() stops the loop and its child before anything else."""
    from storage.procs import pid_alive

    lab = Lab(tmp_path / "lab", 29000, "xfs")
    sup, child = _loop(lab, tmp_path)
    try:
        assert lab.known_daemons()[0] == "osd-1-loop"
        assert "osd-1-loop" in lab.down(quiet=True)["stopped"]
        assert not pid_alive(sup) and not pid_alive(child)
    finally:
        _end_group(sup)


def test_down_stops_the_slow_ops_load_left_by_a_failed_break(tmp_path: Path) -> None:
    """Reef CI: osd-slow-ops' break timed out and its `rados bench` outlived the lab."""
    import subprocess
    import sys

    lab = Lab(tmp_path / "lab", 29000, "xfs")
    lab.pids.mkdir(parents=True)
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(lab.base)])
    try:
        (lab.pids / "slow-load.pid").write_text(f"{p.pid}\n")
        assert lab.known_daemons()[0] == "slow-load"
        assert "slow-load" in lab.down(quiet=True)["stopped"]
        assert p.wait(timeout=30) is not None
    finally:
        if p.poll() is None:
            p.kill()
