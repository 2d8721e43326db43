"""The screens: each renders the session's current ``ClusterState`` (``tui.state``)
through ``tui.views``.

Screens never import or call the App: the App hands each one the session to read, and a
screen posts a ``tui.messages`` message for what it wants done (open a runbook, refresh,
go to a section). Screens never call the back end on the event loop: the App refreshes
cluster data in a thread worker and tells only the visible screen; screens that need
something else (plan, run, history) start their own thread workers, which post typed
messages back.

The package holds one module per group of screens (base, cluster, findings, runbook,
history, bench, help); every screen is importable from here.
"""

from __future__ import annotations

from tui.screens.base import (
    ActionRefusedInput,
    DataScreen,
    DetailScreen,
    FilterInput,
    StatusLine,
    fill_table,
    lines_table,
)
from tui.screens.bench import BENCH_COLUMNS, BenchScreen, bench_rows
from tui.screens.cluster import (
    CacheScreen,
    EntityDetailScreen,
    OsdDetailScreen,
    OsdScreen,
    OverviewScreen,
    PoolScreen,
    SwiftScreen,
)
from tui.screens.findings import (
    FindingDetailScreen,
    FindingsScreen,
    IncidentScreen,
    MuteModal,
)
from tui.screens.help import HelpScreen
from tui.screens.history import AuditRunScreen, HistoryScreen, RunFindingsScreen
from tui.screens.runbook import ConfirmModal, QuitGuard, RunbookScreen, StopModal

__all__ = [
    "BENCH_COLUMNS", "ActionRefusedInput", "AuditRunScreen", "BenchScreen", "CacheScreen",
    "ConfirmModal", "DataScreen", "DetailScreen", "EntityDetailScreen", "FilterInput",
    "FindingDetailScreen", "FindingsScreen", "HelpScreen", "HistoryScreen", "IncidentScreen",
    "MuteModal",
    "OsdDetailScreen", "OsdScreen", "OverviewScreen", "PoolScreen", "QuitGuard",
    "RunFindingsScreen", "RunbookScreen", "StatusLine", "StopModal", "SwiftScreen", "bench_rows",
    "fill_table", "lines_table",
]
