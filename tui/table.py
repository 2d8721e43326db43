"""``VirtualTable``: a table of ``views.Row`` that renders only the rows on screen.

Textual's ``DataTable`` stores every cell in its own structures and measures each new cell
on idle: filling it with the 10,000 OSDs of a big cluster took about a second on the event
loop. This widget keeps the screen's list of rows as it is (``set_rows``: a key index and
the column widths, both a few milliseconds for 10,000 rows) and draws the visible lines
through Textual's public Line API (``ScrollView.render_line``).

It looks like a ``DataTable`` with a row cursor (same CSS, same cell padding, the header
fixed at the top, the cursor row's colours over the cells' own) and answers the part of
``DataTable``'s API the screens and tests use: ``row_count``, ``rows``, ``cursor_row``,
``cursor_coordinate``, ``move_cursor``, ``get_row``, ``get_row_at``, ``get_row_index``,
``clear``, ``add_columns``; Enter or a click on the cursor row posts ``RowSelected``
(with ``row_key.value``, the ``Row``'s key, as ``DataTable.RowSelected`` has).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets.data_table import RowDoesNotExist, RowKey

from tui.views import Row, same_rows

_LINE_CACHE_MAX = 1000


class VirtualTable(ScrollView, can_focus=True):
    """Rows of ``views.Row`` with a row cursor; only the visible lines are drawn."""

    DEFAULT_CSS = """
    VirtualTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;

        &:focus {
            background-tint: $foreground 5%;
            & > .virtual-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .virtual-table--header {
                background-tint: $foreground 5%;
            }
        }
        & > .virtual-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .virtual-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .virtual-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"virtual-table--header", "virtual-table--cursor"}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        # Home/End go to the first/last row (DataTable's scroll sideways, which on-call
        # read as "Home does nothing")
        Binding("home,ctrl+home", "cursor_to('top')", "Top", show=False),
        Binding("end,ctrl+end", "cursor_to('bottom')", "Bottom", show=False),
        # sideways, as DataTable's row cursor does (and named as it names them)
        Binding("left", "scroll_left", "Cursor left", show=False),
        Binding("right", "scroll_right", "Cursor right", show=False),
    ]

    class RowSelected(Message):
        """Enter (or a click) on the cursor row."""

        def __init__(self, table: VirtualTable, cursor_row: int, row: Row) -> None:
            self.table = table
            self.cursor_row = cursor_row
            self.row = row
            self.row_key = RowKey(row.key)
            super().__init__()

        @property
        def control(self) -> VirtualTable:
            return self.table

    class RowHighlighted(Message):
        """The cursor moved to another row (or the rows under it changed)."""

        def __init__(self, table: VirtualTable, row: Row | None) -> None:
            self.table = table
            self.row = row
            super().__init__()

        @property
        def control(self) -> VirtualTable:
            return self.table

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None, disabled: bool = False,
                 header_kinds: frozenset[str] = frozenset()) -> None:
        """``header_kinds``: rows of these kinds head a group (a severity); the cursor
        starts on the first row that is not one, so a key acts on a real row at once."""
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.header_kinds = header_kinds
        self._labels: tuple[str, ...] = ()
        self._rows: list[Row] = []
        self._index: dict[str, int] = {}
        self._widths: list[int] = []
        self._cursor = 0
        self._lines: dict[tuple[Any, ...], Strip] = {}
        self._parsed: dict[str, Style] = {}
        self._look: tuple[Style, Style, Style, Style] | None = None

    # -------------------------------------------------------------------- data

    def add_columns(self, *labels: str) -> None:
        self._labels += labels
        self._update_widths()

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def rows(self) -> dict[RowKey, Row]:
        """Every row by key, in order (as ``DataTable.rows``; built on each call)."""
        return {RowKey(r.key): r for r in self._rows}

    def set_rows(self, rows: Sequence[Row]) -> None:
        """Show these rows; the cursor stays on the same key when it is still there (else
        it goes to the top, as after ``DataTable.clear``). Showing what is already shown
        does nothing: most refreshes change nothing on screen."""
        old = self._rows
        if same_rows(old, rows):
            return
        key = old[self._cursor].key if old and self._cursor < len(old) else None
        self._rows = list(rows)
        self._index = {r.key: i for i, r in enumerate(self._rows)}
        self._update_widths()
        start = next((i for i, r in enumerate(self._rows) if r.kind not in self.header_kinds),
                     0)
        self._cursor = self._index.get(key, start) if key is not None else start
        self.refresh()
        self.post_message(self.RowHighlighted(self, self.cursor_data))
        self._scroll_cursor_into_view()
        # a table whose height follows its rows knows its new height after the layout
        self.call_after_refresh(self._scroll_cursor_into_view)

    def clear(self) -> None:
        self.set_rows([])

    def _update_widths(self) -> None:
        """Each column as wide as its widest cell so far: as in a DataTable, columns
        never narrow when a filter hides rows (they do not jump while one types)."""
        self._lines.clear()
        widths = [cell_len(label) for label in self._labels]
        for j, w in enumerate(self._widths[:len(widths)]):
            widths[j] = max(widths[j], w)
        if self._rows:
            for j, col in enumerate(zip(*(r.widths for r in self._rows))):
                if j < len(widths):
                    widths[j] = max(widths[j], max(col))
        self._widths = widths
        self.virtual_size = Size(sum(w + 2 for w in widths), len(self._rows) + 1)

    def get_row_index(self, key: str) -> int:
        try:
            return self._index[key]
        except KeyError:
            raise RowDoesNotExist(f"no row with key {key!r}") from None

    def get_row_at(self, index: int) -> list[Text]:
        if not 0 <= index < len(self._rows):
            raise RowDoesNotExist(f"no row at index {index}")
        return self._rows[index].texts

    def get_row(self, key: str) -> list[Text]:
        return self.get_row_at(self.get_row_index(key))

    # -------------------------------------------------------------------- cursor

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @cursor_row.setter
    def cursor_row(self, row: int) -> None:
        row = max(0, min(row, len(self._rows) - 1))
        if row != self._cursor:
            self.refresh_line(self._cursor + 1)
            self.refresh_line(row + 1)
            self._cursor = row
            self.post_message(self.RowHighlighted(self, self.cursor_data))
        self._scroll_cursor_into_view()

    @property
    def cursor_coordinate(self) -> Coordinate:
        return Coordinate(self._cursor, 0)

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor (None when the table is empty)."""
        row = self.cursor_data
        return row.key if row else None

    @property
    def cursor_data(self) -> Row | None:
        return self._rows[self._cursor] if self._cursor < len(self._rows) else None

    def move_cursor(self, *, row: int | None = None, column: int | None = None,
                    animate: bool = False, scroll: bool = True) -> None:
        """As ``DataTable.move_cursor`` (``column`` and ``animate`` are accepted, unused)."""
        if row is not None:
            self.cursor_row = row

    def _view_rows(self) -> int:
        return self.scrollable_content_region.height - 1  # under the header

    def _scroll_cursor_into_view(self) -> None:
        view = self._view_rows()
        if view <= 0:
            return
        top, r = round(self.scroll_y), self._cursor
        if r < top:
            self.scroll_to(y=r, animate=False, force=True)
        elif r >= top + view:
            self.scroll_to(y=r - view + 1, animate=False, force=True)

    def action_cursor_up(self) -> None:
        self.cursor_row = self._cursor - 1

    def action_cursor_down(self) -> None:
        self.cursor_row = self._cursor + 1

    def action_cursor_to(self, where: str) -> None:
        self.cursor_row = 0 if where == "top" else len(self._rows) - 1

    def _page(self, sign: int) -> None:
        """As DataTable: the view moves a page and the cursor with it."""
        page = max(1, self._view_rows())
        self.scroll_to(y=self.scroll_y + sign * page, animate=False, force=True)
        self.cursor_row = self._cursor + sign * page

    def action_page_down(self) -> None:
        self._page(1)

    def action_page_up(self) -> None:
        self._page(-1)

    def action_select_cursor(self) -> None:
        row = self.cursor_data
        if row is not None:
            self.post_message(self.RowSelected(self, self._cursor, row))

    def on_click(self, event: events.Click) -> None:
        """A click moves the cursor to the row; a click on the cursor row selects it."""
        row = event.style.meta.get("row")
        if not isinstance(row, int) or not 0 <= row < len(self._rows):
            return
        event.stop()
        if row == self._cursor:
            self.action_select_cursor()
        else:
            self.cursor_row = row

    # -------------------------------------------------------------------- drawing

    def render_lines(self, crop: Region) -> list[Strip]:
        self._look = None  # focus and theme change the styles: read them once per paint
        return super().render_lines(crop)

    def _styles(self) -> tuple[Style, Style, Style, Style]:
        """(base, header, cursor, cursor's text colour): as DataTable layers them."""
        if self._look is None:
            cursor = self.get_component_rich_style("virtual-table--cursor")
            self._look = (self.rich_style,
                          self.get_component_styles("virtual-table--header").rich_style,
                          cursor, Style.from_color(color=cursor.color))
        return self._look

    def _style(self, spec: str) -> Style:
        st = self._parsed.get(spec)
        if st is None:
            st = self._parsed[spec] = Style.parse(spec) if spec else Style.null()
        return st

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        base, header, cursor, cursor_fg = self._styles()
        index = -1 if y == 0 else y - 1 + scroll_y
        if index >= len(self._rows):
            return Strip.blank(width, base)
        on_cursor = index == self._cursor
        row = self._rows[index] if index >= 0 else None
        ck = (index, id(row), on_cursor, scroll_x, width, base, header, cursor)
        strip = self._lines.get(ck)
        if strip is None:
            if row is None:
                strip = self._line(-1, self._labels, (), header, Style(), Style(), width)
            elif on_cursor:
                strip = self._line(index, row.cells, row.styles, base, cursor, cursor_fg,
                                   width)
            else:
                strip = self._line(index, row.cells, row.styles, base, Style(), Style(),
                                   width)
            strip = strip.crop(scroll_x, scroll_x + width).adjust_cell_length(width, base)
            strip = strip.simplify()
            if len(self._lines) > _LINE_CACHE_MAX:
                self._lines.clear()
            self._lines[ck] = strip
        return strip

    def _line(self, index: int, cells: Sequence[str], styles: Sequence[str], row_style: Style,
              component: Style, post: Style, width: int) -> Strip:
        """One row as DataTable draws it: each cell padded by one space a side, in the row's
        style with the row's position as meta (a click says which row), the cursor's
        style over it, the cell's own style inside; then the row's style to the edge."""
        segs: list[Segment] = []
        for j, w in enumerate(self._widths):
            text = cells[j] if j < len(cells) else ""
            pre = row_style + Style.from_meta({"row": index, "column": j}) + component
            pad = pre + post
            segs.append(Segment(" ", pad))
            if text:
                segs.append(Segment(text, pre + self._style(styles[j] if j < len(styles)
                                                            else "") + post))
            segs.append(Segment(" " * (w - cell_len(text) + 1), pad))
        table_width = sum(w + 2 for w in self._widths)
        segs.append(Segment(" " * max(0, width - table_width), row_style + component
                            + Style.from_meta({"row": index, "column": 0,
                                               "out_of_bounds": True})))
        return Strip(segs)
