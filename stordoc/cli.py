"""``stordoc``: the command line. Subcommands live in ``stordoc.commands.*``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from rich.console import Console

from stordoc.errors import EX_USAGE, UserError
from stordoc.settings import SettingsError

err_console = Console(stderr=True, highlight=False)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        err_console.print(f"[bold red]error:[/] {message}")
        sys.exit(EX_USAGE)


def build_parser() -> Parser:
    from stordoc.commands import bench, bot, check, lab, runbooks, tui

    p = Parser(prog="stordoc", description="Health checks, runbooks and benchmarks for "
               "Ceph and Swift clusters.")
    p.add_argument("--config", "-c", metavar="FILE",
                   help="settings file (default: $STORDOC_CONFIG, ~/.config/stordoc/"
                        "config.toml, /etc/stordoc/config.toml)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for mod in (check, runbooks, bench, bot, tui, lab):
        mod.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EX_USAGE
    try:
        return int(args.func(args) or 0)
    except (UserError, SettingsError) as e:
        err_console.print(f"[bold red]error:[/] {e}")
        return EX_USAGE
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
