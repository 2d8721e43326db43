"""``fix CODE [TARGET]`` in the bot and ``stordoc fix --finding CODE [--entity E]`` in the
CLI: both ask core.service.fixes and only word its answer (the wording and exit codes
are the ones they had before the service). Also: the bot's command table answers every
command of the grammar."""

from __future__ import annotations

import argparse
import io
import typing
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from bot import grammar as g
from bot.app import Where
from bot.commands import Commands
from bot.core import BotError
from checks.model import Finding, Severity
from core.errors import UserError
from core.service.fixes import choose_fix
from runbooks.model import Refused
from stordoc.commands.runbooks import _pick_finding


def _down_out(i: int, runbook: str | None = "osd-start") -> Finding:
    return Finding("OSD_DOWN_OUT", Severity.WARN, f"osd.{i}", f"osd.{i} is down and out",
                   {}, runbook, f"osd.{i}" if runbook else None)


PG = Finding("PGS_STUCK", Severity.WARN, "pg 1.0", "pg 1.0 stuck peering")
WHERE = Where("C0000TEST", "UOPERATOR1")


SNAP = object()  # the check's snapshot: the plan is made on it, not on a second collection


def _outcome(findings: list[Finding]) -> Any:
    from checks.incidents import correlate
    from core.service.fixes import proposed

    return SimpleNamespace(report=SimpleNamespace(findings=tuple(findings), cluster="lab"),
                           snapshot=SNAP, incidents=proposed(correlate(list(findings))))


# --------------------------------------------------------------------------- bot

def _bot(findings: list[Finding]) -> tuple[Commands, list[tuple[str, str, bool]]]:
    """The bot's command handlers with only what ``answer`` needs for FixFinding: a
    backend's check (its core) and a plan_reply (its actions) that records what would be
    planned."""
    planned: list[tuple[str, str, bool]] = []

    def fix_for(cluster: str, code: str, target: str | None, source: str) -> Any:
        out = _outcome(findings)  # the service's fix_for: a check, then choose_fix
        return out, choose_fix(out.report.findings, code, target)

    def plan_reply(where: Where, cluster: str, runbook: str, target: str,
                   buttons: bool, options: Any = None) -> Any:
        planned.append((runbook, target, buttons))
        return "the plan"
    bot = Commands(SimpleNamespace(backend=SimpleNamespace(fix_for=fix_for)),  # type: ignore[arg-type]
                   SimpleNamespace(plan_reply=plan_reply))  # type: ignore[arg-type]
    return bot, planned


def test_bot_fix_finding_plans_the_one_fix() -> None:
    bot, planned = _bot([_down_out(2), PG])
    assert bot.answer(WHERE, "lab", g.FixFinding("OSD_DOWN_OUT")) == "the plan"
    assert planned == [("osd-start", "osd.2", True)]


def test_bot_fix_finding_by_target_and_by_entity() -> None:
    bot, planned = _bot([_down_out(2), _down_out(3)])
    bot.answer(WHERE, "lab", g.FixFinding("OSD_DOWN_OUT", "osd.3"))
    assert planned == [("osd-start", "osd.3", True)]


@pytest.mark.parametrize("findings, cmd, message", [
    ([_down_out(2), PG], g.FixFinding("OSD_DOWN_IN"),
     "no current finding `OSD_DOWN_IN` on lab; did you mean `OSD_DOWN_OUT`? (current: "
     "OSD_DOWN_OUT, PGS_STUCK)"),
    ([], g.FixFinding("OSD_DOWN_OUT"),
     "no current finding `OSD_DOWN_OUT` on lab (current: none)"),
    ([_down_out(2)], g.FixFinding("OSD_DOWN_OUT", "osd.9"),
     "`OSD_DOWN_OUT` is not reported for `osd.9`"),
    ([PG], g.FixFinding("PGS_STUCK"),
     "`PGS_STUCK` has no runbook that fixes it: see the finding's message"),
    ([_down_out(2), _down_out(3)], g.FixFinding("OSD_DOWN_OUT"),
     "`OSD_DOWN_OUT` is reported for several targets (osd.2, osd.3): name one, e.g. "
     "`fix OSD_DOWN_OUT osd.2`"),
])
def test_bot_fix_finding_refusals_keep_their_wording(findings: list[Finding],
                                                     cmd: g.FixFinding, message: str) -> None:
    bot, planned = _bot(findings)
    with pytest.raises(BotError) as ei:
        bot.answer(WHERE, "lab", cmd)
    assert str(ei.value) == message
    assert planned == []


def test_bot_command_table_answers_every_grammar_command() -> None:
    commands = set(typing.get_args(g.Command))
    assert commands and commands <= set(Commands._COMMANDS)
    assert all(callable(h) for h in Commands._COMMANDS.values())


