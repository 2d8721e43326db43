"""How many examples a heavy property test draws: its full count with
``STORDOC_DEEP_EXAMPLES=1`` (a deep run before a release, or after changing what the test
covers), a third of it otherwise (CI and everyday runs, where the unit suite shares two
cores with two lab sessions). A third still draws every strategy's branches many times
over (the counts below were sized for the deep run); the minimum keeps small counts
meaningful. Only for tests whose examples each cost a real HTTP request, a CLI run or a
replayed snapshot: cheap parsers keep their own counts."""

from __future__ import annotations

import os

DEEP = os.environ.get("STORDOC_DEEP_EXAMPLES", "") not in ("", "0")
MINIMUM = 30


def examples(full: int) -> int:
    """``full`` in a deep run, else a third of it (at least ``MINIMUM``, at most ``full``)."""
    return full if DEEP else min(full, max(MINIMUM, full // 3))
