"""The one way a test breaks the lab: ``broken(lab, SCENARIO, ...)`` injects the fault and
heals it afterwards, always, whatever the test did: when it failed, and when it repaired
the fault itself (a heal is idempotent: it mounts, starts, marks in only what is not, and
waits for active+clean, which costs a second on a healthy lab). Healing only "if osd.1 is
not up or not mounted" left an OSD a failed fix had marked out, out for every later test.
``osd1_unmounted`` is the fixture of the lab's seed fault, the lab tests' conftest offers it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest


@contextmanager
def broken(lab: Any, scenario: str, **opts: Any) -> Iterator[None]:
    """``lab break SCENARIO`` now, ``lab heal SCENARIO`` when the block ends, however."""
    heal_opts = {k: v for k, v in opts.items() if k not in ("out", "mode")}  # break's only
    try:
        lab.break_(scenario, **opts)
        yield
    finally:
        lab.heal(scenario, **heal_opts)


def break_until_teardown(request: pytest.FixtureRequest, lab: Any, scenario: str,
                         **opts: Any) -> None:
    """``broken`` for the rest of the test: healed at its teardown."""
    stack = ExitStack()
    request.addfinalizer(stack.close)
    stack.enter_context(broken(lab, scenario, **opts))


@pytest.fixture
def osd1_unmounted(lab: Any) -> Iterator[None]:
    """osd.1 down with its data directory unmounted (seed 000), healed afterwards."""
    with broken(lab, "osd-unmounted", osd=1):
        yield
