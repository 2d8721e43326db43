"""The one runner of the real CLI in a subprocess, as on-call runs it: ``python -m
stordoc`` in a fresh process from the repository, no terminal, stdin at its end (``cli``);
and the same CLI in this process on a captured terminal (``run_main``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_main(*argv: str, width: int = 200) -> tuple[int, str, str]:
    """The CLI in this process (``stordoc.cli.main``) on a captured terminal ``width``
    wide: its exit status, stdout and stderr."""
    import io

    from core.terminal import Terminal
    from stordoc.cli import main

    term = Terminal.capture(width=width)
    rc = main(list(argv), term)
    assert isinstance(term.stdout, io.StringIO) and isinstance(term.stderr, io.StringIO)
    return rc, term.stdout.getvalue(), term.stderr.getvalue()


def cli_argv(cfg: Path | str | None, *args: str) -> list[str]:
    """``python -m stordoc [--config CFG] ARGS``."""
    return [sys.executable, "-m", "stordoc", *(("--config", str(cfg)) if cfg else ()), *args]


def cli_env(env: Mapping[str, str] | None = None, columns: int | None = 200) -> dict[str, str]:
    """This process's environment, no Python warnings, ``COLUMNS`` (None: as it is), and
    ``env`` over it."""
    e = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if columns is not None:
        e["COLUMNS"] = str(columns)
    return {**e, **(env or {})}


def cli(cfg: Path | str | None, *args: str, timeout: float = 600, stdin: str | None = None,
        env: Mapping[str, str] | None = None, columns: int | None = 200,
        **kw: Any) -> subprocess.CompletedProcess[str]:
    """``stordoc --config CFG ARGS`` (no ``--config`` when ``cfg`` is None), its output
    captured as text; ``timeout`` is a hang guard, never a limit a test asserts."""
    return subprocess.run(cli_argv(cfg, *args), capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, check=False, input=stdin or "",
                          env=cli_env(env, columns), **kw)


# a cluster nobody answers (Ceph at a config that does not exist, Swift at a closed port)
# and benchmarks capped at 10 s: the CLI's refusals come before any I/O
UNREACHABLE_CONF = """
journal = "{j}"
[clusters.c1.ceph]
conf = "/nonexistent/ceph.conf"
timeout = 1
[clusters.c1.swift]
auth_url = "http://127.0.0.1:9/auth/v1.0"
user = "u"
key = {{ value = "k" }}
[bench]
max_duration_s = 10
"""


def unreachable_config(d: Path) -> str:
    """``d/c.toml``: UNREACHABLE_CONF with its journal in ``d``."""
    p = d / "c.toml"
    p.write_text(UNREACHABLE_CONF.format(j=d / "journal.db"))
    return str(p)
