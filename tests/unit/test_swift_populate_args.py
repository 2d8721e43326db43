"""``stordoc swift dispersion populate`` is ``stordoc fix swift-dispersion-populate
dispersion -o objects=N -o containers=M`` with every other option of ``fix`` at its
default, built without re-parsing through the CLI's parser (no import circle between
stordoc.cli and the command modules, issue 39.6). The lab runs it for real:
tests/lab/test_swift_dispersion.py."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

import stordoc.commands.runbooks as rb
from stordoc.cli import build_parser


def test_populate_is_fix_with_its_options(monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[argparse.Namespace] = []
    monkeypatch.setattr(rb, "cmd_fix", lambda ns: got.append(ns) or 0)
    ns = build_parser().parse_args(["swift", "dispersion", "populate", "--objects", "4",
                                    "--containers", "2", "--yes", "--cluster", "lab"])
    assert ns.func(ns) == 0
    [fix] = got
    want: dict[str, Any] = build_parser().parse_args(
        ["fix", "swift-dispersion-populate", "dispersion", "-o", "objects=4",
         "-o", "containers=2", "--yes", "--cluster", "lab"]).__dict__
    for k, v in want.items():
        if k != "func":
            assert getattr(fix, k) == v, (k, getattr(fix, k), v)
