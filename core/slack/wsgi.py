"""What both HTTP gates of the bot share (Slack's signed requests, Alertmanager's webhook)."""

from __future__ import annotations

import json
from typing import Any

DRAIN_MAX = 8 * 1024 * 1024  # read and drop at most this much of a refused body
MAX_DEPTH = 64  # Slack's deepest payloads (rich text in a block_actions message) nest ~12


class TooDeep(ValueError):
    """JSON nested deeper than ``MAX_DEPTH`` (or than the interpreter's recursion limit)."""


def drain(stream: Any, size: int) -> None:
    """Read and drop a refused body (bounded), so the client sees the answer, not a reset."""
    left = min(size, DRAIN_MAX)
    while left > 0:
        chunk = stream.read(min(left, 65536))
        if not chunk:
            return
        left -= len(chunk)


def depth(obj: Any, stop: int = MAX_DEPTH) -> int:
    """How deeply ``obj`` nests lists and dicts (a scalar is 0), counted without recursion
    and only up to ``stop + 1``."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(obj, 0)]
    while todo:
        o, d = todo.pop()
        if isinstance(o, dict):
            o = list(o.values())
        if isinstance(o, list):
            d += 1
            deepest = max(deepest, d)
            if d > stop:
                return d
            todo.extend((x, d) for x in o)
    return deepest


def load_json(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that refuses deep nesting with ``TooDeep`` (a ValueError), never a
    ``RecursionError``: what is accepted here is shallow enough for bolt and pydantic."""
    try:
        obj = json.loads(text)
    except RecursionError:
        raise TooDeep(f"JSON nested too deeply (more than {max_depth} levels)") from None
    if depth(obj, max_depth) > max_depth:
        raise TooDeep(f"JSON nested too deeply (more than {max_depth} levels)")
    return obj
