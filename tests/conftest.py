"""Shared fixtures. ``lab`` is the real lab cluster, started once per test session.

Environment: STORDOC_LAB_DIR / STORDOC_LAB_PORT_BASE choose where (so several labs can run
side by side); STORDOC_LAB_RELEASE which Ceph/Swift release it runs (``pacific``, the
host's packages, or ``reef`` from a Debian 13 root filesystem; lab/rootfs.py);
STORDOC_LAB_KEEP=1 reuses a running lab of that release and leaves it running afterwards.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab import Lab  # noqa: E402

LAB_DIR = os.environ.get("STORDOC_LAB_DIR", "/var/tmp/stordoc-lab-test")
LAB_PORT_BASE = int(os.environ.get("STORDOC_LAB_PORT_BASE", "17000"))
KEEP = os.environ.get("STORDOC_LAB_KEEP") == "1"
LAB_RELEASE = os.environ.get("STORDOC_LAB_RELEASE", "pacific")
FIXTURES = ROOT / "tests" / "fixtures"


_LAB_UP: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/lab/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.lab)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Each lab's start-up seconds beside pytest's durations (scripts/test prints both)."""
    for line in _LAB_UP:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """The real lab: 1 mon, 1 mgr, 4 OSDs, Swift, sshd. Torn down even on failure."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root (loop devices, mounts)")
    lab = Lab(LAB_DIR, LAB_PORT_BASE, release=LAB_RELEASE)
    if not (KEEP and lab.state_path.exists() and lab.read_state().get("release", "pacific")
            == LAB_RELEASE and lab.running()):
        took = lab.up()
        st = lab.read_state()
        _LAB_UP.append(f"lab {lab.release} up in {took:.1f} s"
                       + (f" (root filesystem {st['rootfs_seconds']} s of it)"
                          if st.get("rootfs_seconds") is not None else "")
                       + f" at {lab.base}, ports {lab.ports.base}..")
    try:
        yield lab
    finally:
        if not KEEP:
            lab.down(quiet=True)
