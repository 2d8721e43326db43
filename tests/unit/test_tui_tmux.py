"""The real `stordoc tui` in a real terminal (tmux): keys in with send-keys, the screen out
with capture-pane, on the saved snapshot of the seed fault (osd.1's data dir unmounted and
the OSD out, tests/fixtures/snapshots/): `stordoc tui --from DIR`, no lab needed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.poll import wait_until

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30)


def pane(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session).stdout


def wait_pane(session: str, cond: Callable[[str], bool], timeout: float, what: str) -> str:
    seen = [""]

    def shown() -> str:
        seen[0] = pane(session)
        return seen[0] if cond(seen[0]) else ""

    return wait_until(shown, timeout, lambda: f"{what}; screen was:\n{seen[0]}", 0.2)


@pytest.fixture
def size() -> tuple[int, int]:
    return (160, 45)


SEED = ROOT / "tests" / "fixtures" / "snapshots" / "pacific" / "osd-unmounted-out"


@pytest.fixture
def session(size: tuple[int, int]) -> Iterator[str]:
    name = f"stordoc-tui-{uuid.uuid4().hex[:8]}"
    # COLUMNS/LINES from the test runner's environment would pin Textual to that size;
    # no config at all: a snapshot needs none
    cmd = ["env", "-u", "COLUMNS", "-u", "LINES", "STORDOC_CONFIG=/nonexistent.toml",
           sys.executable, "-m", "stordoc", "tui", "--from", str(SEED)]
    w, h = str(size[0]), str(size[1])
    r = tmux("new-session", "-d", "-s", name, "-x", w, "-y", h, "-c", str(ROOT),
             "-e", "TERM=xterm-256color", *cmd)
    assert r.returncode == 0, r.stderr
    tmux("resize-window", "-t", name, "-x", w, "-y", h)  # a running server may
    try:  # have given the new window another size
        yield name
    finally:
        tmux("kill-session", "-t", name)  # our own session, by its unique name


def test_real_tui_in_tmux_shows_the_unmounted_osd(session: str) -> None:
    wait_pane(session, lambda t: "Ceph health" in t and "OSDs" in t, 120, "the overview")
    tmux("send-keys", "-t", session, "d")
    text = wait_pane(session, lambda t: "CRUSH tree" in t and "osd.1" in t, 30,
                     "the OSD screen")
    line = next(ln for ln in text.splitlines() if " osd.1 " in ln)
    assert "down" in line and "NOT MOUNTED" in line, line
    assert "stopped" in line, line
    osd0 = next(ln for ln in text.splitlines() if " osd.0 " in ln)
    assert " up " in osd0 and "mounted /dev/loop" in osd0, osd0
    # the filter: only down OSDs, then the help, then quit
    tmux("send-keys", "-t", session, "u")
    text = wait_pane(session, lambda t: "state: down" in t, 30, "the state filter")
    assert " osd.0 " not in text and " osd.1 " in text
    tmux("send-keys", "-t", session, "f")
    text = wait_pane(session, lambda t: "OSD_DATA_UNMOUNTED" in t, 30, "the findings")
    assert "WARN" in text  # down and out: one disk fewer, no data at risk
    tmux("send-keys", "-t", session, "q")
    wait_until(lambda: tmux("has-session", "-t", session).returncode != 0, 30,
               "stordoc tui to quit on q", 0.2)


@pytest.mark.parametrize("size", [(80, 24)])
def test_cause_is_the_first_line_of_the_overview_at_80x24(session: str) -> None:
    """The seed fault on on-call's terminal: the cause leads the overview, above Ceph's
    own health, with its one next step in the incidents table."""
    text = wait_pane(session, lambda t: "OSD_DATA_UNMOUNTED osd.1" in t
                     and "osd-remount osd.1" in t, 120, "the cause and its next step")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = next(i for i, ln in enumerate(lines) if "lab:" in ln and (
        "WARN" in ln or "CRIT" in ln))
    assert "OSD_DATA_UNMOUNTED osd.1" in lines[first], text
    assert first <= 2, text  # under the title and the status line only
    ceph = next(i for i, ln in enumerate(lines) if "Ceph health" in ln)
    assert ceph > first
    assert "osd-remount osd.1" in text