def test_bot_plan_and_fix_share_a_handler_and_only_fix_has_buttons() -> None:
    bot, planned = _bot([])
    bot._check_target = lambda cluster, runbook, target: None  # type: ignore[method-assign]
    bot.answer(WHERE, "lab", g.Plan("osd-start", "osd.1"))
    bot.answer(WHERE, "lab", g.Fix("osd-start", "osd.1"))
    assert planned == [("osd-start", "osd.1", False), ("osd-start", "osd.1", True)]


# --------------------------------------------------------------------------- CLI

class _Svc:
    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        self.checked: list[tuple[str | None, list[str] | None, str]] = []
        self.buf = io.StringIO()
        self.env = SimpleNamespace(term=SimpleNamespace(out=Console(file=self.buf, width=200)),
                                   cluster_name=lambda name: name or "lab")

    def check(self, cluster: str | None, source: str, only: list[str] | None = None
              ) -> Any:  # the service's check
        self.checked.append((cluster, only, source))
        return _outcome(self.findings)

    def fix_for(self, cluster: str | None, code: str, target: str | None, source: str
                ) -> Any:  # the service's one call: the check, then the core's choice
        from core.service import fixes

        out = self.check(cluster, source)
        return out, fixes.choose_fix(out.report.findings, code, target, out.incidents)


def _args(code: str, entity: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(finding=code, entity=entity, cluster=None)


def test_cli_finding_picks_the_fix_and_says_which_finding() -> None:
    env = _Svc([_down_out(2), _down_out(3)])
    assert _pick_finding(env, _args(" osd_down_out ", "osd.3")) == (  # type: ignore[arg-type]
        "osd-start", "osd.3", SNAP)
    # the whole check (which finding is a root is the correlation's), not only that code
    assert env.checked == [("lab", None, "cli-fix")]
    assert "OSD_DOWN_OUT osd.3: osd.3 is down and out" in env.buf.getvalue()


@pytest.mark.parametrize("findings, code, entity, exc, message", [
    # a known code with no finding: said with the cluster, not as "nothing to fix" (27.8)
    ([PG], "OSD_DOWN_OUT", None, Refused,
     "no OSD_DOWN_OUT finding on cluster lab right now (checked just now)"),
    ([_down_out(2)], "OSD_DOWN_OUT", "osd.9", Refused,
     "no OSD_DOWN_OUT finding for osd.9 on cluster lab right now (checked just now; it is "
     "reported for osd.2)"),
    # a code no check reports: a typo (exit 64), with the closest code, and no check run
    ([_down_out(2)], "OSD_DATA_UNMOUNT", None, UserError,
     "unknown finding code OSD_DATA_UNMOUNT: did you mean OSD_DATA_UNMOUNTED?"),
    ([_down_out(2)], "\u041eSD_DOWN_OUT", None, UserError,
     "unknown finding code \u041eSD_DOWN_OUT: did you mean OSD_DOWN_OUT?"),
    ([PG], "pgs_stuck", None, Refused,
     "PGS_STUCK has no runbook that fixes it (pg 1.0 stuck peering)"),
    ([_down_out(2), _down_out(3)], "OSD_DOWN_OUT", "", UserError,
     "2 OSD_DOWN_OUT findings: pick one with --entity: osd.2 (target osd.2); "
     "osd.3 (target osd.3)"),
])
def test_cli_finding_refusals_keep_their_wording_and_exit_class(
        findings: list[Finding], code: str, entity: str | None, exc: type[Exception],
        message: str) -> None:
    env = _Svc(findings)
    with pytest.raises(exc) as ei:
        _pick_finding(env, _args(code, entity))  # type: ignore[arg-type]
    assert str(ei.value) == message
    if message.startswith("unknown"):
        assert env.checked == []  # refused before any check ran


def test_bot_maintenance_plans_its_runbook_with_the_window() -> None:
    """``maintenance start HOST for 2h`` / ``end HOST`` in Slack: the runbook's plan with
    Confirm/Cancel (the same path as ``fix``), the window passed as typed."""
    bot, planned = _bot([])
    opts: list[Any] = []
    plan_reply = bot.actions.plan_reply

    def recording(where: Where, cluster: str, runbook: str, target: str, buttons: bool,
                  options: Any = None) -> Any:
        opts.append(options)
        return plan_reply(where, cluster, runbook, target, buttons, options)
    bot.actions = SimpleNamespace(plan_reply=recording)  # type: ignore[assignment]
    assert bot.answer(WHERE, "lab", g.parse("maintenance start node2 for 2h")) == "the plan"
    assert bot.answer(WHERE, "lab", g.parse("maintenance end node2")) == "the plan"
    assert planned == [("maintenance-start", "node2", True), ("maintenance-end", "node2", True)]
    assert opts == [{"for": "2h"}, {}]
