"""``stordoc``: the command line. Subcommands live in ``stordoc.commands.*``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from rich.console import Console
from rich.text import Text

from stordoc.argtypes import check_strings
from stordoc.errors import EX_NOPERM, EX_USAGE, UserError, permission_file
from stordoc.settings import SettingsError

err_console = Console(stderr=True, highlight=False)


def say_error(message: str) -> None:
    """One line on stderr, whatever the message holds (no markup, no wrapping)."""
    line = " ".join(str(message).split())
    err_console.print(Text.assemble(("error:", "bold red"), " ", line), soft_wrap=True)


class Parser(argparse.ArgumentParser):
    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # argparse drops a "--" value (``--run=--``) and hands the type an empty list
        if action.option_strings and action.nargs in (None, "?") and "--" in arg_strings:
            self.error(f"argument {'/'.join(action.option_strings)}: expected a value, "
                       "not '--'")
        return super()._get_values(action, arg_strings)

    def error(self, message: str) -> NoReturn:
        # one line: the problem and where the usage is (not the usage itself)
        say_error(f"{message} (see '{self.prog} --help')")
        sys.exit(EX_USAGE)


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
    from stordoc.commands import bench, bot, check, lab, mutes, runbooks, swift, tui, watch

    p = Parser(prog="stordoc", description="Health checks, runbooks and benchmarks for "
               "Ceph and Swift clusters.")
    p.add_argument("--config", "-c", metavar="FILE", help=CONFIG_HELP)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for mod in (check, mutes, runbooks, bench, bot, watch, tui, lab, swift):
        mod.register(sub)
    for sp in sub.choices.values():
        _add_config(sp)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    bad = check_strings(args)
    if bad:
        say_error(bad)
        return EX_USAGE
    if not getattr(args, "func", None):
        parser.print_help()
        return EX_USAGE
    try:
        return int(args.func(args) or 0)
    except (UserError, SettingsError) as e:
        say_error(str(e))
        return EX_USAGE
    except PermissionError as e:
        say_error(f"permission denied: {permission_file(e)}")
        return EX_NOPERM
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
