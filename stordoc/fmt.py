"""Formatting shared by the front ends (CLI, TUI, bot)."""

from __future__ import annotations

import re


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


# C0 controls but tab and newline, DEL, and the C1 controls (0x9b is a one-byte CSI):
# what a terminal obeys instead of showing
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character shown (``\\x1b``), never obeyed: the one rule
    for all text from outside (a host name in a snapshot, a server's error text, Ceph's
    messages) on its way to a terminal (``stordoc.terminal`` applies it to everything the
    CLI prints; newlines and tabs stay)."""
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
