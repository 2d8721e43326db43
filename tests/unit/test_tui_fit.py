"""The TUI at 80x24, as on-call meets it on a laptop: every step of a plan and the
confirm button reachable (and the text naming only what is), the step log wrapped, the
cursor on the first finding, stordoc's own keys first in the help, and q or Ctrl-C while
a fix runs saying what happens to the run, stopping it only after its cleanup.

A fix needs a cluster; ``FixBackend`` is the captured data plus a real plan (osd-remount
osd.1, planned by the runbooks layer on the saved seed fault) and a stand-in executor that
keeps the real one's contract: a cancel stops it before the next step (or ends a wait),
the cleanup steps of what was done still run, and the result says so.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from core.service.actions import ActionPlan, PlanKind
from runbooks.model import EventKind, RunEvent
from tests.support.tui import pilot_wait, settle, sync
from tests.support.tui_backend import SnapshotBackend
from tests.unit.test_tui_app import make_app
from tests.unit.test_tui_data import (
    audit,
    audit_steps,
    bench_history,
    broken_findings,
    broken_snapshot,
    history,
    target,
)
from tui import screens as S
from tui.backend import LogSink, RunView, log_line
from tui.table import VirtualTable

SMALL = (80, 24)


def fix_plan() -> ActionPlan:
    """The seed fault's real plan: six steps, a cleanup (clear noout) for step 1."""
    from tests.unit.test_replay import RELEASES
    from tests.unit.test_replay_plans import plan_of

    p = plan_of(RELEASES[0], "osd-unmounted-out", "osd-remount", "osd.1")
    return ActionPlan(PlanKind.RUNBOOK, "octopus", p.runbook, p.target, tuple(p.lines()),
                      False, False, p.to_dict(), "test", "tester", (None, p))  # type: ignore[arg-type]


@dataclass
class FixBackend(SnapshotBackend):
    """Captured data that plans and "runs" osd-remount osd.1: step 1 is done at once, step
    2 waits for ``proceed`` (or a cancel, as the real executor's waits do), cleanup takes
    ``cleanup_s``."""

    proceed: threading.Event = field(default_factory=threading.Event)
    cleanup_s: float = 0.3
    step_s: float = 0.0
    cleaned: list[str] = field(default_factory=list)
    ended: threading.Event = field(default_factory=threading.Event)

    def plan(self, cluster: str, runbook: str, target: str,
             options: Any = None) -> ActionPlan:
        return fix_plan()

    def execute(self, cluster: str, plan: ActionPlan, on_event: LogSink,
                cancel: threading.Event) -> RunView:
        p = plan.runbook_plan
        assert p is not None
        emit = lambda ev: on_event(log_line(ev))  # noqa: E731
        emit(RunEvent(EventKind.PLAN, None, p.runbook, "\n".join(p.lines())))
        done: list[int] = []
        stop = ""
        for s in p.steps:
            if cancel.is_set():
                stop = f"cancelled before step {s.index}"
                emit(RunEvent(EventKind.CANCELLED, s.index, s.title, stop))
                break
            emit(RunEvent(EventKind.STEP_STARTED, s.index, s.title, s.command))
            if s.index > 1:
                if self.step_s:
                    cancel.wait(self.step_s)
                else:
                    while not (self.proceed.is_set() or cancel.is_set()):
                        cancel.wait(0.02)
                if cancel.is_set():
                    stop = f"cancelled during step {s.index}"
                    emit(RunEvent(EventKind.CANCELLED, s.index, s.title, stop))
                    break
            done.append(s.index)
            emit(RunEvent(EventKind.STEP_DONE, s.index, s.title, "ok"))
        if stop:
            for s in p.steps:
                if s.cleanup_of in done and s.index not in done:
                    emit(RunEvent(EventKind.STEP_STARTED, s.index, s.title,
                                  f"cleanup: {s.command}"))
                    time.sleep(self.cleanup_s)  # a real `ceph osd unset noout`
                    self.cleaned.append(s.command)
                    done.append(s.index)
                    emit(RunEvent(EventKind.STEP_DONE, s.index, s.title, "cleanup"))
        names = [f"{s.index}. {s.title}" for s in p.steps if s.index in done]
        msg = (f"{stop}. Done: {', '.join(names) or 'nothing'}" if stop  # as the executor
               else f"{p.runbook} {p.target}: {len(done)} step(s) done; verified: "
                    f"{', '.join(p.verify_codes)} cleared")
        emit(RunEvent(EventKind.DONE, None, "cancelled" if stop else "success", msg,
                      ok=not stop))
        self.ended.set()
        return RunView(not stop, msg)


def fix_backend(**kw: Any) -> FixBackend:
    return FixBackend(broken_snapshot(), broken_findings(), target(), history(), audit(),
                      bench_history(), audit_step_rows=audit_steps(), **kw)


def plain(widget: Any) -> str:
    r = widget.render()
    return r.plain if isinstance(r, Text) else str(r)


