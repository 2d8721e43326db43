"""History: stored check runs, audited runbook runs and their steps and findings."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from runbooks.model import Outcome, StepStatus
from storage.audit import AuditRun, AuditStep
from storage.journal import CheckRun, FindingRecord
from tui import views
from tui.messages import (
    HistoryLoaded,
)
from tui.screens.base import DataScreen, fill_table, lines_table
from tui.state import ClusterState, Session
from tui.table import VirtualTable
from tui.views import Row


class HistoryScreen(DataScreen):
    TITLE_TEXT = "History and audit"

    def body(self) -> ComposeResult:
        with Vertical():
            yield Static("Check runs", classes="section")
            t = VirtualTable(id="runs")
            t.add_columns(*views.HISTORY_COLUMNS)
            yield t
            yield Static("Runbook runs (audit)", classes="section")
            t2 = VirtualTable(id="audit")
            t2.add_columns(*views.AUDIT_COLUMNS)
            yield t2

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.runs: list[CheckRun] = []
        self.audit: list[AuditRun] = []

    def on_mount(self) -> None:
        super().on_mount()
        self.tick()

    def tick(self) -> None:
        cluster, backend = self.session.cluster, self.session.backend

        def work() -> None:
            self.post_message(HistoryLoaded(backend.history(cluster),
                                            backend.audit(cluster)))

        self.run_worker(work, thread=True, group="history", exclusive=True,
                        exit_on_error=False)

    def on_history_loaded(self, msg: HistoryLoaded) -> None:
        self.runs, self.audit = msg.runs, msg.audit
        self.render_data(self.session.state)

    def render_data(self, st: ClusterState) -> None:
        now = self.session.clock()
        fill_table(self.query_one("#runs", VirtualTable),
                   [r for r in views.history_rows(self.runs, now) if r.matches(self.needle)])
        fill_table(self.query_one("#audit", VirtualTable),
                   [r for r in views.audit_rows(self.audit, now) if r.matches(self.needle)])

    @on(VirtualTable.RowSelected, "#runs")
    def _drill(self, event: VirtualTable.RowSelected) -> None:
        rid = int((event.row_key.value or "run:0")[4:])
        self.app.push_screen(RunFindingsScreen(self.session, rid))

    @on(VirtualTable.RowSelected, "#audit")
    def _drill_audit(self, event: VirtualTable.RowSelected) -> None:
        key = event.row_key.value or ""
        run = next((r for r in self.audit if f"audit:{r.id}" == key), None)
        if run is not None:
            self.app.push_screen(AuditRunScreen(self.session, run))

class AuditRunScreen(DataScreen):
    """One runbook run from the audit: who, what, outcome, and every step it ran."""

    def __init__(self, session: Session, run: AuditRun) -> None:
        super().__init__(session)
        self.run = run
        self.TITLE_TEXT = f"Audit run {run.id}: {run.runbook} {run.target}"
        self.steps: list[AuditStep] = []

    def body(self) -> ComposeResult:
        yield Static(id="audit-head")
        t = VirtualTable(id="audit-steps")
        t.add_columns("#", "title", "where", "command", "rc", "status", "took")
        yield t

    def on_mount(self) -> None:
        super().on_mount()
        backend, rid = self.session.backend, self.run.id

        def work() -> None:
            self.post_message(HistoryLoaded(backend.audit_steps(rid), []))

        self.run_worker(work, thread=True, group="history", exit_on_error=False)

    def tick(self) -> None:
        """A finished run does not change."""

    def on_history_loaded(self, msg: HistoryLoaded) -> None:
        self.steps = msg.runs
        self.render_data(self.session.state)

    def render_data(self, st: ClusterState) -> None:
        r = self.run
        self.query_one("#audit-head", Static).update(lines_table([
            ("runbook", f"{r.runbook} {r.target}", "bold"),
            ("by", f"{r.user} (confirmed by {r.confirmed_by}, from {r.source})", ""),
            ("when", views._when(r.started_at, self.session.clock()), ""),
            ("outcome", r.outcome, "green" if r.outcome == Outcome.SUCCESS else "bold red"),
            ("message", r.message, ""),
        ]))
        rows = []
        for i, stp in enumerate(self.steps):
            ok = stp.status == StepStatus.DONE
            cells = [str(stp.idx), stp.title, stp.host, stp.command,
                     "" if stp.rc is None else str(stp.rc), stp.status,
                     f"{stp.duration_s:.1f}s"]
            row = Row(f"step:{i}", "step", tuple(cells),
                      ("", "bold", "", "", "", "green" if ok else "bold red", ""),
                      " ".join(cells).lower())
            if row.matches(self.needle):
                rows.append(row)
        fill_table(self.query_one("#audit-steps", VirtualTable), rows)

class RunFindingsScreen(DataScreen):
    """The findings one past check run recorded (from the journal)."""

    def __init__(self, session: Session, run_id: int) -> None:
        super().__init__(session)
        self.run_id = run_id
        self.TITLE_TEXT = f"Check run {run_id}"
        self.rows: list[FindingRecord] = []

    def body(self) -> ComposeResult:
        t = VirtualTable(id="runfindings")
        t.add_columns("severity", "code", "entity", "message", "runbook")
        yield t

    def on_mount(self) -> None:
        super().on_mount()
        backend, rid = self.session.backend, self.run_id

        def work() -> None:
            self.post_message(HistoryLoaded(backend.findings_of(rid), []))

        self.run_worker(work, thread=True, group="history", exit_on_error=False)

    def tick(self) -> None:
        """Past runs do not change."""

    def on_history_loaded(self, msg: HistoryLoaded) -> None:
        self.rows = msg.runs
        self.render_data(self.session.state)

    def render_data(self, st: ClusterState) -> None:
        rows = []
        for i, f in enumerate(self.rows):
            sev = f.severity
            cells = [sev, f.code, f.entity, f.message,
                     f"{f.runbook} {f.target}" if f.runbook else "-"]
            r = Row(f"rf:{i}", "finding", tuple(cells),
                    ({"crit": "bold red", "warn": "yellow"}.get(sev, "cyan"),),
                    " ".join(cells).lower())
            if r.matches(self.needle):
                rows.append(r)
        fill_table(self.query_one("#runfindings", VirtualTable), rows)


# --------------------------------------------------------------------------- help
