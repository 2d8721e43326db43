"""The cluster screens: overview, OSDs (and an OSD's detail), pools, cache tiers, Swift."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from checks.incidents import Incident
from checks.incidents import headline as incidents_headline
from checks.model import Finding
from core.service import fixes
from tui import views
from tui.messages import OpenRunbook
from tui.screens.base import (
    DataScreen,
    DetailScreen,
    fill_table,
    lines_table,
)
from tui.screens.findings import HEADERS, IncidentScreen, _drill_finding
from tui.state import ClusterState, Session
from tui.table import VirtualTable
from tui.views import Row


class OverviewScreen(DataScreen):
    """stordoc's verdict and the incidents first (visible at 80x24), then the facts
    (Ceph's health among them), then every finding."""

    TITLE_TEXT = "Overview"
    BINDINGS = [Binding("x", "fix", "Fix", id="fix")]

    def body(self) -> ComposeResult:
        with VerticalScroll(id="overview"):
            yield Static(id="headline")
            it = VirtualTable(id="incidents")
            it.add_columns(*views.INCIDENT_COLUMNS)
            yield it
            yield Static(id="incident-line")
            yield Static(id="summary")
            t = VirtualTable(id="top", header_kinds=HEADERS)
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
        inc = self.query_one("#incidents", VirtualTable)
        fill_table(inc, views.incident_rows(out.incidents, new))
        inc.display = bool(out.incidents)
        self.query_one("#incident-line", Static).display = bool(out.incidents)
        self._incident_line()
        ov = views.overview(out.snapshot, r.findings)
        # what to do, first of the facts: the core's one decision, the CLI's last line
        nxt = ("Next", fixes.last_line(out.incidents, findings=r.findings)
               .removeprefix("next: "), "bold green")
        self.query_one("#summary", Static).update(lines_table((nxt, *ov.lines)))
        rows = views.finding_rows(r.findings, self.needle, new)
        fill_table(self.query_one("#top", VirtualTable), rows)

    def selected_incident(self) -> Incident | None:
        o = self.session.state.outcome
        if o is None or not o.incidents:
            return None
        key = self.query_one("#incidents", VirtualTable).cursor_key
        for i in o.incidents:
            if key == f"incident:{i.id}":
                return i
        return o.incidents[0]

    @on(VirtualTable.RowHighlighted, "#incidents")
    def _incident_line(self) -> None:
        self.query_one("#incident-line", Static).update(
            views.incident_line(self.selected_incident(), not self.session.read_only))

    def action_fix(self) -> None:
        """The selected (else the top) incident's one next step; never a refused one."""
        inc = self.selected_incident()
        if inc is None:
            self.notify("no incident to fix", severity="information")
            return
        fx = fixes.incident_fix(inc)
        if fx is None:
            self.notify(f"{inc.root.code} {inc.root.entity}: no runbook applies; "
                        f"{fixes.incident_step(inc)}", severity="warning")
            return
        self.post_message(OpenRunbook(fx.runbook, fx.target))

    @on(VirtualTable.RowSelected, "#incidents")
    def _drill_incident(self, event: VirtualTable.RowSelected) -> None:
        key = event.row_key.value or ""
        o = self.session.state.outcome
        for i in (o.incidents if o else ()):
            if key == f"incident:{i.id}":
                self.app.push_screen(IncidentScreen(self.session, i))
                return

    @on(VirtualTable.RowSelected, "#top")
    def _drill(self, event: VirtualTable.RowSelected) -> None:
        _drill_finding(self, event)

class OsdScreen(DataScreen):
    TITLE_TEXT = "OSDs (CRUSH tree by host)"
    BINDINGS = [
        Binding("u", "cycle_state", "State filter", id="osd_state"),
        Binding("n", "cycle_host", "Host filter", id="osd_host"),
        Binding("x", "fix", "Fix", id="fix"),
        Binding("m", "maintenance", "Maintenance…", id="maintenance"),
    ]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.state_filter = "all"
        self.host_filter: str | None = None

    def body(self) -> ComposeResult:
        yield Static(id="filters")
        t = VirtualTable(id="osds")
        t.add_columns(*views.OSD_COLUMNS)
        yield t

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        snap = st.outcome.snapshot
        rows = views.osd_rows(snap, self.session.target, self.state_filter, self.host_filter,
                              self.needle)
        self.query_one("#filters", Static).update(
            f"state: [b]{self.state_filter}[/]   host: [b]{self.host_filter or 'all'}[/]"
            + (f"   filter: [b]{self.needle}[/]" if self.needle else "")
            + f"   ({sum(1 for r in rows if r.kind == 'osd')} OSDs shown)")
        fill_table(self.query_one("#osds", VirtualTable), rows)

    def action_cycle_state(self) -> None:
        i = views.STATE_FILTERS.index(self.state_filter)
        self.state_filter = views.STATE_FILTERS[(i + 1) % len(views.STATE_FILTERS)]
        self.show_state()

    def action_cycle_host(self) -> None:
        o = self.session.state.outcome
        hosts: list[str | None] = [None]
        if o and o.snapshot.ceph:
            hosts += [h.name for h in o.snapshot.ceph.hosts]
        i = hosts.index(self.host_filter) if self.host_filter in hosts else 0
        self.host_filter = hosts[(i + 1) % len(hosts)]
        self.show_state()

    def selected(self) -> Row | None:
        key = self.query_one("#osds", VirtualTable).cursor_key or ""
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
        self.fix_findings(views.findings_for(self.findings, f"osd.{r.ref}"), f"on osd.{r.ref}")

    def action_maintenance(self) -> None:
        """A maintenance window (runbook maintenance-start, 2 h) on the selected host, or
        the selected OSD's host; maintenance-end when its OSDs carry noout already."""
        r = self.selected()
        o = self.session.state.outcome
        host = r.ref if r is not None and r.kind == "host" else None
        ceph = o.snapshot.ceph if o else None
        if r is not None and r.kind == "osd" and ceph is not None:
            osd = ceph.osd(int(r.ref))  # type: ignore[arg-type]
            host = osd.host if osd else None
        if not isinstance(host, str) or ceph is None:
            self.notify("select a host or an OSD first", severity="warning")
            return
        self.post_message(OpenRunbook(fixes.maintenance_runbook(ceph, host), host))

    @on(VirtualTable.RowSelected, "#osds")
    def _drill(self, event: VirtualTable.RowSelected) -> None:
        key = event.row_key.value or ""
        if key.startswith("osd."):
            self.app.push_screen(OsdDetailScreen(self.session, int(key[4:])))
        elif key.startswith("host:"):
            name = key[5:]
            self.host_filter = None if self.host_filter == name or name == "None" else name
            self.show_state()

class OsdDetailScreen(DetailScreen):
    def __init__(self, session: Session, osd_id: int) -> None:
        super().__init__(session, f"osd.{osd_id}")
        self.osd_id = osd_id

    def lines(self, st: ClusterState) -> list[tuple[str, str, str]]:
        assert st.outcome is not None
        return views.osd_detail(st.outcome.snapshot, self.session.target, self.osd_id,
                                st.outcome.report.findings)

    def entity_findings(self) -> list[Finding]:
        return views.findings_for(self.findings, f"osd.{self.osd_id}")

class EntityDetailScreen(DetailScreen):
    """Generic detail: given lines plus every finding about ``entity``."""

    def __init__(self, session: Session, title: str, entity: str,
                 extra: list[tuple[str, str, str]], also: Sequence[str] = ()) -> None:
        super().__init__(session, title)
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
            t = VirtualTable(id="pools")
            t.add_columns(*views.POOL_COLUMNS)
            yield t
            yield Static("PG states", classes="section")
            t2 = VirtualTable(id="pgstates")
            t2.add_columns("state", "count")
            yield t2

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        ceph = st.outcome.snapshot.ceph
        th = self.session.thresholds
        fill_table(self.query_one("#pools", VirtualTable),
                   views.pool_rows(ceph, th.pg_per_osd_target, th.pg_low_factor,
                                   th.pg_high_factor, self.needle))
        fill_table(self.query_one("#pgstates", VirtualTable), views.pg_state_rows(ceph))

    @on(VirtualTable.RowSelected, "#pools")
    def _drill(self, event: VirtualTable.RowSelected) -> None:
        name = (event.row_key.value or "")[5:]
        o = self.session.state.outcome
        p = o.snapshot.ceph.pool(name) if o and o.snapshot.ceph else None
        if p is None:
            return
        extra = [(k, str(v), "") for k, v in p.__dict__.items()]
        self.app.push_screen(EntityDetailScreen(self.session, f"pool {name}", f"pool {name}",
                                                extra, also=(name,)))

class CacheScreen(DataScreen):
    TITLE_TEXT = "Cache tiers"
    AREA = "cache"
    BINDINGS = [Binding("x", "fix", "Fix", id="fix")]

    def action_fix(self) -> None:
        self.fix_screen_incident()

    def body(self) -> ComposeResult:
        yield Static(id="cause", classes="cause")
        t = VirtualTable(id="cache")
        t.add_columns(*views.CACHE_COLUMNS)
        yield t
        yield Static(id="cache-note")

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        rows = views.cache_rows(st.outcome.snapshot.ceph, self.needle)
        self.query_one("#cause", Static).update(self.cause_text())
        fill_table(self.query_one("#cache", VirtualTable), rows)
        self.query_one("#cache-note", Static).update(
            "" if rows else "no cache tiers configured")

    @on(VirtualTable.RowSelected, "#cache")
    def _drill(self, event: VirtualTable.RowSelected) -> None:
        name = (event.row_key.value or "")[6:]
        o = self.session.state.outcome
        p = o.snapshot.ceph.pool(name) if o and o.snapshot.ceph else None
        if p is None:
            return
        extra = [(k, str(v), "") for k, v in p.__dict__.items()
                 if k.startswith(("cache", "target", "hit_set", "min_", "tier", "stored",
                                  "objects", "name"))]
        self.app.push_screen(EntityDetailScreen(self.session, f"cache tier {name}",
                                                f"pool {name}", extra, also=(name,)))


# --------------------------------------------------------------------------- Swift

class SwiftScreen(DataScreen):
    TITLE_TEXT = "Swift rings"
    AREA = "swift"
    BINDINGS = [Binding("x", "fix", "Fix", id="fix")]

    def action_fix(self) -> None:
        self.fix_screen_incident()

    def body(self) -> ComposeResult:
        yield Static(id="cause", classes="cause")
        t = VirtualTable(id="rings")
        t.add_columns(*views.RING_COLUMNS)
        yield t
        yield Static(id="swift-note")
        srv = VirtualTable(id="swift-servers")
        srv.add_columns(*views.SERVER_COLUMNS)
        yield srv

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        sw = st.outcome.snapshot.swift
        self.query_one("#cause", Static).update(self.cause_text())
        fill_table(self.query_one("#rings", VirtualTable), views.ring_rows(sw, self.needle))
        fill_table(self.query_one("#swift-servers", VirtualTable),
                   views.server_rows(sw, st.outcome.snapshot.taken_at, self.needle))
        self.query_one("#swift-note", Static).update(
            views.swift_note(sw, st.outcome.snapshot.swift_error))

    @on(VirtualTable.RowSelected, "#rings")
    def _drill(self, event: VirtualTable.RowSelected) -> None:
        key = event.row_key.value or ""
        o = self.session.state.outcome
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
        from checks.swift_names import device_name, host_names

        name = device_name(dev.device, dev.ip, host_names(o.snapshot) if o else None)
        self.app.push_screen(EntityDetailScreen(
            self.session, f"{kind} ring {name} ({dev.endpoint})", name, extra,
            also=(f"{kind} ring {name}", f"{dev.device}@{dev.ip}:{dev.port}")))


# --------------------------------------------------------------------------- findings
