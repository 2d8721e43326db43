"""Watch mode: the alert desk fed by stordoc's own periodic check instead of an alert.

``stordoc watch`` (or ``stordoc bot --watch``) checks a cluster every ``--every`` and,
when a Slack channel is bound to it, hands each outcome here: incidents not posted yet are
posted (the same message and thread an alert would get, so a later alert adds to it),
threads of incidents stordoc no longer sees are closed with a "resolved" line.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from checks.incidents import alarming
from checks.model import Verdict
from core.slack.blocks import esc

if TYPE_CHECKING:
    import threading

    from checks.incidents import Incident
    from checks.outcome import CheckOutcome
    from core.alerts.threads import AlertThread, AlertThreads
    from core.slack.blocks import Block


class WatchDesk(Protocol):
    """What watch mode needs of the alert desk (``core.alerts.AlertDesk``, which calls it)."""

    threads: AlertThreads

    def lock(self, cluster: str) -> threading.Lock: ...
    def held(self, cluster: str, inc: Incident, why: str) -> bool: ...
    def incident_blocks(self, cluster: str, inc: Incident, why: str) -> list[Block]: ...
    def open_thread(self, key: str, cluster: str, incident: str, title: str,
                    blocks: list[Block], group: str) -> None: ...
    def reply(self, th: AlertThread, text: str) -> None: ...
    def close_thread(self, th: AlertThread) -> None: ...


def present(out: CheckOutcome) -> set[str]:
    """Incident ids still there, muted ones included: a muted cause is hidden, not gone,
    and must never be announced as resolved."""
    return {i.id for i in out.incidents} | {f"{f.code} {f.entity}"
                                            for f in out.report.muted}


def sync(desk: WatchDesk, cluster: str, out: CheckOutcome) -> tuple[int, int]:
    """Post incidents not posted yet, close threads of incidents gone.
    Returns (opened, closed). An unreachable cluster closes nothing: not seeing an
    incident is not seeing it clear."""
    opened = closed = 0
    if out.report.verdict == Verdict.UNREACHABLE:
        return 0, 0
    with desk.lock(cluster):
        ids = present(out)
        for inc in out.incidents:
            # a stordoc run's own doing (its flag, PGs settling after it) and INFO
            # incidents are no alarm: not posted (the watch prints one RUN line)
            key = f"{cluster}|{inc.id}"
            if not alarming(inc, out.snapshot.runs):
                continue
            if desk.threads.get(key) is None and not desk.held(cluster, inc, "watch"):
                desk.open_thread(key, cluster, inc.id, f"{inc.root.entity} {inc.root.code} on "
                                 f"{cluster}", desk.incident_blocks(cluster, inc, "new incident"),
                                 "")
                opened += 1
        for th in desk.threads.open_of(cluster):
            if th.incident != "(none)" and th.incident not in ids:
                desk.reply(th, f":white_check_mark: resolved: stordoc sees "
                               f"{esc(th.incident)} clear (check at "
                               f"{time.strftime('%H:%M:%S')}).")
                desk.close_thread(th)
                closed += 1
    return opened, closed
