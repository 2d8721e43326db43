"""What the TUI's screens read: the session (back end, cluster, settings) and the current
cluster's data. The App owns one ``Session`` and hands it to every screen it opens; a
screen hands it on to the screens it opens. Screens only read it: to change something
(open a runbook, refresh, go to a section) they post a ``tui.messages`` message that the
App handles. This module imports no screen and not the App.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.text import Text

from checks.model import Thresholds
from checks.outcome import CheckOutcome
from storage.targets import ClusterTarget
from tui.backend import Backend
from tui.views import human_age


@dataclass
class ClusterState:
    """What the screens render. ``outcome`` is the last good data, possibly stale."""

    outcome: CheckOutcome | None = None
    data_at: float | None = None  # when ``outcome``'s snapshot was taken
    error: str | None = None  # the last refresh's problem, None when it was fine
    refreshing: bool = False
    refresh_started: float | None = None
    version: int = 0


def part_errors(outcome: CheckOutcome) -> str | None:
    snap = outcome.snapshot
    errs = []
    if snap.ceph_error:
        errs.append(f"ceph: {snap.ceph_error}")
    if snap.swift_error:
        errs.append(f"swift: {snap.swift_error}")
    return "; ".join(errs) or None


@dataclass
class Session:
    """One TUI session: the App changes it (a refresh, a cluster switch, pause); screens
    read it. ``state`` is replaced whole when the cluster changes."""

    backend: Backend
    cluster: str
    read_only: bool = False
    thresholds: Thresholds = field(default_factory=Thresholds)
    user: str = "tui"
    clock: Callable[[], float] = time.time
    target: ClusterTarget | None = None  # the cluster's settings only
    paused: bool = False
    state: ClusterState = field(default_factory=ClusterState)

    def status_text(self) -> Text:
        """The status line: cluster, data age, refresh state and the last error."""
        st = self.state
        t = Text()
        t.append(f" {self.cluster} ", style="bold reverse")
        if st.outcome is not None and st.data_at is not None:
            age = human_age(self.clock() - st.data_at)
            t.append(f"  data {age} old", style="bold red" if st.error else "")
        else:
            t.append("  no data yet", style="dim")
        if st.refreshing:
            t.append("  refreshing…", style="cyan")
        if self.paused:
            t.append("  PAUSED", style="bold yellow")
        if self.read_only:
            t.append("  read-only", style="magenta")
        if st.error:
            t.append(f"  ERROR: {st.error}", style="bold red")
        return t
