"""``stordoc``: the command line. Subcommands live in ``stordoc.commands.*``; each handler
takes the parsed arguments (with ``args.term``, the one I/O boundary) and returns an
``ExitStatus``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from runbooks.model import InvalidRequest, Refused
from stordoc.argtypes import check_strings
from stordoc.errors import UserError, permission_file
from stordoc.exitstatus import ExitStatus
from stordoc.service.errors import ActionRefused, InvalidAction
from stordoc.settings import SettingsError
from stordoc.terminal import Terminal


class Parser(argparse.ArgumentParser):
    term: Terminal | None = None  # set on the top parser; sub-parsers ask it

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # argparse drops a "--" value (``--run=--``) and hands the type an empty list
        if action.option_strings and action.nargs in (None, "?") and "--" in arg_strings:
            self.error(f"argument {'/'.join(action.option_strings)}: expected a value, "
                       "not '--'")
        return super()._get_values(action, arg_strings)

    def error(self, message: str) -> NoReturn:
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


def build_parser() -> Parser:
    from stordoc.commands import (
        bench,
        bot,
        check,
        lab,
        mutes,
        runbooks,
        snapshot,
        swift,
        tui,
        watch,
    )

    p = Parser(prog="stordoc", description="Health checks, runbooks and benchmarks for "
               "Ceph and Swift clusters. Exit status: see 'stordoc.exitstatus' "
               "(0 ok, 1 warn, 2 crit, 3 unreachable, 4 refused, 5 failed, 64 usage, "
               "77 permission denied, 130 interrupted).")
    p.add_argument("--config", "-c", metavar="FILE", help=CONFIG_HELP)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for mod in (check, snapshot, mutes, runbooks, bench, bot, watch, tui, lab, swift):
        mod.register(sub)
    for sp in sub.choices.values():
        _add_config(sp)
    return p


def main(argv: Sequence[str] | None = None, term: Terminal | None = None) -> int:
    term = term or Terminal.from_sys()
    Parser.term = term
    try:
        return int(_main(argv, term))
    finally:
        Parser.term = None


def _main(argv: Sequence[str] | None, term: Terminal) -> ExitStatus:
    parser = build_parser()
    args = parser.parse_args(argv)
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
    except (UserError, SettingsError, InvalidRequest, InvalidAction) as e:
        term.error(str(e))
        return ExitStatus.USAGE
    except (Refused, ActionRefused) as e:
        term.error(str(e))
        return ExitStatus.REFUSED
    except PermissionError as e:
        term.error(f"permission denied: {permission_file(e)}")
        return ExitStatus.NOPERM
    except KeyboardInterrupt:
        term.err.print("interrupted")
        return ExitStatus.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
