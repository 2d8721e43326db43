"""The benchmark's Ceph gate says why it refuses in a type, not only in prose: PGs not
all active+clean (a fix's aftermath: wait) versus a cluster in worse trouble (give up).
The quick benchmark after a real fix on the lab: tests/lab/test_runbooks.py."""

from __future__ import annotations

from typing import Any

import pytest

from runbooks.bench.common import ClusterNotSettled, ceph_gate
from runbooks.model import Refused

CLEAN = {"health": "HEALTH_OK", "num_pgs": 33, "pgs_by_state": {"active+clean": 33},
         "num_osds": 3, "num_up_osds": 3}


def _state(**kw: Any) -> dict[str, Any]:
    return {**CLEAN, **kw}


def test_a_clean_cluster_passes() -> None:
    assert ceph_gate(CLEAN, force=False) == []


def test_unclean_pgs_are_the_cluster_settling() -> None:
    st = _state(health="HEALTH_WARN", pgs_by_state={"active+clean": 21, "peering": 12})
    with pytest.raises(ClusterNotSettled, match="12 of 33 PGs not active.clean .12 peering"):
        ceph_gate(st, force=False)
    # with an OSD down as well it is still settling (the fix brought it back a moment ago)
    with pytest.raises(ClusterNotSettled, match="1 OSD.s. down"):
        ceph_gate({**st, "num_up_osds": 2}, force=False)


def test_clean_pgs_just_after_an_osd_change_are_settling() -> None:
    """PGs that read clean 3 s after an OSD came back may be the map before it: a benchmark
    then measures the peering it starts. Long enough after (or unknown), they pass."""
    now = 1_795_000_000.0
    with pytest.raises(ClusterNotSettled, match="an OSD went up/down/in/out 3 s ago"):
        ceph_gate(_state(osd_changed_at=now - 3.0), force=False, now=now)
    for old in (now - 10.0, now - 3600, None, "junk", float("nan"), float("inf"), True):
        assert ceph_gate(_state(osd_changed_at=old), force=False, now=now) == [], old
    # a monitor clock a little ahead still counts; minutes ahead says nothing
    with pytest.raises(ClusterNotSettled, match="0 s ago"):
        ceph_gate(_state(osd_changed_at=now + 2.0), force=False, now=now)
    assert ceph_gate(_state(osd_changed_at=now + 600), force=False, now=now) == []
    assert ceph_gate(_state(osd_changed_at=now), force=True, now=now) == [
        "forced despite: an OSD went up/down/in/out 0 s ago: its PGs have not reported "
        "their peering yet"]


def test_worse_trouble_is_a_plain_refusal() -> None:
    for st in (_state(health="HEALTH_ERR"), _state(health_checks=["OSD_FULL"]),
               _state(num_up_osds=2)):
        with pytest.raises(Refused) as e:
            ceph_gate(st, force=False)
        assert not isinstance(e.value, ClusterNotSettled), st


def test_forced_runs_say_what_they_ignored() -> None:
    st = _state(health="HEALTH_ERR", pgs_by_state={"active+clean": 30, "peering": 3})
    warnings = ceph_gate(st, force=True)
    assert warnings == ["forced despite: cluster health is HEALTH_ERR",
                        "forced despite: 3 of 33 PGs not active+clean (3 peering)"]


def test_the_benchmark_after_a_fix_waits_while_the_cluster_settles(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench_after`` retries while the gate says settling, gives up at once otherwise
    (it read "active+clean" out of the refusal's text before)."""
    from runbooks import verify
    from runbooks.bench import api
    from runbooks.model import RunEvent
    from stordoc.env import Env
    from stordoc.settings import parse_settings

    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    env = Env(parse_settings({"journal": str(tmp_path / "j.db"),
                              "clusters": {"lab": {"ceph": {"conf": str(conf)}}}}))
    ctx = env.run_context("lab")
    ctx.bench_after_fix = "rados"
    answers: list[dict[str, Any]] = []
    monkeypatch.setattr(api, "bench_after_fix", lambda *a, **k: answers.pop(0))
    monkeypatch.setattr(verify.time, "sleep", lambda s: None)
    events: list[RunEvent] = []
    answers[:] = [{"ran": False, "reason": "3 of 33 PGs not active+clean", "settling": True},
                  {"ran": False, "reason": "3 of 33 PGs not active+clean", "settling": True},
                  {"ran": True, "verdict": "same", "headline": "write 1000 ops/s"}]
    res = verify.bench_after(ctx, events.append, None)
    assert res is not None and res["ran"] and answers == []
    assert events[-1].message == "verdict: same; write 1000 ops/s"
    # a refusal that is not the cluster settling (even one that mentions active+clean in
    # its text) ends the wait at once
    answers[:] = [{"ran": False, "reason": "HEALTH_ERR; 0 of 33 PGs active+clean",
                   "settling": False},
                  {"ran": True, "verdict": "same", "headline": "never asked"}]
    res = verify.bench_after(ctx, events.append, None)
    assert res is not None and not res["ran"] and len(answers) == 1
    assert events[-1].message.startswith("not run: HEALTH_ERR")
    env.close()
