"""The screens: each renders the App's current ``ClusterState`` through ``tui.views``.

Screens never call the back end on the event loop: the App refreshes cluster data in a
thread worker and tells only the visible screen; screens that need something else (plan,
run, history) start their own thread workers, which post typed messages back.
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    Button,
    DataTable,
    Footer,
    Header,
    Input,
    RichLog,
    Select,
    Sparkline,
    Static,
)
from textual.worker import Worker

from checks.incidents import Incident
from checks.incidents import headline as incidents_headline
from checks.model import Finding
from tui import views
from tui.backend import BenchProgressView, BenchView, PlanView, RunEvent, RunView
from tui.messages import (
    BenchFinished,
    BenchHistoryLoaded,
    BenchProgressed,
    HistoryLoaded,
    Planned,
    RunFinished,
    RunLogged,
)
from tui.views import Row

if TYPE_CHECKING:
    from tui.app import ClusterState, StordocApp


def lines_table(lines: Iterable[tuple[str, str, str]]) -> Table:
    """A two-column label/value grid (overview and detail screens)."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    for label, value, style in lines:
        t.add_row(label, Text(value, style=style))
    return t


def _bulk_add(table: DataTable[Any], rows: Sequence[Row]) -> None:
    """``add_row`` for many rows at once.

    ``DataTable.add_row`` re-assigns the cursor (validator + watchers) and recomputes the
    ordered columns for every row: 10,000 OSDs took ~1 s. This does the same bookkeeping
    once per batch; it falls back to ``add_row`` if Textual's internals ever change.
    """
    try:
        from textual.widgets._data_table import Row as DTRow
        from textual.widgets._data_table import RowKey

        cols = [c.key for c in table.ordered_columns]
        locations, data, trows = table._row_locations, table._data, table.rows
    except (ImportError, AttributeError):
        for r in rows:
            table.add_row(*r.texts, key=r.key)
        return
    from rich.cells import cell_len

    start = table.row_count
    widths = [0] * len(cols)
    gc_was = gc.isenabled()
    gc.disable()  # ~100k short-lived cells: generational GC passes cost more than the work
    try:
        for i, r in enumerate(rows):
            key = RowKey(r.key)
            locations[key] = start + i
            data[key] = dict(zip(cols, r.texts))
            trows[key] = DTRow(key, 1, None, False)
            for j, c in enumerate(r.cells[:len(cols)]):
                w = len(c) if c.isascii() else cell_len(c)
                widths[j] = max(widths[j], w)
    finally:
        if gc_was:
            gc.enable()
    # the widths Textual would measure cell by cell on idle (plain one-line text: its
    # length), so the new rows need no per-cell measuring pass
    for col, w in zip(table.ordered_columns, widths):
        col.content_width = max(col.content_width, w)
    table._require_update_dimensions = True
    table.cursor_coordinate = table.cursor_coordinate
    table._update_count += 1
    table.check_idle()


_SHOWN: weakref.WeakKeyDictionary[DataTable[Any], list[Row]] = weakref.WeakKeyDictionary()


def fill_table(table: DataTable[Any], rows: Sequence[Row]) -> None:
    """Replace a table's rows, keeping the cursor on the same key when it still exists.

    Most refreshes change nothing on screen: then the table is left alone (no flicker,
    and no 10,000-row rebuild on the event loop while the user is typing).
    """
    prev = _SHOWN.get(table)
    if prev is not None and len(prev) == len(rows) and all(
            a is b or (a.key == b.key and a.cells == b.cells and a.styles == b.styles)
            for a, b in zip(prev, rows)):
        return
    _SHOWN[table] = list(rows)
    key: str | None = None
    if table.row_count and table.cursor_row >= 0:
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # cursor outside rows after a shrink
            key = None
    table.clear()
    _bulk_add(table, rows)
    if key is not None:
        try:
            table.move_cursor(row=table.get_row_index(key), animate=False)
        except Exception:  # row gone
            pass


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


class RowTable(DataTable[Any]):
    """A DataTable whose Home/End move the cursor to the first/last row (DataTable's own
    scroll sideways, which on-call read as "Home does nothing")."""

    BINDINGS = [Binding("home", "cursor_to('top')", "Top", show=False),
                Binding("end", "cursor_to('bottom')", "Bottom", show=False)]

    def action_cursor_to(self, where: str) -> None:
        if self.row_count:
            self.move_cursor(row=0 if where == "top" else self.row_count - 1)


