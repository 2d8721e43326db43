"""One confirmation rule for `fix`, `bench` and the TUI (issue 10.8), asked through the
command line's one I/O boundary (``core.terminal.Terminal``)."""

from __future__ import annotations

import pytest

from core.confirm import confirm, is_yes
from core.errors import UserError
from core.terminal import Terminal


@pytest.mark.parametrize("answer", ["y", "Y", "yes", "YES", " yes\n", "Yes"])
def test_yes_answers(answer: str) -> None:
    assert is_yes(answer)


@pytest.mark.parametrize("answer", ["", "n", "no", "yess", "ye", "ｙｅｓ", "y e s", "oui", None])
def test_other_answers_do_not_run(answer: str | None) -> None:
    assert not is_yes(answer)


def test_confirm_on_a_terminal() -> None:
    t = Terminal.capture("y\n", tty=True)
    confirm(t, "Run?", False)  # `y` runs fix and bench alike
    assert t.stdout.getvalue() == "Run? [y/N] "  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="not confirmed"):
        confirm(Terminal.capture("n\n", tty=True), "Run?", False)
    with pytest.raises(UserError, match="not confirmed"):  # end of input: no
        confirm(Terminal.capture("", tty=True), "Run?", False)


def test_no_terminal_needs_yes() -> None:
    t = Terminal.capture("yes\n")
    with pytest.raises(UserError, match="pass --yes"):
        confirm(t, "Run?", False)
    assert t.stdout.getvalue() == ""  # type: ignore[attr-defined]  # nothing was asked
    confirm(t, "Run?", True)  # --yes: no question asked
