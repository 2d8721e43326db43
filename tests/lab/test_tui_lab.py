"""The TUI on the real lab, driven by Textual's Pilot: an unmounted OSD seen on the OSD
screen and fixed through the confirm modal; a stopped monitor shows stale data and an
error, then recovers by itself. Breaks are healed in finalizers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lab import Lab
from tests.support.tui import lab_env, pilot_wait, sync
from tui import screens as S
from tui.app import StordocApp
from tui.backend import EnvBackend
from tui.table import VirtualTable

SIZE = (160, 45)


def plain(widget: Any) -> str:
    """What a Static shows, rendered to plain text."""
    import io

    from rich.console import Console

    con = Console(width=200, record=True, file=io.StringIO())
    con.print(widget.content)
    return con.export_text()


def osd_row(app: StordocApp, osd: str) -> list[str]:
    t = app.screen.query_one("#osds", VirtualTable)
    return [str(c) for c in t.get_row(osd)]


@sync
async def test_unmounted_osd_is_shown_and_fixed_through_the_modal(
        lab: Lab, osd1_unmounted: None, tmp_path: Path) -> None:
    env = lab_env(lab, tmp_path)
    app = StordocApp(EnvBackend(env), "lab", refresh_s=0, refresh_timeout_s=120,
                     user="tui-test")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot_wait(pilot, lambda: app.state.outcome is not None, 120, "first data")
            await pilot.press("d")
            assert isinstance(app.screen, S.OsdScreen)
            row = osd_row(app, "osd.1")
            assert row[1] == "down"
            assert row[7].startswith("NOT MOUNTED")
            # the daemon column says how it stopped when the host saw it (issue 38.4)
            assert row[8] in ("stopped", "stopped (SIGTERM)"), row[8]
            assert osd_row(app, "osd.0")[1] == "up"
            # detail: the host facts name the loop device that holds osd.1
            t = app.screen.query_one("#osds", VirtualTable)
            t.move_cursor(row=t.get_row_index("osd.1"))
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, S.OsdDetailScreen)
            detail = plain(app.screen.query_one("#detail"))
            assert "NOT MOUNTED" in detail and "/dev/loop" in detail
            assert "OSD_DATA_UNMOUNTED" in detail
            # fix it: plan, then the modal shows the exact commands, then confirm
            await pilot.press("x")
            assert isinstance(app.screen, S.RunbookScreen)
            rb = app.screen
            assert (rb.runbook, rb.target_name) == ("osd-remount", "osd.1")
            await pilot_wait(pilot, lambda: rb.plan is not None, 120, "the plan")
            assert rb.plan is not None
            await pilot.press("a")
            assert isinstance(app.screen, S.ConfirmModal)
            shown = plain(app.screen.query_one("#confirm-plan"))
            assert "mount -t xfs" in shown and str(lab.osd_dir(1)) in shown
            assert "ceph-osd" in shown
            await pilot.press("y")
            await pilot_wait(pilot, lambda: rb.running or rb.done is not None, 30, "the run")
            if rb.running:  # leaving is refused while it runs: its log stays visible
                await pilot.press("escape", "o")
                assert app.screen is rb
            await pilot_wait(pilot, lambda: rb.done is not None, 300, "the runbook to end")
            assert rb.done is not None and rb.done.ok, rb.done
            log = "\n".join(str(line.text) for line in rb.query_one("#runlog").lines)
            # the run log is in words (issue 38.7): no internal tokens such as step_done
            assert "step 1/5 started" in log and "verified" in log and "step_done" not in log
            await pilot.press("escape", "escape")
            assert isinstance(app.screen, S.OsdScreen)
            await pilot.press("r")
            await pilot_wait(pilot, lambda: app.state.outcome is not None
                             and app.state.outcome.snapshot.ceph is not None
                             and bool(app.state.outcome.snapshot.ceph.osd(1))
                             and app.state.outcome.snapshot.ceph.osd(1).up  # type: ignore[union-attr]
                             and not app.state.refreshing, 120, "osd.1 up on screen")
            await pilot.pause()
            row = osd_row(app, "osd.1")
            assert row[1] == "up" and row[2] == "in"
            assert row[7].startswith("mounted /dev/loop")
            assert row[8].startswith("running")
    finally:
        env.close()
    assert lab.osd_up(1) is True


@sync
async def test_stopped_monitor_keeps_stale_data_and_recovers_by_itself(
        lab: Lab, tmp_path: Path) -> None:
    env = lab_env(lab, tmp_path, ceph_timeout=3)
    app = StordocApp(EnvBackend(env), "lab", refresh_s=1, refresh_timeout_s=60)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot_wait(pilot, lambda: app.state.outcome is not None, 120, "first data")
            await pilot.press("d")
            good_at = app.state.data_at
            try:
                assert lab.stop("mon.a")
                await pilot_wait(pilot, lambda: app.state.error is not None, 90,
                                 "the error to show")
                error_at = time.time()
                assert "ceph" in (app.state.error or "")
                # the last good data stays on screen, with its age (a refresh in flight
                # when the monitor stopped may still have brought newer good data; its
                # taken_at is stamped when the collection ends)
                assert app.state.data_at is not None and good_at is not None
                assert good_at <= app.state.data_at <= error_at
                assert app.state.outcome is not None
                assert app.state.outcome.snapshot.ceph is not None
                assert osd_row(app, "osd.0")[1] == "up"
                status = str(app.screen.query_one("#status").render())
                assert "ERROR" in status and "old" in status
                await pilot.press("p")  # still navigable
                assert isinstance(app.screen, S.PoolScreen)
                await pilot.press("d")
            finally:
                lab.start_mon()
            # no key pressed: the auto-refresh brings it back
            await pilot_wait(pilot, lambda: app.state.error is None, 120, "recovery")
            assert app.state.data_at is not None and good_at is not None
            assert app.state.data_at > good_at
    finally:
        env.close()


@sync
async def test_benchmark_runs_live_from_the_tui(lab: Lab, tmp_path: Path) -> None:
    env = lab_env(lab, tmp_path)
    app = StordocApp(EnvBackend(env), "lab", refresh_s=0, user="tui-test")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot_wait(pilot, lambda: app.state.outcome is not None, 120, "first data")
            await pilot.press("b")
            scr = app.screen
            assert isinstance(scr, S.BenchScreen)
            scr.query_one("#bench-duration").value = "3"
            scr.query_one("#bench-conc").value = "4"
            scr.query_one("#bench-size").value = "64"
            await pilot.press("l")
            await pilot_wait(pilot, lambda: isinstance(app.screen, S.ConfirmModal), 120,
                             "the plan to confirm")
            shown = plain(app.screen.query_one("#confirm-plan"))
            assert "bench rados" in shown and "4 in flight, 3 s" in shown  # the form's values
            await pilot.press("y")
            await pilot_wait(pilot, lambda: scr.result is not None, 240, "the benchmark")
            assert scr.result is not None and scr.result.ok, scr.result
            assert scr.samples, "live progress arrived while it ran"
            (row,) = scr.result.results
            assert row["workload"] == "write" and row["ops_s"] > 0 and row["mb_s"] > 0
            assert row["lat_p99_ms"] >= row["lat_p50_ms"] > 0
            # a fresh journal: compared by default, no baseline yet, so no better/worse
            assert any(line.startswith("Compared (write): no baseline yet")
                       for line in scr.result.comparison), scr.result.comparison
            assert not any(line.startswith("Verdict") for line in scr.result.comparison)
            await pilot_wait(pilot, lambda: scr.query_one("#bench-history",
                                                          VirtualTable).row_count >= 1,
                             30, "the history")
    finally:
        env.close()


def test_env_backend_records_a_run_only_when_findings_change(lab: Lab, tmp_path: Path) -> None:
    env = lab_env(lab, tmp_path)
    try:
        b = EnvBackend(env)
        first = b.refresh("lab")
        assert first.run_id is not None and first.snapshot.ceph is not None
        again = [b.refresh("lab") for _ in range(2)]
        # one run per change of the finding set (a healthy lab: just the first one)
        recorded = frozenset(f.key for f in first.report.findings)
        expected = 1
        for o in again:
            k = frozenset(f.key for f in o.report.findings)
            if k != recorded:
                expected, recorded = expected + 1, k
                assert o.run_id is not None
            else:
                assert o.run_id is None and o.delta is not None
        assert len(env.journal.runs("lab")) == expected
    finally:
        env.close()
