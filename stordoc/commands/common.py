"""Helpers shared by subcommands: load settings into an Env."""

from __future__ import annotations

import argparse

from stordoc.env import Env
from stordoc.settings import load_settings


def env_from_args(args: argparse.Namespace) -> Env:
    return Env(load_settings(getattr(args, "config", None)))
