"""Build one ``ClusterSnapshot``: Ceph, Swift and the hosts' facts over SSH in parallel.

The host facts need to know which OSDs and Swift devices live on which host (their plan):
they start as soon as Ceph's OSD map and tree and Swift's rings are read, while the rest
of Ceph and Swift is still being read. Once both are done, a host whose plan from the full
states differs (Ceph or Swift failed after that first answer) is asked again with it: the
facts are always those of the final states, as when they were gathered afterwards."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Generic, TypeVar

# The collectors are imported here, at module level, on purpose: rados (or eventlet)
# imported for the first time inside a pool worker, or in two threads at once, leaves that
# thread unjoinable and collect() hangs at pool shutdown. (Swift's library, which pulls in
# eventlet, is no longer among them: storage.ringfile reads the rings.)
from storage.ceph import collect_ceph
from storage.hostfacts import collect_host_facts, plan_for
from storage.hostfacts.prom import Answers, ask, collect_via_prometheus, mount_regex
from storage.model import CephState, ClusterSnapshot, HostFacts, PromStatus, SwiftState
from storage.prometheus import PromClient
from storage.ssh import FabricRunner, SSHPool
from storage.swift import collect_swift
from storage.targets import ClusterTarget
from storage.why import why

S = TypeVar("S")


class _First(Generic[S]):
    """A collector's first state the host plans can use, handed over once: its early
    answer (``give`` as the callback), else its result or None when it ends."""

    def __init__(self) -> None:
        self._given = threading.Event()
        self._state: S | None = None

    def give(self, state: S | None) -> None:
        if not self._given.is_set():
            self._state = state
            self._given.set()

    def wait(self) -> S | None:
        self._given.wait()
        return self._state


def _handing(first: _First[S] | None,
             read: Callable[[Callable[[S | None], None] | None], tuple[S | None, str | None]]
             ) -> tuple[S | None, str | None]:
    """Run a collector, handing its early state to ``first`` (or its result, or None when
    it fails: the host plans never wait on a collector that ended)."""
    out: tuple[S | None, str | None] = (None, None)
    try:
        out = read(first.give if first else None)
        return out
    finally:
        if first is not None:
            first.give(out[0])


def _ceph(target: ClusterTarget, first: _First[CephState] | None = None
          ) -> tuple[CephState | None, str | None]:
    t = target.ceph
    assert t is not None
    return _handing(first, lambda cb: collect_ceph(t, on_placement=cb))


def _swift(target: ClusterTarget, first: _First[SwiftState] | None = None
           ) -> tuple[SwiftState | None, str | None]:
    t = target.swift
    assert t is not None
    return _handing(first, lambda cb: collect_swift(t, on_rings=cb))


def _early_facts(target: ClusterTarget, runner: FabricRunner, opened: Future[Any] | None,
                 ceph: _First[CephState] | None, swift: _First[SwiftState] | None,
                 keep_raw: bool) -> tuple[CephState | None, SwiftState | None,
                                          dict[str, HostFacts]]:
    """The hosts' facts from the first usable Ceph and Swift states (and the states they
    were planned from), once the SSH connections are open."""
    if opened is not None:
        opened.result()  # failures are remembered by the runner and become host errors
    c = ceph.wait() if ceph is not None else None
    s = swift.wait() if swift is not None else None
    return c, s, collect_host_facts(target, c, s, runner=runner, keep_raw=keep_raw)


def _settled(target: ClusterTarget, early: tuple[CephState | None, SwiftState | None,
                                                 dict[str, HostFacts]],
             ceph: CephState | None, swift: SwiftState | None, runner: FabricRunner,
             keep_raw: bool) -> dict[str, HostFacts]:
    """The early facts, with the hosts whose plan the final states change asked again."""
    c0, s0, hosts = early
    stale = tuple(h for h in target.hosts
                  if plan_for(target, h, ceph, swift) != plan_for(target, h, c0, s0))
    if stale:
        hosts = dict(hosts)
        hosts.update(collect_host_facts(replace(target, hosts=stale), ceph, swift,
                                        runner=runner, keep_raw=keep_raw))
    return hosts


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
    early = None
    with ThreadPoolExecutor(max_workers=4) as pool:
        # SSH handshakes (or Prometheus's queries) overlap with the Ceph and Swift reads,
        # and so do the hosts' facts once the OSD map and the rings are read
        fo = pool.submit(runner.open_all) if runner else None
        fp = pool.submit(ask, PromClient(prom.url, prom.timeout_s), prom.job,
                         mount_regex(target)) if prom is not None else None
        first_c = _First[CephState]() if runner and target.ceph else None
        first_s = _First[SwiftState]() if runner and target.swift else None
        fc = pool.submit(_ceph, target, first_c) if target.ceph else None
        fs = pool.submit(_swift, target, first_s) if target.swift else None
        fh = pool.submit(_early_facts, target, runner, fo, first_c, first_s,
                         keep_raw) if runner else None
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
        if fh:
            early = fh.result()
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
            assert early is not None
            hosts = _settled(target, early, ceph, swift, runner, keep_raw)
        finally:
            runner.close()
    return ClusterSnapshot(
        cluster=target.name, taken_at=time.time(), ceph=ceph, ceph_error=ceph_err,
        swift=swift, swift_error=swift_err, hosts=hosts,
        host_facts_collected=want_hosts, prometheus=prom_status,
        duration_s=time.monotonic() - t0)
