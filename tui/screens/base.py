"""What every screen shares: tables filled fast, the status line and filter, the data
screen base class (refresh on the App's data, workers that post messages back), the detail
screen, and the one rule for the finding a fix key acts on.

A screen reads the session it is handed (``tui.state``) and never calls the App: it posts
``tui.messages`` (open a runbook, refresh, go to a section) that the App handles."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Footer,
    Header,
    Input,
    Static,
)
from textual.worker import Worker, WorkerState

from checks.catalog import area_codes
from checks.incidents import Incident
from checks.model import Finding
from core.service import fixes
from tui import views
from tui.backend import error_text
from tui.messages import OpenRunbook, RefreshWanted
from tui.state import ClusterState, Session
from tui.table import VirtualTable
from tui.views import Row


def lines_table(lines: Iterable[tuple[str, str, str]]) -> Table:
    """A two-column label/value grid (overview and detail screens)."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    for label, value, style in lines:
        t.add_row(label, Text(value, style=style))
    return t


def fill_table(table: VirtualTable, rows: Sequence[Row]) -> None:
    """Replace a table's rows, keeping the cursor on the same key when it still exists.
    ``VirtualTable`` draws only what is on screen (10,000 OSDs in milliseconds) and leaves
    itself alone when nothing changed."""
    table.set_rows(rows)


_TABLES = "DataTable, VirtualTable"  # the tables a screen's keys and focus go to


class StatusLine(Static):
    """Cluster, data age, refresh state and the last error: always visible."""


class FilterInput(Input):
    BINDINGS = [Binding("escape", "close", "Clear filter", show=False)]

    def action_close(self) -> None:
        self.value = ""
        self.add_class("hidden")
        screen = self.screen
        if isinstance(screen, DataScreen):
            screen.focus_main()


# --------------------------------------------------------------------------- base


