"""Issue 39.2: the two-person rule is decided in one core call
(``core.policy.Authorizer.second_person``); the CLI (``stordoc fix --approval``) and the
bot (its Confirm button, pressed over real HTTP) only word the answer. For a matrix of
cluster (two_person or not), runbook (a plan that asks for a second person, one that does
not, one that always needs two people) and approver (the requester, another operator, a
viewer), both front ends give the policy's answer; and when the call is made to answer
otherwise, both follow it (a front end that decided by itself would not)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import approvals
from core.errors import UserError
from core.policy import Authorizer, SecondPerson
from core.settings import parse_settings
from runbooks.model import Plan
from stordoc.commands.runbooks import _second_person
from tests.support.fake_slack import BotHarness
from tests.support.poll import wait_until

ALICE, CAROL, DAVE = "UALICE001", "UCAROL001", "UDAVE0001"  # requester, operator, viewer
ROLES = {"lab": {"operators": [ALICE, CAROL], "viewers": [DAVE], "two_person": True},
         "prod": {"operators": [ALICE, CAROL], "viewers": [DAVE]}}
# (runbook, does its plan ask for a second person)
RUNBOOKS = [("osd-remount", True), ("osd-start", False), ("pg-mark-unfound-lost", True)]
MATRIX = [(c, rb, second, who) for c in ("lab", "prod") for rb, second in RUNBOOKS
          for who in (ALICE, CAROL)] + [
    (c, "pg-mark-unfound-lost", True, DAVE) for c in ("lab", "prod")]

# what each front end's words mean, as one comparable answer
RUNS, SAME, NOT_AUTHORIZED = "runs", "same person", "not authorized"


def _meaning(answer: SecondPerson) -> str:
    return {SecondPerson.SAME_PERSON: SAME, SecondPerson.NOT_AUTHORIZED: NOT_AUTHORIZED,
            SecondPerson.MISSING: SAME}.get(answer, RUNS)


@pytest.fixture(scope="module")
def h(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BotHarness]:
    tmp = tmp_path_factory.mktemp("policy")
    conf = tmp / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    settings = parse_settings({"journal": str(tmp / "j.db"), "default_cluster": "lab",
                               "clusters": {c: {"ceph": {"conf": str(conf), "timeout": 1}}
                                            for c in ("lab", "prod")}})
    harness = BotHarness(settings, ROLES, str(tmp / "bot.db"), throttle_s=0.0)

    def no_plan(*_: Any, **__: Any) -> Any:  # past the two-person rule: nothing to run here
        from core.service.actions import ActionRefused

        raise ActionRefused("no plan in this test")
    harness.bot.backend.actions.plan = no_plan  # type: ignore[method-assign]
    yield harness
    harness.close()


def _cli(h: BotHarness, tmp: Path, cluster: str, runbook: str, second: bool,
         approver: str) -> str:
    """``stordoc fix``'s second-person step (the runner: alice) with an approval by
    ``approver`` where one is needed; its words as an answer."""
    plan = Plan(runbook=runbook, cluster=cluster, target="osd.1", params={}, steps=(),
                verify_codes=(), needs_second_person=second)
    try:
        _second_person(h.env, argparse.Namespace(approval=None, approved_by=None), cluster,
                       plan, ALICE)
        return RUNS  # no second person needed: alice runs it
    except UserError as e:
        assert "needs two people" in str(e), e
    f = tmp / f"approval-{time.monotonic_ns()}"
    f.write_text(approvals.statement(approvals.request_for(plan), approver, time.time() + 600)
                 + "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n")
    try:
        _second_person(h.env, argparse.Namespace(approval=str(f), approved_by=None), cluster,
                       plan, ALICE)
    except UserError as e:
        if "cannot approve their own run" in str(e):
            return SAME
        if "is not an admin or operator" in str(e):
            return NOT_AUTHORIZED
        assert "has no public key" in str(e), e  # the policy said yes; the keys are next
        return RUNS
    raise AssertionError("an approval without a key was accepted")


def _bot(h: BotHarness, cluster: str, runbook: str, second: bool, approver: str) -> str:
    """The Confirm button of alice's plan pressed by ``approver``; the bot's words as an
    answer."""
    tok = h.bot.store.new_button("confirm", cluster, runbook, "osd.1", ALICE, 900,
                                 {"second_person": second, "fingerprint": "-", "cancel": ""})
    before = len(h.ephemerals())
    assert h.slack.press("confirm", tok, approver, "1700000000.000100").status == 200
    wait_until(lambda: len(h.ephemerals()) > before, 30,
               lambda: f"no answer to {approver}'s Confirm of {runbook} on {cluster}")
    text = str(h.ephemerals()[before].params.get("text", ""))
    if "two-person rule" in text:
        return SAME
    if "is not allowed: this needs the *operator*" in text:
        return NOT_AUTHORIZED
    assert "no plan in this test" in text, text  # past every check: it would run
    return RUNS


def test_the_cli_and_the_bot_give_the_policys_answer(h: BotHarness, tmp_path: Path) -> None:
    pol = Authorizer.from_settings(h.env.settings)
    got = {(c, rb, who): (_cli(h, tmp_path, c, rb, second, who), _bot(h, c, rb, second, who))
           for c, rb, second, who in MATRIX}
    want = {(c, rb, who): (_meaning(pol.second_person(c, rb, second, ALICE, who)),) * 2
            for c, rb, second, who in MATRIX}
    assert got == want
    # the matrix holds every answer: not needed, given, the requester, not authorized
    assert {v[0] for v in got.values()} == {RUNS, SAME, NOT_AUTHORIZED}


@pytest.mark.parametrize("forced", [SecondPerson.SAME_PERSON, SecondPerson.NOT_NEEDED])
def test_both_front_ends_follow_the_one_call(h: BotHarness, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             forced: SecondPerson) -> None:
    """The call made to say "the requester approved" (or "not needed") everywhere: both
    front ends say so, even where the real rule says otherwise."""
    asked: list[tuple[str, str]] = []

    def second_person(self: Authorizer, cluster: str, runbook: str, second: bool,
                      requester: str, approver: str | None) -> SecondPerson:
        asked.append((cluster, runbook))
        return forced
    monkeypatch.setattr(Authorizer, "second_person", second_person)
    # prod, osd-start: no second person by the real rule; lab, pg-mark-unfound-lost: always
    for c, rb, second in (("prod", "osd-start", False), ("lab", "pg-mark-unfound-lost", True)):
        asked.clear()
        assert _bot(h, c, rb, second, CAROL) == _meaning(forced)
        assert asked, "the bot decided without the policy"
        asked.clear()
        assert _cli(h, tmp_path, c, rb, second, CAROL) == _meaning(forced)
        assert asked, "the CLI decided without the policy"
