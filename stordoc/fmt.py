"""Formatting shared by the front ends (CLI, TUI, bot)."""

from __future__ import annotations


def human_age(seconds: float | None) -> str:
    """``42s``, ``3m05s``, ``2h10m``, ``1d03h``: how long something has been so."""
    if seconds is None:
        return "never"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
