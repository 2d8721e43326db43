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
