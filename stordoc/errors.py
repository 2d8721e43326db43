"""Errors a user can cause. The CLI prints them as one line (no traceback), exit 64."""

from __future__ import annotations

EX_USAGE = 64


class UserError(Exception):
    """Bad input: a malformed command, an unknown OSD, a bad config key."""
