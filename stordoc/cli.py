"""``stordoc``: the command line. Subcommands live in ``stordoc.commands.*``; each handler
takes the parsed arguments (with ``args.term``, the one I/O boundary) and returns an
``ExitStatus``.

Start-up stays light: this module and every ``register()`` import only what argparse
needs. Swift/eventlet, rados, fabric, pydantic, sqlite-utils, Textual, slack-bolt and
rich are imported by the handlers that use them (tests/unit/test_cli_startup.py).
"""

from __future__ import annotations

import argparse
import atexit
import gc
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from core.argtypes import check_strings
from core.errors import UserError, permission_file
from core.exitstatus import ExitStatus

if TYPE_CHECKING:
    from core.terminal import Terminal


class Parser(argparse.ArgumentParser):
    term: Terminal | None = None  # set on the top parser; sub-parsers ask it

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # argparse drops a "--" value (``--run=--``) and hands the type an empty list
        if action.option_strings and action.nargs in (None, "?") and "--" in arg_strings:
            self.error(f"argument {'/'.join(action.option_strings)}: expected a value, "
                       "not '--'")
        return super()._get_values(action, arg_strings)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # a misspelt command: one line with the closest name, not argparse's whole list
        if (isinstance(action, argparse._SubParsersAction) and action.choices is not None
                and value not in action.choices):
            from checks.spelling import closest
            from core.terminal import Terminal

            where = self.prog.partition(" ")[2]
            named = f"{where} {value}" if where else str(value)
            near = closest(str(value), action.choices)
            hint = (f"; did you mean '{f'{where} {near}' if where else near}'?" if near
                    else f" (see '{self.prog} --help')")
            (Parser.term or Terminal.from_sys()).error(f"unknown command '{named}'{hint}")
            sys.exit(ExitStatus.USAGE)
        super()._check_value(action, value)

    def error(self, message: str) -> NoReturn:
        from core.terminal import Terminal

        # one line: the problem and where the usage is (not the usage itself)
        (Parser.term or Terminal.from_sys()).error(f"{message} (see '{self.prog} --help')")
        sys.exit(ExitStatus.USAGE)


CONFIG_HELP = ("settings file (default: $STORDOC_CONFIG, ~/.config/stordoc/config.toml, "
               "/etc/stordoc/config.toml, then a running default lab's config)")


def _add_config(parser: argparse.ArgumentParser) -> None:
    """``--config`` after the subcommand too (``stordoc check --config FILE``)."""
    seen = {a.dest for a in parser._actions}
    if "config" not in seen:
        parser.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                            help=CONFIG_HELP)
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                _add_config(sp)


def build_parser(argv: Sequence[str] | None = None) -> Parser:
    """Every subcommand; with ``argv``, ``lab``'s own arguments only when argv names it
    (they come from the lab package's scenario registry, the one costly import left)."""
    from stordoc.commands import (
        bench,
        bot,
        check,
        doctor,
        hostguard,
        init,
        lab,
        maintenance,
        mutes,
        runbooks,
        snapshot,
        swift,
        tui,
        watch,
    )

    p = Parser(prog="stordoc", description="Health checks, runbooks and benchmarks for "
               "Ceph and Swift clusters. Exit status: see 'core.exitstatus' "
               "(0 ok, 1 warn, 2 crit, 3 unreachable, 4 refused, 5 failed, 64 usage, "
               "77 permission denied, 130 interrupted).")
    p.add_argument("--config", "-c", metavar="FILE", help=CONFIG_HELP)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for mod in (check, snapshot, mutes, runbooks, maintenance, bench, bot, watch, tui, lab, swift,
                doctor, init, hostguard):
        if mod is lab:
            mod.register(sub, full=argv is None or "lab" in argv)
        else:
            mod.register(sub)
    for sp in sub.choices.values():
        _add_config(sp)
    return p


