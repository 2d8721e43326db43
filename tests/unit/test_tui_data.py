"""Captured data for the TUI tests: the Octopus JSON in tests/fixtures parsed by the
real parsers (storage.ceph), with a down+out osd.1 whose data dir is unmounted, a
misconfigured writeback cache tier, lab-shaped Swift rings with an unmounted device, and
the findings the checks report for that state (as captured from a check run).

No tests here: helpers shared by test_tui_*.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from checks.model import Finding, Severity
from storage.audit import AuditRun, AuditStep
from storage.ceph import build_state
from storage.journal import CheckRun
from storage.model import (
    BlockDevice,
    ClusterSnapshot,
    Daemon,
    DeviceIdentity,
    DiskUsage,
    FstabLine,
    HostFacts,
    Mount,
    OsdDataDir,
    PoolState,
    ReconHost,
    RingDevice,
    RingState,
    SwiftState,
)
from storage.targets import CephTarget, ClusterTarget, HostTarget, SwiftTarget

OCTOPUS = Path(__file__).resolve().parents[1] / "fixtures" / "ceph-octopus"
TAKEN_AT = 1_763_770_000.0
FSID = "eccf3d48-859f-11ec-9de2-d72b3e8a3058"


def _load(name: str) -> object:
    return json.loads((OCTOPUS / f"{name}.json").read_text())


def octopus_raw() -> dict[str, object]:
    return {
        "osd dump": _load("ceph_osd_dump"),
        "osd tree": _load("ceph_osd_tree"),
        "osd pool ls detail": _load("ceph_osd_pool_ls_detail"),
        "df": _load("ceph_df"),
        "pg stat": _load("ceph_pg_stat"),
        "health detail": _load("ceph_health_detail"),
        "osd df": _load("ceph_osd_df_tree"),
    }


def target() -> ClusterTarget:
    hosts = tuple(HostTarget(n, a, port=22) for n, a in (
        ("compute1", "127.0.0.3"), ("compute2", "127.0.0.4"), ("compute4", "127.0.0.2")))
    return ClusterTarget("octopus", CephTarget("/etc/ceph/ceph.conf"),
                         SwiftTarget(proxy_url="http://127.0.0.1:8080"), hosts)


def healthy_snapshot() -> ClusterSnapshot:
    ceph = build_state(octopus_raw(), collected_at=TAKEN_AT)
    return ClusterSnapshot("octopus", TAKEN_AT, ceph=ceph, swift=swift_state(),
                           hosts=host_facts(broken=False), host_facts_collected=True,
                           duration_s=1.2)


def _ring(kind: str, port: int, unmounted_d2: bool) -> RingState:
    devs = tuple(RingDevice(i, 1, i + 1, ip, port, f"d{i + 1}", 100.0, 384, 384)
                 for i, ip in enumerate(("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.2")))
    return RingState(kind, f"/etc/swift/{kind}.ring.gz", f"/etc/swift/{kind}.builder", 9,
                     3.0, 1, devs, balance=0.0, dispersion=0.0, builder_matches_ring=True)


def swift_state(unmounted_d2: bool = False) -> SwiftState:
    rings = (_ring("account", 6202, unmounted_d2), _ring("container", 6201, unmounted_d2),
             _ring("object", 6200, unmounted_d2))
    recon = []
    for ip, devs in (("127.0.0.2", ("d1", "d4")), ("127.0.0.3", ("d2",)),
                     ("127.0.0.4", ("d3",))):
        un = tuple(d for d in devs if unmounted_d2 and d == "d2")
        du = tuple(DiskUsage(d, mounted=d not in un, size=300 * 2**20, used=20 * 2**20)
                   for d in devs if d not in un)
        for server, port in (("object", 6200), ("container", 6201), ("account", 6202)):
            recon.append(ReconHost(ip, port, server, unmounted=un, diskusage=du))
    return SwiftState(rings, tuple(recon), proxy_url="http://127.0.0.1:8080",
                      proxy_healthy=True, collected_at=TAKEN_AT)


def host_facts(broken: bool) -> dict[str, HostFacts]:
    out = {}
    for name, addr, osd in (("compute1", "127.0.0.3", 1), ("compute2", "127.0.0.4", 2),
                            ("compute4", "127.0.0.2", 0)):
        ddir = f"/var/lib/ceph/osd/ceph-{osd}"
        dev = f"/dev/sd{'bcd'[osd]}1"
        down = broken and osd == 1
        out[name] = HostFacts(
            name, addr,
            mounts=() if down else (Mount(dev, ddir, "xfs", "rw,noatime"),),
            block_devices=(BlockDevice(dev, "part", 100 * 2**30, "xfs", f"uuid-{osd}",
                                       None if down else ddir),),
            identities=(DeviceIdentity(dev, whoami=osd, ceph_fsid=FSID),) if down else (),
            fstab=(FstabLine(dev, ddir, "xfs", "noatime", commented=False),),
            daemons=(Daemon("ceph-osd", str(osd), None if down else 4000 + osd, not down),),
            osd_data={osd: OsdDataDir(osd, ddir)},
            collected_at=TAKEN_AT)
    return out


def broken_snapshot() -> ClusterSnapshot:
    """osd.1 down+out (data dir unmounted), a bad cache tier, Swift d2 unmounted."""
    snap = healthy_snapshot()
    assert snap.ceph is not None
    osds = tuple(replace(o, up=False, in_=False, reweight=0.0, state=("exists",))
                 if o.id == 1 else o for o in snap.ceph.osds)
    base = replace(snap.ceph.pools[-1], id=5, name="lab-base", pg_num=8, pgp_num=8,
                   pg_num_target=8, tiers=(6,), read_tier=6, write_tier=6, stored_bytes=0)
    cache = PoolState(6, "lab-cache", 3, 2, 8, 8, 8, 0, "replicated", ("rbd",),
                      tier_of=5, cache_mode="writeback",
                      cache_target_dirty_ratio_micro=800000,
                      cache_target_dirty_high_ratio_micro=900000,
                      cache_target_full_ratio_micro=500000)
    by_state = {"active+undersized+degraded": 45, "active+clean": 24}
    ceph = replace(snap.ceph, osds=osds, pools=snap.ceph.pools + (base, cache),
                   pgs=replace(snap.ceph.pgs, num_pgs=69, by_state=by_state),
                   health_status="HEALTH_WARN")
    return replace(snap, ceph=ceph, swift=swift_state(unmounted_d2=True),
                   hosts=host_facts(broken=True))


def broken_findings() -> tuple[Finding, ...]:
    return (
        Finding("OSD_DATA_UNMOUNTED", Severity.CRIT, "osd.1",
                "osd.1 data dir /var/lib/ceph/osd/ceph-1 on compute1 is not mounted; "
                "/dev/sdc1 holds it", {"host": "compute1",
                                       "data_dir": "/var/lib/ceph/osd/ceph-1",
                                       "device": "/dev/sdc1", "whoami": 1, "fsid": FSID},
                "osd-remount", "osd.1"),
        Finding("OSD_DOWN_OUT", Severity.WARN, "osd.1", "osd.1 is down and out",
                {"up": 0, "in": 0}, "osd-start", "osd.1"),
        Finding("CACHE_NO_TARGET", Severity.WARN, "pool lab-cache",
                "cache pool lab-cache has target_max_bytes and target_max_objects 0",
                {"target_max_bytes": 0, "target_max_objects": 0}, "cache-tier-tune",
                "lab-cache"),
        Finding("CACHE_RATIO_ORDER", Severity.WARN, "pool lab-cache",
                "dirty 0.80 <= dirty_high 0.90 <= full 0.50 does not hold",
                {"dirty": 0.8, "dirty_high": 0.9, "full": 0.5}, "cache-tier-tune",
                "lab-cache"),
        Finding("SWIFT_DEVICE_UNMOUNTED", Severity.CRIT, "d2@node2",
                "Swift device d2 on node2 is not mounted", {"host": "node2"},
                "swift-device-remount", "d2@node2"),
        Finding("CACHE_TIER_DEPRECATED", Severity.INFO, "pool lab-cache",
                "cache tiering is deprecated since Reef", {}),
    )


def history() -> list[CheckRun]:
    return [
        CheckRun(3, "octopus", TAKEN_AT - 60, 1.4, 2, "crit", 6, "tui", True),
        CheckRun(2, "octopus", TAKEN_AT - 3600, 1.1, 0, "ok", 0, "cli", True),
    ]


def audit() -> list[AuditRun]:
    return [AuditRun(1, "octopus", "osd-remount", "osd.2", "alice", "tui", "alice", {},
                     TAKEN_AT - 7200, TAKEN_AT - 7190, "success",
                     "osd-remount osd.2: 4 step(s) done; verified: OSD_DATA_UNMOUNTED cleared",
                     {}, None, None)]


def audit_steps() -> dict[int, list[AuditStep]]:
    return {1: [AuditStep(1, 1, 1, "mount /dev/sdd1 on /var/lib/ceph/osd/ceph-2", "compute2",
                          "mount -t xfs -o noatime /dev/sdd1 /var/lib/ceph/osd/ceph-2", 0, "",
                          "", 0.4, "done", TAKEN_AT - 7199),
                AuditStep(2, 1, 2, "start the osd.2 daemon", "compute2",
                          "systemctl start ceph-osd@2", 0, "", "", 1.2, "done",
                          TAKEN_AT - 7198)]}


def bench_history() -> list[dict[str, object]]:
    """Two stored rados results, as runbooks.bench's BenchResult.to_row() gives them."""
    base = {"cluster": "octopus", "kind": "rados", "engine": "native", "workload": "write",
            "rep": 1, "status": "ok", "errors": 0, "params": {}, "series": []}
    return [
        {**base, "id": 2, "group_id": "g2", "started_at": TAKEN_AT - 120, "ops_s": 35.3,
         "mb_s": 141.11, "lat_avg_ms": 438.9, "lat_p50_ms": 406.9, "lat_p90_ms": 622.3,
         "lat_p99_ms": 867.6, "lat_max_ms": 880.9},
        {**base, "id": 1, "group_id": "g1", "started_at": TAKEN_AT - 7200, "ops_s": 30.1,
         "mb_s": 120.4, "lat_avg_ms": 510.2, "lat_p50_ms": 480.0, "lat_p90_ms": 700.5,
         "lat_p99_ms": 910.0, "lat_max_ms": 990.1, "status": "cancelled"},
    ]
