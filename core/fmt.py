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
    messages) on its way to a terminal (``core.terminal`` applies it to everything the
    CLI prints; newlines and tabs stay)."""
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# a step that runs an inline shell script: ``sh -c SCRIPT NAME ARG...`` (runbooks keep the
# script constant and pass what varies as arguments; NAME is its $0)
_SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash"})


def inline_script(command: str) -> tuple[str, str, str] | None:
    """For a command line that runs a multi-line inline script (``sh -c '...' NAME ARG``):
    the line to show with the script replaced by a placeholder naming it
    (``sh -c <script stordoc-evidence, 10 lines> stordoc-evidence DIR ...``), the script's
    name and its body; None for any other command. Only how it is shown: the command that
    runs (and is signed, audited) stays the whole one."""
    import shlex

    try:
        argv = shlex.split(command)
    except ValueError:  # a description, not a command line
        return None
    if len(argv) < 3 or argv[0] not in _SHELLS or not re.fullmatch(r"-[a-z]*c", argv[1]):
        return None
    body = argv[2]
    if "\n" not in body.strip():
        return None
    name = argv[3] if len(argv) > 3 and re.fullmatch(r"[\w.-]+", argv[3]) else "script"
    n = len([ln for ln in body.splitlines() if ln.strip()])
    shown = f"{shlex.join(argv[:2])} <script {name}, {n} lines>"
    if len(argv) > 3:
        shown += " " + shlex.join(argv[3:])
    return shown, name, body.strip("\n")


def wrap_words(text: str, width: int) -> list[str]:
    """``text`` in rows of at most ``width`` columns, broken on spaces only: a code or a
    name is never split. A single word wider than a row (a long path, a crash id) is the
    one exception: it is broken after a ``/``, ``-``, ``_``, ``.`` or ``:`` near the end of
    the row (at the row's end if it has none)."""
    import textwrap

    width = max(8, width)
    out: list[str] = []
    for row in textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False):
        while len(row) > width:
            cut = max(row.rfind(c, width // 2, width) for c in "/-_.:") + 1
            cut = cut if cut > 0 else width
            out.append(row[:cut])
            row = row[cut:]
        out.append(row)
    return out or [""]
