"""A bound on what one journal row holds: a finding's evidence as JSON of at most
``MAX_EVIDENCE`` bytes, its message and entity cut to a few KiB. Every check runs again
and again (``watch``, the bot, cron): a finding that carried every series of a 200,000-
series Prometheus wrote 8.6 MB per run. What is over the bound keeps its shape with counts
and a sample: a long list keeps its first items, a long string its start, a big mapping
its first keys, and ``_truncated`` says what was cut and how big it was
(``{"instances": 200000}``). Evidence under the bound is stored as it is.

Bound of a ``findings`` row: evidence 56 KiB + message 6 KiB + entity 1 KiB + the short
columns: under 64 KiB.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MAX_EVIDENCE = 56 << 10  # bytes of a finding's evidence JSON
MAX_MESSAGE = 6 << 10  # bytes of its message (UTF-8)
MAX_ENTITY = 1 << 10  # bytes of its entity
MAX_ROW = 64 << 10  # what the three leave room for, with the short columns
CUT = "_truncated"
# (items kept of a list or mapping, characters kept of a string): tried in turn until
# the evidence fits
STEPS = ((200, 8000), (20, 1000), (5, 200), (1, 60), (0, 0))
MAX_CUT_PATHS = 40


def _dumps(v: Any) -> str:
    return json.dumps(v, default=str)


def cap_text(text: str | None, limit: int) -> str | None:
    """``text`` in at most ``limit`` UTF-8 bytes, saying how long it was when cut."""
    if not isinstance(text, str):
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    tail = f"... ({len(raw)} bytes, cut)"
    keep = raw[:max(0, limit - len(tail.encode()))].decode("utf-8", "ignore")
    return keep + tail


def _shrink(v: Any, path: str, items: int, chars: int, cut: dict[str, int]) -> Any:
    def note(n: int) -> None:
        if path in cut or len(cut) < MAX_CUT_PATHS:
            cut[path] = max(cut.get(path, 0), n)

    if isinstance(v, Mapping):
        keys = list(v)
        if len(keys) > items:
            note(len(keys))
            keys = keys[:items]
        return {str(k): _shrink(v[k], f"{path}.{k}" if path else str(k), items, chars, cut)
                for k in keys}
    if isinstance(v, list | tuple | set | frozenset):
        seq = list(v)
        if len(seq) > items:
            note(len(seq))
            seq = seq[:items]
        return [_shrink(x, f"{path}[]", items, chars, cut) for x in seq]
    if isinstance(v, str) and len(v) > chars:
        note(len(v))
        return v[:chars]
    if isinstance(v, bytes | bytearray):
        return _shrink(str(v), path, items, chars, cut)
    return v


def bounded_json(evidence: Mapping[str, Any] | None, limit: int = MAX_EVIDENCE) -> str:
    """A finding's evidence as JSON text of at most ``limit`` bytes (see the module)."""
    text = _dumps(dict(evidence or {}))
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return text
    for items, chars in STEPS:
        cut: dict[str, int] = {}
        # the top level keeps every key while it can: the names of what was there
        top = {str(k): _shrink(v, str(k), items, chars, cut)
               for k, v in (evidence or {}).items()}
        small = _dumps({**top, CUT: {**cut, "evidence_bytes": size}})
        if len(small.encode("utf-8", "surrogatepass")) <= limit:
            return small
    keys = [str(k) for k in (evidence or {})][:20]
    return _dumps({CUT: {"evidence_bytes": size, "keys": [k[:60] for k in keys]}})
