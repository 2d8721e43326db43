"""The one "did you mean" rule of the command line and the runbooks (the Slack bot's grammar
suggests the same way, ``bot.grammar.words.suggest``): difflib's closest known spelling,
compared without case, or nothing. A suggestion only: a misspelt name is never guessed."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.5  # difflib's similarity ratio a suggestion needs (the bot's too)


def closest(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The choice closest to ``word`` in its own spelling (``osd-remout`` ->
    ``osd-remount``, ``osd_data_unmount`` -> ``OSD_DATA_UNMOUNTED``), or None."""
    by_lower: dict[str, str] = {}
    for c in choices:
        by_lower.setdefault(c.lower(), c)
    m = difflib.get_close_matches(word.strip().lower(), list(by_lower), n=1, cutoff=cutoff)
    return by_lower[m[0]] if m else None
