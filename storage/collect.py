"""Build one ``ClusterSnapshot``: Ceph and Swift in parallel, then host facts over SSH
(which need to know which OSDs and Swift devices live on which host)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import storage.swift  # noqa: F401  eventlet (via swift) must be first imported in the main
# thread: imported inside a pool worker it leaves that thread unjoinable (collect() hangs)
# Imported here, in whichever thread imports this module (the main one): importing swift's
# ring module for the first time inside a worker thread leaves that thread unable to
# exit (eventlet), which would hang the pool's shutdown below.
import swift.common.ring  # noqa: F401,E402

from storage.model import CephState, ClusterSnapshot, HostFacts, SwiftState
from storage.targets import ClusterTarget


def _ceph(target: ClusterTarget) -> tuple[CephState | None, str | None]:
    from storage.ceph import collect_ceph

    assert target.ceph is not None
    return collect_ceph(target.ceph)


def _swift(target: ClusterTarget) -> tuple[SwiftState | None, str | None]:
    from storage.swift import collect_swift

    assert target.swift is not None
    return collect_swift(target.swift)


def collect(target: ClusterTarget, host_facts: bool = True) -> ClusterSnapshot:
    """Never raises for an unreachable part: errors land in the snapshot."""
    t0 = time.monotonic()
    ceph: CephState | None = None
    swift: SwiftState | None = None
    ceph_err = swift_err = None
    with ThreadPoolExecutor(max_workers=2) as pool:
        fc = pool.submit(_ceph, target) if target.ceph else None
        fs = pool.submit(_swift, target) if target.swift else None
        if fc:
            try:
                ceph, ceph_err = fc.result()
            except Exception as e:  # collectors should not raise; be safe anyway
                ceph_err = f"{type(e).__name__}: {e}"
        if fs:
            try:
                swift, swift_err = fs.result()
            except Exception as e:
                swift_err = f"{type(e).__name__}: {e}"
    hosts: dict[str, HostFacts] = {}
    if host_facts and target.hosts:
        from storage.hosts import collect_host_facts

        hosts = collect_host_facts(target, ceph, swift)
    return ClusterSnapshot(
        cluster=target.name, taken_at=time.time(), ceph=ceph, ceph_error=ceph_err,
        swift=swift, swift_error=swift_err, hosts=hosts,
        host_facts_collected=bool(host_facts and target.hosts),
        duration_s=time.monotonic() - t0)
