"""Runbooks: the plan, the confirmation, the live run."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

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

from stordoc.service.actions import ActionPlan
from stordoc.service.task import Task
from tui.backend import LogLine, RunView
from tui.messages import (
    Planned,
    RunFinished,
    RunLogged,
)

if TYPE_CHECKING:
    pass
from tui.screens.base import DataScreen


class ConfirmModal(ModalScreen[bool]):
    """Shows the exact commands; only an explicit Confirm runs them."""

    BINDINGS = [Binding("y", "confirm", "Confirm and run", id="confirm"),
                Binding("escape,n", "cancel", "Cancel")]

    def __init__(self, plan: ActionPlan) -> None:
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
        self.plan: ActionPlan | None = None
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
