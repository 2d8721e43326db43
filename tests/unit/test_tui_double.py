"""The TUI's test double mutes by the product's rule, not by one of its own
(tests/support/tui_backend.py: checks.engine.apply_mutes and storage.mutes)."""

from __future__ import annotations

import pytest

import checks.catalog  # noqa: F401  (registers every code)
from checks.model import REGISTRY, Finding, Severity
from tests.support.tui_backend import SnapshotBackend
from tests.unit.test_tui_data import broken_findings, broken_snapshot
from tui.backend import ActionRefused


def test_a_mute_hides_the_finding_as_muted_and_an_escalation_shows_anyway() -> None:
    warn_code = next(c for c, info in REGISTRY.codes.items()
                     if info.severity == Severity.WARN and c not in {
                         f.code for f in broken_findings()})
    usual = Finding(warn_code, Severity.WARN, "osd.7", "as usual")
    worse = Finding(warn_code, Severity.CRIT, "osd.8", "escalated")
    b = SnapshotBackend(broken_snapshot(), (*broken_findings(), usual, worse))
    first = broken_findings()[0]
    b.mute("lab", first.code, first.entity, 3600.0, "disk swap")
    b.mute("lab", warn_code, None, 3600.0, "known")
    out = b.refresh("lab")
    shown = {(f.code, f.entity) for f in out.report.findings}
    hidden = {(f.code, f.entity) for f in out.report.muted}
    assert (first.code, first.entity) in hidden and (first.code, first.entity) not in shown
    assert (warn_code, "osd.7") in hidden
    # the engine's rule: a mute never hides an escalation (the old double dropped it)
    assert (warn_code, "osd.8") in shown
    assert [why for f, why in out.report.mute_ignored if f.entity == "osd.8"] == [
        "escalated to crit (usually warn)"]


@pytest.mark.parametrize("code, reason, says", [
    ("NO_SUCH_CODE", "r", "unknown code"),
    ("HOST_UNREACHABLE", "r", "cannot be muted"),
    ("OSD_DOWN_IN", "  ", "needs a reason"),
])
def test_the_doubles_refusals_are_the_products(code: str, reason: str, says: str) -> None:
    b = SnapshotBackend(broken_snapshot(), broken_findings())
    with pytest.raises(ActionRefused, match=says):
        b.mute("lab", code, None, 3600.0, reason)
    assert b.mutes == []
