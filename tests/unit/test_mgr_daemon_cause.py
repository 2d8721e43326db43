"""A manager that crashed is the cause of 'no manager': the daemon's finding (checks/
daemons.py) is the incident's root, the manager findings and the stale PG statistics its
impact, and its fix restarts that daemon (issue 28: daemons x managers)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from core.service.pipeline import CheckRequest, run_check
from runbooks.nextstep import planning_context, with_next_steps
from storage.model import ClusterSnapshot
from tests.unit.test_replay import replay


def _mgr_crashed(release: str) -> ClusterSnapshot:
    """mgr-stopped's snapshot (no manager) with node1's daemon facts of the osd-crash
    capture, mgr.x in them gone with a SIGSEGV in its log (a crash, not a stop)."""
    snap = replay(release, "mgr-stopped").outcome.snapshot
    facts = replay(release, "osd-crash").outcome.snapshot.hosts["node1"].daemon_facts
    mgr = next(d for d in facts if d.name == "mgr.x")
    # the crash line after its last start (an older one is an earlier life's)
    t = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(mgr.start_times[-1] + 5))
    crashed = dataclasses.replace(
        mgr, alive=False, proc_state="", probe="",
        fatal_lines=(f"{t}.000+0000 7f 1 *** Caught signal (Segmentation fault) **",))
    node1 = dataclasses.replace(snap.hosts["node1"], daemon_facts=tuple(
        crashed if d.name == "mgr.x" else d for d in facts if d.kind != "osd"))
    return dataclasses.replace(snap, hosts={**snap.hosts, "node1": node1})


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_a_crashed_manager_is_the_root_of_no_manager(release: str) -> None:
    rp = replay(release, "mgr-stopped")
    snap = _mgr_crashed(release)
    out = run_check(CheckRequest(rp.target, rp.thresholds, (), None, snapshot=snap,
                        now=rp.doc.taken_at, source="snapshot"))
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    incidents = with_next_steps(ctx, snap, out.incidents)
    top = incidents[0]
    assert (top.root.code, top.root.entity) == ("DAEMON_CRASHED", "mgr.x"), top.root
    assert "crashed" in top.root.message or "killed" in top.root.message
    folded = {f.code for f in top.consequences}
    assert {"MGR_NO_ACTIVE", "PGS_STATS_STALE"} <= folded, folded
    # its fix restarts that daemon (the capture's settings name no start command for
    # mgr.x, so offline planning says so instead of offering the button)
    assert (top.root.runbook, top.root.target) == ("daemon-restart", "mgr.x")
    # the replay as saved: the host's facts say the daemon stopped (SIGTERM), the root
    assert rp.outcome.incidents[0].root.code == "DAEMON_STOPPED"