class DataScreen(Screen[None]):
    """A screen that shows cluster data: header, status line, body, filter, footer."""

    TITLE_TEXT = ""
    BINDINGS = [Binding("slash", "filter", "Filter", id="filter"),
                # vim and less keys on every table (listed in Help, not in the footer)
                Binding("j", "table('down')", "Down", show=False),
                Binding("k", "table('up')", "Up", show=False),
                Binding("g", "table('top')", "Top", show=False),
                Binding("G", "table('bottom')", "Bottom", show=False)]

    def __init__(self) -> None:
        super().__init__()
        self.needle = ""
        self.shown_version = -1

    def action_table(self, where: str) -> None:
        """Move the cursor of the focused table (else the first one)."""
        t = self.focused if isinstance(self.focused, DataTable) else next(
            iter(self.query(DataTable)), None)
        if t is None or not t.row_count:
            return
        row = {"down": min(t.cursor_row + 1, t.row_count - 1),
               "up": max(t.cursor_row - 1, 0), "top": 0,
               "bottom": t.row_count - 1}[where]
        t.move_cursor(row=row)

    @property
    def sapp(self) -> StordocApp:
        from tui.app import StordocApp

        assert isinstance(self.app, StordocApp)
        return self.app

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
        if self.shown_version != self.sapp.state.version:
            self.show_state()
        self.update_status()

    def focus_main(self) -> None:
        tables = list(self.query(DataTable))
        if tables:
            tables[0].focus()

    # -- data
    def show_state(self) -> None:
        st = self.sapp.state
        self.shown_version = st.version
        self.update_status()
        if st.outcome is not None:
            self.render_data(st)

    def render_data(self, st: ClusterState) -> None:
        """Subclasses fill their widgets from ``st.outcome``."""

    def tick(self) -> None:
        """Timer tick while this screen is visible: refresh cluster data."""
        self.sapp.request_refresh()

    def update_status(self) -> None:
        try:
            w = self.query_one("#status", StatusLine)
        except Exception:
            return
        w.update(self.sapp.status_text())
        w.set_class(bool(self.sapp.state.error), "error")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Worker events do not bubble: hand them to the App's single handler."""
        self.sapp.on_worker_state_changed(event)

    # -- filter
    def action_filter(self) -> None:
        f = self.query_one("#filter", FilterInput)
        f.remove_class("hidden")
        f.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.needle = event.value.strip()
        if self.sapp.state.outcome is not None:
            self.render_data(self.sapp.state)

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        if not event.value:
            self.query_one("#filter", FilterInput).add_class("hidden")
        self.focus_main()

    # -- helpers
    @property
    def findings(self) -> tuple[Finding, ...]:
        o = self.sapp.state.outcome
        return o.report.findings if o else ()

    # -- a cause line and a Fix key on screens that show a kind of problem
    CAUSE_PREFIXES: tuple[str, ...] = ()

    def screen_incident(self) -> Incident | None:
        """The worst incident about what this screen shows (its codes' prefixes)."""
        o = self.sapp.state.outcome
        for inc in (o.incidents if o else ()):
            if any(f.code.startswith(self.CAUSE_PREFIXES) for f in inc.findings):
                return inc
        return None

    def cause_text(self) -> Text:
        inc = self.screen_incident()
        if inc is None:
            return Text("no incident here", style="green")
        t = Text()
        t.append(f"{inc.severity.label} ", style=views.SEV_STYLE[inc.severity])
        t.append(f"{inc.root.code} {inc.root.entity}: ", style="bold")
        t.append(inc.impact)
        if inc.next_step is not None and not self.sapp.read_only:
            t.append(f"   x: {inc.next_step.runbook} {inc.next_step.target}", style="cyan")
        elif inc.manual:
            t.append(f"   by hand: {inc.manual}", style="dim")
        return t

    def fix_screen_incident(self) -> None:
        inc = self.screen_incident()
        if inc is None or inc.next_step is None:
            self.notify("nothing to fix here" if inc is None else
                        f"no runbook applies: {inc.manual or inc.root.message}",
                        severity="warning")
            return
        self.sapp.open_runbook(inc.next_step.runbook, inc.next_step.target)

    def fix_finding(self, f: Finding | None) -> None:
        if f is None or not f.runbook or not f.target:
            self.notify("nothing to fix here: no finding with a runbook", severity="warning")
            return
        self.sapp.open_runbook(f.runbook, f.target)


# --------------------------------------------------------------------------- overview


