"""Issue 37.14 in Slack, through the real bolt App over real HTTP: a plan's header (and its
buttons) name the normalised target the plan acts on (``NODE2.`` is ``node2``), and
``maintenance list`` (read-only) needs only the viewer role, like ``health``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.service.actions import ActionPlan
from core.service.snapshots import load
from core.settings import parse_settings
from tests.support.fake_slack import BotHarness, all_text, buttons
from tests.support.fixture_snapshots import FIXTURES

OPERATOR, VIEWER = "UOPERATOR7", "UVIEWER007"


@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    hosts = [{"name": f"node{i}", "address": f"127.0.0.{i + 1}", "port": 1}
             for i in range(1, 5)]
    settings = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}, "hosts": hosts}},
        "default_cluster": "lab"})
    harness = BotHarness(settings, {"lab": {"viewers": [VIEWER], "operators": [OPERATOR]}},
                         str(tmp_path / "bot.db"), throttle_s=0.01)
    # the real service plans on the healthy lab's saved snapshot (no cluster here)
    healthy = load(str(FIXTURES / "pacific" / "healthy")).outcome.snapshot
    real = harness.bot.backend.actions
    real_plan = real.plan

    def plan(cluster: str, runbook: str, target: str, **kw: Any) -> ActionPlan:
        return real_plan(cluster, runbook, target, **{**kw, "snapshot": healthy})
    real.plan = plan  # type: ignore[method-assign]
    yield harness
    harness.close()


def test_the_plan_header_names_the_normalised_target(h: BotHarness) -> None:
    h.slack.slash("maintenance start NODE2. for 2h", OPERATOR)
    plan = h.wait_post("Plan: maintenance-start", timeout=30)
    text = all_text(plan)
    assert "Plan: maintenance-start node2 on lab" in text
    assert "NODE2." not in text
    assert "ceph osd set-group noout osd.1" in text
    # Cancel closes the plan under the same (normalised) header
    h.slack.press("cancel", buttons(plan, "cancel")[0]["value"], OPERATOR,
                  str(plan.response["ts"]))
    closed = h.fake.wait_for(lambda f: [c for c in f.of("chat.update")
                                        if "cancelled" in all_text(c)], 30)
    assert "Plan: maintenance-start node2 on lab" in all_text(closed[0])
    assert "NODE2." not in all_text(closed[0])


def test_maintenance_list_needs_only_the_viewer_role(h: BotHarness) -> None:
    h.slack.slash("maintenance list", VIEWER)
    answer = h.wait_post("temporary changes", ("chat.postMessage", "chat.postEphemeral"),
                         timeout=30)
    assert "no temporary change held on lab" in all_text(answer)
    assert not [c for c in h.fake.of("chat.postEphemeral") if "operator" in all_text(c)]
    # acting stays the operator's: a viewer's maintenance start is refused
    h.slack.slash("maintenance start node2 for 2h", VIEWER)
    refusal = h.wait_post("operator", ("chat.postEphemeral",), timeout=30)
    assert "Plan:" not in all_text(refusal)
    assert not [c for c in h.fake.calls if "Plan: maintenance" in all_text(c)]
