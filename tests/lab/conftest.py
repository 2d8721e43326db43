"""Every lab test starts from a settled cluster: the tests share one lab, and a fault a
previous test healed may still be re-peering. Waiting here (with a deadline) keeps one
test's aftermath out of the next one's result.

Settled means: every OSD up and in, every PG active+clean and reported on the current
osdmap (``checks.settle``, the rule of ``stordoc check`` and a fix's follow-up: CI once
started a Swift test on PGs that read clean 0.3 s after an ``osd in`` and peered a second
later, and saw a Ceph PG_AVAILABILITY incident beside its own), and the monitor's health
free of the PG and OSD-down checks it learns of after the manager does."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.env import Env
from core.settings import load_settings
from lab import Lab
from tests.support.broken import osd1_unmounted  # noqa: F401  (the fixture)
from tests.support.poll import wait_until

_broken: list[str] = []
# health checks that only say the cluster is still re-peering after an earlier test
SETTLING_CHECKS = frozenset({"PG_AVAILABILITY", "PG_DEGRADED", "OSD_DOWN", "OSD_HOST_DOWN",
                             "OSD_ROOT_DOWN"})
# recovery on a loaded 2-core machine can take minutes; waiting costs nothing once settled
SETTLE_S = 420


def _settle_log(nodeid: str, secs: float) -> None:
    """Each test's wait for the lab to settle, to $STORDOC_SETTLE_LOG (scripts/test: where
    the lab parts' minutes go besides the tests' own; benchmarks/ci_phases.py sums it)."""
    path = os.environ.get("STORDOC_SETTLE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{secs:.1f} {nodeid}\n")


@pytest.fixture(autouse=True)
def settled(lab: Lab, request: pytest.FixtureRequest) -> None:
    if _broken:  # fail at once instead of waiting out the deadline test after test
        pytest.fail(f"the lab is broken since an earlier test: {_broken[0]}")
    why: list[str | None] = ["not asked"]

    def calm() -> bool:
        why[0] = lab.unsettled(SETTLING_CHECKS)
        return why[0] is None

    t0 = time.monotonic()
    try:
        wait_until(calm, SETTLE_S, "the lab to settle", 0.5)
        _settle_log(request.node.nodeid, time.monotonic() - t0)
        return
    except AssertionError:
        pass
    dead = [n for n, pid in lab.status()["processes"].items() if pid is None]
    flags = lab.ceph("osd", "dump", check=False)
    flags = flags.get("flags", "") if isinstance(flags, dict) else ""
    _broken.append(f"last seen: {why[0]}; OSDs up/in {lab.osds_up_in()}, PGs clean "
                   f"{lab.pgs_clean()} (health checks {sorted(lab.health_checks())}) "
                   f"({lab.pg_states()}; osd flags {flags}), "
                   f"daemons not running: {', '.join(dead) or 'none'} (logs in {lab.log_dir})")
    pytest.fail(f"the lab did not settle within {SETTLE_S} s before this test: {_broken[0]}")


@pytest.fixture
def env(lab: Lab, tmp_path: Path) -> Iterator[Env]:
    """An Env on the lab's settings with a journal of its own (one per test)."""
    s = load_settings(lab.config_path)
    e = Env(s.model_copy(update={"journal": str(tmp_path / "journal.db")}))
    yield e
    e.close()


@pytest.fixture
def cfg(lab: Lab, tmp_path: Path) -> Path:
    """The lab's config file with a journal of this test (for the CLI in a subprocess)."""
    lines = [f'journal = "{tmp_path / "journal.db"}"' if ln.startswith("journal =") else ln
             for ln in lab.config_path.read_text().splitlines()]
    p = tmp_path / "stordoc.toml"
    p.write_text("\n".join(lines) + "\n")
    return p
