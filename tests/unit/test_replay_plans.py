"""Runbook plans made on saved snapshots of real faults (a plan is a pure function of the
snapshot: ``plan_from_snapshot``): the exact steps, what they change, and the refusals,
per release, with no lab. The lab tests run the same plans for real."""

from __future__ import annotations

import pytest

from runbooks.api import Plan, Refused, RunContext, plan_from_snapshot
from storage.journal import Journal
from tests.unit.test_replay import RELEASES, replay

pytestmark = pytest.mark.parametrize("release", RELEASES)


def plan_of(release: str, case: str, runbook: str, target: str,
            options: dict[str, object] | None = None) -> Plan:
    rp = replay(release, case)
    ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, user="tester")
    return plan_from_snapshot(ctx, rp.outcome.snapshot, runbook, target, options)


def refused(release: str, case: str, runbook: str, target: str, why: str) -> None:
    with pytest.raises(Refused, match=why):
        plan_of(release, case, runbook, target)


def test_osd_remount_of_the_seed_fault(release: str) -> None:
    p = plan_of(release, "osd-unmounted-out", "osd-remount", "osd.1")
    assert p.params["host"] == "node2" and p.params["was_in"] is False
    assert str(p.params["device"]).startswith("/dev/loop")
    titles = [s.title for s in p.steps]
    assert titles[0] == "set noout for the duration" and "mark osd.1 in" in titles[-2]
    assert p.steps[-1].cleanup_of == 1
    assert any(s.command.startswith("mount -t xfs") for s in p.steps)
    # the symptom's runbook would start a daemon on an empty dir: refused, said why
    refused(release, "osd-unmounted-out", "osd-start", "osd.1", "osd-remount")


def test_osd_activate_and_no_circle_on_the_raw_osd(release: str) -> None:
    p = plan_of(release, "osd-not-activated", "osd-activate", "osd.3")
    assert any("raw activate --device /dev/loop" in s.command for s in p.steps)
    for rb in ("osd-remount", "osd-start"):
        refused(release, "osd-not-activated", rb, "osd.3", "osd-activate")


def test_osd_start_of_a_killed_daemon_and_osd_in(release: str) -> None:
    p = plan_of(release, "osd-killed", "osd-start", "osd.2")
    assert any("ceph-osd" in s.command for s in p.steps)
    refused(release, "osd-killed", "osd-remount", "osd.2", "already mounted")
    p = plan_of(release, "osd-out", "osd-in", "osd.2")
    assert [s.command for s in p.steps] == ["ceph osd in 2"]


def test_daemon_restart_saves_evidence_archives_and_refuses_a_loop(release: str) -> None:
    p = plan_of(release, "osd-crash", "daemon-restart", "osd.2")
    cmds = [s.command for s in p.steps]
    assert "stordoc-evidence" in cmds[0] and str(p.params["crash_id"]) in cmds[0]
    assert cmds[1] == f"ceph crash archive {p.params['crash_id']}"
    assert "ceph-osd" in cmds[2] and p.params["signal"] == "SIGSEGV"
    hung = plan_of(release, "osd-hung", "daemon-restart", "osd.2")
    titles = [s.title for s in hung.steps]
    assert titles[1].startswith("kill the hung osd.2 (pid ")
    assert "stordoc-kill" in hung.steps[1].command and "ceph-osd" in hung.steps[1].command
    refused(release, "osd-restart-loop", "daemon-restart", "osd.2",
            "restart-looping.*one more restart will not help")
    refused(release, "osd-crash", "daemon-restart", "osd.1", "running")


def test_unknown_and_hostile_targets_are_refused(release: str) -> None:
    refused(release, "osd-unmounted-out", "osd-remount", "osd.9",
            "osd.9 does not exist in the osdmap")
    with pytest.raises(Exception, match="not an OSD name"):
        plan_of(release, "osd-unmounted-out", "osd-start", "osd.1; reboot")


def test_cache_tier_tune_before_and_after(release: str) -> None:
    p = plan_of(release, "cache-tier-misconfigured", "cache-tier-tune", "lab-cache")
    ba = p.before_after
    assert ba["target_max_bytes"][0] == 0 and ba["target_max_bytes"][1] > 0
    assert ba["cache_target_full_ratio"] == (0.5, 0.8)
    assert ba["cache_target_dirty_ratio"] == (0.8, 0.4)
    assert ba["hit_set_type"] == ("none", "bloom")


def test_pool_pg_num_doubles_step_by_step(release: str) -> None:
    rp = replay(release, "pool-few-pgs")
    f = next(x for x in rp.outcome.report.findings if x.code == "POOL_PG_NUM_LOW")
    want = int(f.evidence["ideal_pg_num"])
    p = plan_of(release, "pool-few-pgs", "pool-pg-num", "lab-fewpg")
    assert p.params["target"] == want
    sets = [s.command for s in p.steps if s.command.startswith("ceph osd pool set")]
    n, expect = 4, []
    while n <= want:
        expect += [f"ceph osd pool set lab-fewpg pg_num {n}",
                   f"ceph osd pool set lab-fewpg pgp_num {n}"]
        n *= 2
    assert sets == expect
    assert sum(1 for s in p.steps if s.title.startswith("wait")) == len(expect) // 2
    # PGs not clean (osd.1 out and down): a pg_num change is refused
    refused(release, "osd-unmounted-in", "pool-pg-num", "rbd", "active\\+clean")


def test_swift_device_remount(release: str) -> None:
    p = plan_of(release, "swift-device-unmounted", "swift-device-remount", "d2@node2")
    assert str(p.params["mountpoint"]).endswith("/swift/node/d2")
    assert any("/recon/unmounted" in s.command for s in p.steps)
    refused(release, "swift-device-unmounted", "swift-device-remount", "d2@node1",
            "no ring lists device d2 on node1")


def test_swift_ring_rebalance_is_never_planned_from_a_saved_snapshot(release: str) -> None:
    """Its plan loads the builder file (a pickle): from a snapshot that would be a path
    the snapshot names. Offline planning refuses and says where to plan it."""
    rp = replay(release, "swift-ring-drift")
    ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, offline=True)
    with pytest.raises(Refused, match="plan it where stordoc reaches the cluster's swift_dir"):
        plan_from_snapshot(ctx, rp.outcome.snapshot, "swift-ring-rebalance", "object")
    inc = rp.outcome.incidents[0]
    assert inc.next_step is None and "stordoc plan swift-ring-rebalance object" in str(
        inc.manual)


def test_swift_server_and_replicator_start(release: str) -> None:
    p = plan_of(release, "swift-object-server-stopped", "swift-server-start", "object@node1")
    assert p.steps
    refused(release, "healthy", "swift-server-start", "object@node1", "nothing to start")
    p = plan_of(release, "swift-replication-stalled", "swift-replicator-start",
                "object@node1")
    assert p.steps
    refused(release, "healthy", "swift-replicator-start", "object@node1", "nothing to start")


def test_swift_ring_push_names_what_it_replaces(release: str) -> None:
    p = plan_of(release, "swift-ring-stale", "swift-ring-push", "object")
    assert p.steps and any("object.ring.gz" in s.command for s in p.steps)
