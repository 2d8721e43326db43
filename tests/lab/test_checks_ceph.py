"""The Ceph collector and checks against the real lab, per release: the healthy picture
in typed fields, the host's Pacific client against the lab's release, the schedulers, a
stopped monitor (unreachable within the timeout, not a hang), a failing command. Each
break scenario's findings: tests/lab/test_scenarios.py (live) and tests/unit/test_replay.py
(its snapshot); a stopped manager: tests/lab/test_ceph_codes.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from checks.engine import CheckReport, run_checks
from checks.model import Finding
from lab import Lab
from storage.ceph import CephClient, CephCommandError, collect_ceph
from storage.model import ClusterSnapshot
from storage.targets import CephTarget
from tests.support.poll import wait_until

# Codes of the Ceph checks (the mount/Swift checks are tested by their own helpers).
CEPH_PREFIXES = ("OSD", "POOL", "PGS", "CACHE", "CEPH", "MON")


@pytest.fixture(scope="module")
def target(lab: Lab) -> CephTarget:
    from core.settings import load_settings

    settings = load_settings(lab.config_path)
    ct = settings.cluster("lab").target("lab")
    assert ct.ceph is not None
    return ct.ceph


def report(target: CephTarget) -> CheckReport:
    state, err = collect_ceph(target)
    snap = ClusterSnapshot("lab", time.time(), ceph=state, ceph_error=err)
    return run_checks(snap)


def ceph_findings(target: CephTarget) -> list[Finding]:
    return [f for f in report(target).findings if f.code.startswith(CEPH_PREFIXES)]


def one(fs: list[Finding], code: str, entity: str) -> Finding | None:
    hits = [f for f in fs if f.code == code and f.entity == entity]
    return hits[0] if hits else None


@pytest.fixture
def healthy(lab: Lab, target: CephTarget) -> Iterator[None]:
    """Start each test from a clean cluster (all PGs active+clean)."""
    wait_until(lab.pgs_clean, 120, "PGs active+clean before the test", 0.5)
    yield


@pytest.mark.release
def test_healthy_lab_has_no_ceph_findings(lab: Lab, healthy: None,
                                          target: CephTarget) -> None:
    state, err = collect_ceph(target)
    assert err is None and state is not None
    assert state.release == lab.release and len(state.osds) == lab.n_osds
    assert all(o.up and o.in_ for o in state.osds)
    assert {o.host for o in state.osds} == {f"node{i + 1}" for i in range(lab.n_osds)}
    assert state.errors == {}
    # every fact the checks read is a typed field, read from the live cluster
    assert state.require_osd_release == lab.release and not state.versions.mixed
    assert {k: sum(c.count for c in v) for k, v in state.versions.by_kind.items()} == {
        "mon": 1, "mgr": 1, "osd": lab.n_osds}
    assert state.crashes == () and state.mon_time_skew == {}
    assert all(p.autoscale is not None for p in state.pools)
    assert all(u.pgs is not None for u in state.osd_usage)
    oc = state.osd_config
    assert oc is not None and oc.daemon == "osd.0"
    mb = oc.get("osd_max_backfills")  # the lab's ceph.conf sets it
    assert mb is not None and (mb.value, mb.source) == ("4", "file")
    assert ceph_findings(target) == []


@pytest.mark.release
def test_host_pacific_client_reads_and_writes_the_lab_release(
        lab: Lab, target: CephTarget) -> None:
    """stordoc's collection and benchmarks use the host's python3-rados (Ceph 16.2): it
    must talk to the Reef monitors and OSDs as well as to Pacific's."""
    import subprocess

    from storage.rados_io import connect

    client = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "python3-rados"],
                            capture_output=True, text=True, check=True).stdout
    assert client.startswith("16.2.")
    state, err = collect_ceph(target)
    assert err is None and state is not None
    assert state.version.startswith({"pacific": "16.2.", "reef": "18.2."}[lab.release])
    cluster = connect(target)
    try:
        with cluster.open_ioctx("rbd") as io:
            payload = f"stordoc {lab.release} {time.time()}".encode()
            io.write_full("stordoc-client-probe", payload)
            assert io.read("stordoc-client-probe", length=len(payload)) == payload
            io.remove_object("stordoc-client-probe")
    finally:
        cluster.shutdown()


@pytest.mark.release
def test_scheduler_and_ignored_recovery_limits_on_the_live_osds(
        lab: Lab, healthy: None, target: CephTarget) -> None:
    """Pacific's OSDs run wpq; Reef's run mClock, where the lab's ceph.conf recovery
    limits count only because the lab sets osd_mclock_override_recovery_settings: turned
    off at run time, stordoc names each ignored limit and where it was set."""
    from checks.ceph_release import op_queue

    state, err = collect_ceph(target)
    assert err is None and state is not None
    assert op_queue(state) == ("mclock_scheduler" if lab.release == "reef" else "wpq")
    assert not [f for f in ceph_findings(target) if f.code.startswith("OSD_RECOVERY_")]
    if lab.release == "pacific":
        return
    osds = [f"osd.{i}" for i in range(lab.n_osds)]
    try:
        for o in osds:
            lab.ceph("tell", o, "config", "set", "osd_mclock_override_recovery_settings",
                     "false")
        # `config show` is the manager's copy of what the OSD reports: a few seconds late
        f = wait_until(lambda: one(ceph_findings(target), "OSD_RECOVERY_SETTINGS_IGNORED",
                                   "cluster lab"), 60, "the ignored limits named", 0.5)
        assert f.evidence["ignored"]["osd_max_backfills"] == "4"  # the lab's ceph.conf
        assert "osd_max_backfills = 4 (osd.0 (file))" in f.message
        assert f.evidence["profile"] == "balanced"
    finally:
        for o in osds:
            lab.ceph("tell", o, "config", "set", "osd_mclock_override_recovery_settings",
                     "true")
    wait_until(lambda: not [f for f in ceph_findings(target)
                            if f.code.startswith("OSD_RECOVERY_")] or None, 60,
               "the finding gone once the override is back", 0.5)


@pytest.mark.release
def test_stopped_monitor_is_unreachable_not_a_hang(lab: Lab, healthy: None,
                                                   target: CephTarget) -> None:
    short = replace(target, timeout_s=3)
    try:
        assert lab.stop("mon.a")
        state, err = collect_ceph(short)
        assert state is None and err is not None and "within 3 s" in err
        snap = ClusterSnapshot("lab", time.time(), ceph=None, ceph_error=err)
        rep = run_checks(snap)
        assert rep.verdict == 3
        assert [f.code for f in rep.findings] == ["CEPH_UNREACHABLE"]
    finally:
        lab.start_mon()
    wait_until(lambda: collect_ceph(target)[0] is not None, 60, "the monitor back", 0.5)


@pytest.mark.release
def test_failed_command_raises_command_error(target: CephTarget) -> None:
    with CephClient(target) as c:
        assert c.mon("osd pool ls") and "rbd" in c.mon("osd pool ls")
        with pytest.raises(CephCommandError) as ei:
            c.mon("osd pool get", pool="no-such-pool", var="size")
    assert ei.value.rc == -2 and "no-such-pool" in ei.value.outs
