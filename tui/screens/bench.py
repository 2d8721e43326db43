"""Benchmarks: the form, live progress, results and history."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import (
    Input,
    Select,
    Sparkline,
    Static,
)

from core.service.actions import ActionPlan
from core.service.task import Task
from tui import views
from tui.backend import BenchProgressView, BenchView
from tui.messages import (
    BenchFinished,
    BenchHistoryLoaded,
    BenchProgressed,
    ExitWanted,
    Planned,
    WorkEnded,
)
from tui.screens.base import ActionRefusedInput, DataScreen, fill_table
from tui.screens.runbook import ConfirmModal, QuitGuard, StopModal
from tui.state import ClusterState, Session
from tui.table import VirtualTable
from tui.views import Row

BENCH_COLUMNS = ("when", "kind", "workload", "status", "ops/s", "MB/s", "lat avg", "p50",
                 "p90", "p99", "max", "errors")


def _ms(v: Any) -> str:
    return "-" if v is None else f"{float(v):.1f}"


def bench_rows(rows: Sequence[dict[str, Any]], now: float) -> list[Row]:
    out = []
    for i, r in enumerate(rows):
        cells = [views._when(r.get("started_at"), now), str(r.get("kind", "-")),
                 str(r.get("workload", "-")), str(r.get("status", "-")),
                 f"{float(r.get('ops_s') or 0):.1f}", f"{float(r.get('mb_s') or 0):.2f}",
                 _ms(r.get("lat_avg_ms")), _ms(r.get("lat_p50_ms")), _ms(r.get("lat_p90_ms")),
                 _ms(r.get("lat_p99_ms")), _ms(r.get("lat_max_ms")), str(r.get("errors", 0))]
        out.append(Row(f"bench:{r.get('id', i)}:{i}", "bench", tuple(cells),
                       ("", "", "bold", "green" if r.get("status") == "ok" else "bold red"),
                       " ".join(cells).lower(), r))
    return out

class BenchScreen(DataScreen, QuitGuard):
    """Launch a benchmark (plan, confirm), watch it live, compare with the baseline."""

    TITLE_TEXT = "Benchmarks"
    BINDINGS = [
        Binding("l", "bench_launch", "Launch…", id="bench_launch"),
        Binding("s", "bench_cancel", "Stop bench…", id="bench_cancel"),
    ]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.rows: list[dict[str, Any]] = []
        self.running = False
        self.quitting = False
        self.samples: list[float] = []
        self.result: BenchView | None = None
        self.cancel_event = threading.Event()

    def body(self) -> ComposeResult:
        # a label over every field: a filled-in Input hides its placeholder
        with Horizontal(id="bench-labels"):
            for text, cls in (("kind", "lbl-select"), ("mode", "lbl-input"),
                              ("seconds", "lbl-input"), ("concurrency", "lbl-input"),
                              ("size KiB", "lbl-input")):
                yield Static(text, classes=cls)
        with Horizontal(id="bench-form"):
            yield Select([("rados", "rados"), ("swift", "swift"), ("rbd", "rbd")],
                         value="rados", allow_blank=False, id="bench-kind")
            yield Input("write", placeholder="mode", id="bench-mode")
            yield Input("5", placeholder="seconds", type="number", id="bench-duration")
            yield Input("16", placeholder="concurrency", type="integer", id="bench-conc")
            yield Input("4096", placeholder="size KiB", type="integer", id="bench-size")
        yield Static("l launches (plan, then confirm); s stops a running one (asks first)",
                     id="bench-live")
        yield Sparkline([], id="bench-spark")
        with VerticalScroll(id="bench-out"):
            yield Static(id="bench-result")
        t = VirtualTable(id="bench-history")
        t.add_columns(*BENCH_COLUMNS)
        yield t

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#bench-history").focus()
        self.tick()

    def focus_main(self) -> None:
        self.query_one("#bench-history", VirtualTable).focus()

    def tick(self) -> None:
        if self.running:
            return
        cluster, backend = self.session.cluster, self.session.backend

        def work() -> None:
            self.post_message(BenchHistoryLoaded(backend.bench_history(cluster)))

        self.run_worker(work, thread=True, group="bench-history", exclusive=True,
                        exit_on_error=False)

    def on_bench_history_loaded(self, msg: BenchHistoryLoaded) -> None:
        self.rows = msg.rows
        self.render_data(self.session.state)

    def render_data(self, st: ClusterState) -> None:
        rows = [r for r in bench_rows(self.rows, self.session.clock()) if r.matches(self.needle)]
        fill_table(self.query_one("#bench-history", VirtualTable), rows)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "bench_launch":
            return not self.running and not self.session.read_only
        if action == "bench_cancel":
            return self.running
        return True

    def options(self) -> tuple[str, dict[str, Any]]:
        kind = str(self.query_one("#bench-kind", Select).value)
        mode = self.query_one("#bench-mode", Input).value.strip()
        try:
            dur = float(self.query_one("#bench-duration", Input).value)
            conc = int(self.query_one("#bench-conc", Input).value)
            size = int(self.query_one("#bench-size", Input).value) * 1024
        except ValueError:
            raise ActionRefusedInput("duration, concurrency and size must be numbers") from None
        opts: dict[str, Any] = {"duration_s": dur, "concurrency": conc, "size": size}
        if mode:
            opts["modes"] = tuple(m.strip() for m in mode.split(",") if m.strip())
        return kind, opts

    @on(Input.Submitted, "#bench-form Input")
    def _submitted(self, event: Input.Submitted) -> None:
        self.action_bench_launch()

    def action_bench_launch(self) -> None:
        if self.running or self.session.read_only:
            return
        try:
            kind, opts = self.options()
        except ActionRefusedInput as e:
            self.notify(str(e), severity="error")
            return
        cluster, backend = self.session.cluster, self.session.backend
        self.query_one("#bench-live", Static).update(f"planning bench {kind}…")

        def work() -> None:
            self.post_message(Planned(backend.bench_plan(cluster, kind, opts)))

        self.run_worker(work, thread=True, group="bench-plan", exit_on_error=False)

    def quit_warning(self) -> str:
        return ("a benchmark is running: q again stops it (its in-flight operations end "
                "and what it wrote is removed), then stordoc quits; s stops it (asks first) "
                "and stays")

    def stop_for_quit(self) -> None:
        self.quitting = True
        self.cancel_event.set()
        self.query_one("#bench-live", Static).update(Text(
            "quitting: stopping the benchmark and removing what it wrote; stordoc quits "
            "when it has ended", style="bold yellow"))

    def _ended(self, summary: str) -> None:
        self.running = False
        self.post_message(WorkEnded())
        if self.quitting:
            self.post_message(ExitWanted(f"stordoc: benchmark stopped on quit: {summary}"))

    def worker_failed(self, group: str, error: BaseException) -> None:
        if group == "bench-history":  # the table of past runs: a line, nothing stops
            super().worker_failed(group, error)
            return
        if group != "bench-plan":
            self._ended(f"FAILED: {error}")
        self.running = False
        self.query_one("#bench-live", Static).update(
            Text(f"{'cannot plan' if group == 'bench-plan' else 'FAILED'}: {error}",
                 style="bold red"))
        self.refresh_bindings()

    def on_planned(self, msg: Planned) -> None:
        self.query_one("#bench-live", Static).update("plan ready: confirm to run")
        self.app.push_screen(ConfirmModal(msg.plan), lambda yes: self._confirmed(yes, msg.plan))

    def _confirmed(self, yes: bool | None, plan: ActionPlan) -> None:
        live = self.query_one("#bench-live", Static)
        if not yes:
            live.update(Text("not confirmed: nothing was run", style="yellow"))
            return
        self.running = True
        self.samples = []
        self.cancel_event = threading.Event()
        self.refresh_bindings()
        live.update(f"running {plan.runbook}…")
        cluster, backend, cancel = self.session.cluster, self.session.backend, self.cancel_event

        def progress(p: BenchProgressView) -> None:
            self.post_message(BenchProgressed(p))

        def work() -> None:
            res = Task(lambda c: backend.bench_run(cluster, plan, progress, c),
                       name="tui-bench", cancel=cancel).run()
            self.post_message(BenchFinished(res))

        self.run_worker(work, thread=True, group="bench-run", exit_on_error=False)

    def action_bench_cancel(self) -> None:
        """``s``: asks first; only a yes stops the benchmark."""
        if not self.running:
            return
        self.app.push_screen(StopModal("Stop the benchmark? (its in-flight operations end "
                                       "and what it wrote is removed)"), self._stop)

    def _stop(self, yes: bool | None) -> None:
        if not yes or not self.running:
            return
        self.cancel_event.set()
        self.query_one("#bench-live", Static).update(
            Text("cancelling: cleaning up…", style="yellow"))

    def on_bench_progressed(self, msg: BenchProgressed) -> None:
        p = msg.progress
        self.samples.append(p.mb_s)
        self.query_one("#bench-spark", Sparkline).data = self.samples[-200:]
        self.query_one("#bench-live", Static).update(
            f"{p.phase}: {p.elapsed_s:.1f}/{p.planned_s:.0f} s   {p.ops_s:.1f} ops/s   "
            f"{p.mb_s:.2f} MB/s")

    def on_bench_finished(self, msg: BenchFinished) -> None:
        self.result = r = msg.result
        self._ended(f"{r.status}: {r.message}")
        self.refresh_bindings()
        self.query_one("#bench-live", Static).update(
            Text(f"{r.status.upper()}: {r.message}",
                 style="bold green" if r.ok else "bold red"))
        out = Text()
        for row in bench_rows(list(r.results), self.session.clock()):
            c = row.cells
            out.append(f"{c[2]}: {c[4]} ops/s, {c[5]} MB/s, latency avg {c[6]} p50 {c[7]} "
                       f"p90 {c[8]} p99 {c[9]} max {c[10]} ms, errors {c[11]}\n", style="bold")
        for line in r.comparison:
            out.append(line + "\n")
        if r.chart:
            out.append_text(Text.from_ansi(r.chart))
        self.query_one("#bench-result", Static).update(out)
        self.tick()