def visible(app: Any, widget: Any) -> bool:
    """Is the widget wholly inside the terminal and inside its scrolling parents?"""
    region = widget.region
    if region.area == 0:
        return False
    screen = app.screen.region
    return screen.contains_region(region) and all(
        w.region.contains_region(region) for w in widget.ancestors_with_self[1:]
        if hasattr(w, "region") and w.region.area and w is not app.screen
        and w is not app)


async def open_fix(app: Any, pilot: Any) -> S.RunbookScreen:
    """From the overview: x plans the top incident's fix."""
    await settle(app, pilot)
    await pilot.press("x")
    scr = app.screen
    assert isinstance(scr, S.RunbookScreen)
    await pilot_wait(pilot, lambda: scr.plan is not None)
    await pilot.pause()
    return scr


def log_text(scr: S.RunbookScreen) -> str:
    log = scr.query_one("#runlog")
    return "\n".join("".join(seg.text for seg in strip) for strip in log.lines)


def render_plain(widget: Any, width: int = 200) -> str:
    """What a Static shows (a Text or any Rich renderable), as plain text."""
    import io

    from rich.console import Console

    con = Console(width=width, file=io.StringIO(), record=True)
    con.print(widget.content)
    return con.export_text()


async def start_fix(app: Any, pilot: Any, b: FixBackend) -> S.RunbookScreen:
    """Plan, confirm, and wait until the run sits in step 2 (step 1, set noout, done)."""
    scr = await open_fix(app, pilot)
    await pilot.press("a")
    await pilot.pause()
    await pilot.press("y")
    await pilot_wait(pilot, lambda: scr.running and "step 2/6 started: mount" in log_text(scr))
    return scr


@sync
async def test_every_step_and_the_confirm_button_are_reachable_at_80x24() -> None:
    app = make_app(fix_backend())
    async with app.run_test(size=SMALL) as pilot:
        scr = await open_fix(app, pilot)
        plan = render_plain(scr.query_one("#plan"))
        for step in ("1. [ceph] set noout", "5. [ceph] mark osd.1 in", "6. [ceph] clear noout"):
            assert step in plan, plan
        pane = scr.query_one("#plan-scroll")
        # the whole plan is taller than the pane: it scrolls, and the head says how
        await pilot_wait(pilot, lambda: "scroll the plan" in plain(scr.query_one("#plan-head")))
        head = plain(scr.query_one("#plan-head"))
        assert pane.max_scroll_y > 0
        assert "a applies" in head
        await pilot.press("end")  # the pane has the focus: End shows the last step
        await pilot.pause()
        assert pane.scroll_y == pane.max_scroll_y > 0

        await pilot.press("a")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, S.ConfirmModal)
        await pilot.pause()
        # both buttons on screen, inside the box: what the title names is there
        for sel in ("#yes", "#no"):
            assert visible(app, modal.query_one(sel)), (sel, modal.query_one(sel).region)
        title = plain(modal.query_one("#confirm-title"))
        assert "y runs them, n or Esc cancels" in title and "red button" not in title
        shown = render_plain(modal.query_one("#confirm-plan"))
        assert "6. [ceph] clear noout" in shown and "ceph osd unset noout" in shown
        cmds = modal.query_one("#confirm-cmds")
        assert cmds.max_scroll_y > 0 and "scroll the commands" in str(cmds.border_subtitle)
        await pilot.press("end")  # the commands have the focus: every step is reachable
        await pilot.pause()
        assert cmds.scroll_y == cmds.max_scroll_y
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is scr and "not confirmed: nothing was run" in log_text(scr)


@sync
async def test_the_step_log_wraps_instead_of_losing_the_right_edge() -> None:
    b = fix_backend()
    app = make_app(b)
    async with app.run_test(size=SMALL) as pilot:
        scr = await start_fix(app, pilot, b)
        b.proceed.set()
        await pilot_wait(pilot, lambda: scr.done is not None)
        await pilot.pause()
        log = scr.query_one("#runlog")
        assert log.max_scroll_y > 0  # a full log: its scrollbar takes two columns
        width = log.scrollable_content_region.width
        assert all(strip.cell_length <= width for strip in log.lines), width
        text = log_text(scr).replace("\n", "")
        cmd = ("mount -t xfs -o noatime /dev/loop12 "
               "/var/tmp/stordoc-snapshots-pacific/ceph/osd/ceph-1")
        assert cmd.replace(" ", "") in text.replace(" ", "")  # every character, wrapped
        assert scr.done is not None and len(scr.done.summary) > width
        assert scr.done.summary.replace(" ", "") in text.replace(" ", "")