class OverviewScreen(DataScreen):
    """stordoc's verdict and the incidents first (visible at 80x24), then the facts
    (Ceph's health among them), then every finding."""

    TITLE_TEXT = "Overview"
    BINDINGS = [Binding("x", "fix", "Fix", id="fix")]

    def body(self) -> ComposeResult:
        with Vertical(id="overview"):
            yield Static(id="headline")
            it: DataTable[Any] = RowTable(id="incidents", cursor_type="row")
            it.add_columns(*views.INCIDENT_COLUMNS)
            yield it
            yield Static(id="summary")
            t: DataTable[Any] = RowTable(id="top", cursor_type="row")
            t.add_columns(*views.FINDING_COLUMNS)
            yield t

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        out = st.outcome
        r = out.report
        head = incidents_headline(r.cluster, r.verdict, out.incidents, len(r.findings))
        style = {0: "bold green", 1: "bold yellow"}.get(r.verdict, "bold red")
        self.query_one("#headline", Static).update(Text(head, style=style))
        new = out.delta.new if out.delta else ()
        inc = self.query_one("#incidents", DataTable)
        fill_table(inc, views.incident_rows(out.incidents, new))
        inc.display = bool(out.incidents)
        ov = views.overview(out.snapshot, r.findings)
        self.query_one("#summary", Static).update(lines_table(ov.lines))
        rows = views.finding_rows(r.findings, self.needle, new)
        fill_table(self.query_one("#top", DataTable), rows)

    def selected_incident(self) -> Incident | None:
        o = self.sapp.state.outcome
        if o is None or not o.incidents:
            return None
        t = self.query_one("#incidents", DataTable)
        try:
            key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        except Exception:
            key = None
        for i in o.incidents:
            if key == f"incident:{i.id}":
                return i
        return o.incidents[0]

    def action_fix(self) -> None:
        """The selected (else the top) incident's one next step; never a refused one."""
        inc = self.selected_incident()
        if inc is None:
            self.notify("no incident to fix", severity="information")
            return
        if inc.next_step is None:
            self.notify(f"{inc.root.code} {inc.root.entity}: no runbook applies; "
                        f"{inc.manual or 'see the finding'}", severity="warning")
            return
        self.sapp.open_runbook(inc.next_step.runbook, inc.next_step.target)

    @on(DataTable.RowSelected, "#incidents")
    def _drill_incident(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value or ""
        o = self.sapp.state.outcome
        for i in (o.incidents if o else ()):
            if key == f"incident:{i.id}":
                self.app.push_screen(FindingDetailScreen(i.root))
                return

    @on(DataTable.RowSelected, "#top")
    def _drill(self, event: DataTable.RowSelected) -> None:
        _drill_finding(self, event)


def _drill_finding(screen: DataScreen, event: DataTable.RowSelected) -> None:
    key = event.row_key.value or ""
    for f in screen.findings:
        if key == f"finding:{f.code}:{f.entity}":
            screen.app.push_screen(FindingDetailScreen(f))
            return
    if key.startswith("sev:"):
        screen.sapp.goto("findings")


# --------------------------------------------------------------------------- OSDs


class OsdScreen(DataScreen):
    TITLE_TEXT = "OSDs (CRUSH tree by host)"
    BINDINGS = [
        Binding("u", "cycle_state", "State filter", id="osd_state"),
        Binding("n", "cycle_host", "Host filter", id="osd_host"),
        Binding("x", "fix", "Fix", id="fix"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.state_filter = "all"
        self.host_filter: str | None = None

    def body(self) -> ComposeResult:
        yield Static(id="filters")
        t: DataTable[Any] = RowTable(id="osds", cursor_type="row")
        t.add_columns(*views.OSD_COLUMNS)
        yield t

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        snap = st.outcome.snapshot
        rows = views.osd_rows(snap, self.sapp.target, self.state_filter, self.host_filter,
                              self.needle)
        self.query_one("#filters", Static).update(
            f"state: [b]{self.state_filter}[/]   host: [b]{self.host_filter or 'all'}[/]"
            + (f"   filter: [b]{self.needle}[/]" if self.needle else "")
            + f"   ({sum(1 for r in rows if r.kind == 'osd')} OSDs shown)")
        fill_table(self.query_one("#osds", DataTable), rows)

    def action_cycle_state(self) -> None:
        i = views.STATE_FILTERS.index(self.state_filter)
        self.state_filter = views.STATE_FILTERS[(i + 1) % len(views.STATE_FILTERS)]
        self.show_state()

    def action_cycle_host(self) -> None:
        o = self.sapp.state.outcome
        hosts: list[str | None] = [None]
        if o and o.snapshot.ceph:
            hosts += [h.name for h in o.snapshot.ceph.hosts]
        i = hosts.index(self.host_filter) if self.host_filter in hosts else 0
        self.host_filter = hosts[(i + 1) % len(hosts)]
        self.show_state()

    def selected(self) -> Row | None:
        t = self.query_one("#osds", DataTable)
        if not t.row_count:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value or ""
        if key.startswith("osd."):
            return Row(key, "osd", (), ref=int(key[4:]))
        if key.startswith("host:"):
            return Row(key, "host", (), ref=key[5:])
        return None

    def action_fix(self) -> None:
        r = self.selected()
        if r is None or r.kind != "osd":
            self.notify("select an OSD first", severity="warning")
            return
        self.fix_finding(_best_fixable(views.findings_for(self.findings, f"osd.{r.ref}")))

    @on(DataTable.RowSelected, "#osds")
    def _drill(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value or ""
        if key.startswith("osd."):
            self.app.push_screen(OsdDetailScreen(int(key[4:])))
        elif key.startswith("host:"):
            name = key[5:]
            self.host_filter = None if self.host_filter == name or name == "None" else name
            self.show_state()


def _best_fixable(fs: Sequence[Finding]) -> Finding | None:
    """The finding to fix first: the root cause (e.g. OSD_DATA_UNMOUNTED) over symptoms."""
    fixable = [f for f in fs if f.runbook and f.target]
    order = {"osd-remount": 0, "osd-activate": 0, "swift-device-remount": 0, "osd-start": 1,
             "osd-in": 2}
    fixable.sort(key=lambda f: (order.get(f.runbook or "", 5), -f.severity))
    return fixable[0] if fixable else None


class DetailScreen(DataScreen):
    """Label/value lines about one thing plus its findings; ``x`` fixes the worst one."""

    BINDINGS = [Binding("x", "fix", "Fix", id="fix")]

    def __init__(self, title: str) -> None:
        super().__init__()
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
        self.fix_finding(_best_fixable(self.entity_findings()))

    def focus_main(self) -> None:
        self.query_one("#detail-scroll").focus()


class OsdDetailScreen(DetailScreen):
    def __init__(self, osd_id: int) -> None:
        super().__init__(f"osd.{osd_id}")
        self.osd_id = osd_id

    def lines(self, st: ClusterState) -> list[tuple[str, str, str]]:
        assert st.outcome is not None
        return views.osd_detail(st.outcome.snapshot, self.sapp.target, self.osd_id,
                                st.outcome.report.findings)

    def entity_findings(self) -> list[Finding]:
        return views.findings_for(self.findings, f"osd.{self.osd_id}")


class EntityDetailScreen(DetailScreen):
    """Generic detail: given lines plus every finding about ``entity``."""

    def __init__(self, title: str, entity: str, extra: list[tuple[str, str, str]],
                 also: Sequence[str] = ()) -> None:
        super().__init__(title)
        self.entity = entity
        self.extra = extra
        self.also = also

    def entity_findings(self) -> list[Finding]:
        out = views.findings_for(self.findings, self.entity)
        for a in self.also:
            out += [f for f in self.findings if (a in f.entity or a == f.target)
                    and f not in out]
        return out

    def lines(self, st: ClusterState) -> list[tuple[str, str, str]]:
        out = list(self.extra)
        for f in self.entity_findings():
            out.append((f"{f.severity.label} {f.code}", f.message
                        + (f"  [fix: {f.runbook} {f.target}]" if f.runbook else ""),
                        views.SEV_STYLE[f.severity]))
        if len(out) == len(self.extra):
            out.append(("findings", "none", "green"))
        return out


# --------------------------------------------------------------------------- pools, cache


class PoolScreen(DataScreen):
    TITLE_TEXT = "Pools and PGs"

    def body(self) -> ComposeResult:
        with Vertical():
            t: DataTable[Any] = RowTable(id="pools", cursor_type="row")
            t.add_columns(*views.POOL_COLUMNS)
            yield t
            yield Static("PG states", classes="section")
            t2: DataTable[Any] = RowTable(id="pgstates", cursor_type="row")
            t2.add_columns("state", "count")
            yield t2

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        ceph = st.outcome.snapshot.ceph
        th = self.sapp.thresholds
        fill_table(self.query_one("#pools", DataTable),
                   views.pool_rows(ceph, th.pg_per_osd_target, th.pg_low_factor,
                                   th.pg_high_factor, self.needle))
        fill_table(self.query_one("#pgstates", DataTable), views.pg_state_rows(ceph))

    @on(DataTable.RowSelected, "#pools")
    def _drill(self, event: DataTable.RowSelected) -> None:
        name = (event.row_key.value or "")[5:]
        o = self.sapp.state.outcome
        p = o.snapshot.ceph.pool(name) if o and o.snapshot.ceph else None
        if p is None:
            return
        extra = [(k, str(v), "") for k, v in p.__dict__.items()]
        self.app.push_screen(EntityDetailScreen(f"pool {name}", f"pool {name}", extra,
                                                also=(name,)))


class CacheScreen(DataScreen):
    TITLE_TEXT = "Cache tiers"
    CAUSE_PREFIXES = ("CACHE_",)
    BINDINGS = [Binding("x", "fix", "Fix", id="fix")]

    def action_fix(self) -> None:
        self.fix_screen_incident()

    def body(self) -> ComposeResult:
        yield Static(id="cause", classes="cause")
        t: DataTable[Any] = RowTable(id="cache", cursor_type="row")
        t.add_columns(*views.CACHE_COLUMNS)
        yield t
        yield Static(id="cache-note")

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        rows = views.cache_rows(st.outcome.snapshot.ceph, self.needle)
        self.query_one("#cause", Static).update(self.cause_text())
        fill_table(self.query_one("#cache", DataTable), rows)
        self.query_one("#cache-note", Static).update(
            "" if rows else "no cache tiers configured")

    @on(DataTable.RowSelected, "#cache")
    def _drill(self, event: DataTable.RowSelected) -> None:
        name = (event.row_key.value or "")[6:]
        o = self.sapp.state.outcome
        p = o.snapshot.ceph.pool(name) if o and o.snapshot.ceph else None
        if p is None:
            return
        extra = [(k, str(v), "") for k, v in p.__dict__.items()
                 if k.startswith(("cache", "target", "hit_set", "min_", "tier", "stored",
                                  "objects", "name"))]
        self.app.push_screen(EntityDetailScreen(f"cache tier {name}", f"pool {name}", extra,
                                                also=(name,)))


# --------------------------------------------------------------------------- Swift


class SwiftScreen(DataScreen):
    TITLE_TEXT = "Swift rings"
    CAUSE_PREFIXES = ("SWIFT_",)
    BINDINGS = [Binding("x", "fix", "Fix", id="fix")]

    def action_fix(self) -> None:
        self.fix_screen_incident()

    def body(self) -> ComposeResult:
        yield Static(id="cause", classes="cause")
        t: DataTable[Any] = RowTable(id="rings", cursor_type="row")
        t.add_columns(*views.RING_COLUMNS)
        yield t
        yield Static(id="swift-note")
        srv: DataTable[Any] = RowTable(id="swift-servers", cursor_type="row")
        srv.add_columns(*views.SERVER_COLUMNS)
        yield srv

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        sw = st.outcome.snapshot.swift
        self.query_one("#cause", Static).update(self.cause_text())
        fill_table(self.query_one("#rings", DataTable), views.ring_rows(sw, self.needle))
        fill_table(self.query_one("#swift-servers", DataTable),
                   views.server_rows(sw, st.outcome.snapshot.taken_at, self.needle))
        self.query_one("#swift-note", Static).update(
            views.swift_note(sw, st.outcome.snapshot.swift_error))

    @on(DataTable.RowSelected, "#rings")
    def _drill(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value or ""
        o = self.sapp.state.outcome
        sw = o.snapshot.swift if o else None
        if not key.startswith("dev:") or sw is None:
            return
        _, kind, did = key.split(":", 2)
        ring = sw.ring(kind)
        dev = next((d for d in ring.devices if d.id == int(did)), None) if ring else None
        if ring is None or dev is None:
            return
        extra = [(k, str(v), "") for k, v in dev.__dict__.items()]
        for h in sw.recon:
            if h.ip == dev.ip:
                extra.append((f"recon {h.server} {h.ip}:{h.port}",
                              h.error or f"unmounted: {', '.join(h.unmounted) or 'none'}",
                              "yellow" if h.error or dev.device in h.unmounted else ""))
        self.app.push_screen(EntityDetailScreen(
            f"{kind} ring {dev.endpoint}", f"{kind} ring {dev.endpoint}", extra,
            also=(f"{dev.device}@{dev.ip}:{dev.port}", f"{dev.device}@")))


# --------------------------------------------------------------------------- findings


class FindingsScreen(DataScreen):
    TITLE_TEXT = "Findings"
    BINDINGS = [Binding("x", "fix", "Fix", id="fix"), Binding("m", "mute", "Mute…", id="mute")]

    def body(self) -> ComposeResult:
        t: DataTable[Any] = RowTable(id="findings", cursor_type="row")
        t.add_columns(*views.FINDING_COLUMNS)
        yield t

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        fill_table(self.query_one("#findings", DataTable),
                   views.finding_rows(st.outcome.report.findings, self.needle,
                                      st.outcome.delta.new if st.outcome.delta else ()))

    def _selected(self) -> Finding | None:
        t = self.query_one("#findings", DataTable)
        if not t.row_count:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        return next((f for f in self.findings if key == f"finding:{f.code}:{f.entity}"),
                    None)

    def action_fix(self) -> None:
        self.fix_finding(self._selected())

    def action_mute(self) -> None:
        """Mute the selected finding (this entity) for a while, with a reason."""
        f = self._selected()
        if f is None:
            self.notify("no finding selected", severity="warning")
            return

        def done(answer: tuple[float, str] | None) -> None:
            if answer is None:
                return
            try:
                msg = self.sapp.backend.mute(self.sapp.cluster, f.code, f.entity, *answer)
            except Exception as e:  # refused (no reason, ...): one line, nothing changed
                self.notify(str(e), severity="error")
                return
            self.notify(msg)
            self.sapp.request_refresh()

        self.app.push_screen(MuteModal(f), done)

    @on(DataTable.RowSelected, "#findings")
    def _drill(self, event: DataTable.RowSelected) -> None:
        _drill_finding(self, event)


class FindingDetailScreen(DetailScreen):
    def __init__(self, finding: Finding) -> None:
        super().__init__(f"{finding.code} {finding.entity}")
        self.finding = finding

    def lines(self, st: ClusterState) -> list[tuple[str, str, str]]:
        f = self.finding
        now_there = any(g.key == f.key for g in self.findings)
        return [
            ("code", f.code, "bold"),
            ("severity", f.severity.label, views.SEV_STYLE[f.severity]),
            ("entity", f.entity, ""),
            ("message", f.message, ""),
            ("runbook", f"{f.runbook} {f.target}  (press x to plan the fix)"
             if f.runbook and not self.sapp.read_only else (f.runbook or "none"),
             "cyan" if f.runbook else "dim"),
            ("still present", "yes" if now_there else "no (resolved since)",
             "" if now_there else "green"),
            ("evidence", views.evidence_text(f.evidence), ""),
        ]

    def entity_findings(self) -> list[Finding]:
        return [self.finding]


# --------------------------------------------------------------------------- runbook


class MuteModal(ModalScreen["tuple[float, str] | None"]):
    """How long and why: both required; Enter in the reason field mutes, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, finding: Finding) -> None:
        super().__init__()
        self.finding = finding

    def compose(self) -> ComposeResult:
        with Vertical(id="mute"):
            yield Static(f"[b]Mute {self.finding.code} {self.finding.entity}[/b]\n"
                         "for (30m, 4h, 2d) and why (kept in the audit); Enter mutes, "
                         "Escape cancels")
            yield Input(value="4h", id="mute-for")
            yield Input(placeholder="reason (required)", id="mute-reason")
            yield Static(id="mute-error")

    def on_mount(self) -> None:
        self.query_one("#mute-reason", Input).focus()

    @on(Input.Submitted)
    def _submit(self, event: Input.Submitted) -> None:
        from stordoc.argtypes import parse_duration

        err = self.query_one("#mute-error", Static)
        try:
            for_s = parse_duration(self.query_one("#mute-for", Input).value, 60,
                                   30 * 86400.0)
        except ValueError as e:
            err.update(f"[red]{e}[/]")
            return
        reason = self.query_one("#mute-reason", Input).value.strip()
        if not reason:
            err.update("[red]a reason is required[/]")
            self.query_one("#mute-reason", Input).focus()
            return
        self.dismiss((for_s, reason))

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmModal(ModalScreen[bool]):
    """Shows the exact commands; only an explicit Confirm runs them."""

    BINDINGS = [Binding("y", "confirm", "Confirm and run", id="confirm"),
                Binding("escape,n", "cancel", "Cancel")]

    def __init__(self, plan: PlanView) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(f"[b]Run {self.plan.runbook} on {self.plan.target}?[/b]\n"
                         "These exact commands will run (y or the red button runs them, "
                         "n or Esc cancels):", id="confirm-title")
            with VerticalScroll(id="confirm-cmds"):
                yield Static(Text("\n".join(self.plan.lines) or "(no commands)"),
                             id="confirm-plan")
            with Horizontal(id="confirm-buttons"):
                yield Button("Confirm and run", variant="error", id="yes")
                yield Button("Cancel", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_confirm(self) -> None:
        self.dismiss(True)


class RunbookScreen(DataScreen):
    """Plan -> confirm (modal) -> live step log -> verification."""

    BINDINGS = [
        Binding("a", "apply", "Apply…", id="apply"),
        Binding("k", "cancel_run", "Cancel run", id="cancel_run"),
    ]

    def __init__(self, runbook: str, target: str) -> None:
        super().__init__()
        self.runbook = runbook
        self.target_name = target
        self.TITLE_TEXT = f"Runbook {runbook} {target}"
        self.plan: PlanView | None = None
        self.running = False
        self.done: RunView | None = None
        self.cancel_event = threading.Event()

    def body(self) -> ComposeResult:
        yield Static("planning…", id="plan")
        yield RichLog(id="runlog", wrap=True, markup=False, highlight=False)

    def on_mount(self) -> None:
        super().on_mount()
        cluster, backend = self.sapp.cluster, self.sapp.backend
        rb, tgt = self.runbook, self.target_name

        def work() -> None:
            self.post_message(Planned(backend.plan(cluster, rb, tgt, {})))

        self.run_worker(work, thread=True, group="plan", exit_on_error=False)

    def tick(self) -> None:
        """The run log is live already; no cluster refresh while a runbook is on screen."""

    def focus_main(self) -> None:
        self.query_one("#runlog", RichLog).focus()

    def on_planned(self, msg: Planned) -> None:
        self.plan = msg.plan
        text = Text()
        text.append(f"Plan for {msg.plan.runbook} {msg.plan.target}:\n", style="bold")
        for ln in msg.plan.lines:
            text.append(f"  {ln}\n")
        text.append("\nPress a to apply (you will see the exact commands again and confirm).",
                    style="dim")
        self.query_one("#plan", Static).update(text)
        self.refresh_bindings()

    def worker_failed(self, group: str, error: BaseException) -> None:
        """Called by the App's single worker-error handler."""
        log = self.query_one("#runlog", RichLog)
        if group == "plan":
            self.query_one("#plan", Static).update(
                Text(f"cannot plan: {error}", style="bold red"))
        else:
            self.running = False
            log.write(Text(f"FAILED: {error}", style="bold red"))
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "apply":
            return self.plan is not None and not self.running and self.done is None \
                and not self.sapp.read_only
        if action == "cancel_run":
            return self.running
        return True

    def action_apply(self) -> None:
        if self.plan is None or self.running or self.sapp.read_only:
            return
        self.app.push_screen(ConfirmModal(self.plan), self._confirmed)

    def _confirmed(self, yes: bool | None) -> None:
        log = self.query_one("#runlog", RichLog)
        if not yes or self.plan is None:
            log.write(Text("not confirmed: nothing was run", style="yellow"))
            return
        self.running = True
        self.refresh_bindings()
        log.write(Text(f"confirmed by {self.sapp.user}; running…", style="bold"))
        plan, cluster, backend = self.plan, self.sapp.cluster, self.sapp.backend
        cancel = self.cancel_event

        def log_event(ev: RunEvent) -> None:
            self.post_message(RunLogged(ev))

        def work() -> None:
            res = backend.execute(cluster, plan, log_event, cancel)
            self.post_message(RunFinished(res))
            if res.ok:  # the truth after "success": peering, recovery, until clean
                backend.follow(cluster, plan.runbook,
                               lambda line, clean: log_event(RunEvent("info", line, clean or
                                                                      None)), cancel)

        self.run_worker(work, thread=True, group="run", exit_on_error=False)

    def action_cancel_run(self) -> None:
        self.cancel_event.set()
        self.query_one("#runlog", RichLog).write(
            Text("cancel requested: stops before the next step", style="yellow"))

    def on_run_logged(self, msg: RunLogged) -> None:
        ev = msg.event
        style = {True: "green", False: "bold red"}.get(ev.ok, "") if ev.ok is not None else ""
        self.query_one("#runlog", RichLog).write(Text(f"[{ev.kind}] {ev.text}", style=style))

    def on_run_finished(self, msg: RunFinished) -> None:
        self.running = False
        self.done = msg.result
        log = self.query_one("#runlog", RichLog)
        log.write(Text(("SUCCEEDED: " if msg.result.ok else "FAILED: ") + msg.result.summary,
                       style="bold green" if msg.result.ok else "bold red"))
        for v in msg.result.verification:
            log.write(Text(f"verify: {v}"))
        self.refresh_bindings()
        self.sapp.request_refresh(force=True)


# --------------------------------------------------------------------------- history


class HistoryScreen(DataScreen):
    TITLE_TEXT = "History and audit"

    def body(self) -> ComposeResult:
        with Vertical():
            yield Static("Check runs", classes="section")
            t: DataTable[Any] = RowTable(id="runs", cursor_type="row")
            t.add_columns(*views.HISTORY_COLUMNS)
            yield t
            yield Static("Runbook runs (audit)", classes="section")
            t2: DataTable[Any] = RowTable(id="audit", cursor_type="row")
            t2.add_columns(*views.AUDIT_COLUMNS)
            yield t2

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[dict[str, Any]] = []
        self.audit: list[dict[str, Any]] = []

    def on_mount(self) -> None:
        super().on_mount()
        self.tick()

    def tick(self) -> None:
        cluster, backend = self.sapp.cluster, self.sapp.backend

        def work() -> None:
            self.post_message(HistoryLoaded(backend.history(cluster),
                                            backend.audit(cluster)))

        self.run_worker(work, thread=True, group="history", exclusive=True,
                        exit_on_error=False)

    def on_history_loaded(self, msg: HistoryLoaded) -> None:
        self.runs, self.audit = msg.runs, msg.audit
        self.render_data(self.sapp.state)

    def render_data(self, st: ClusterState) -> None:
        now = self.sapp.clock()
        fill_table(self.query_one("#runs", DataTable),
                   [r for r in views.history_rows(self.runs, now) if r.matches(self.needle)])
        fill_table(self.query_one("#audit", DataTable),
                   [r for r in views.audit_rows(self.audit, now) if r.matches(self.needle)])

    @on(DataTable.RowSelected, "#runs")
    def _drill(self, event: DataTable.RowSelected) -> None:
        rid = int((event.row_key.value or "run:0")[4:])
        self.app.push_screen(RunFindingsScreen(rid))

    @on(DataTable.RowSelected, "#audit")
    def _drill_audit(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value or ""
        run = next((r for r in self.audit if f"audit:{r.get('id')}" == key), None)
        if run is not None:
            self.app.push_screen(AuditRunScreen(run))


class AuditRunScreen(DataScreen):
    """One runbook run from the audit: who, what, outcome, and every step it ran."""

    def __init__(self, run: dict[str, Any]) -> None:
        super().__init__()
        self.run = run
        self.TITLE_TEXT = f"Audit run {run.get('id')}: {run.get('runbook')} {run.get('target')}"
        self.steps: list[dict[str, Any]] = []

    def body(self) -> ComposeResult:
        yield Static(id="audit-head")
        t: DataTable[Any] = RowTable(id="audit-steps", cursor_type="row")
        t.add_columns("#", "title", "where", "command", "rc", "status", "took")
        yield t

    def on_mount(self) -> None:
        super().on_mount()
        backend, rid = self.sapp.backend, int(self.run.get("id") or 0)

        def work() -> None:
            self.post_message(HistoryLoaded(backend.audit_steps(rid), []))

        self.run_worker(work, thread=True, group="history", exit_on_error=False)

    def tick(self) -> None:
        """A finished run does not change."""

    def on_history_loaded(self, msg: HistoryLoaded) -> None:
        self.steps = msg.runs
        self.render_data(self.sapp.state)

    def render_data(self, st: ClusterState) -> None:
        r = self.run
        self.query_one("#audit-head", Static).update(lines_table([
            ("runbook", f"{r.get('runbook')} {r.get('target')}", "bold"),
            ("by", f"{r.get('user')} (confirmed by {r.get('confirmed_by')}, "
                   f"from {r.get('source')})", ""),
            ("when", views._when(r.get("started_at"), self.sapp.clock()), ""),
            ("outcome", str(r.get("outcome")), "green" if r.get("outcome") == "success"
             else "bold red"),
            ("message", str(r.get("message") or ""), ""),
        ]))
        rows = []
        for i, stp in enumerate(self.steps):
            ok = stp.get("status") == "done"
            cells = [str(stp.get("idx", i + 1)), str(stp.get("title", "")),
                     str(stp.get("host", "")), str(stp.get("command", "")),
                     str(stp.get("rc", "")), str(stp.get("status", "")),
                     f"{float(stp.get('duration_s') or 0):.1f}s"]
            row = Row(f"step:{i}", "step", tuple(cells),
                      ("", "bold", "", "", "", "green" if ok else "bold red", ""),
                      " ".join(cells).lower())
            if row.matches(self.needle):
                rows.append(row)
        fill_table(self.query_one("#audit-steps", DataTable), rows)


class RunFindingsScreen(DataScreen):
    """The findings one past check run recorded (from the journal)."""

    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id
        self.TITLE_TEXT = f"Check run {run_id}"
        self.rows: list[dict[str, Any]] = []

    def body(self) -> ComposeResult:
        t: DataTable[Any] = RowTable(id="runfindings", cursor_type="row")
        t.add_columns("severity", "code", "entity", "message", "runbook")
        yield t

    def on_mount(self) -> None:
        super().on_mount()
        backend, rid = self.sapp.backend, self.run_id

        def work() -> None:
            self.post_message(HistoryLoaded(backend.findings_of(rid), []))

        self.run_worker(work, thread=True, group="history", exit_on_error=False)

    def tick(self) -> None:
        """Past runs do not change."""

    def on_history_loaded(self, msg: HistoryLoaded) -> None:
        self.rows = msg.runs
        self.render_data(self.sapp.state)

    def render_data(self, st: ClusterState) -> None:
        rows = []
        for i, f in enumerate(self.rows):
            sev = str(f.get("severity"))
            cells = [sev, str(f.get("code")), str(f.get("entity")), str(f.get("message")),
                     f"{f.get('runbook')} {f.get('target')}" if f.get("runbook") else "-"]
            r = Row(f"rf:{i}", "finding", tuple(cells),
                    ({"crit": "bold red", "warn": "yellow"}.get(sev, "cyan"),),
                    " ".join(cells).lower())
            if r.matches(self.needle):
                rows.append(r)
        fill_table(self.query_one("#runfindings", DataTable), rows)


# --------------------------------------------------------------------------- help


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss_help", "Close")]

    def __init__(self, text: Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(self.text)

    def action_dismiss_help(self) -> None:
        self.dismiss(None)


# --------------------------------------------------------------------------- benchmarks

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


class BenchScreen(DataScreen):
    """Launch a benchmark (plan, confirm), watch it live, compare with the baseline."""

    TITLE_TEXT = "Benchmarks"
    BINDINGS = [
        Binding("l", "bench_launch", "Launch…", id="bench_launch"),
        Binding("k", "bench_cancel", "Cancel bench", id="bench_cancel"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        self.running = False
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
        yield Static("l launches (plan, then confirm); k cancels a running benchmark",
                     id="bench-live")
        yield Sparkline([], id="bench-spark")
        with VerticalScroll(id="bench-out"):
            yield Static(id="bench-result")
        t: DataTable[Any] = RowTable(id="bench-history", cursor_type="row")
        t.add_columns(*BENCH_COLUMNS)
        yield t

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#bench-history").focus()
        self.tick()

    def focus_main(self) -> None:
        self.query_one("#bench-history", DataTable).focus()

    def tick(self) -> None:
        if self.running:
            return
        cluster, backend = self.sapp.cluster, self.sapp.backend

        def work() -> None:
            self.post_message(BenchHistoryLoaded(backend.bench_history(cluster)))

        self.run_worker(work, thread=True, group="bench-history", exclusive=True,
                        exit_on_error=False)

    def on_bench_history_loaded(self, msg: BenchHistoryLoaded) -> None:
        self.rows = msg.rows
        self.render_data(self.sapp.state)

    def render_data(self, st: ClusterState) -> None:
        rows = [r for r in bench_rows(self.rows, self.sapp.clock()) if r.matches(self.needle)]
        fill_table(self.query_one("#bench-history", DataTable), rows)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "bench_launch":
            return not self.running and not self.sapp.read_only
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
        if self.running or self.sapp.read_only:
            return
        try:
            kind, opts = self.options()
        except ActionRefusedInput as e:
            self.notify(str(e), severity="error")
            return
        cluster, backend = self.sapp.cluster, self.sapp.backend
        self.query_one("#bench-live", Static).update(f"planning bench {kind}…")

        def work() -> None:
            self.post_message(Planned(backend.bench_plan(cluster, kind, opts)))

        self.run_worker(work, thread=True, group="bench-plan", exit_on_error=False)

    def worker_failed(self, group: str, error: BaseException) -> None:
        self.running = False
        self.query_one("#bench-live", Static).update(
            Text(f"{'cannot plan' if group == 'bench-plan' else 'FAILED'}: {error}",
                 style="bold red"))
        self.refresh_bindings()

    def on_planned(self, msg: Planned) -> None:
        self.query_one("#bench-live", Static).update("plan ready: confirm to run")
        self.app.push_screen(ConfirmModal(msg.plan), lambda yes: self._confirmed(yes, msg.plan))

    def _confirmed(self, yes: bool | None, plan: PlanView) -> None:
        live = self.query_one("#bench-live", Static)
        if not yes:
            live.update(Text("not confirmed: nothing was run", style="yellow"))
            return
        self.running = True
        self.samples = []
        self.cancel_event = threading.Event()
        self.refresh_bindings()
        live.update(f"running {plan.runbook}…")
        cluster, backend, cancel = self.sapp.cluster, self.sapp.backend, self.cancel_event

        def progress(p: BenchProgressView) -> None:
            self.post_message(BenchProgressed(p))

        def work() -> None:
            res = backend.bench_run(cluster, plan, progress, cancel)
            self.post_message(BenchFinished(res))

        self.run_worker(work, thread=True, group="bench-run", exit_on_error=False)

    def action_bench_cancel(self) -> None:
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
        self.running = False
        self.result = r = msg.result
        self.refresh_bindings()
        self.query_one("#bench-live", Static).update(
            Text(f"{r.status.upper()}: {r.message}",
                 style="bold green" if r.ok else "bold red"))
        out = Text()
        for row in bench_rows(list(r.results), self.sapp.clock()):
            c = row.cells
            out.append(f"{c[2]}: {c[4]} ops/s, {c[5]} MB/s, latency avg {c[6]} p50 {c[7]} "
                       f"p90 {c[8]} p99 {c[9]} max {c[10]} ms, errors {c[11]}\n", style="bold")
        for line in r.comparison:
            out.append(line + "\n")
        if r.chart:
            out.append_text(Text.from_ansi(r.chart))
        self.query_one("#bench-result", Static).update(out)
        self.tick()


class ActionRefusedInput(Exception):
    """Bad values in the benchmark form (said in one line, nothing planned)."""
