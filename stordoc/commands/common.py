"""Helpers shared by subcommands: load settings into an Env that carries the terminal."""

from __future__ import annotations

import argparse

from stordoc.env import Env
from stordoc.settings import load_settings
from stordoc.terminal import Terminal


def term_of(args: argparse.Namespace) -> Terminal:
    """The command's terminal (``main`` sets it; a handler called directly gets sys's)."""
    t = getattr(args, "term", None)
    return t if isinstance(t, Terminal) else Terminal.from_sys()


def env_from_args(args: argparse.Namespace) -> Env:
    term = term_of(args)
    return Env(load_settings(getattr(args, "config", None),
                             notice=term.note),
               term=term)
