"""SVG snapshots of every screen on captured data (pytest-textual-snapshot).

Timers are frozen: the clock is fixed (data is always "42s old"), auto-refresh is off and
the captured backend answers the same thing every time, so no time shows in the pictures.
Update after an intended change with ``pytest --snapshot-update tests/unit/test_tui_snapshots.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.unit.test_tui_app import make_app
from tests.unit.test_tui_data import TAKEN_AT

SIZE = (140, 36)


async def _ready(pilot: Any) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _app(**kw: Any) -> Any:
    return make_app(clock=lambda: TAKEN_AT + 42, refresh_s=0, **kw)


def pressing(*keys: str) -> Callable[[Any], Awaitable[None]]:
    """A ``run_before`` for ``snap_compare``: data loaded, then each key with its work done."""
    async def run_before(pilot: Any) -> None:
        await _ready(pilot)
        for k in keys:
            await pilot.press(k)
            await _ready(pilot)
        await pilot.pause()
    return run_before


@pytest.mark.parametrize("keys,name", [
    ((), "overview"),
    (("d",), "osds"),
    (("d", "down", "enter"), "osd_detail"),
    (("d", "u"), "osds_down_only"),
    (("p",), "pools"),
    (("c",), "cache"),
    (("w",), "swift"),
    (("f",), "findings"),
    (("f", "enter"), "finding_detail"),
    (("h",), "history"),
    (("question_mark",), "help"),
    (("b",), "bench"),
])
def test_screen_snapshot(snap_compare: Any, keys: tuple[str, ...], name: str) -> None:
    assert snap_compare(_app(), run_before=pressing(*keys), terminal_size=SIZE)


def test_read_only_osd_screen_snapshot(snap_compare: Any) -> None:
    """No Fix key in the footer, 'read-only' in the status line."""
    assert snap_compare(_app(read_only=True), run_before=pressing("d"), terminal_size=SIZE)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_overview_leads_with_the_cause(snap_compare: Any, size: tuple[int, int]) -> None:
    """On-call's terminal: the verdict and the top incident's cause on the first line of
    the overview, the incidents visible, Help and Quit in the footer."""
    async def run_before(pilot: Any) -> None:
        await _ready(pilot)
        screen = pilot.app.screen
        head = str(screen.query_one("#headline").render())
        assert head.startswith("CRIT octopus: OSD_DATA_UNMOUNTED osd.1"), head
        inc = screen.query_one("#incidents")
        assert inc.row_count >= 1 and inc.region.bottom <= size[1] - 1

    assert snap_compare(_app(), run_before=run_before, terminal_size=size)


@pytest.mark.parametrize("key,name", [("c", "cache"), ("w", "swift"), ("f", "findings")])
def test_problem_screens_at_80x24_show_the_cause_and_fix_key(snap_compare: Any, key: str,
                                                             name: str) -> None:
    """Every screen that shows a problem has a cause line with its Fix key at 80x24, and
    the footer keeps Help and Quit."""
    async def run_before(pilot: Any) -> None:
        await _ready(pilot)
        await pilot.press(key)
        await _ready(pilot)
        if name != "findings":
            cause = str(pilot.app.screen.query_one("#cause").render())
            want = "CACHE_NO_TARGET" if name == "cache" else "SWIFT_DEVICE_UNMOUNTED"
            assert want in cause and "x: " in cause, cause
            assert pilot.app.screen.query_one("#cause").region.y <= 3

    assert snap_compare(_app(), run_before=run_before, terminal_size=(80, 24))
