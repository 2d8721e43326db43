"""VirtualTable (tui/table.py): the rows it shows, its cursor across refreshes and filters,
its keys and clicks, and the RowSelected the screens drill down on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets.data_table import RowDoesNotExist

from tui.table import VirtualTable
from tui.views import Row, _row


def rows(*keys: str, extra: str = "") -> list[Row]:
    return [_row(k, "item", [k, f"cell {k}{extra}"], ["bold", "red"]) for k in keys]


class TableApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.selected: list[tuple[str, int]] = []

    def compose(self) -> ComposeResult:
        t = VirtualTable(id="t")
        t.add_columns("name", "value")
        yield t

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        self.selected.append((str(event.row_key.value), event.cursor_row))


def run(test: Any) -> None:
    async def go() -> None:
        app = TableApp()
        async with app.run_test(size=(60, 12)) as pilot:
            t = app.query_one("#t", VirtualTable)
            t.focus()
            await test(app, t, pilot)
    asyncio.run(go())


def test_rows_lookups_and_missing_keys() -> None:
    async def test(app: TableApp, t: VirtualTable, pilot: Any) -> None:
        t.set_rows(rows("a", "b", "c"))
        assert t.row_count == 3
        assert [k.value for k in t.rows] == ["a", "b", "c"]
        assert t.get_row_index("b") == 1
        assert [str(c) for c in t.get_row("c")] == ["c", "cell c"]
        assert [str(c) for c in t.get_row_at(0)] == ["a", "cell a"]
        with pytest.raises(RowDoesNotExist):
            t.get_row_index("zz")
        with pytest.raises(RowDoesNotExist):
            t.get_row_at(3)
        t.clear()
        assert t.row_count == 0 and t.cursor_key is None and t.cursor_data is None
    run(test)


def test_cursor_stays_on_its_key_across_refreshes_and_filters() -> None:
    async def test(app: TableApp, t: VirtualTable, pilot: Any) -> None:
        t.set_rows(rows("a", "b", "c", "d"))
        t.move_cursor(row=t.get_row_index("c"))
        assert t.cursor_key == "c"
        t.set_rows(rows("x", "a", "b", "c", "d", extra="!"))  # new data, c moved down
        assert t.cursor_key == "c" and t.cursor_row == 3
        t.set_rows(rows("c"))  # a filter that keeps it
        assert t.cursor_key == "c" and t.cursor_row == 0
        t.set_rows(rows("a", "b", "c"))
        t.move_cursor(row=1)
        t.set_rows(rows("a", "c"))  # its row is gone: the top, as DataTable.clear did
        assert t.cursor_row == 0
    run(test)


def test_the_same_rows_again_change_nothing() -> None:
    async def test(app: TableApp, t: VirtualTable, pilot: Any) -> None:
        first = rows("a", "b")
        t.set_rows(first)
        t.move_cursor(row=1)
        t.set_rows(rows("a", "b"))  # equal rows, new objects (a refresh of the same data)
        assert t.cursor_row == 1
        assert [r is f for r, f in zip(t.rows.values(), first)] == [True, True]
    run(test)


def test_keys_move_the_cursor_and_keep_it_visible() -> None:
    async def test(app: TableApp, t: VirtualTable, pilot: Any) -> None:
        t.set_rows(rows(*(f"r{i}" for i in range(100))))
        await pilot.pause()
        view = t.scrollable_content_region.height - 1  # lines under the header
        await pilot.press("down", "down")
        assert t.cursor_row == 2
        await pilot.press("pagedown")
        assert t.cursor_row == 2 + view
        await pilot.press("end")
        await pilot.pause()
        assert t.cursor_row == 99
        assert t.scroll_y <= 99 < t.scroll_y + view
        await pilot.press("pageup")
        assert t.cursor_row == 99 - view
        await pilot.press("home")
        await pilot.pause()
        assert t.cursor_row == 0 and t.scroll_y == 0
        await pilot.press("up")
        assert t.cursor_row == 0
    run(test)


def test_enter_and_clicks_select_rows() -> None:
    async def test(app: TableApp, t: VirtualTable, pilot: Any) -> None:
        t.set_rows(rows("a", "b", "c"))
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.selected == [("b", 1)]
        await pilot.click("#t", offset=(2, 3))  # header, a, b: the line of c
        await pilot.pause()
        assert t.cursor_key == "c" and app.selected == [("b", 1)]
        await pilot.click("#t", offset=(2, 3))  # on the cursor row: selects it
        await pilot.pause()
        assert app.selected == [("b", 1), ("c", 2)]
        await pilot.click("#t", offset=(2, 0))  # the header selects nothing
        await pilot.pause()
        assert t.cursor_key == "c" and len(app.selected) == 2
    run(test)


def test_columns_fit_the_widest_cell_and_never_narrow() -> None:
    async def test(app: TableApp, t: VirtualTable, pilot: Any) -> None:
        t.set_rows([_row("a", "item", ["a", "a rather long value"])])
        assert t.virtual_size.width == (4 + 2) + (19 + 2)  # "name" label, the value
        t.set_rows([_row("b", "item", ["b", "short"])])  # a filter hid the long one
        assert t.virtual_size.width == (4 + 2) + (19 + 2)
        assert t.virtual_size.height == 1 + 1  # the header and one row
    run(test)
