"""Every cluster at a glance in the TUI: a list of the configured clusters with the verdict
and age of each one's last recorded check (from the journal: opening the list costs no
check), and Enter to switch to one without restarting. The switch drops the old cluster's
data at once, so nothing of one cluster is ever shown under another's name."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from core.fmt import human_age
from tui.state import Session

VERDICT = {0: "OK", 1: "WARN", 2: "CRIT", 3: "UNREACHABLE"}
STYLE = {0: "green", 1: "yellow", 2: "bold red", 3: "bold magenta"}


def cluster_rows(session: Session) -> list[tuple[str, str, str, str]]:
    """(name, verdict, age, source) per cluster, from each one's last recorded run."""
    rows = []
    now = session.clock()  # the App's clock (a test freezes it)
    for name in session.backend.clusters():
        last = next(iter(session.backend.history(name, limit=1)), None)
        if last is None:
            rows.append((name, "never checked", "", ""))
            continue
        n = last.n_findings
        rows.append((name, f"{VERDICT.get(last.exit_code, '?')} ({n} finding"
                           f"{'s' if n != 1 else ''})",
                     human_age(now - last.started_at) + " ago", last.source))
    return rows


class ClusterListScreen(ModalScreen[str | None]):
    """``C``: the cluster list; Enter switches, Esc keeps the current cluster."""

    BINDINGS = [Binding("escape", "dismiss_none", "Back"),
                Binding("enter", "choose", "Switch", show=True)]

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        with Vertical(id="clusters-box"):
            yield Static("Clusters: Enter switches, Esc goes back", id="clusters-title")
            t: DataTable[str] = DataTable(id="clusters", cursor_type="row")
            t.add_columns("", "cluster", "last check", "age", "by")
            yield t
            yield Static("Posted to on-call (alerts and watch), newest first",
                         id="stream-title")
            s: DataTable[str] = DataTable(id="stream", cursor_type="none")
            s.add_columns("opened", "cluster", "incident", "state")
            yield s

    def on_mount(self) -> None:
        ses = self.session
        t = self.query_one("#clusters", DataTable)
        for name, verdict, age, source in cluster_rows(ses):
            mark = "▶" if name == ses.cluster else ""
            t.add_row(mark, name, verdict, age, source, key=name)
        names = list(ses.backend.clusters())
        if ses.cluster in names:
            t.move_cursor(row=names.index(ses.cluster))
        t.focus()
        self.show_stream()
        self.set_interval(2.0, self.show_stream)

    def show_stream(self) -> None:
        """The alert/watch stream from the journal (a few rows: cheap every 2 s)."""
        s = self.query_one("#stream", DataTable)
        s.clear()
        for row in self.session.backend.alert_stream(20):
            opened = time.strftime("%H:%M:%S", time.localtime(row.opened_at))
            closed = row.closed_at
            state = ("resolved " + time.strftime("%H:%M:%S", time.localtime(float(closed)))
                     if closed else "open")
            s.add_row(opened, row.cluster, row.title[:80],
                      state)

    def action_choose(self) -> None:
        t = self.query_one("#clusters", DataTable)
        if t.row_count == 0:
            self.dismiss(None)
            return
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        self.dismiss(str(key))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.dismiss(str(event.row_key.value))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
