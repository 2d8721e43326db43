"""Errors a user can cause. The CLI prints them as one line (no traceback), exit 64
(``ExitStatus.USAGE``); ``Refused`` is a runbook's or benchmark's no (exit 4)."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: a malformed command, an unknown OSD, a bad config key."""


def permission_file(e: PermissionError) -> str:
    """The file a PermissionError is about (or its message when it names none)."""
    return str(e.filename) if e.filename else (e.strerror or str(e))
