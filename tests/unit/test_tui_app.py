"""Pilot tests of the App on captured data: navigation, filters, read-only, keymap,
stale data on an unreachable cluster, timeouts and no overlapping refresh."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from textual.widgets import DataTable

from checks.model import Finding, Severity
from tests.support.tui import pilot_wait, settle, sync
from tests.support.tui_backend import SnapshotBackend
from tests.unit.test_tui_data import (
    TAKEN_AT,
    audit,
    audit_steps,
    bench_history,
    broken_findings,
    broken_snapshot,
    history,
    target,
)
from tui import screens as S
from tui.app import StordocApp
from tui.table import VirtualTable

SIZE = (150, 40)


def backend(**kw: Any) -> SnapshotBackend:
    return SnapshotBackend(broken_snapshot(), broken_findings(), target(), history(), audit(),
                           bench_history(), audit_step_rows=audit_steps(), **kw)


def make_app(b: SnapshotBackend | None = None, **kw: Any) -> StordocApp:
    kw.setdefault("refresh_s", 0)
    kw.setdefault("clock", lambda: TAKEN_AT + 42)
    return StordocApp(b or backend(), **kw)


def table_keys(app: StordocApp, sel: str) -> list[str]:
    t = app.screen.query_one(sel)
    assert isinstance(t, DataTable | VirtualTable), t
    return [str(rk.value) for rk in t.rows]


@sync
async def test_navigation_drill_down_and_back() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, S.OverviewScreen)
        await pilot.press("d")
        assert isinstance(app.screen, S.OsdScreen)
        assert table_keys(app, "#osds")[:2] == ["host:compute1", "osd.1"]
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, S.OsdDetailScreen) and app.screen.osd_id == 1
        await pilot.press("escape")
        assert isinstance(app.screen, S.OsdScreen)
        await pilot.press("f")
        assert isinstance(app.screen, S.FindingsScreen)
        assert len(app.screen_stack) == 3  # default, overview, findings: no pile-up
        await pilot.press("enter")  # the cursor starts on the first finding
        await pilot.pause()
        assert isinstance(app.screen, S.FindingDetailScreen)
        assert app.screen.finding.code == "OSD_DATA_UNMOUNTED"
        for key, cls in (("p", S.PoolScreen), ("c", S.CacheScreen), ("w", S.SwiftScreen),
                         ("h", S.HistoryScreen), ("o", S.OverviewScreen)):
            await pilot.press(key)
            await settle(app, pilot)
            assert isinstance(app.screen, cls), key
        await pilot.press("escape")
        assert isinstance(app.screen, S.OverviewScreen)  # the base stays


@sync
async def test_slash_filters_the_current_table_and_esc_clears() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("d", "slash")
        await pilot.press(*"osd.2")
        await pilot.pause()
        assert table_keys(app, "#osds") == ["host:compute2", "osd.2"]
        await pilot.press("enter")  # keeps the filter, back to the table
        assert app.screen.needle == "osd.2"
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert len(table_keys(app, "#osds")) == 6


@sync
async def test_osd_state_and_host_filters_cycle() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("d", "u")  # all -> down
        await pilot.pause()
        assert table_keys(app, "#osds") == ["host:compute1", "osd.1"]
        await pilot.press("u", "u", "u", "u")  # out, up, in, back to all
        await pilot.press("n", "n")  # host: compute1, compute2
        await pilot.pause()
        assert table_keys(app, "#osds") == ["host:compute2", "osd.2"]


@sync
async def test_read_only_hides_every_action() -> None:
    app = make_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f", "down")
        assert app.screen.check_action("fix", ()) is True  # the screen would allow it...
        assert app.check_action("fix", ()) is False  # ...but the app hides it
        shown = {b.binding.action for b in app.active_bindings.values()}
        assert "fix" not in {a for a in shown if app.check_action(a, ()) is not False}
        await pilot.press("x")
        await pilot.pause()
        assert not isinstance(app.screen, S.RunbookScreen)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Go to OSDs" in titles and not any(t.startswith("Fix:") for t in titles)
    rw = make_app()
    async with rw.run_test(size=SIZE) as pilot:
        await settle(rw, pilot)
        titles = [c.title for c in rw.get_system_commands(rw.screen)]
        assert "Fix: osd-remount osd.1" in titles
        assert "Fix: swift-device-remount d2@node2" in titles


@sync
async def test_fix_on_captured_data_is_refused_without_crashing() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("d", "down", "x")
        await settle(app, pilot)
        assert isinstance(app.screen, S.RunbookScreen)
        assert app.screen.runbook == "osd-remount" and app.screen.target_name == "osd.1"
        scr = app.screen
        await pilot_wait(pilot, lambda: "cannot plan" in str(scr.query_one("#plan").render()))
        assert "captured data" in str(scr.query_one("#plan").render())
        assert app.screen.check_action("apply", ()) is False


@sync
async def test_bindings_are_remappable_and_unknown_actions_refused() -> None:
    app = make_app(bindings={"osds": "z", "refresh": "ctrl+r"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("d")
        assert isinstance(app.screen, S.OverviewScreen)  # d is no longer OSDs
        await pilot.press("z")
        assert isinstance(app.screen, S.OsdScreen)
    with pytest.raises(ValueError, match="unknown action"):
        make_app(bindings={"launch_missiles": "m"})


@sync
async def test_unreachable_cluster_keeps_last_data_with_error_and_recovers() -> None:
    b = backend()
    good = b.snapshot
    app = make_app(b)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("d")
        assert app.state.error is None
        b.snapshot = replace(good, taken_at=TAKEN_AT + 30, ceph=None,
                             ceph_error="no monitor answered within 3 s", swift=None,
                             swift_error="recon: connection refused")
        b.findings = (Finding("CEPH_UNREACHABLE", Severity.CRIT, "cluster octopus",
                              "Ceph monitors unreachable"),)
        await pilot.press("r")
        await pilot_wait(pilot, lambda: app.state.error is not None)
        assert "no monitor answered" in app.state.error
        assert app.state.outcome is not None and app.state.outcome.snapshot is good
        assert app.state.data_at == TAKEN_AT  # the age keeps growing from the last data
        assert "osd.1" in table_keys(app, "#osds")  # last data still on screen
        status = str(app.screen.query_one("#status").render())
        assert "data 42s old" in status and "ERROR" in status
        b.snapshot, b.findings = replace(good, taken_at=TAKEN_AT + 40), broken_findings()
        await pilot.press("r")
        await pilot_wait(pilot, lambda: app.state.error is None)
        assert app.state.data_at == TAKEN_AT + 40


@sync
async def test_slow_refresh_times_out_and_is_never_doubled() -> None:
    b = backend(work=6.0)  # far longer than the timeout, also on a loaded machine
    app = make_app(b, refresh_timeout_s=0.5)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: app.state.error is not None)
        assert "timed out after 0.5s" in app.state.error
        assert app.state.outcome is None
        # the timed-out call is still running: a new refresh must not start another
        assert app.request_refresh() is False
        assert b.calls == 1
        await pilot.press("o")  # the UI still answers
        assert isinstance(app.screen, S.OverviewScreen)
        await pilot_wait(pilot, lambda: app._inflight is not None and app._inflight.done())
        b.work = 0.0
        assert app.request_refresh() is True
        await pilot_wait(pilot, lambda: app.state.outcome is not None, timeout=30)
        assert b.calls == 2


@sync
async def test_auto_refresh_only_for_the_visible_data_screen_and_pause() -> None:
    b = backend()
    # ticks are driven by hand: a real 1 s timer firing between two key presses on a
    # loaded machine made this test flaky
    app = make_app(b, refresh_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: b.calls >= 1)
        app._tick()
        await pilot_wait(pilot, lambda: b.calls >= 2)
        await pilot.press("space")
        assert app.paused
        calls = b.calls
        app._tick()  # a timer tick while paused does nothing
        await settle(app, pilot)
        assert b.calls == calls
        await pilot.press("space")
        await pilot.press("question_mark")  # a modal on top: ticks do not refresh
        app._tick()
        await settle(app, pilot)
        assert b.calls == calls
        await pilot.press("escape")
        app._tick()
        await pilot_wait(pilot, lambda: b.calls == calls + 1)


@sync
async def test_history_and_audit_from_the_backend() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("h")
        await settle(app, pilot)
        assert table_keys(app, "#runs") == ["run:3", "run:2"]
        assert table_keys(app, "#audit") == ["audit:1"]
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, S.RunFindingsScreen)
        assert len(table_keys(app, "#runfindings")) == len(broken_findings())
        await pilot.press("escape")
        app.screen.query_one("#audit", VirtualTable).focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, S.AuditRunScreen)
        t = app.screen.query_one("#audit-steps", VirtualTable)
        assert [str(c) for c in t.get_row_at(1)][3] == "systemctl start ceph-osd@2"


def test_help_lists_the_keys() -> None:
    async def run() -> str:
        app = make_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            return str(app.help_text())
    text = asyncio.run(run())
    for word in ("OSDs", "Findings", "Refresh", "Pause", "Filter"):
        assert word in text


@sync
async def test_benchmarks_screen_history_and_refusals() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("b")
        await settle(app, pilot)
        assert isinstance(app.screen, S.BenchScreen)
        t = app.screen.query_one("#bench-history", VirtualTable)
        assert [str(c) for c in t.get_row_at(0)][2:6] == ["write", "ok", "35.3", "141.11"]
        assert [str(c) for c in t.get_row_at(1)][3] == "cancelled"
        scr = app.screen
        await pilot.press("l")
        await pilot_wait(pilot, lambda: "cannot plan" in str(
            scr.query_one("#bench-live").content))
        assert not isinstance(app.screen, S.ConfirmModal)  # nothing to confirm
        scr.query_one("#bench-duration").value = "soon"
        scr.action_bench_launch()
        await pilot.pause()
        assert not scr.running  # a bad number is refused in one line, nothing planned
    ro = make_app(read_only=True)
    async with ro.run_test(size=SIZE) as pilot:
        await settle(ro, pilot)
        await pilot.press("b")
        assert ro.check_action("bench_launch", ()) is False


def test_cli_errors_are_one_line_and_start_nothing(tmp_path: Any, capsys: Any) -> None:
    from stordoc.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'journal = "{tmp_path}/j.db"\n[clusters.a.ceph]\nconf = "/nonexistent"\n'
                   '[tui.bindings]\nlaunch_missiles = "m"\n')
    assert main(["-c", str(cfg), "tui", "--cluster", "nope"]) == 64
    err = capsys.readouterr().err
    assert "unknown cluster 'nope'" in err and "Traceback" not in err
    assert main(["-c", str(cfg), "tui"]) == 64
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: tui.bindings: unknown action(s) launch_missiles")
    assert "Traceback" not in err  # one message (the console may wrap it), no traceback
    assert main(["-c", str(cfg), "tui", "--refresh", "0.1"]) == 64
    assert not (tmp_path / "j.db").exists()  # nothing was started or written


@sync
async def test_mute_key_asks_for_duration_and_reason_then_hides_the_finding() -> None:
    b = backend()
    app = make_app(b)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f")
        await settle(app, pilot)
        first = app.screen._selected()  # the cursor starts on the first finding
        assert first is not None
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, S.MuteModal)
        await pilot.press("enter")  # no reason: refused, the modal stays
        await pilot.pause()
        assert isinstance(app.screen, S.MuteModal) and b.mutes == []
        await pilot.press(*"disk swap", "enter")
        await settle(app, pilot)
        assert b.mutes == [(first.code, first.entity, 4 * 3600.0, "disk swap")]
        assert isinstance(app.screen, S.FindingsScreen)
        assert all(f.key != first.key for f in app.screen.findings)


@sync
async def test_vim_and_home_end_keys_move_the_table_cursor() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("f")
        await settle(app, pilot)
        t = app.screen.query_one("#findings", VirtualTable)
        assert t.cursor_row == 1  # the first finding, under its severity's header
        await pilot.press("j", "j")
        assert t.cursor_row == 3
        await pilot.press("k")
        assert t.cursor_row == 2
        await pilot.press("G")
        assert t.cursor_row == t.row_count - 1
        await pilot.press("home")
        assert t.cursor_row == 0
        await pilot.press("end")
        assert t.cursor_row == t.row_count - 1
        await pilot.press("g")
        assert t.cursor_row == 0
        # the footer keeps Help and Quit at 80 columns
        from textual.widgets import Footer
        keys = {b.key for b in app.screen.query_one(Footer).query("FooterKey")}  # type: ignore[attr-defined]
        assert {"question_mark", "q"} <= keys


@sync
async def test_m_on_an_osd_opens_the_maintenance_window_of_its_host() -> None:
    """``m`` on the OSD screen: the maintenance runbook of the selected OSD's host, in the
    same runbook screen as a fix (plan, confirm, audit)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("d", "down", "m")
        await settle(app, pilot)
        assert isinstance(app.screen, S.RunbookScreen)
        o = app.state.outcome
        assert o is not None and o.snapshot.ceph is not None
        osd = o.snapshot.ceph.osd(1)
        assert osd is not None and osd.host
        assert (app.screen.runbook, app.screen.target_name) == ("maintenance-start", osd.host)


def test_timers_and_a_late_refresh_while_the_app_closes_do_not_raise() -> None:
    """CI once saw the status timer fire on an app that was exiting (its screen stack
    already empty): ``ScreenStackError: No screens on stack`` ended the app with a
    traceback. With no screen, the timers and a refresh's redraw do nothing."""
    app = make_app(backend())
    assert app._visible() is None
    app._update_status()
    app._tick()
    app._show()
