"""The bot's grammar knows every runbook from the runbooks' registry, not a list of its own
(before: 5 of 13 runbooks were missing, so `plan osd-activate 1` kept the bare `1` and
`plan swift-replicator-start object@node1` was refused)."""

from __future__ import annotations

import pytest

from bot import grammar as g
from runbooks.api import list_runbooks


def test_every_runbook_of_the_registry_parses() -> None:
    names = {rb.name for rb in list_runbooks() if not rb.name.startswith("bench")}
    assert set(g.RUNBOOK_TARGETS) == names


@pytest.mark.parametrize(("text", "target"), [
    ("plan osd-activate 1", "osd.1"),
    ("plan osd-remount osd.01", "osd.1"),
    ("plan swift-replicator-start object@node1", "object@node1"),
    ("plan swift-device-remount d2@node2", "d2@node2"),
    ("plan swift-ring-push object", "object"),
    ("plan crash-archive 2026-11-20T10:00:00.000000Z_1234", "2026-11-20T10:00:00.000000Z_1234"),
])
def test_targets_take_each_runbooks_own_kind(text: str, target: str) -> None:
    cmd = g.parse(text)
    assert isinstance(cmd, g.Plan) and cmd.target == target


@pytest.mark.parametrize("text", ["plan osd-activate osd.\u0661", "plan swift-ring-push objet",
                                  "plan swift-replicator-start proxy", "plan pool-pg-num ../x"])
def test_wrong_targets_are_refused_in_one_line(text: str) -> None:
    with pytest.raises(g.GrammarError) as e:
        g.parse(text)
    assert "\n" not in str(e.value)
