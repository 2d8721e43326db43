"""One confirmation rule for every front end: ``y`` or ``yes`` (any case) runs, anything
else does not; with no terminal to ask on, nothing runs and the user is told to pass
``--yes`` (exit 64). ``fix`` once wanted ``yes`` while ``bench`` and the TUI took ``y``."""

from __future__ import annotations

from core.errors import UserError
from core.terminal import Terminal

YES_ANSWERS = frozenset({"y", "yes"})


def is_yes(answer: str | None) -> bool:
    return (answer or "").strip().lower() in YES_ANSWERS


def confirm(term: Terminal, question: str, yes: bool, what: str = "nothing was run") -> None:
    """Return if confirmed; raise UserError (one line, exit 64) otherwise."""
    if yes:
        return
    if not term.can_ask:
        raise UserError(f"not confirmed: pass --yes (there is no terminal to ask on); {what}")
    try:
        answer = term.ask(f"{question} [y/N] ")
    except EOFError:
        answer = ""
    if not is_yes(answer):
        raise UserError(f"not confirmed: {what}")
