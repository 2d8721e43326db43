"""The one TUI harness: Pilot tests run on a fresh event loop (``sync``), wait for the
App's workers (``settle``) or for a condition with a deadline (``pilot_wait``, never a
fixed sleep), and, on the lab, an Env on the lab's config with a journal of the test's
own (``lab_env``)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.labtools import config_with_journal


def sync(fn: Any) -> Any:
    """Run an async Pilot test on a fresh event loop (no pytest-asyncio needed)."""

    @functools.wraps(fn)
    def wrapper(*a: Any, **kw: Any) -> None:
        asyncio.run(fn(*a, **kw))

    return wrapper


async def settle(app: Any, pilot: Any) -> None:
    """The App's workers done and its messages handled."""
    await app.workers.wait_for_complete()
    await pilot.pause()


async def pilot_wait(pilot: Any, cond: Callable[[], object], timeout: float = 20.0,
                      what: str = "the condition") -> None:
    """Let the App run until ``cond()`` holds; AssertionError naming ``what`` at the
    deadline."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await pilot.pause(0.05)


def lab_env(lab: Any, tmp_path: Path, ceph_timeout: float | None = None, extra: str = "",
            name: str = "stordoc.toml") -> Any:
    """An Env on the lab's config written to ``tmp_path/name``: a journal of the test's
    own, the lab's Ceph timeout set to ``ceph_timeout``, ``extra`` TOML appended."""
    from core.env import Env
    from core.settings import load_settings

    cfg = config_with_journal(lab.config_path, tmp_path / "journal.db", tmp_path / name)
    text = cfg.read_text()
    if ceph_timeout is not None:  # the [clusters.lab.ceph] timeout comes first
        text = text.replace("timeout = 10\n", f"timeout = {ceph_timeout:g}\n", 1)
    cfg.write_text(text + extra)
    return Env(load_settings(cfg))
