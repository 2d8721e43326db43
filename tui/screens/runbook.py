"""Runbooks: the plan, the confirmation, the live run, and quitting while one runs.

At 80x24 every part stays reachable: the plan scrolls in its own pane (the log takes the
rest once the run starts), the confirmation keeps its buttons on screen and scrolls the
commands between them, and the log wraps at the pane's width. ``q`` (or Ctrl-C) while a
fix runs says what happens to the run; a second ``q`` stops it before its next step, its
cleanup steps run, and stordoc quits once the run has ended (the screen stays up meanwhile).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import (
    Button,
    RichLog,
    Static,
)
from textual.worker import Worker, WorkerState

from core.service.actions import ActionPlan
from core.service.task import Task
from tui.backend import LogLine, RunView
from tui.messages import (
    ExitWanted,
    Planned,
    RefreshWanted,
    RunFinished,
    RunLogged,
    WorkEnded,
)
from tui.screens.base import DataScreen
from tui.state import Session

SCROLL_HINT = "↑↓ PgUp PgDn scroll"


def cleanup_steps(plan: ActionPlan | None) -> list[str]:
    """The plan's cleanup steps as "6. clear noout" (what runs even when stopped)."""
    p = plan.runbook_plan if plan is not None else None
    return [f"{s.index}. {s.title}" for s in (p.steps if p is not None else ())
            if s.cleanup_of is not None]


def plan_lines(lines: Sequence[str]) -> RenderableType:
    """A plan's lines with a hanging indent: a wrapped step or command keeps its
    indentation (at 80 columns most commands wrap), so the steps stay apart."""
    if not lines:
        return Text("(no commands)")
    out: list[RenderableType] = []
    for ln in lines:
        body = ln.lstrip(" ")
        out.append(Padding(Text(body, overflow="fold"), (0, 0, 0, len(ln) - len(body))))
    return Group(*out)


def log_widget() -> RichLog:
    """The step log: wraps at the pane's width (RichLog's default renders every line at
    least 78 cells wide, which cut the right edge off at 80 columns)."""
    return RichLog(id="runlog", wrap=True, markup=False, highlight=False, min_width=20)


