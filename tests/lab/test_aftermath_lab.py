"""A fix's aftermath on the real lab: PG states read right after an OSD comes back are the
manager's picture of the map before it (measured: "65 active+clean" 0.3 s after ``osd in``,
"16 peering" 1.6 s after). Neither the follow-up after a fix nor the benchmark gate may
take them for clean; the follow-up ends clean only when the cluster is."""

from __future__ import annotations

import time
from typing import Any

import pytest

from checks.osd import PG_REPORT_GRACE_S
from lab import Lab
from runbooks.aftermath import Aftermath, follow, read
from runbooks.bench.common import ClusterNotSettled, ceph_gate
from storage.rados_io import RadosIO
from stordoc.env import Env

pytestmark = pytest.mark.timeout(900)

OSD = 2


def test_clean_read_right_after_osd_in_is_not_taken_for_clean(lab: Lab, env: Env) -> None:
    ctx = env.run_context(None, source="test")
    lab.ceph("osd", "out", str(OSD))
    try:
        lab.wait_pgs_clean(300, f"osd.{OSD} out")
        lab.ceph("osd", "in", str(OSD))
        t_in = time.time()
        first = read(ctx)
        with RadosIO(ctx.target.ceph) as io:
            state: dict[str, Any] = io.state()
        assert not first.clean, first.line  # before: "clean: all N PGs active+clean"
        assert first.unreported_s is not None or first.unclean, first
        # the monitor's own stamp of the change, carried by `status` on this release
        changed = state["osd_changed_at"]
        assert isinstance(changed, (int, float)) and abs(changed - t_in) < 5, state
        with pytest.raises(ClusterNotSettled):
            ceph_gate(state, force=False)

        seen: list[Aftermath] = []
        end = follow(ctx, seen.append, timeout_s=300, interval_s=1.0)
        assert end.clean, [a.line for a in seen]
        assert time.time() - t_in >= PG_REPORT_GRACE_S - 1  # the stamp is whole seconds
        assert not seen[0].clean and seen[-1].line == end.line
        # what follow ended on is the cluster's state, not a stale read: it stays clean
        for _ in range(4):
            assert lab.pgs_clean(), lab.pg_states()
            time.sleep(1.0)
        with RadosIO(ctx.target.ceph) as io:
            assert ceph_gate(io.state(), force=False) == []  # settled now: no refusal
    finally:
        lab.ceph("osd", "in", str(OSD), check=False)
