"""The benchmark's Ceph gate says why it refuses in a type, not only in prose: PGs not
all active+clean (a fix's aftermath: wait) versus a cluster in worse trouble (give up).
The quick benchmark after a real fix on the lab: tests/lab/test_runbooks.py."""

from __future__ import annotations

from typing import Any

import pytest

from runbooks.bench.common import ClusterNotSettled, ceph_gate
from runbooks.model import Refused
from storage.ceph import PgSettle, SettleMethod, settle_from_raw, settle_to_json
from tests.unit.settle_fixtures import settle_raw

CLEAN = {"health": "HEALTH_OK", "num_pgs": 33, "pgs_by_state": {"active+clean": 33},
         "num_osds": 3, "num_up_osds": 3}


def _state(**kw: Any) -> dict[str, Any]:
    return {**CLEAN, **kw}


def _settle(name: str) -> PgSettle:
    s = settle_from_raw(settle_raw(name))
    assert s is not None
    return s


def test_a_clean_cluster_passes() -> None:
    assert ceph_gate(CLEAN, force=False) == []


def test_unclean_pgs_are_the_cluster_settling() -> None:
    st = _state(health="HEALTH_WARN", pgs_by_state={"active+clean": 21, "peering": 12})
    with pytest.raises(ClusterNotSettled, match="12 of 33 PGs not active.clean .12 peering"):
        ceph_gate(st, force=False)
    # with an OSD down as well it is still settling (the fix brought it back a moment ago)
    with pytest.raises(ClusterNotSettled, match="1 OSD.s. down"):
        ceph_gate({**st, "num_up_osds": 2}, force=False)


def test_clean_pgs_not_reported_on_the_current_map_are_settling() -> None:
    """PGs that read clean right after an OSD came back may be the map before it (the
    Pacific lab 0.06 s after `osd in`): a benchmark then measures the peering it starts.
    Once every PG has reported on the map (or nothing was compared), they pass."""
    stale = settle_to_json(_settle("pacific-osd-in/stale-clean"))
    with pytest.raises(ClusterNotSettled, match="all 65 PGs read active.clean, but 54 of 65 "
                                                "PGs have not reported on osdmap epoch 33"):
        ceph_gate(_state(pg_settle=stale), force=False)
    for ok in (settle_to_json(_settle("pacific-osd-in/settled")), None, "junk", {"x": 1}):
        assert ceph_gate(_state(pg_settle=ok), force=False) == [], ok
    assert ceph_gate(_state(pg_settle=stale), force=True) == [
        "forced despite: all 65 PGs read active+clean, but 54 of 65 PGs have not reported "
        "on osdmap epoch 33: they may be the map before the last OSD change"]
    # the dump's own states are judged: the peering it saw is the cluster settling
    peering = settle_to_json(_settle("reef-osd-in/peering"))
    with pytest.raises(ClusterNotSettled, match="23 of 65 PGs not active.clean .23 peering"):
        ceph_gate(_state(pg_settle=peering), force=False)


def test_the_stamp_fallback_is_said() -> None:
    now = 1_795_000_000.0

    def stamp(last: float) -> dict[str, Any]:
        return settle_to_json(PgSettle(SettleMethod.STAMP, by_state={"active+clean": 33},
                                       last_change=last, error="osdmaptool not found"))

    with pytest.raises(ClusterNotSettled, match="an OSD went up/down/in/out 3 s ago.*; PG "
                                                "states judged by the stamp rule"):
        ceph_gate(_state(pg_settle=stamp(now - 3.0)), force=False, now=now)
    assert ceph_gate(_state(pg_settle=stamp(now - 10.0)), force=False, now=now) == [
        "PG states judged by the stamp rule (10 s after the last OSD change): osdmaptool "
        "not found"]
    # a monitor clock a little ahead still counts; minutes ahead says nothing
    with pytest.raises(ClusterNotSettled, match="0 s ago"):
        ceph_gate(_state(pg_settle=stamp(now + 2.0)), force=False, now=now)
    assert len(ceph_gate(_state(pg_settle=stamp(now + 600)), force=False, now=now)) == 1


def test_scrubbing_pgs_are_clean_as_everywhere_else() -> None:
    """The gate judges states by the one rule (it took only exact "active+clean")."""
    st = _state(pgs_by_state={"active+clean": 30, "active+clean+scrubbing+deep": 3})
    assert ceph_gate(st, force=False) == []


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
    from core.env import Env
    from core.settings import parse_settings
    from runbooks import verify
    from runbooks.bench import api
    from runbooks.model import RunEvent

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
