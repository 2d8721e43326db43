"""The one poll of the tests: a condition asked again until it holds or a deadline
passes (never a fixed sleep). The TUI's Pilot has its own (tests/support/tui.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(pred: Callable[[], T], timeout: float, what: str | Callable[[], str],
               interval: float = 1.0,
               retry_on: tuple[type[Exception], ...] = ()) -> T:
    """``pred()`` until it is truthy, and that value; at the deadline an AssertionError
    naming ``what`` (a callable: worded then, from the state at that moment) and the last
    value. An exception of ``retry_on`` counts as "not yet" (its repr is the last value)."""
    deadline = time.monotonic() + timeout
    while True:
        last: object
        try:
            value = pred()
            if value:
                return value
            last = value
        except retry_on as e:
            last = e
        if time.monotonic() > deadline:
            name = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g} s waiting for {name} "
                                 f"(last: {last!r})")
        time.sleep(interval)
