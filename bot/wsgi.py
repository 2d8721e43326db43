"""What both HTTP gates of the bot share (Slack's signed requests, Alertmanager's webhook)."""

from __future__ import annotations

from typing import Any

DRAIN_MAX = 8 * 1024 * 1024  # read and drop at most this much of a refused body


def drain(stream: Any, size: int) -> None:
    """Read and drop a refused body (bounded), so the client sees the answer, not a reset."""
    left = min(size, DRAIN_MAX)
    while left > 0:
        chunk = stream.read(min(left, 65536))
        if not chunk:
            return
        left -= len(chunk)
