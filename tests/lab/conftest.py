"""Every lab test starts from a settled cluster: the tests share one lab, and a fault a
previous test healed may still be re-peering. Waiting here (with a deadline) keeps one
test's aftermath out of the next one's result."""

from __future__ import annotations

import time

import pytest

from storage.lab import N_OSDS, Lab


@pytest.fixture(autouse=True)
def settled(lab: Lab) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if lab.osds_up_in() == (N_OSDS, N_OSDS) and lab.pgs_clean():
            return
        time.sleep(0.5)
    pytest.fail(f"the lab did not settle (OSDs up/in {lab.osds_up_in()}, PGs clean "
                f"{lab.pgs_clean()}) within 180 s before this test")
