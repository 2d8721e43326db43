"""One fix policy (core.service.fixes), seen through the three front ends: every lab
scenario's saved snapshot (both releases) is shown by the bot (its Fix buttons, as stored
for the press), the CLI (``stordoc fix --finding CODE --entity E``) and the TUI (``x``
on an incident, on each finding, on an OSD); for every finding all three offer the same
fix: its incident's one next step, the root's for a consequence, or none."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from bot import render as r
from bot.commands import Commands
from checks.incidents import Incident
from checks.model import Finding
from core.service.snapshots import Replay
from core.slack.store import BotStore
from runbooks.model import Refused
from storage.journal import Journal
from stordoc.commands.runbooks import _pick_finding
from tests.unit.test_replay import PAIRS, replay
from tests.unit.test_tui_app import settle, sync
from tui import screens as S
from tui.app import StordocApp
from tui.messages import OpenRunbook
from tui.saved import SavedSnapshotBackend
from tui.table import VirtualTable

Fix = tuple[str, str] | None


def expected(out: Any) -> dict[tuple[str, str], Fix]:
    """Each finding of an incident -> that incident's next step (the policy's input)."""
    want: dict[tuple[str, str], Fix] = {}
    for inc in out.incidents:
        step = (inc.next_step.runbook, inc.next_step.target) if inc.next_step else None
        for f in inc.findings:
            want.setdefault(f.key, step)  # a finding in two incidents: the worse one's
    return want


# --------------------------------------------------------------------------- bot

def bot_offers(out: Any, tmp: Path) -> tuple[dict[str, Fix], dict[tuple[str, str], Fix]]:
    """(incident id -> Fix button, finding key -> its Fix button) as the bot stores them
    for the press: the health reply's buttons and the OSD/findings views' ones."""
    # the bot's command handlers, holding (by composition) only the store and the ttl
    bot = Commands(SimpleNamespace(store=BotStore(Journal(str(tmp / "bot.db"))),  # type: ignore[arg-type]
                                   ttl=600), None)  # type: ignore[arg-type]

    def stored(token: str | None) -> Fix:
        if token is None:
            return None
        b = bot.core.store.button(token)
        assert b is not None and b.kind == "fix"
        return (b.runbook, b.target)

    per_incident: dict[str, Fix] = {}
    tok = bot.incident_token_for("lab", "U1")
    for inc in out.incidents:
        per_incident[inc.id] = stored(tok(inc))
    # the health reply carries exactly those buttons
    ceph = out.snapshot.ceph
    made: list[str | None] = []

    def spy(inc: Incident) -> str | None:
        made.append(tok(inc))
        return made[-1]
    reply = r.health_reply("lab", out.report.verdict, out.incidents, out.report.findings,
                           spy, ceph.health_status if ceph else None)
    shown = [b["accessory"]["value"] for m in reply.messages for b in m.blocks
             if b.get("accessory", {}).get("action_id") == "fix"]
    assert sorted(map(str, shown)) == sorted(t for t in made if t)
    ftok = bot.token_for("lab", "U1", out.incidents)
    per_finding = {f.key: stored(ftok(f)) for f in out.report.findings}
    return per_incident, per_finding


# --------------------------------------------------------------------------- CLI

class _Svc:
    def __init__(self, out: Any) -> None:
        self.out = out
        self.env = SimpleNamespace(term=SimpleNamespace(out=Console(file=io.StringIO(),
                                                                    width=200)),
                                   cluster_name=lambda name: name or "lab")

    def check(self, cluster: str | None, source: str, only: Any = None) -> Any:
        return self.out

    def fix_for(self, cluster: str | None, code: str, target: str | None, source: str
                ) -> Any:  # the real service's one call, on this check
        from core.service import Service

        return Service.fix_for(self, cluster, code, target, source)  # type: ignore[arg-type]


def cli_offer(out: Any, f: Finding) -> Fix:
    args = argparse.Namespace(finding=f.code, entity=f.entity, cluster=None)
    try:
        runbook, target, _ = _pick_finding(_Svc(out), args)  # type: ignore[arg-type]
    except Refused as e:
        # no runbook for that code, or its runbook refuses now (the incident's reason)
        assert "has no runbook" in str(e) or "no runbook runs now" in str(e), e
        return None
    return (runbook, target)


# --------------------------------------------------------------------------- TUI

class _Recording(StordocApp):
    CSS_PATH = str(Path(S.__file__).resolve().parent.parent / "app.tcss")
    opened: list[tuple[str, str]]

    def open_runbook(self, runbook: str, target: str) -> None:
        self.opened.append((runbook, target))


async def tui_offers(rp: Replay) -> tuple[dict[str, Fix], dict[tuple[str, str], Fix],
                                          dict[str, Fix]]:
    """(incident id -> x on the overview, finding key -> x on the findings screen,
    osd.N -> x on the OSD screen). What a screen offers is the ``OpenRunbook`` it posts
    (read as it is posted: no wait per key); that the App opens the runbook a screen
    posts is checked once per scenario, end to end."""
    app = _Recording(SavedSnapshotBackend(rp), rp.doc.cluster, read_only=False, refresh_s=0,
                     thresholds=rp.thresholds, user="tester")
    app.opened = []
    posted: list[tuple[str, str]] = []

    def capture(scr: Any) -> None:
        orig = scr.post_message

        def post(msg: Any) -> bool:
            if isinstance(msg, OpenRunbook):
                posted.append((msg.runbook, msg.target))
                return True
            return bool(orig(msg))
        scr.post_message = post

    def pressed(action: Any) -> Fix:
        n = len(posted)
        action()
        assert len(posted) in (n, n + 1)
        return posted[-1] if len(posted) == n + 1 else None

    incs: dict[str, Fix] = {}
    finds: dict[tuple[str, str], Fix] = {}
    osds: dict[str, Fix] = {}
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        scr = app.screen
        assert isinstance(scr, S.OverviewScreen)
        t = scr.query_one("#incidents", VirtualTable)
        first = next((i for i in rp.outcome.incidents if i.next_step), None)
        if first is not None:  # end to end: the key, the message, the App opening it
            t.move_cursor(row=t.get_row_index(f"incident:{first.id}"))
            scr.action_fix()
            await pilot.pause()
            assert first.next_step is not None
            assert app.opened == [(first.next_step.runbook, first.next_step.target)]
        capture(scr)
        for inc in rp.outcome.incidents:
            t.move_cursor(row=t.get_row_index(f"incident:{inc.id}"))
            incs[inc.id] = pressed(scr.action_fix)
        app.goto("findings")
        await settle(app, pilot)
        scr = app.screen
        assert isinstance(scr, S.FindingsScreen)
        capture(scr)
        t = scr.query_one("#findings", VirtualTable)
        for f in rp.outcome.report.findings:
            t.move_cursor(row=t.get_row_index(f"finding:{f.code}:{f.entity}"))
            finds[f.key] = pressed(scr.action_fix)
        if rp.outcome.snapshot.ceph is not None:
            app.goto("osds")
            await settle(app, pilot)
            scr = app.screen
            assert isinstance(scr, S.OsdScreen)
            capture(scr)
            t = scr.query_one("#osds", VirtualTable)
            for o in rp.outcome.snapshot.ceph.osds:
                t.move_cursor(row=t.get_row_index(f"osd.{o.id}"))
                osds[f"osd.{o.id}"] = pressed(scr.action_fix)
    return incs, finds, osds


# --------------------------------------------------------------------------- the test

@pytest.mark.parametrize("release,name", PAIRS)
def test_bot_cli_and_tui_offer_the_same_fix(release: str, name: str, tmp_path: Path
                                            ) -> None:
    rp = replay(release, name)
    out = rp.outcome
    want = expected(out)
    bot_inc, bot_find = bot_offers(out, tmp_path)
    if release != "pacific" and ("pacific", name) in PAIRS:
        # the TUI asks the same core calls whatever the release: its keys are driven on
        # each Pacific scenario and on Reef's own (a TUI app per scenario is this file's
        # cost); the bot and the CLI are asked on every scenario of both
        tui_inc, tui_find, tui_osd = None, None, {}
    else:
        tui_inc, tui_find, tui_osd = _run(tui_offers(rp))
    for inc in out.incidents:
        step = (inc.next_step.runbook, inc.next_step.target) if inc.next_step else None
        assert bot_inc[inc.id] == step, inc.id
        assert tui_inc is None or tui_inc[inc.id] == step, inc.id
    for f in out.report.findings:
        if f.key not in want:
            continue  # INFO and muted-by-policy findings belong to no incident
        w = want[f.key]
        root = any(i.root.key == f.key for i in out.incidents)
        # the bot's button sits on the root only; typed or keyed, the same fix
        assert bot_find[f.key] == (w if root else None), f.key
        assert cli_offer(out, f) == w, f.key
        assert tui_find is None or tui_find[f.key] == w, f.key
    # x on an OSD: the fix of the worst incident that holds one of its findings
    for osd, got in tui_osd.items():
        holding = [i for i in out.incidents if any(x.entity == osd for x in i.findings)
                   and i.next_step is not None]
        first = holding[0].next_step if holding else None
        assert got == ((first.runbook, first.target) if first else None), osd


def _run(coro: Any) -> Any:
    box: list[Any] = []

    @sync
    async def go() -> None:
        box.append(await coro)
    go()
    return box[0]