class DataScreen(Screen[None]):
    """A screen that shows cluster data: header, status line, body, filter, footer."""

    TITLE_TEXT = ""
    BINDINGS = [Binding("slash", "filter", "Filter", id="filter"),
                # vim and less keys on every table (listed in Help, not in the footer)
                Binding("j", "table('down')", "Down", show=False),
                Binding("k", "table('up')", "Up", show=False),
                Binding("g", "table('top')", "Top", show=False),
                Binding("G", "table('bottom')", "Bottom", show=False)]

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session  # read only: the App changes it
        self.needle = ""
        self.shown_version = -1

    def action_table(self, where: str) -> None:
        """Move the cursor of the focused table (else the first one)."""
        t = self.focused if isinstance(self.focused, (DataTable, VirtualTable)) else next(
            iter(self.query(_TABLES)), None)
        assert t is None or isinstance(t, (DataTable, VirtualTable))
        if t is None or not t.row_count:
            return
        row = {"down": min(t.cursor_row + 1, t.row_count - 1),
               "up": max(t.cursor_row - 1, 0), "top": 0,
               "bottom": t.row_count - 1}[where]
        t.move_cursor(row=row)

    def compose(self) -> ComposeResult:
        yield Header()
        yield StatusLine(id="status")
        yield from self.body()
        yield FilterInput(placeholder="filter (Enter keeps, Esc clears)", id="filter",
                          classes="hidden")
        yield Footer()

    def body(self) -> ComposeResult:
        yield Static()

    def on_mount(self) -> None:
        self.sub_title = self.TITLE_TEXT
        self.show_state()
        self.focus_main()

    def on_screen_resume(self) -> None:
        self.sub_title = self.TITLE_TEXT
        if self.shown_version != self.session.state.version:
            self.show_state()
        self.update_status()

    def focus_main(self) -> None:
        tables = list(self.query(_TABLES))
        if tables:
            tables[0].focus()

    # -- data
    def show_state(self) -> None:
        st = self.session.state
        self.shown_version = st.version
        self.update_status()
        if st.outcome is not None:
            self.render_data(st)

    def render_data(self, st: ClusterState) -> None:
        """Subclasses fill their widgets from ``st.outcome``."""

    def tick(self) -> None:
        """Timer tick while this screen is visible: refresh cluster data."""
        self.post_message(RefreshWanted())

    def update_status(self) -> None:
        try:
            w = self.query_one("#status", StatusLine)
        except Exception:
            return
        w.update(self.session.status_text())
        w.set_class(bool(self.session.state.error), "error")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every error of this screen's workers lands in ``worker_failed``."""
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            self.worker_failed(event.worker.group,
                               err if err is not None else Exception(error_text(err)))

    def worker_failed(self, group: str, error: BaseException) -> None:
        """A worker of this screen raised: said in one line (screens that run work
        show it in their own place)."""
        self.notify(f"{group}: {error_text(error)}", severity="error", timeout=6)

    # -- filter
    def action_filter(self) -> None:
        f = self.query_one("#filter", FilterInput)
        f.remove_class("hidden")
        f.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.needle = event.value.strip()
        if self.session.state.outcome is not None:
            self.render_data(self.session.state)

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        if not event.value:
            self.query_one("#filter", FilterInput).add_class("hidden")
        self.focus_main()

    # -- helpers
    @property
    def findings(self) -> tuple[Finding, ...]:
        o = self.session.state.outcome
        return o.report.findings if o else ()

    # -- a cause line and a Fix key on screens that show a kind of problem
    AREA: str | None = None  # checks.catalog.AREAS: what this screen's incident is about

    def incidents(self) -> tuple[Incident, ...]:
        o = self.session.state.outcome
        return o.incidents if o else ()

    def screen_incident(self) -> Incident | None:
        """The worst incident about what this screen shows (its area's checks)."""
        if self.AREA is None:
            return None
        return fixes.incident_in_area(self.incidents(), area_codes(self.AREA))

    def cause_text(self) -> Text:
        inc = self.screen_incident()
        if inc is None:
            return Text("no incident here", style="green")
        t = Text()
        t.append(f"{inc.root.severity.label} ", style=views.SEV_STYLE[inc.root.severity])
        t.append(f"{inc.root.code} {inc.root.entity}: ", style="bold")
        if inc.escalated:
            t.append(f"({inc.severity.label}) ", style=views.SEV_STYLE[inc.severity])
        t.append(inc.impact)
        fx = fixes.incident_fix(inc)
        if fx is not None and not self.session.read_only:
            t.append(f"   x: {fx.runbook} {fx.target}", style="cyan")
        elif inc.manual:
            t.append(f"   by hand: {inc.manual}", style="dim")
        return t

    def fix_screen_incident(self) -> None:
        inc = self.screen_incident()
        fx = fixes.incident_fix(inc) if inc is not None else None
        if inc is None or fx is None:
            self.notify("nothing to fix here" if inc is None else
                        f"no runbook applies: {inc.manual or inc.root.message}",
                        severity="warning")
            return
        self.post_message(OpenRunbook(fx.runbook, fx.target))

    def fix_findings(self, findings: Sequence[Finding], what: str = "here") -> None:
        """``x`` on one thing: its incident's fix, the root's for a consequence
        (``core.service.fixes``, the bot's and the CLI's rule)."""
        fx = fixes.fix_for_findings(self.incidents(), findings)
        if fx is None:
            self.notify(f"nothing to fix {what}: no runbook applies", severity="warning")
            return
        if fx.finding.key not in {f.key for f in findings}:
            self.notify(f"a consequence of {fx.finding.code} {fx.finding.entity}: its fix "
                        f"is the root's", severity="information")
        self.post_message(OpenRunbook(fx.runbook, fx.target))


# --------------------------------------------------------------------------- overview

class DetailScreen(DataScreen):
    """Label/value lines about one thing plus its findings; ``x`` fixes the worst one."""

    BINDINGS = [Binding("x", "fix", "Fix", id="fix")]

    def __init__(self, session: Session, title: str) -> None:
        super().__init__(session)
        self.TITLE_TEXT = title

    def body(self) -> ComposeResult:
        with VerticalScroll(id="detail-scroll"):
            yield Static(id="detail")

    def lines(self, st: ClusterState) -> list[tuple[str, str, str]]:
        return []

    def entity_findings(self) -> list[Finding]:
        return []

    def render_data(self, st: ClusterState) -> None:
        self.query_one("#detail", Static).update(lines_table(self.lines(st)))

    def action_fix(self) -> None:
        self.fix_findings(self.entity_findings())

    def focus_main(self) -> None:
        self.query_one("#detail-scroll").focus()

class ActionRefusedInput(Exception):
    """Bad values in the benchmark form (said in one line, nothing planned)."""
