"""The stordoc TUI: a k9s-style Textual App over one ``Backend``.

Refresh model: one thread worker at a time (exclusive group "refresh" plus an in-flight
guard, so a slow cluster never gets a second refresh piled on it) with a timeout; only the
visible screen is told about new data (others catch up when they come back); an error
keeps the last good data on screen with its age. Workers post typed messages
(``tui.messages``); a refresh's error lands in ``on_worker_state_changed``, a screen's
worker's in that screen's ``worker_failed``.

Screens never import this module nor call the App: the App hands each screen the session
(``tui.state.Session``: back end, cluster, settings, the cluster's data) to read, and a
screen asks for what changes it (open a runbook, refresh, go to a section, the end of a
run) by posting a ``tui.messages`` message, handled here by an ``on_...`` method.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rich.text import Text
from textual.app import App, ScreenStackError, SystemCommand
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerState

from checks.model import Thresholds
from checks.outcome import CheckOutcome
from storage.targets import ClusterTarget
from tui import screens as S
from tui import views
from tui.backend import Backend, error_text
from tui.messages import (
    ExitWanted,
    GoTo,
    OpenRunbook,
    Refreshed,
    RefreshFailed,
    RefreshWanted,
    WorkEnded,
)
from tui.state import ClusterState, Session, part_errors

SECTIONS: dict[str, tuple[str, str, type[S.DataScreen]]] = {
    # action id -> (key, title, screen)
    "overview": ("o", "Overview", S.OverviewScreen),
    "osds": ("d", "OSDs", S.OsdScreen),
    "pools": ("p", "Pools & PGs", S.PoolScreen),
    "cache": ("c", "Cache tiers", S.CacheScreen),
    "swift": ("w", "Swift rings", S.SwiftScreen),
    "findings": ("f", "Findings", S.FindingsScreen),
    "history": ("h", "History", S.HistoryScreen),
    "bench": ("b", "Benchmarks", S.BenchScreen),
}

ACTING_ACTIONS = frozenset({"fix", "apply", "cancel_run", "confirm", "bench_launch",
                            "bench_cancel", "mute"})
"""Actions that change a cluster (or lead there): hidden in ``--read-only`` mode."""


class StordocApp(App[None]):
    TITLE = "stordoc"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True

    # Help and Quit first: an 80-column footer cuts from the right, and on-call must always
    # see how to get help and out; the section keys follow (all listed in Help).
    BINDINGS = [
        Binding("question_mark", "help", "Help", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
        *(Binding(k, f"goto('{name}')", title, id=name)
          for name, (k, title, _) in SECTIONS.items()),
        Binding("r", "refresh", "Refresh", id="refresh"),
        Binding("C", "clusters", "Clusters", id="clusters"),
        Binding("space", "pause", "Pause", id="pause"),
        Binding("escape", "back", "Back", id="back"),
    ]

    def __init__(self, backend: Backend, cluster: str | None = None, *,
                 read_only: bool = False, refresh_s: float = 10.0,
                 refresh_timeout_s: float = 60.0,
                 bindings: Mapping[str, str] | None = None,
                 thresholds: Thresholds | None = None, user: str = "tui",
                 clock: Callable[[], float] = time.time,
                 initial: CheckOutcome | None = None, start_screen: str = "overview") -> None:
        super().__init__()
        names = list(backend.clusters())
        name = cluster or (names[0] if names else "")
        # what every screen reads (handed to each one it opens); only the App changes it
        self.session = Session(backend, name, read_only=read_only,
                               thresholds=thresholds or Thresholds(), user=user, clock=clock,
                               target=backend.target(name))
        self.refresh_s = refresh_s
        self.refresh_timeout_s = refresh_timeout_s
        self.start_screen = start_screen
        self._executor = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="refresh")
        self._inflight: cf.Future[CheckOutcome] | None = None
        self.refresh_count = 0
        self._quit_armed = False  # q pressed once while a fix runs: the next q stops it
        if initial is not None:
            self._accept(initial)
        self.title = f"stordoc · {self.cluster}" + (" · read-only" if read_only else "")
        if bindings:
            known = {b.id for b in self.BINDINGS if isinstance(b, Binding) and b.id}
            known |= {"filter", "fix", "apply", "cancel_run", "osd_state", "osd_host", "confirm",
                      "bench_launch", "bench_cancel"}
            bad = sorted(set(bindings) - known)
            if bad:
                raise ValueError(f"tui.bindings: unknown action(s) {', '.join(bad)}; "
                                 f"known: {', '.join(sorted(known))}")
            self.set_keymap(dict(bindings))

    # ------------------------------------------------------------------ the session's parts
    # (read here and by tests; screens read ``self.session``, the same object)
    @property
    def state(self) -> ClusterState:
        return self.session.state

    @property
    def cluster(self) -> str:
        return self.session.cluster

    @property
    def backend(self) -> Backend:
        return self.session.backend

    @property
    def target(self) -> ClusterTarget | None:
        return self.session.target

    @property
    def read_only(self) -> bool:
        return self.session.read_only

    @property
    def paused(self) -> bool:
        return self.session.paused

    @property
    def clock(self) -> Callable[[], float]:
        return self.session.clock

    # ------------------------------------------------------------------ lifecycle
    def on_mount(self) -> None:
        self.push_screen(SECTIONS[self.start_screen][2](self.session))
        self.set_interval(1.0, self._update_status)
        if self.refresh_s > 0:
            self.set_interval(self.refresh_s, self._tick)
        if self.state.outcome is None:
            self.request_refresh()

    def on_unmount(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ refresh
    def _visible(self) -> Screen[object] | None:
        """The screen on top, or None while the app is closing: a timer or a refresh
        that ends then must not raise (CI saw ``No screens on stack`` from the status
        timer of an app that was exiting)."""
        try:
            return self.screen
        except ScreenStackError:
            return None

    def _tick(self) -> None:
        scr = self._visible()
        if self.paused or isinstance(scr, ModalScreen):
            return
        if isinstance(scr, S.DataScreen):
            scr.tick()

    def request_refresh(self, force: bool = False) -> bool:
        """Start a refresh unless one is still running (then say so). True if started."""
        if self._inflight is not None and not self._inflight.done():
            if force:
                self.notify("a refresh is still running", timeout=2)
            return False
        self.state.refreshing = True
        self.state.refresh_started = self.clock()
        fut = self._executor.submit(self.backend.refresh, self.cluster)
        self._inflight = fut
        cluster, timeout, target = self.cluster, self.refresh_timeout_s, self.target

        def wait() -> None:
            try:
                outcome = fut.result(timeout=timeout)
            except cf.TimeoutError:
                self.post_message(RefreshFailed(cluster,
                                                f"refresh timed out after {timeout:g}s"))
                return
            views.prepare(outcome.snapshot, target)  # heavy view work, off the event loop
            self.post_message(Refreshed(cluster, outcome))

        self.run_worker(wait, thread=True, group="refresh", exclusive=True,
                        exit_on_error=False, name="refresh")
        self._update_status()
        return True

    def _accept(self, outcome: CheckOutcome) -> None:
        st = self.state
        err = part_errors(outcome)
        prev = st.outcome
        lost_part = prev is not None and (
            (outcome.snapshot.ceph is None and prev.snapshot.ceph is not None)
            or (outcome.snapshot.swift is None and prev.snapshot.swift is not None))
        if lost_part:
            # unreachable now: keep the last good data (with its age) and show the error
            st.error = err or "cluster unreachable"
        else:
            st.outcome = outcome
            st.data_at = outcome.snapshot.taken_at
            st.error = err
        st.version += 1
        self.refresh_count += 1
        # A snapshot of 10,000 OSDs with its rows is millions of long-lived objects: a full
        # GC pass over them stalls the UI (and a worker that triggers one holds the GIL)
        # for ~300 ms. Move what exists now out of the collector's way; refcounting
        # still frees old snapshots. Small clusters do not need it.
        snap = st.outcome.snapshot if st.outcome else None
        if snap is not None and snap.ceph is not None and len(snap.ceph.osds) >= 1000:
            gc.freeze()

    def on_refreshed(self, msg: Refreshed) -> None:
        if msg.cluster != self.cluster:
            return
        self.state.refreshing = False
        self._accept(msg.outcome)
        self._show()

    def on_refresh_failed(self, msg: RefreshFailed) -> None:
        self._refresh_error(msg.error)

    def on_refresh_wanted(self, msg: RefreshWanted) -> None:
        self.request_refresh(force=msg.force)

    def _refresh_error(self, error: str) -> None:
        self.state.refreshing = False
        self.state.error = error
        self.state.version += 1
        self.refresh_count += 1
        self._show()

    def _show(self) -> None:
        """Only the visible screen re-renders; the others catch up on resume."""
        scr = self._visible()
        if isinstance(scr, S.DataScreen):
            scr.show_state()

    # the App's own workers (the refresh); a screen's workers fail into its worker_failed
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        w = event.worker
        if event.state != WorkerState.ERROR:
            return
        text = error_text(w.error)
        if w.group == "refresh":
            self._refresh_error(text)
        else:
            self.notify(f"{w.group}: {text}", severity="error", timeout=6)

    # ------------------------------------------------------------------ status
    def status_text(self) -> Text:
        return self.session.status_text()

    def _update_status(self) -> None:
        scr = self._visible()
        if isinstance(scr, S.DataScreen):
            scr.update_status()

    # ------------------------------------------------------------------ actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ACTING_ACTIONS and self.read_only:
            return False
        if isinstance(self.screen, ModalScreen) and action not in ("quit", "back"):
            return False
        return True

    def _busy(self) -> bool:
        """A runbook or benchmark running on the visible screen: stay, so its log and
        result are seen (s stops it, after a yes)."""
        scr = self.screen
        if isinstance(scr, (S.RunbookScreen, S.BenchScreen)) and scr.running:
            self.notify("still running: its log stays on this screen (s stops it)",
                        severity="warning", timeout=3)
            return True
        return False

    def goto(self, name: str) -> None:
        """Open a section: the stack becomes [start, section], so Esc goes back to start."""
        if self._busy():
            return
        cls = SECTIONS[name][2]
        if type(self.screen) is cls:
            return
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if type(self.screen) is not cls:
            self.push_screen(cls(self.session))

    def action_goto(self, name: str) -> None:
        self.goto(name)

    def on_go_to(self, msg: GoTo) -> None:
        self.goto(msg.section)

    def action_refresh(self) -> None:
        scr = self.screen
        if isinstance(scr, (S.HistoryScreen, S.BenchScreen)):
            scr.tick()
        self.request_refresh(force=True)

    def action_clusters(self) -> None:
        from tui.clusters import ClusterListScreen

        if self._busy():
            return
        self.push_screen(ClusterListScreen(self.session), self.switch_cluster)

    def switch_cluster(self, name: str | None) -> None:
        """Show another cluster: its data only, from a fresh refresh (the old cluster's
        refresh in flight is ignored when it lands: ``on_refreshed`` checks the name)."""
        if not name or name == self.cluster or name not in self.backend.clusters():
            return
        ses = self.session
        ses.cluster = name
        ses.target = ses.backend.target(name)
        ses.state = ClusterState()
        self._inflight = None
        self.title = f"stordoc · {name}" + (" · read-only" if self.read_only else "")
        while len(self.screen_stack) > 2:
            self.pop_screen()
        self._show()
        self._update_status()
        self.request_refresh(force=True)
        self.notify(f"switched to cluster {name}", timeout=2)

    def action_pause(self) -> None:
        self.session.paused = not self.session.paused
        self._update_status()
        self.notify("auto-refresh paused" if self.paused else "auto-refresh resumed",
                    timeout=2)

    async def action_back(self) -> None:
        if self._busy():
            return
        if len(self.screen_stack) > 2:
            self.pop_screen()

    def action_help(self) -> None:
        self.push_screen(S.HelpScreen(self.help_text()))

    # ------------------------------------------------------------------ quitting
    def running_work(self) -> S.QuitGuard | None:
        """The runbook or benchmark running in this session (any screen of the stack)."""
        for scr in reversed(self.screen_stack):
            if isinstance(scr, S.QuitGuard) and scr.running:
                return scr
        return None

    def _warn_quit(self, work: S.QuitGuard) -> None:
        """First q (or Ctrl-C) while something runs: say what a second one does."""
        self._quit_armed = True
        msg = work.quit_warning()
        self.notify(msg, title="Quit?", severity="warning", timeout=8)
        if isinstance(work, S.RunbookScreen):
            work.write_log(Text(msg, style="bold yellow"))

    async def action_quit(self) -> None:
        self.request_quit()

    def request_quit(self) -> None:
        """q (or ctrl+q): quit at once when nothing runs (a fix's follow-up is told to
        stop); while a fix or benchmark runs, the first q says what happens to it and the
        second stops it, waits for its cleanup on screen, then quits."""
        work = self.running_work()
        if work is None:
            for scr in self.screen_stack:
                if isinstance(scr, S.QuitGuard):
                    scr.cancel_event.set()  # a follow-up still watching stops at once
            self.exit()
            return
        if work.quitting:
            self.notify("stopping: waiting for the run's cleanup, then stordoc quits",
                        severity="warning", timeout=5)
        elif not self._quit_armed:
            self._warn_quit(work)
        else:
            self.clear_notifications()  # the warning toast: the log says what happens now
            work.stop_for_quit()

    def action_help_quit(self) -> None:
        """Ctrl-C: never kills a run half done. While one runs it says what q does (and a
        second Ctrl-C counts as that q); otherwise it names the quit key."""
        work = self.running_work()
        if work is not None:
            if self._quit_armed or work.quitting:
                self.request_quit()
            else:
                self._warn_quit(work)
            return
        key = self._keys().get("quit", "q")
        self.notify(f"Press [b]{key}[/b] to quit stordoc", title="Quit?")

    def on_work_ended(self, msg: WorkEnded) -> None:
        """A run ended: the next q quits at once again."""
        self._quit_armed = False

    def on_exit_wanted(self, msg: ExitWanted) -> None:
        self.exit(message=msg.message)

    def on_open_runbook(self, msg: OpenRunbook) -> None:
        self.open_runbook(msg.runbook, msg.target)

    def open_runbook(self, runbook: str, target: str) -> None:
        if self.read_only:
            self.notify("read-only mode: no runbooks", severity="warning")
            return
        self.push_screen(S.RunbookScreen(self.session, runbook, target))

    # ------------------------------------------------------------------ help & palette
    def _keys(self) -> dict[str, str]:
        km = self._keymap
        out = {}
        for b in self.BINDINGS:
            if isinstance(b, Binding) and b.id:
                out[b.id] = ",".join(km.get(b.id, [b.key])) if isinstance(
                    km.get(b.id), list) else km.get(b.id, b.key)  # type: ignore[arg-type]
        return out

    def help_text(self) -> Text:
        """stordoc's own keys first (this screen's, with Fix on the first line; then the
        sections and the keys that work everywhere), Textual's generic keys last."""
        scr = self.screen
        own: list[tuple[str, str]] = []
        sections: list[tuple[str, str]] = []
        everywhere: list[tuple[str, str]] = []
        generic: list[tuple[str, str]] = []
        ours = {b.id for b in StordocApp.BINDINGS if isinstance(b, Binding)}
        for ab in scr.active_bindings.values():
            b = ab.binding
            if not b.description:
                continue
            if b.action.split("(")[0] in ACTING_ACTIONS and self.read_only:
                continue
            item = (b.key_display or self.get_key_display(b), b.description)
            if ab.node is scr and b.show:
                own.append(item)
            elif ab.node is self and b.id in ours and b.action.startswith("goto("):
                sections.append(item)
            elif ab.node is self and b.id in ours:
                everywhere.append(item)
            else:
                generic.append(item)
        # the keys that act first: Fix leads the line
        own.sort(key=lambda kd: kd[1] not in ("Fix", "Apply…", "Stop run…"))
        t = Text()
        title = getattr(scr, "TITLE_TEXT", "") or "stordoc"

        def line(head: str, items: list[tuple[str, str]]) -> None:
            t.append(f"{head}: ", style="bold")
            for i, (key, desc) in enumerate(items):
                t.append(("   " if i else "") + key, style="bold cyan")
                t.append(f" {desc}")
            t.append("\n")

        line(title, own + [("Enter", "opens")])
        line("Go to", sections)
        line("Everywhere", everywhere)
        auto = (f"Auto-refresh every {self.refresh_s:g}s (space pauses, r refreshes now)"
                if self.refresh_s > 0 else "Auto-refresh off (r refreshes now)")
        t.append(f"{auto}; ctrl+p opens the command palette.\n\n", style="dim")
        t.append("Moving around\n", style="bold")
        t.append(f"  {'j k g G':>8}  ", style="bold cyan")
        t.append("down, up, top, bottom (vim and less keys)\n")
        for key, desc in generic:
            t.append(f"  {key:>8}  ", style="bold cyan")
            t.append(f"{desc}\n")
        return t

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name, (key, title, _) in SECTIONS.items():
            yield SystemCommand(f"Go to {title}", f"open the {title} screen (key {key})",
                                lambda n=name: self.goto(n))  # type: ignore[misc]
        yield SystemCommand("Refresh now", "re-run the checks (key r)", self.action_refresh)
        yield SystemCommand("Pause / resume auto-refresh", "key space", self.action_pause)
        yield SystemCommand("Back", "previous screen (key Esc)", self.action_back)
        yield SystemCommand("Show key help", "key ?", self.action_help)
        if isinstance(screen, S.DataScreen):
            yield SystemCommand("Filter current table", "key /", screen.action_filter)
        if isinstance(screen, S.OsdScreen):
            yield SystemCommand("Cycle OSD state filter", "key u", screen.action_cycle_state)
            yield SystemCommand("Cycle OSD host filter", "key n", screen.action_cycle_host)
        if self.read_only:
            return
        from core.service.fixes import incident_fixes

        for fx in incident_fixes(self.state.outcome.incidents if self.state.outcome else ()):
            yield SystemCommand(f"Fix: {fx.runbook} {fx.target}",
                                f"{fx.finding.code} {fx.finding.entity}: plan, confirm, run",
                                lambda r=fx.runbook, t=fx.target: self.open_runbook(r, t))  # type: ignore[misc]