class ConfirmModal(ModalScreen[bool]):
    """Shows the exact commands; only an explicit Confirm runs them. The buttons stay on
    screen at any size; the commands scroll between the title and the buttons."""

    BINDINGS = [Binding("y", "confirm", "Confirm and run", id="confirm"),
                Binding("escape,n", "cancel", "Cancel")]

    def __init__(self, plan: ActionPlan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(self.title_text(), id="confirm-title")
            with VerticalScroll(id="confirm-cmds"):
                yield Static(plan_lines(self.plan.lines), id="confirm-plan")
            with Horizontal(id="confirm-buttons"):
                yield Button("Confirm and run (y)", variant="error", id="yes")
                yield Button("Cancel (n)", variant="primary", id="no")

    def title_text(self) -> Text:
        t = Text()
        t.append(f"Run {self.plan.runbook} on {self.plan.target}?\n", style="bold")
        t.append("These exact commands will run: y runs them, n or Esc cancels.")
        return t

    @property
    def commands_scroll(self) -> bool:
        """Do the commands need scrolling to be read whole?"""
        return self.query_one("#confirm-cmds", VerticalScroll).max_scroll_y > 0

    def on_mount(self) -> None:
        # the commands have the focus: arrows scroll them; y and n act from anywhere
        self.query_one("#confirm-cmds", VerticalScroll).focus()
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """The commands get what the title and the buttons leave of the screen: the
        buttons never move off it (a tall plan scrolls instead, and says so)."""
        title = self.query_one("#confirm-title", Static)
        room = self.size.height - 2 - max(2, title.outer_size.height) - 3  # border, buttons
        self.query_one("#confirm-cmds", VerticalScroll).styles.max_height = max(3, room)
        self.call_after_refresh(self._say_scroll)

    def _say_scroll(self) -> None:
        cmds = self.query_one("#confirm-cmds", VerticalScroll)
        cmds.border_subtitle = f"{SCROLL_HINT} the commands" if self.commands_scroll else ""

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_confirm(self) -> None:
        self.dismiss(True)


class StopModal(ModalScreen[bool]):
    """"Stop the run?": only ``y`` (or the red button) stops it; ``n`` or Esc keeps it
    running. The key that opens it moves no cursor, so no key meant to move can stop."""

    BINDINGS = [Binding("y", "stop", "Stop it"),
                Binding("escape,n", "keep", "Keep running")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(Text(self.question, style="bold"), id="confirm-title")
            with Horizontal(id="confirm-buttons"):
                yield Button("Stop it (y)", variant="error", id="yes")
                yield Button("Keep running (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_stop(self) -> None:
        self.dismiss(True)

    def action_keep(self) -> None:
        self.dismiss(False)


# the step log's words for a runbook's progress events (never its internal kinds)
_WORDS = {"step_started": "started", "step_done": "done", "step_failed": "FAILED",
          "cancelled": "cancelled", "verify_started": "verifying", "bench": "benchmark"}


def log_words(ev: LogLine, steps: int) -> str:
    """A step-log line in words: ``step 2/5 started: mount ...``, ``verified: ...``."""
    if ev.kind == "verify_done":
        word = "verified" if ev.ok else "not verified"
    else:
        word = _WORDS.get(ev.kind, "")
    text = ev.text
    if ev.index is not None and word:
        text = text.removeprefix(f"{ev.index}. ")
        of = f"/{steps}" if steps else ""
        return f"step {ev.index}{of} {word}: {text}"
    return f"{word}: {text}" if word and text else (text or word)


class QuitGuard:
    """What a screen that runs work (a runbook, a benchmark) tells the App on quit."""

    running: bool
    quitting: bool
    cancel_event: threading.Event

    def quit_warning(self) -> str:
        raise NotImplementedError

    def stop_for_quit(self) -> None:
        raise NotImplementedError


class RunbookScreen(DataScreen, QuitGuard):
    """Plan -> confirm (modal) -> live step log -> verification."""

    BINDINGS = [
        Binding("a", "apply", "Apply…", id="apply"),
        Binding("s", "cancel_run", "Stop run…", id="cancel_run"),
    ]

    def __init__(self, session: Session, runbook: str, target: str) -> None:
        super().__init__(session)
        self.runbook = runbook
        self.target_name = target
        self.TITLE_TEXT = f"Runbook {runbook} {target}"
        self.plan: ActionPlan | None = None
        self.running = False
        self.quitting = False
        self.done: RunView | None = None
        self.cancel_event = threading.Event()
        self.run_worker_: Worker[None] | None = None

    def body(self) -> ComposeResult:
        yield Static(f"planning {self.runbook} {self.target_name}…", id="plan-head")
        with VerticalScroll(id="plan-scroll"):
            yield Static("", id="plan")
        log = log_widget()
        log.display = False  # nothing to log before the confirmation
        yield log

    def on_mount(self) -> None:
        super().on_mount()
        # the head names the scroll keys only when the plan overflows its pane
        self.watch(self.query_one("#plan-scroll", VerticalScroll), "virtual_size",
                   self._plan_resized, init=False)
        cluster, backend = self.session.cluster, self.session.backend
        rb, tgt = self.runbook, self.target_name

        def work() -> None:
            self.post_message(Planned(backend.plan(cluster, rb, tgt, {})))

        self.run_worker(work, thread=True, group="plan", exit_on_error=False)

    def tick(self) -> None:
        """The run log is live already; no cluster refresh while a runbook is on screen."""

    def focus_main(self) -> None:
        if self.query_one("#runlog", RichLog).display:
            self.query_one("#runlog", RichLog).focus()
        else:
            self.query_one("#plan-scroll", VerticalScroll).focus()

    def write_log(self, text: Text) -> None:
        """A line in the step log; the first one opens the log under a shorter plan."""
        log = self.query_one("#runlog", RichLog)
        if not log.display:
            log.display = True
            self.add_class("started")
            log.focus()
            self.call_after_refresh(self._head)
        log.write(text)

    def _plan_resized(self) -> None:
        self.call_after_refresh(self._head)

    def _head(self) -> None:
        """The plan's one-line head: what a applies, and the scroll keys only when the
        plan does not fit its pane."""
        if self.plan is None:
            return
        p = self.plan
        n = len(p.runbook_plan.steps) if p.runbook_plan is not None else 0
        t = Text()
        t.append(f"Plan for {p.runbook} {p.target}" + (f" ({n} steps)" if n else ""),
                 style="bold")
        if self.check_action("apply", ()) and not self.session.read_only:
            t.append(": a applies (the exact commands again, then confirm)")
        plan = self.query_one("#plan-scroll", VerticalScroll)
        if plan.max_scroll_y > 0:  # the keys that reach the rest of it, from where focus is
            t.append(f"  [{SCROLL_HINT} the plan]" if plan.has_focus
                     else f"  [Tab, then {SCROLL_HINT} the plan]", style="dim")
        self.query_one("#plan-head", Static).update(t)

    def on_resize(self) -> None:
        self.call_after_refresh(self._head)

    def on_descendant_focus(self) -> None:
        self.call_after_refresh(self._head)

    def on_planned(self, msg: Planned) -> None:
        self.plan = msg.plan
        self.query_one("#plan", Static).update(plan_lines(msg.plan.lines))
        self.refresh_bindings()
        self.call_after_refresh(self._head)

    def worker_failed(self, group: str, error: BaseException) -> None:
        """The plan's or the run's worker raised: said where the plan or the log is."""
        if group == "plan":
            self.query_one("#plan-head", Static).update(
                Text(f"cannot plan {self.runbook} {self.target_name}", style="bold red"))
            self.query_one("#plan", Static).update(
                Text(f"cannot plan: {error}", style="bold red"))
        else:
            self.running = False
            self.post_message(WorkEnded())
            self.write_log(Text(f"FAILED: {error}", style="bold red"))
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "apply":
            return self.plan is not None and not self.running and self.done is None \
                and not self.session.read_only
        if action == "cancel_run":
            return self.running and not self.quitting
        return True

    def action_apply(self) -> None:
        if self.plan is None or self.running or self.session.read_only:
            return
        self.app.push_screen(ConfirmModal(self.plan), self._confirmed)

    def _confirmed(self, yes: bool | None) -> None:
        if not yes or self.plan is None:
            self.write_log(Text("not confirmed: nothing was run", style="yellow"))
            return
        self.running = True
        self.refresh_bindings()
        self.write_log(Text(f"confirmed by {self.session.user}; running…", style="bold"))
        plan, cluster, backend = self.plan, self.session.cluster, self.session.backend
        cancel = self.cancel_event

        def log_event(ev: LogLine) -> None:
            self.post_message(RunLogged(ev))

        def work() -> None:  # the service's cancellable runner, as the CLI's fix uses
            res = Task(lambda c: backend.execute(cluster, plan, log_event, c),
                       name="tui-runbook", cancel=cancel).run()
            self.post_message(RunFinished(res))
            if res.ok:  # the truth after "success": peering, recovery, until clean
                backend.follow(cluster, plan.runbook,
                               lambda line, clean: log_event(LogLine("info", line, clean or
                                                                      None)), cancel)

        self.run_worker_ = self.run_worker(work, thread=True, group="run",
                                           exit_on_error=False)

    def action_cancel_run(self) -> None:
        """``s``: asks first; only a yes stops the run (before its next step)."""
        if not self.running or self.quitting:
            return
        self.app.push_screen(StopModal(f"Stop {self.runbook} {self.target_name} before its "
                                       f"next step{self._cleanup_note()}?"), self._stop)

    def _stop(self, yes: bool | None) -> None:
        if not yes or not self.running:
            self.write_log(Text("not stopped: the run goes on", style="dim"))
            return
        self.cancel_event.set()
        self.write_log(Text("cancel requested: stops before the next step"
                      + self._cleanup_note(), style="yellow"))

    def _cleanup_note(self) -> str:
        steps = cleanup_steps(self.plan)
        return f"; its cleanup ({', '.join(steps)}) still runs" if steps else ""

    # -- quitting while it runs
    def quit_warning(self) -> str:
        what = f"{self.runbook} {self.target_name}"
        return (f"a fix is running ({what}): q again stops it before its next step"
                f"{self._cleanup_note()}, its locks are released, then stordoc quits; "
                "s stops it (asks first) and stays")

    def stop_for_quit(self) -> None:
        self.quitting = True
        self.cancel_event.set()
        self.refresh_bindings()
        self.write_log(Text("quitting: stopping the run before its next step" + self._cleanup_note()
                      + "; stordoc quits when the run has ended", style="bold yellow"))
        if self.run_worker_ is None or self.run_worker_.is_finished:
            self.post_message(ExitWanted())

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        super().on_worker_state_changed(event)
        if (self.quitting and event.worker is self.run_worker_ and event.state in (
                WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)):
            summary = (self.done.summary if self.done is not None
                       else f"FAILED: {event.worker.error}" if event.state == WorkerState.ERROR
                       else "the run ended")
            self.post_message(ExitWanted(f"stordoc: {self.runbook} {self.target_name} "
                                         f"stopped on quit: {summary}"))

    def on_run_logged(self, msg: RunLogged) -> None:
        ev = msg.event
        style = {True: "green", False: "bold red"}.get(ev.ok, "") if ev.ok is not None else ""
        steps = self.plan.runbook_plan.steps if self.plan and self.plan.runbook_plan else ()
        self.write_log(Text(log_words(ev, len(steps)), style=style))

    def on_run_finished(self, msg: RunFinished) -> None:
        self.running = False
        self.post_message(WorkEnded())
        self.done = msg.result
        self.write_log(Text(("SUCCEEDED: " if msg.result.ok else "FAILED: ") + msg.result.summary,
                      style="bold green" if msg.result.ok else "bold red"))
        for v in msg.result.verification:
            self.write_log(Text(f"verify: {v}"))
        self.refresh_bindings()
        self.call_after_refresh(self._head)
        if not self.quitting:
            self.post_message(RefreshWanted(force=True))
