"""Front ends render; the core decides (issue 39.2): no front end (bot/, tui/, the CLI's
stordoc/commands/) reads an incident's ``next_step`` or picks a maintenance runbook
itself: each asks ``core.service.fixes`` (``incident_fix``, ``incident_step``,
``maintenance_runbook``), so the CLI, Slack and the TUI cannot disagree. What each
front end then shows for every saved scenario: tests/unit/test_replay.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core.service import fixes
from tests.support.fixture_snapshots import FIXTURES
from tests.unit.test_tui_data import healthy_snapshot

ROOT = Path(__file__).resolve().parents[2]
FRONT_ENDS = [*sorted((ROOT / "bot").rglob("*.py")), *sorted((ROOT / "tui").rglob("*.py")),
              *sorted((ROOT / "stordoc" / "commands").rglob("*.py"))]


def _reads(path: Path, attr: str) -> list[int]:
    tree = ast.parse(path.read_text(), str(path))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == attr]


def test_no_front_end_reads_an_incidents_next_step() -> None:
    found = {str(p.relative_to(ROOT)): lines for p in FRONT_ENDS
             if (lines := _reads(p, "next_step"))}
    assert found == {}, found


def test_no_front_end_correlates_findings_itself() -> None:
    found = [str(p.relative_to(ROOT)) for p in FRONT_ENDS if "correlate(" in p.read_text()]
    assert found == [], found


def test_no_front_end_words_a_maintenance_runbook_choice() -> None:
    found = [str(p.relative_to(ROOT)) for p in FRONT_ENDS
             if '"maintenance-end" if' in p.read_text()]
    assert found == [], found


def test_the_maintenance_runbook_follows_the_hosts_noout() -> None:
    ceph = healthy_snapshot().ceph
    assert ceph is not None
    host = next(h for h in ceph.hosts if h.osd_ids)
    assert fixes.maintenance_runbook(ceph, host.name) == "maintenance-start"
    from dataclasses import replace

    osds = tuple(replace(o, state=(*o.state, "noout")) if o.id == host.osd_ids[0] else o
                 for o in ceph.osds)
    assert fixes.maintenance_runbook(replace(ceph, osds=osds), host.name) == \
        "maintenance-end"
    assert fixes.maintenance_runbook(ceph, "no-such-host") == "maintenance-start"


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_the_cli_slack_and_tui_offer_the_same_fix_in_every_saved_scenario(release: str
                                                                          ) -> None:
    from bot import render as r
    from stordoc.commands.check import render_incidents
    from tests.support.fixture_snapshots import replayed
    from tui import views

    for d in sorted((FIXTURES / release).iterdir()):
        if not (d / "snapshot.json").exists():
            continue
        out = replayed(release, d.name).outcome  # one replay per session
        want = [f"{fx.runbook} {fx.target}" if (fx := fixes.incident_fix(i)) else None
                for i in out.incidents]
        # the CLI's "next:" lines
        import io

        from rich.console import Console

        buf = io.StringIO()
        render_incidents(out, Console(file=buf, width=200, color_system=None))
        cli = [ln.strip()[len("next: stordoc fix "):] for ln in buf.getvalue().splitlines()
               if ln.strip().startswith("next: stordoc fix ")]
        assert cli == [w for w in want if w], (d.name, cli, want)
        # Slack's Fix buttons (one token per incident with a fix)
        made: list[str] = []

        def token(inc: object, made: list[str] = made) -> str | None:
            fx = fixes.incident_fix(inc)  # type: ignore[arg-type]
            if fx is None:
                return None
            made.append(f"{fx.runbook} {fx.target}")
            return f"tok{len(made)}"

        reply = r.health_reply("lab", out.report.verdict, out.incidents, out.report.findings,
                               token, None)
        buttons = [b["accessory"]["value"] for m in reply.messages for b in m.blocks
                   if b.get("accessory", {}).get("action_id") == "fix"]
        assert made == [w for w in want if w] and len(buttons) == len(made), d.name
        # the TUI's incident rows
        rows = views.incident_rows(out.incidents)
        assert [row.cells[3] for row in rows] == [w or "by hand" for w in want], d.name
