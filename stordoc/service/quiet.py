"""Quiet hours: which incidents wait for their end (the alert desk asks; the rule is here,
with the other decisions a front end must not make itself)."""

from __future__ import annotations

import re
import time

from checks.model import Severity

WINDOW_RE = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")


def held_in_quiet_hours(severity: Severity, quiet_hours: str | None,
                        min_severity: Severity, now: float | None = None) -> bool:
    """True when an incident of ``severity`` must wait for the end of ``quiet_hours``
    ("22:00-07:00", UTC; a window may cross midnight): only below ``min_severity``."""
    if not quiet_hours or severity >= min_severity:
        return False
    m = WINDOW_RE.match(quiet_hours)
    if m is None:  # the settings validate it; a bad one never silences anything
        return False
    h1, m1, h2, m2 = (int(x) for x in m.groups())
    a, b = h1 * 60 + m1, h2 * 60 + m2
    t = time.gmtime(time.time() if now is None else now)
    cur = t.tm_hour * 60 + t.tm_min
    return (a <= cur < b) if a <= b else (cur >= a or cur < b)
