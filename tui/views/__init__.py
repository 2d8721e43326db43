"""Pure functions from a snapshot (and findings) to the rows each screen shows.

Kept apart from the widgets so that they can be unit-tested without a terminal and so the
screens stay thin: a screen only turns these rows into a table. Nothing here does I/O or
looks at the clock (the caller passes ``now``).

One module per idea; every name the screens, tests and benchmarks use is re-exported here
(``from tui import views; views.osd_rows(...)``, ``from tui.views import Row``):

- ``common``: ``Row``, ``_row``, ``same_rows``, ``human_bytes``, ``human_age``, ``SEV_STYLE``,
  ``FilterState``
- ``overview``: the overview screen's facts
- ``osds``: the CRUSH tree with host facts, OSD filters, one OSD's detail
- ``pools``: pools, PG states, cache tiers
- ``swift``: rings, devices, storage servers, the proxy/dispersion note
- ``findings``: incidents, findings, evidence
- ``history``: check runs and the runbook audit trail
"""

from __future__ import annotations

from tui.views.common import (
    SEV_STYLE,
    FilterState,
    Row,
    _row,
    human_age,
    human_bytes,
    ratio_micro,
    same_rows,
)
from tui.views.findings import (
    FINDING_COLUMNS,
    INCIDENT_COLUMNS,
    evidence_text,
    finding_line,
    finding_rows,
    findings_for,
    incident_line,
    incident_lines,
    incident_rows,
)
from tui.views.history import AUDIT_COLUMNS, HISTORY_COLUMNS, _when, audit_rows, history_rows
from tui.views.osds import (
    OSD_COLUMNS,
    STATE_FILTERS,
    OsdGroup,
    OsdHostView,
    osd_data_dir,
    osd_detail,
    osd_host_view,
    osd_rows,
    prepare,
)
from tui.views.overview import Overview, overview
from tui.views.pools import (
    CACHE_COLUMNS,
    POOL_COLUMNS,
    cache_rows,
    pg_state_rows,
    pool_rows,
    suggested_pg_nums,
)
from tui.views.swift import (
    RING_COLUMNS,
    SERVER_COLUMNS,
    device_balance,
    ring_rows,
    server_rows,
    swift_note,
)

__all__ = [
    "AUDIT_COLUMNS", "CACHE_COLUMNS", "FINDING_COLUMNS", "HISTORY_COLUMNS",
    "INCIDENT_COLUMNS", "OSD_COLUMNS", "POOL_COLUMNS", "RING_COLUMNS", "SERVER_COLUMNS",
    "SEV_STYLE", "STATE_FILTERS",
    "FilterState", "OsdGroup", "OsdHostView", "Overview", "Row",
    "_row", "_when",
    "audit_rows", "cache_rows", "device_balance", "evidence_text", "finding_line",
    "finding_rows", "findings_for", "history_rows", "human_age", "human_bytes",
    "incident_line", "incident_lines", "incident_rows",
    "osd_data_dir", "osd_detail", "osd_host_view", "osd_rows", "overview", "pg_state_rows",
    "pool_rows", "prepare", "ratio_micro", "ring_rows", "same_rows", "server_rows",
    "suggested_pg_nums", "swift_note",
]