def main(argv: Sequence[str] | None = None, term: Terminal | None = None) -> int:
    _register_fast_exit()
    Parser.term = term  # None: sys's streams, made when first needed (not for --help)
    streams = (sys.stdout, sys.stderr)
    if term is None:  # the process's own streams: a reader that goes away is no error
        sys.stdout, sys.stderr = _guarded(sys.stdout), _guarded(sys.stderr)
    try:
        rc = int(_main(argv, term))
    finally:
        Parser.term = None
        if term is None:
            sys.stdout, sys.stderr = streams
    if term is None:
        _leave_if_abandoned(rc)
    return rc


def _leave_if_abandoned(rc: int) -> None:
    """``check --all`` gave up on a cluster whose check still runs (blocked in librados
    or a socket, each with its own timeout): the process ends now, its answer printed,
    rather than when that check does (the interpreter joins thread pools at exit)."""
    fleet = sys.modules.get("core.service.fleet")
    if fleet is None or not fleet.abandoned():
        return
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(rc)


def _guarded(stream: Any) -> Any:
    """``stream`` behind core.streams' guard (``stordoc check | head -1`` exits with
    the check's status, argparse's ``--help | head -1`` with 0, never a traceback)."""
    if stream is None:
        return None
    from core.streams import GuardedStream, guarded

    g = guarded(stream)
    if isinstance(g, GuardedStream) and stream is sys.stdout and g.default is None:
        g.default = stdout_gone
    return g


def stdout_gone() -> None:
    """Nobody reads stdout any more, and the command running did not ask to hear of it:
    as SIGPIPE ends a Unix filter, a command that stops gracefully on SIGTERM (``watch``,
    a benchmark waiting in a Task) gets one and stops; the others finish and exit with
    their own status (``check``). ``fix`` listens itself: its run is cancelled at once."""
    import os
    import signal

    if callable(signal.getsignal(signal.SIGTERM)):
        os.kill(os.getpid(), signal.SIGTERM)


_fast_exit = False


def _register_fast_exit() -> None:
    """At exit, after every other atexit handler (they run last-registered first), move
    all objects to the garbage collector's permanent generation (``gc.freeze``): the
    interpreter's teardown then skips collecting the cycles of ~1,200 modules (Swift and
    eventlet, pydantic, paramiko...), which took 0.2-1 s after ``check`` had printed its
    answer. Streams are still flushed and the other atexit handlers still run; the
    memory goes back to the system with the process."""
    global _fast_exit
    if not _fast_exit:
        atexit.register(gc.freeze)
        _fast_exit = True


def _main(argv: Sequence[str] | None, term: Terminal | None) -> ExitStatus:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if term is None:
        from core.terminal import Terminal

        term = Terminal.from_sys()
    args.term = term
    bad = check_strings(args)
    if bad:
        term.error(bad)
        return ExitStatus.USAGE
    if not getattr(args, "func", None):
        parser.print_help(term.stdout)
        return ExitStatus.USAGE
    try:
        return ExitStatus(args.func(args) or 0)
    except KeyboardInterrupt:
        term.err.print("interrupted")
        return ExitStatus.INTERRUPTED
    except PermissionError as e:
        term.error(f"permission denied: {permission_file(e)}")
        return ExitStatus.NOPERM
    except Exception as e:
        status = _status_of(e)
        if status is None:
            raise
        term.error(str(e))
        return status


def _status_of(e: Exception) -> ExitStatus | None:
    """USAGE for bad input, REFUSED for a runbook's or benchmark's no (one line each, no
    traceback); None for anything else. The error types are imported here, once something
    was raised, so that parsing never loads the layers that define them."""
    from core.service.errors import ActionRefused, InvalidAction
    from core.settings import SettingsError
    from runbooks.model import InvalidRequest, Refused
    from storage.safefile import FileRefused

    # InvalidRequest and InvalidAction are kinds of Refused/ActionRefused: asked first
    if isinstance(e, UserError | SettingsError | InvalidRequest | InvalidAction | FileRefused):
        return ExitStatus.USAGE
    if isinstance(e, Refused | ActionRefused):
        return ExitStatus.REFUSED
    return None


if __name__ == "__main__":
    sys.exit(main())
