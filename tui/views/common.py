"""What every view shares: the ``Row`` a table shows, cell formatting, severity styles and
the per-screen filter state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from checks.model import Severity
from core.fmt import human_age  # noqa: F401  (re-exported for the screens)

# --------------------------------------------------------------------------- formatting


def human_bytes(n: float | None) -> str:
    """Binary units, short: what ``ceph df`` shows."""
    if n is None:
        return "-"
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(v) < 1024 or unit == "PiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} PiB"  # pragma: no cover


def ratio_micro(v: int) -> str:
    return f"{v / 1_000_000:.2f}"


SEV_STYLE = {Severity.CRIT: "bold red", Severity.WARN: "yellow", Severity.INFO: "cyan"}


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Row:
    """One table row: a stable key (for the cursor), its cells and a style per cell.

    ``kind`` tells the screen what Enter on it means ("osd", "host", "finding", ...).
    ``search`` is the lower-cased text the ``/`` filter matches against.
    """

    key: str
    kind: str
    cells: tuple[str, ...]
    styles: tuple[str, ...] = ()
    search: str = ""
    ref: Any = None

    def matches(self, needle: str) -> bool:
        return not needle or needle.lower() in self.search

    @cached_property
    def widths(self) -> tuple[int, ...]:
        """Each cell's width in terminal cells (a table's column widths come from these)."""
        return tuple(len(c) if c.isascii() else cell_len(c) for c in self.cells)

    @cached_property
    def texts(self) -> list[Text]:
        """The styled cells (what ``get_row`` answers), built once on demand."""
        st = self.styles
        return [Text(c, style=st[i] if i < len(st) else "", no_wrap=True, end="")
                for i, c in enumerate(self.cells)]


def same_rows(a: Sequence[Row], b: Sequence[Row]) -> bool:
    """Would ``b`` look exactly like ``a`` on screen? (Most refreshes change nothing.)"""
    return len(a) == len(b) and all(
        x is y or (x.key == y.key and x.cells == y.cells and x.styles == y.styles)
        for x, y in zip(a, b))


def _row(key: str, kind: str, cells: Sequence[str], styles: Sequence[str] = (),
         ref: Any = None) -> Row:
    return Row(key, kind, tuple(cells), tuple(styles), " ".join(cells).lower(), ref)


@dataclass
class FilterState:
    """Per-screen filter: free text plus the OSD screen's state/host choices."""

    needle: str = ""
    state: str = "all"
    host: str | None = None
    hosts: list[str] = field(default_factory=list)
