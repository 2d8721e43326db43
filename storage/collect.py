"""Build one ``ClusterSnapshot``: Ceph and Swift in parallel, then host facts over SSH
(which need to know which OSDs and Swift devices live on which host)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

# The collectors are imported here, at module level, on purpose: rados (or eventlet)
# imported for the first time inside a pool worker, or in two threads at once, leaves that
# thread unjoinable and collect() hangs at pool shutdown. (Swift's library, which pulls in
# eventlet, is no longer among them: storage.ringfile reads the rings.)
from storage.ceph import collect_ceph
from storage.hostfacts import collect_host_facts
from storage.hostfacts.prom import Answers, ask, collect_via_prometheus, mount_regex
from storage.model import CephState, ClusterSnapshot, HostFacts, PromStatus, SwiftState
from storage.prometheus import PromClient
from storage.ssh import FabricRunner, SSHPool
from storage.swift import collect_swift
from storage.targets import ClusterTarget
from storage.why import why


def _ceph(target: ClusterTarget) -> tuple[CephState | None, str | None]:
    assert target.ceph is not None
    return collect_ceph(target.ceph)


def _swift(target: ClusterTarget) -> tuple[SwiftState | None, str | None]:
    assert target.swift is not None
    return collect_swift(target.swift)


def collect(target: ClusterTarget, host_facts: bool = True,
            keep_raw: bool = False, ssh_pool: SSHPool | None = None) -> ClusterSnapshot:
    """Never raises for an unreachable part: errors land in the snapshot. ``keep_raw``
    keeps what the hosts' scripts printed too (Ceph's and recon's answers always ride
    along): what ``stordoc snapshot save`` writes. ``ssh_pool``: SSH connections kept
    open for the next check (``watch``, the bot), else opened and closed here.

    With ``[clusters.X.prometheus]`` the host facts come from Prometheus, asked while Ceph
    and Swift are read, and SSH only reaches the hosts in question
    (``storage.hostfacts.prom``); a saved snapshot (``keep_raw``) still takes every host
    over SSH, since a replay re-parses what the hosts printed."""
    t0 = time.monotonic()
    ceph: CephState | None = None
    swift: SwiftState | None = None
    ceph_err = swift_err = None
    want_hosts = bool(host_facts and target.hosts)
    prom = target.prometheus if want_hosts and not keep_raw else None
    runner = (FabricRunner(target.hosts, pool=ssh_pool) if want_hosts and prom is None
              else None)
    answers: Answers | None = None
    with ThreadPoolExecutor(max_workers=3) as pool:
        # SSH handshakes (or Prometheus's queries) overlap with the Ceph and Swift reads
        fo = pool.submit(runner.open_all) if runner else None
        fp = pool.submit(ask, PromClient(prom.url, prom.timeout_s), prom.job,
                         mount_regex(target)) if prom is not None else None
        fc = pool.submit(_ceph, target) if target.ceph else None
        fs = pool.submit(_swift, target) if target.swift else None
        if fc:
            try:
                ceph, ceph_err = fc.result()
            except Exception as e:  # collectors should not raise; be safe anyway
                ceph_err = why(e)
        if fs:
            try:
                swift, swift_err = fs.result()
            except Exception as e:
                swift_err = why(e)
        if fo:
            fo.result()  # failures are remembered by the runner and become host errors
        if fp:
            answers = fp.result()  # never raises: failures are its problems
    hosts: dict[str, HostFacts] = {}
    prom_status: PromStatus | None = None
    if answers is not None:
        def ssh(sub: ClusterTarget, c: CephState | None,
                s: SwiftState | None) -> dict[str, HostFacts]:
            """The hosts in question over SSH, through the process's pool when it has one."""
            r = FabricRunner(sub.hosts, pool=ssh_pool)
            try:
                return collect_host_facts(sub, c, s, runner=r)
            finally:
                r.close()

        hosts, prom_status = collect_via_prometheus(target, ceph, swift, answers=answers,
                                                    ssh=ssh)
    if runner is not None:
        try:
            hosts = collect_host_facts(target, ceph, swift, runner=runner, keep_raw=keep_raw)
        finally:
            runner.close()
    return ClusterSnapshot(
        cluster=target.name, taken_at=time.time(), ceph=ceph, ceph_error=ceph_err,
        swift=swift, swift_error=swift_err, hosts=hosts,
        host_facts_collected=want_hosts, prometheus=prom_status,
        duration_s=time.monotonic() - t0)