@sync
async def test_q_while_a_fix_runs_says_what_happens_then_stops_after_cleanup() -> None:
    b = fix_backend()
    app = make_app(b)
    exits: list[tuple[list[str], bool]] = []
    real_exit = app.exit

    def exit_spy(*a: Any, **kw: Any) -> None:
        exits.append((list(b.cleaned), b.ended.is_set()))
        real_exit(*a, **kw)

    app.exit = exit_spy  # type: ignore[method-assign]
    async with app.run_test(size=SMALL) as pilot:
        scr = await start_fix(app, pilot, b)
        await pilot.press("ctrl+c")  # Ctrl-C: says what q does, never drops the run
        await pilot.pause()
        said = log_text(scr)
        assert "a fix is running (osd-remount osd.1): q again stops it" in said, said
        assert "6. clear noout" in said and "locks are released" in said
        assert exits == [] and scr.running
        await pilot.press("q")  # the second press stops it; the screen stays meanwhile
        await pilot.pause()
        assert "quitting: stopping the run" in log_text(scr)
        await pilot_wait(pilot, lambda: bool(exits))
    assert exits == [(["ceph osd unset noout"], True)]  # quit only after the cleanup ran
    assert b.proceed.is_set() is False  # the run never went on to step 3


@sync
async def test_no_cursor_key_stops_a_fix_and_s_stops_it_only_after_a_yes() -> None:
    """A tester pressed k ("up" in the help) in the run log: the fix was cancelled. Every
    key that moves a cursor or scrolls now leaves the run alone; ``s`` asks, ``n`` or Esc
    keeps it running, ``y`` stops it before its next step. The log says it in words."""
    b = fix_backend()
    app = make_app(b)
    async with app.run_test(size=SMALL) as pilot:
        try:
            await _keys_then_stop(app, pilot, b)
        finally:  # a failed assertion never leaves the run's thread waiting for good
            b.proceed.set()


async def _keys_then_stop(app: Any, pilot: Any, b: FixBackend) -> None:
    """Cursor keys, then s with n and Esc (the run goes on), then s and y."""
    scr = await start_fix(app, pilot, b)
    for key in ("k", "j", "up", "down", "g", "G", "home", "end", "pageup", "pagedown",
                "left", "right", "tab"):
        await pilot.press(key)
        await pilot.pause()
        assert not scr.cancel_event.is_set() and scr.running, key
        assert app.screen is scr, key
    for no in ("n", "escape"):
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, S.StopModal)
        assert "6. clear noout" in app.screen.question
        await pilot.press(no)
        await pilot.pause()
        assert app.screen is scr and scr.running and not scr.cancel_event.is_set()
    await pilot.press("s")
    await pilot.pause()
    await pilot.press("y")
    await pilot_wait(pilot, lambda: scr.done is not None)
    await pilot.pause()
    assert scr.cancel_event.is_set() and b.proceed.is_set() is False
    text = log_text(scr)
    assert "[" + "step_started]" not in text and "_done]" not in text, text
    assert "step 1/6 started: set noout" in text and "step 1/6 done: set noout" in text
    assert "step 2/6 cancelled: mount" in text, text
    assert "step 6/6 started: clear noout" in text  # the cleanup still ran
    assert "FAILED: cancelled during step 2" in text


@sync
async def test_q_with_nothing_running_quits_at_once() -> None:
    app = make_app(fix_backend())
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        assert app._exit  # no question when nothing runs


@sync
async def test_cursor_starts_on_the_first_finding_so_m_and_x_act_at_once() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        await pilot.press("f")
        await settle(app, pilot)
        t = app.screen.query_one("#findings", VirtualTable)
        assert t.cursor_data is not None and t.cursor_data.kind == "finding"
        first = min((f for f in broken_findings() if f.severity.label == "crit"),
                    key=lambda f: (f.code, f.entity))
        assert app.screen._selected() == first
        # the whole finding, wrapped under the table (its cells are cut at 80 columns)
        line = plain(app.screen.query_one("#finding-line"))
        assert first.message in line and f"x: {first.runbook} {first.target}" in line
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, S.MuteModal)


@sync
async def test_help_starts_with_stordocs_own_keys() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        for section, first_line in (("f", "Findings: x Fix"), ("o", "Overview: x Fix"),
                                    ("d", "OSDs (CRUSH tree by host): ")):
            await pilot.press(section)
            await settle(app, pilot)
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, S.HelpScreen)
            lines = app.screen.text.plain.splitlines()
            assert lines[0].startswith(first_line), lines[0]
            assert "x Fix" in lines[0]
            assert any(ln.startswith("Go to: o Overview") for ln in lines[:4])
            generic = lines.index("Moving around")
            assert "Cursor up" in "\n".join(lines[generic:])  # Textual's keys come last
            await pilot.press("escape")
            await pilot.pause()


@sync
async def test_incident_screen_shows_the_whole_next_step() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        inc = app.state.outcome.incidents[0]  # type: ignore[union-attr]
        line = plain(app.screen.query_one("#incident-line"))
        assert inc.next_step is not None
        assert f"x runs {inc.next_step.runbook} {inc.next_step.target}" in line
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, S.IncidentScreen) and app.screen.incident == inc
        await pilot.press("x")
        await settle(app, pilot)
        assert isinstance(app.screen, S.RunbookScreen)
        assert (app.screen.runbook, app.screen.target_name) == (inc.next_step.runbook,
                                                                inc.next_step.target)
