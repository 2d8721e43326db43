"""sqlite-utils for the journal, imported without numpy (issue 39.7).

At its import sqlite-utils tries ``import numpy``, only to map numpy's scalar types to
column types; that import is a tenth of a second of every check's start-up, and nothing
the journal records is a numpy value until a benchmark has loaded numpy anyway. So numpy
is hidden while sqlite-utils is imported (unless something loaded it already), and
:class:`_ColumnTypes` maps the same types once numpy is there: sqlite-utils types a
column exactly as before.
"""

from __future__ import annotations

import sys
from typing import Any


def _import_sqlite_utils() -> None:
    """Import sqlite-utils with numpy hidden (see the module's docstring)."""
    if "sqlite_utils.db" in sys.modules:
        return
    hide = "numpy" not in sys.modules
    if hide:
        sys.modules["numpy"] = None  # type: ignore[assignment]  # ImportError for it
    try:
        import sqlite_utils.db
    finally:
        if hide and "numpy" in sys.modules and sys.modules["numpy"] is None:
            del sys.modules["numpy"]
    if not isinstance(sqlite_utils.db.COLUMN_TYPE_MAPPING, _ColumnTypes):
        sqlite_utils.db.COLUMN_TYPE_MAPPING = _ColumnTypes(sqlite_utils.db.COLUMN_TYPE_MAPPING)


# numpy's scalar types sqlite-utils maps (sqlite_utils/db.py, "If numpy is available")
_NUMPY_TYPES = {"int8": "INTEGER", "int16": "INTEGER", "int32": "INTEGER",
                "int64": "INTEGER", "uint8": "INTEGER", "uint16": "INTEGER",
                "uint32": "INTEGER", "uint64": "INTEGER", "float16": "REAL",
                "float32": "REAL", "float64": "REAL"}


class _ColumnTypes(dict[Any, str]):
    """sqlite-utils' type -> column type map, with numpy's types added on the first
    lookup that misses once numpy has been imported."""

    def _numpy(self) -> bool:
        np = sys.modules.get("numpy")
        if np is None or getattr(self, "_with_numpy", False):
            return False
        self._with_numpy = True
        self.update({getattr(np, name): col for name, col in _NUMPY_TYPES.items()
                     if hasattr(np, name)})
        return True

    def __missing__(self, key: Any) -> str:
        if self._numpy() and key in self:
            return self[key]
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


_import_sqlite_utils()
import sqlite_utils  # noqa: E402  (after the numpy-free import above)

__all__ = ["sqlite_utils"]
