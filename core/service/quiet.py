"""Quiet hours: which incidents wait for their end (the alert desk asks; the rule is here,
with the other decisions a front end must not make itself)."""

from __future__ import annotations

import time

from checks.model import Severity


def held_in_quiet_hours(severity: Severity, quiet_hours: str | None,
                        min_severity: Severity, now: float | None = None) -> bool:
    """True when an incident of ``severity`` must wait for the end of ``quiet_hours``
    ("22:00-07:00", UTC, as the settings validate it: ``AlertSettings._quiet_ok``; a
    window may cross midnight): only below ``min_severity``."""
    if not quiet_hours or severity >= min_severity:
        return False
    a, b = (int(x[:2]) * 60 + int(x[3:]) for x in quiet_hours.split("-"))
    t = time.gmtime(time.time() if now is None else now)
    cur = t.tm_hour * 60 + t.tm_min
    return (a <= cur < b) if a <= b else (cur >= a or cur < b)
