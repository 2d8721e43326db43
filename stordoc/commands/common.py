"""Helpers shared by subcommands: load settings into an Env that carries the terminal.

Imported by every command module, so it stays light: settings (pydantic) and the Env
(the check engine, Swift, the journal) are imported only when a handler asks for them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stordoc.env import Env
    from stordoc.terminal import Terminal


def term_of(args: argparse.Namespace) -> Terminal:
    """The command's terminal (``main`` sets it; a handler called directly gets sys's)."""
    from stordoc.terminal import Terminal

    t = getattr(args, "term", None)
    return t if isinstance(t, Terminal) else Terminal.from_sys()


def env_from_args(args: argparse.Namespace) -> Env:
    from stordoc.env import Env
    from stordoc.settings import load_settings

    term = term_of(args)
    return Env(load_settings(getattr(args, "config", None),
                             notice=term.note),
               term=term)
