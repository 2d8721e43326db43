"""The one I/O boundary of the command line (httpie's ``Environment``): the streams and
what the terminal can do. ``main()`` builds one from ``sys`` and every command writes,
asks and checks for a terminal through it; tests build one over ``StringIO``.

Nothing else in ``stordoc/commands`` reads ``sys.stdin``, calls ``input()`` or
``isatty()``, or keeps a module-level console.

A reader that goes away (``| head -1``, ``| tee log`` and Ctrl-C, a dropped SSH session)
is no error of the command: ``from_sys`` guards the output streams (``core.streams``),
later output goes nowhere, ``on_stdout_lost`` says so to whoever asked (a running fix
cancels, its cleanup still runs) and ``tell`` moves what must be seen to stderr.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TextIO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from core.fmt import printable
from core.streams import GuardedStream, guarded

# the width of tables and charts when stdout is no terminal (a file, a pipe, CI logs) and
# COLUMNS does not say one: what `less` or a mail shows without folding
PIPE_WIDTH = 80


def pipe_width() -> int:
    """The width for output that goes to no terminal: ``$COLUMNS`` when it is a number
    (``COLUMNS=200 stordoc bench ... > log``), else ``PIPE_WIDTH``."""
    import os

    cols = os.environ.get("COLUMNS", "").strip()
    return int(cols) if cols.isdigit() and int(cols) > 0 else PIPE_WIDTH


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


class SafeConsole(Console):
    """A rich Console whose text segments pass ``core.fmt.printable``: every text the
    CLI prints (tables, findings, errors, whatever it came from) shows its control
    characters instead of obeying them, while rich's own styles and cursor controls still
    work. Nested renderables come back through ``render``: the rule is applied once per
    segment, and again is a no-op."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None
               ) -> Iterable[Segment]:
        for seg in super().render(renderable, options):
            if seg.control is None and seg.text:
                text = printable(seg.text)
                if text is not seg.text:
                    seg = Segment(text, seg.style)
            yield seg


@dataclass
class Terminal:
    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    stdin_isatty: bool = False
    stdout_isatty: bool = False
    stderr_isatty: bool = False
    width: int | None = None  # None: rich asks the terminal (80 when it is no terminal)
    _asked: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def from_sys(cls) -> Terminal:
        """The process's own streams, as they are now (pytest's capsys included), the
        output ones guarded (a reader that goes away is no error: see the module)."""
        return cls(sys.stdin, guarded(sys.stdout), guarded(sys.stderr), _isatty(sys.stdin),
                   _isatty(sys.stdout), _isatty(sys.stderr))

    @classmethod
    def capture(cls, stdin: str = "", tty: bool = False, width: int | None = 100) -> Terminal:
        """In-memory streams for tests; ``tty`` makes stdin look like a terminal."""
        return cls(io.StringIO(stdin), io.StringIO(), io.StringIO(), tty, False, False, width)

    # ------------------------------------------------------------------ output
    @cached_property
    def out(self) -> Console:
        """Rich output on stdout (styles only on a terminal)."""
        return SafeConsole(file=self.stdout, highlight=False, width=self.width)

    @cached_property
    def wide(self) -> Console:
        """Rich output on stdout for tables: the terminal's width, or in a pipe $COLUMNS
        (else PIPE_WIDTH)."""
        w = self.width if self.width is not None else (None if self.stdout_isatty
                                                      else pipe_width())
        return SafeConsole(file=self.stdout, highlight=False, width=w)

    @cached_property
    def err(self) -> Console:
        """Rich output on stderr: progress, questions' context, errors."""
        return SafeConsole(file=self.stderr, highlight=False, width=self.width)

    def line(self, text: str) -> None:
        """A plain line on stdout (JSON, machine-readable output): no markup, no wrap,
        control characters shown (``core.fmt.printable``)."""
        self.stdout.write(printable(text) + "\n")
        self.stdout.flush()

    def note(self, text: str) -> None:
        """A plain line on stderr (a notice beside the output): no markup, no wrap."""
        self.stderr.write(printable(text) + "\n")
        self.stderr.flush()

    def error(self, message: str) -> None:
        """One line on stderr, whatever the message holds (no markup, no wrapping)."""
        line = " ".join(str(message).split())
        self.err.print(Text.assemble(("error:", "bold red"), " ", line), soft_wrap=True)

    # ------------------------------------------------------------------ a reader gone
    @property
    def stdout_lost(self) -> bool:
        """Nobody reads stdout any more (its pipe's reader exited, the terminal hung up)."""
        return isinstance(self.stdout, GuardedStream) and self.stdout.lost.is_set()

    def on_stdout_lost(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` (once, from the writing thread) when stdout's reader goes
        away; returns the function that forgets it. A stream that cannot be lost (a
        StringIO of tests) never calls it."""
        if isinstance(self.stdout, GuardedStream):
            return self.stdout.on_lost(callback)
        return lambda: None

    def tell(self, text: Text | str) -> None:
        """A line the user must see even when stdout is gone: on stdout, else on stderr
        (what a fix says after ``| tee log`` was interrupted: what was done, the audit)."""
        if not self.stdout_lost:
            self.out.print(text)
            if not self.stdout_lost:  # (this very line may be the one that found it gone)
                return
        self.err.print(text)

    # ------------------------------------------------------------------ input
    @property
    def can_ask(self) -> bool:
        """A person is there to answer (stdin is a terminal)."""
        return self.stdin_isatty

    def ask(self, question: str) -> str:
        """Print ``question`` and read one line from stdin; EOFError at end of input."""
        self.stdout.write(question)
        self.stdout.flush()
        self._asked.append(question)
        answer = self.stdin.readline()
        if not answer:
            raise EOFError
        return answer.rstrip("\n")
