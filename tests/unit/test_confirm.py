"""One confirmation rule for `fix`, `bench` and the TUI (issue 10.8)."""

from __future__ import annotations

import io
import sys

import pytest

from stordoc.confirm import confirm, is_yes
from stordoc.errors import UserError


@pytest.mark.parametrize("answer", ["y", "Y", "yes", "YES", " yes\n", "Yes"])
def test_yes_answers(answer: str) -> None:
    assert is_yes(answer)


@pytest.mark.parametrize("answer", ["", "n", "no", "yess", "ye", "ｙｅｓ", "y e s", "oui", None])
def test_other_answers_do_not_run(answer: str | None) -> None:
    assert not is_yes(answer)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_confirm_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Tty())
    confirm("Run?", False, ask=lambda q: "y")  # `y` runs fix and bench alike
    with pytest.raises(UserError, match="not confirmed"):
        confirm("Run?", False, ask=lambda q: "n")

    def eof(q: str) -> str:
        raise EOFError
    with pytest.raises(UserError, match="not confirmed"):
        confirm("Run?", False, ask=eof)


def test_no_terminal_needs_yes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("yes\n"))
    with pytest.raises(UserError, match="pass --yes"):
        confirm("Run?", False, ask=lambda q: "yes")
    confirm("Run?", True)  # --yes: no question asked
