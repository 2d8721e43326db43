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
