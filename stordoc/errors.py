"""Errors a user can cause. The CLI prints them as one line (no traceback), exit 64."""

from __future__ import annotations

EX_USAGE = 64
EX_NOPERM = 77  # sysexits' EX_NOPERM: a file stordoc needs cannot be read or written


class UserError(Exception):
    """Bad input: a malformed command, an unknown OSD, a bad config key."""


def permission_file(e: PermissionError) -> str:
    """The file a PermissionError is about (or its message when it names none)."""
    return str(e.filename) if e.filename else (e.strerror or str(e))
