"""One severity per finding in every front end: an incident worse than its root (PGs
blocking client I/O under a warn finding, the tmpfs seed fault) shows the root with the
root's own severity and says the incident's on its impact line (issue 27.1)."""

from __future__ import annotations

import json

from bot.render.findings import SEV_ICON, incident_blocks
from checks.model import Severity
from core.alerts.messages import alert_incident_blocks
from tests.unit.test_cli_80x24 import _escalated


def test_slack_incident_and_alert_keep_the_roots_severity() -> None:
    inc, _ = _escalated()
    for blocks in (incident_blocks(1, inc, None),
                   alert_incident_blocks("lab", inc, "New incident", None)):
        text = json.dumps(blocks)
        assert SEV_ICON[Severity.WARN] in text and SEV_ICON[Severity.CRIT] not in text, text
        assert "impact (crit):" in text, text


def test_tui_incident_rows_and_screen_keep_the_roots_severity() -> None:
    from tui import views

    inc, _ = _escalated()
    row = views.incident_rows([inc])[0]
    cells = [str(c) for c in row.cells]
    assert cells[0] == "warn" and cells[-1].startswith("(crit) "), cells
    lines = dict((k, v) for k, v, _ in views.incident_lines(inc))
    assert lines["incident"].startswith("warn "), lines
    assert "impact (crit)" in lines, lines
