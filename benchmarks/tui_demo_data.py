"""A synthetic cluster of any size, deterministic, for the speed benchmarks.

10,000 OSDs on 500 hosts, a few of them down/out with unmounted data dirs, some pools and
a Swift ring: the shapes the screens must stay fast with. Not used against real clusters.
"""

from __future__ import annotations

from checks.model import Finding, Severity
from storage.model import (
    CephState,
    ClusterSnapshot,
    CrushHost,
    Daemon,
    DeviceIdentity,
    HostFacts,
    Mount,
    OsdState,
    OsdUsage,
    PgSummary,
    PoolState,
    ReconHost,
    RingDevice,
    RingState,
    SwiftState,
)
from storage.targets import CephTarget, ClusterTarget, HostTarget


def synthetic(n_osds: int = 10_000, per_host: int = 20, taken_at: float = 1_700_000_000.0,
              down_every: int = 997) -> tuple[ClusterSnapshot, tuple[Finding, ...],
                                              ClusterTarget]:
    """Snapshot, findings and target of a big cluster; every ``down_every``-th OSD is down."""
    osds, hosts, usage = [], [], []
    facts: dict[str, HostFacts] = {}
    findings: list[Finding] = []
    host_targets = []
    for h in range(0, n_osds, per_host):
        hname = f"node{h // per_host + 1}"
        ids = tuple(range(h, min(n_osds, h + per_host)))
        hosts.append(CrushHost(hname, ids))
        addr = f"127.0.{(h // per_host) // 250}.{(h // per_host) % 250 + 2}"
        host_targets.append(HostTarget(hname, addr))
        mounts, daemons, idents = [], [], []
        for i in ids:
            down = i % down_every == 1
            osds.append(OsdState(i, f"uuid-{i}", up=not down, in_=not down, exists=True,
                                 host=hname, crush_weight=1.819, reweight=0.0 if down else 1.0,
                                 device_class="hdd", state=("exists",) + (() if down
                                                                         else ("up",))))
            usage.append(OsdUsage(i, 40.0 + (i * 7) % 30))
            ddir = f"/var/lib/ceph/osd/ceph-{i}"
            if down:
                idents.append(DeviceIdentity(f"/dev/sd{i}", whoami=i, ceph_fsid="fsid"))
                findings.append(Finding("OSD_DATA_UNMOUNTED", Severity.CRIT, f"osd.{i}",
                                        f"osd.{i} data dir {ddir} is not mounted",
                                        {"host": hname, "device": f"/dev/sd{i}"},
                                        "osd-remount", f"osd.{i}"))
                findings.append(Finding("OSD_DOWN_OUT", Severity.WARN, f"osd.{i}",
                                        f"osd.{i} is down and out", {}, "osd-start",
                                        f"osd.{i}"))
            else:
                mounts.append(Mount(f"/dev/sd{i}", ddir, "xfs"))
            daemons.append(Daemon("ceph-osd", str(i), None if down else 1000 + i, not down))
        facts[hname] = HostFacts(hname, addr, mounts=tuple(mounts), daemons=tuple(daemons),
                                 identities=tuple(idents), collected_at=taken_at)
    pools = tuple(PoolState(i, f"pool{i}", 3, 2, 2 ** (8 + i % 4), 2 ** (8 + i % 4),
                            2 ** (8 + i % 4), 0, "replicated", ("rbd",),
                            stored_bytes=(i + 1) * 10**12, objects=(i + 1) * 10**6)
                  for i in range(1, 21))
    ceph = CephState(
        fsid="fsid", version="16.2.15", release="pacific", epoch=12345, flags=(),
        osds=tuple(osds), hosts=tuple(hosts), pools=pools,
        pgs=PgSummary(sum(p.pg_num for p in pools), {"active+clean": sum(p.pg_num
                                                                        for p in pools)}),
        health_status="HEALTH_WARN", health_checks=(), full_ratio=0.95,
        backfillfull_ratio=0.9, nearfull_ratio=0.85, osd_usage=tuple(usage),
        total_bytes=n_osds * 2 * 10**12, total_avail_bytes=n_osds * 10**12,
        collected_at=taken_at)
    ring = RingState("object", "/etc/swift/object.ring.gz", None, 18, 3.0, 1,
                     tuple(RingDevice(i, 1, i % 4 + 1, f"127.0.0.{i % 4 + 2}", 6200,
                                      f"d{i}", 100.0, 786, 786) for i in range(64)),
                     balance=0.5)
    swift = SwiftState((ring,), tuple(ReconHost(f"127.0.0.{k}", 6200, "object")
                                      for k in range(2, 6)), proxy_healthy=True)
    snap = ClusterSnapshot("synthetic", taken_at, ceph=ceph, swift=swift, hosts=facts,
                           host_facts_collected=True)
    target = ClusterTarget("synthetic", CephTarget("/etc/ceph/ceph.conf"),
                           hosts=tuple(host_targets))
    return snap, tuple(findings), target
