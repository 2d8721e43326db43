"""Issue 39.7: ``storage.collect.collect`` gathers the hosts' facts while Ceph is still
being read (from its OSD map and tree, ``on_placement``), and the facts are those of the
final state, as when they were gathered afterwards.

Real parts: the captured lab's Ceph answers (``build_state`` of tests/fixtures/hosts/
healthy-ceph) and its hosts' captured facts-script outputs replayed per host
(``ReplayRunner``), the real planner and parser. Ceph's collector is replaced by one that
hands over its placement, then waits (on an event, not a clock) until a host's facts
script was asked for; a serial collection would never ask before Ceph's answer, so that
wait would end only at its 30 s guard and the test says so. Nothing measures time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

import storage.collect as collect_mod
from storage.hostfacts import collect_host_facts, plan_for
from storage.model import CephState, HostFacts
from storage.runner import CommandResult, HostUnreachable
from storage.targets import CephTarget, ClusterTarget
from tests.unit.test_hosts_facts import FIX, ReplayRunner, ceph_state, host_target, load_meta

GUARD_S = 30.0  # only so that a broken overlap fails instead of hanging


@dataclass
class OpenReplayRunner(ReplayRunner):
    """``ReplayRunner`` with what collect() asks of a FabricRunner (open_all, close), and
    an event set at the first facts script asked for; ``held`` hosts answer only once
    ``release`` is set (a host slow to answer, up to its timeout)."""

    asked: threading.Event = field(default_factory=threading.Event)
    held: set[str] = field(default_factory=set)
    release: threading.Event = field(default_factory=threading.Event)
    answered: list[str] = field(default_factory=list)

    def open_all(self, max_workers: int = 32) -> dict[str, str]:
        return {}

    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        self.asked.set()
        if host in self.held and not self.release.wait(GUARD_S):
            raise HostUnreachable(host, "timed out")
        r = super().run(host, argv, timeout_s)
        self.answered.append(host)
        return r


def _outputs() -> dict[str, dict[str, str]]:
    return {f"node{i}": {"facts": (FIX / f"healthy-node{i}.facts.txt").read_text()}
            for i in (1, 2, 3)}


def _target() -> ClusterTarget:
    hosts = tuple(host_target(load_meta(f"healthy-node{i}")) for i in (1, 2, 3))
    return ClusterTarget("lab", ceph=CephTarget(conf="/nonexistent/ceph.conf"), hosts=hosts)


def _without_clock(facts: dict[str, HostFacts]) -> dict[str, HostFacts]:
    return {n: replace(f, collected_at=0.0, duration_s=0.0) for n, f in facts.items()}


def _run(monkeypatch: pytest.MonkeyPatch, runner: OpenReplayRunner,
         final: Callable[[CephState], tuple[CephState | None, str | None]]
         ) -> tuple[Any, dict[str, bool]]:
    full = ceph_state("healthy")
    seen: dict[str, bool] = {}

    def fake_ceph(target: CephTarget, on_placement: Callable[[CephState], None] | None = None
                  ) -> tuple[CephState | None, str | None]:
        assert on_placement is not None
        on_placement(full)  # what osd dump + osd tree give (the same OSDs and hosts)
        seen["facts_before_ceph_ended"] = runner.asked.wait(GUARD_S)
        return final(full)

    monkeypatch.setattr(collect_mod, "collect_ceph", fake_ceph)
    monkeypatch.setattr(collect_mod, "FabricRunner", lambda hosts, pool=None: runner)
    return collect_mod.collect(_target()), seen


def test_host_facts_start_while_ceph_is_read_and_equal_the_serial_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    runner = OpenReplayRunner(_outputs())
    snap, seen = _run(monkeypatch, runner, lambda full: (full, None))
    assert seen == {"facts_before_ceph_ended": True}
    assert snap.ceph is not None and snap.ceph_error is None
    serial = collect_host_facts(_target(), snap.ceph, None,
                                runner=ReplayRunner(_outputs()))
    assert list(snap.hosts) == ["node1", "node2", "node3"]
    assert _without_clock(snap.hosts) == _without_clock(serial)
    assert snap.hosts["node2"].osd_dirs == {1: serial["node2"].osd_dirs[1]}
    assert len(runner.calls) == 3  # one facts run per host, none asked again


def test_ceph_lost_after_its_map_asks_the_hosts_again_with_the_final_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ceph answered its OSD map and tree, then failed: the snapshot has no Ceph state, so
    the hosts are planned without OSDs, as a collection after Ceph would have planned them;
    the early facts (with OSDs) are not kept."""
    runner = OpenReplayRunner(_outputs())
    snap, seen = _run(monkeypatch, runner, lambda full: (None, "monitor went away"))
    assert seen == {"facts_before_ceph_ended": True}
    assert snap.ceph is None and snap.ceph_error == "monitor went away"
    serial = collect_host_facts(_target(), None, None, runner=ReplayRunner(_outputs()))
    assert _without_clock(snap.hosts) == _without_clock(serial)
    assert all(f.osd_dirs == {} for f in snap.hosts.values())
    target = _target()
    # each host was asked twice: early with its OSDs, again without (its plan changed)
    assert [h for h, _ in runner.calls].count("node1") == 2
    assert all(plan_for(target, h, None, None).osds == () for h in target.hosts)


def test_a_slow_host_holds_back_no_other_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """node2 answers only when released; node1 and node3 are answered before that (the
    hosts are asked in parallel, early as before), and node2's answer is still its own."""
    runner = OpenReplayRunner(_outputs(), held={"node2"})
    done = threading.Event()
    out: dict[str, Any] = {}

    def background() -> None:
        out["snap"], out["seen"] = _run(monkeypatch, runner, lambda full: (full, None))
        done.set()

    t = threading.Thread(target=background, daemon=True)
    t.start()
    deadline = threading.Event()
    for _ in range(int(GUARD_S * 20)):  # the others answer while node2 is held
        if sorted(runner.answered) == ["node1", "node3"]:
            break
        deadline.wait(0.05)
    assert sorted(runner.answered) == ["node1", "node3"] and not done.is_set()
    runner.release.set()
    t.join(GUARD_S)
    assert done.is_set()
    snap = out["snap"]
    assert snap.hosts["node2"].reachable and snap.hosts["node2"].error is None
    assert set(snap.hosts) == {"node1", "node2", "node3"}


def test_no_ceph_and_no_swift_still_gathers_the_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = OpenReplayRunner(_outputs())
    monkeypatch.setattr(collect_mod, "FabricRunner", lambda hosts, pool=None: runner)
    target = replace(_target(), ceph=None)
    snap = collect_mod.collect(target)
    assert snap.ceph is None and set(snap.hosts) == {"node1", "node2", "node3"}
    assert len(runner.calls) == 3


def test_an_unplaceable_host_is_a_host_error_not_a_failed_collection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    runner = OpenReplayRunner(_outputs(), down={"node3"})
    snap, _ = _run(monkeypatch, runner, lambda full: (full, None))
    assert snap.hosts["node3"].error == "Connection refused"
    assert snap.hosts["node1"].reachable and snap.hosts["node2"].reachable
