"""SVG snapshots of every screen and dialog at 80x24 (on-call's laptop terminal), and of
the overview of every saved lab scenario of one release at that size.

Same frozen setup as test_tui_snapshots.py (fixed clock, no auto-refresh, captured data).
The plan and confirmation use test_tui_fit's FixBackend (a real osd-remount plan).
Update after an intended change with
``pytest --snapshot-update tests/unit/test_tui_snapshots_80x24.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_replay import PAIRS, RELEASES, replay
from tests.unit.test_tui_fit import fix_backend
from tests.unit.test_tui_snapshots import _app, _ready, pressing
from tui.app import StordocApp
from tui.saved import SavedSnapshotBackend

SIZE = (80, 24)


@pytest.mark.parametrize("keys,name", [
    ((), "overview"),
    (("d",), "osds"),
    (("d", "down", "enter"), "osd_detail"),
    (("p",), "pools"),
    (("c",), "cache"),
    (("w",), "swift"),
    (("f",), "findings"),
    (("f", "enter"), "finding_detail"),
    (("enter",), "incident"),
    (("h",), "history"),
    (("f", "question_mark"), "help"),
    (("C",), "clusters"),
    (("b",), "bench"),
])
def test_screen_at_80x24(snap_compare: Any, keys: tuple[str, ...], name: str) -> None:
    assert snap_compare(_app(), run_before=pressing(*keys), terminal_size=SIZE)


@pytest.mark.parametrize("keys,name", [(("x",), "plan"), (("x", "a"), "confirm")])
def test_fix_dialogs_at_80x24(snap_compare: Any, keys: tuple[str, ...], name: str) -> None:
    """The plan pane (scrolls, says how) and the confirmation (buttons on screen)."""
    assert snap_compare(_app(b=fix_backend()), run_before=pressing(*keys), terminal_size=SIZE)


SCENARIOS = [name for rel, name in PAIRS if rel == (RELEASES[0] if RELEASES else "")]


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_overview_at_80x24(snap_compare: Any, name: str) -> None:
    """`stordoc tui --from` each saved scenario: the cause first, at 80x24."""
    rp = replay(RELEASES[0], name)
    app = StordocApp(SavedSnapshotBackend(rp), rp.doc.cluster, read_only=True, refresh_s=0,
                     thresholds=rp.thresholds, user="snapshot",
                     clock=lambda: rp.doc.taken_at + 42)

    assert snap_compare(app, run_before=_ready, terminal_size=SIZE)


