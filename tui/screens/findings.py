"""Findings: the list, one finding's detail (cause, evidence, fix key), muting."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import (
    Input,
    Static,
)

from checks.incidents import Incident
from checks.model import Finding
from checks.mutable import mute_refusal
from core.service import fixes
from tui import views
from tui.messages import GoTo, OpenRunbook, RefreshWanted
from tui.screens.base import DataScreen, DetailScreen, fill_table
from tui.state import ClusterState, Session
from tui.table import VirtualTable

HEADERS = frozenset({"severity"})  # the cursor starts on the first finding, not a header


def _drill_finding(screen: DataScreen, event: VirtualTable.RowSelected) -> None:
    key = event.row_key.value or ""
    for f in screen.findings:
        if key == f"finding:{f.code}:{f.entity}":
            screen.app.push_screen(FindingDetailScreen(screen.session, f))
            return
    if key.startswith("sev:"):
        screen.post_message(GoTo("findings"))


# --------------------------------------------------------------------------- OSDs

class FindingsScreen(DataScreen):
    TITLE_TEXT = "Findings"
    BINDINGS = [Binding("x", "fix", "Fix", id="fix"), Binding("m", "mute", "Mute…", id="mute")]

    def body(self) -> ComposeResult:
        with Vertical(id="findings-pane"):
            t = VirtualTable(id="findings", header_kinds=HEADERS)
            t.add_columns(*views.FINDING_COLUMNS)
            yield t
            yield Static(id="finding-line", classes="cause")

    @on(VirtualTable.RowHighlighted, "#findings")
    def _highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        f = event.row.ref if event.row is not None and event.row.kind == "finding" else None
        self.query_one("#finding-line", Static).update(
            views.finding_line(f if isinstance(f, Finding) else None,
                               not self.session.read_only))

    def render_data(self, st: ClusterState) -> None:
        assert st.outcome is not None
        fill_table(self.query_one("#findings", VirtualTable),
                   views.finding_rows(st.outcome.report.findings, self.needle,
                                      st.outcome.delta.new if st.outcome.delta else ()))

    def _selected(self) -> Finding | None:
        key = self.query_one("#findings", VirtualTable).cursor_key
        if key is None:
            return None
        return next((f for f in self.findings if key == f"finding:{f.code}:{f.entity}"),
                    None)

    def action_fix(self) -> None:
        f = self._selected()
        if f is None:
            self.notify("no finding selected", severity="warning")
            return
        self.fix_findings([f], f"for {f.code} {f.entity}")

    def action_mute(self) -> None:
        """Mute the selected finding (this entity) for a while, with a reason."""
        f = self._selected()
        if f is None:
            self.notify("no finding selected", severity="warning")
            return
        refused = mute_refusal(f.code)  # before asking how long and why
        if refused:
            self.notify(refused, severity="error")
            return

        def done(answer: tuple[float, str] | None) -> None:
            if answer is None:
                return
            try:
                msg = self.session.backend.mute(self.session.cluster, f.code, f.entity, *answer)
            except Exception as e:  # refused (no reason, ...): one line, nothing changed
                self.notify(str(e), severity="error")
                return
            self.notify(msg)
            self.post_message(RefreshWanted())

        self.app.push_screen(MuteModal(f), done)

    @on(VirtualTable.RowSelected, "#findings")
    def _drill(self, event: VirtualTable.RowSelected) -> None:
        _drill_finding(self, event)

class IncidentScreen(DetailScreen):
    """One incident, whole and wrapped: cause, impact, its one next step (x plans it),
    every finding it groups, the root's evidence."""

    def __init__(self, session: Session, incident: Incident) -> None:
        super().__init__(session, f"Incident {incident.root.code} {incident.root.entity}")
        self.incident = incident

    def lines(self, st: ClusterState) -> list[tuple[str, str, str]]:
        return views.incident_lines(self.incident, not self.session.read_only)

    def action_fix(self) -> None:
        fx = fixes.incident_fix(self.incident)
        if fx is None:
            self.notify(f"no runbook applies: {self.incident.manual or 'see the findings'}",
                        severity="warning")
            return
        self.post_message(OpenRunbook(fx.runbook, fx.target))


class FindingDetailScreen(DetailScreen):
    def __init__(self, session: Session, finding: Finding) -> None:
        super().__init__(session, f"{finding.code} {finding.entity}")
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
             if f.runbook and not self.session.read_only else (f.runbook or "none"),
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
        from core.argtypes import parse_duration

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
