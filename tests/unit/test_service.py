"""The application service without a cluster: the real check engine on captured snapshots,
a real SQLite journal. Covers what the CLI, the bot and the TUI share: the recording rule,
a check in flight shared, records as dataclasses, mutes, plans' identity, run reports'
wording, benchmark options. The same service on the real lab: tests/lab/test_service_lab.py.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.model import Finding, Severity
from checks.outcome import CheckOutcome
from core.env import Env
from core.service import Service
from core.service.actions import (
    PlanKind,
    RunReport,
    _fingerprint,
    bench_option_values,
    is_bench,
)
from core.service.inspect import RecordPolicy
from core.service.records import MuteRefused, UnknownCode
from core.settings import parse_settings
from runbooks.model import EventKind, Outcome, RunEvent
from storage.model import ClusterSnapshot
from storage.targets import ClusterTarget
from tests.unit.test_tui_data import broken_snapshot, healthy_snapshot
from tui.backend import log_line


class CapturedEnv(Env):
    """An Env whose collection is a captured snapshot (the real engine, mutes, journal)."""

    snapshots: list[ClusterSnapshot]
    collects: int
    gate: threading.Event | None

    def collect(self, target: ClusterTarget, host_facts: bool = True) -> ClusterSnapshot:
        self.collects += 1
        if self.gate is not None:
            self.gate.wait(10)
        snap = self.snapshots[0]
        return replace(snap, taken_at=time.time())


@pytest.fixture
def env(tmp_path: Path) -> Iterator[CapturedEnv]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"),
                        "clusters": {"octopus": {"ceph": {"conf": str(conf), "timeout": 2}}}})
    e = CapturedEnv(s)
    e.snapshots = [broken_snapshot()]
    e.collects = 0
    e.gate = None
    yield e
    e.close()


def _keys(out: CheckOutcome) -> set[tuple[str, str]]:
    return {f.key for f in out.report.findings}


def test_recording_policies(env: CapturedEnv) -> None:
    svc = Service(env)
    assert svc.check("octopus", "test", RecordPolicy.NEVER).run_id is None
    assert env.journal.runs("octopus") == []
    a = svc.check("octopus", "cli")
    b = svc.check("octopus", "cli")
    assert a.run_id is not None and b.run_id == a.run_id + 1  # ALWAYS: every run
    assert b.delta is not None and b.delta.new == () and b.delta.still
    t1 = svc.check("octopus", "tui", RecordPolicy.ON_CHANGE)
    t2 = svc.check("octopus", "tui", RecordPolicy.ON_CHANGE)
    assert t1.run_id is not None and t2.run_id is None and t2.delta == t1.delta
    env.snapshots[0] = healthy_snapshot()  # the findings changed: recorded again
    t3 = svc.check("octopus", "tui", RecordPolicy.ON_CHANGE)
    assert t3.run_id is not None and t3.delta is not None and t3.delta.resolved
    runs = svc.records.history("octopus")
    assert [r.id for r in runs] == [t3.run_id, t1.run_id, b.run_id, a.run_id]
    assert [r.source for r in runs] == ["tui", "tui", "cli", "cli"]
    assert runs[1].worst == "crit" and runs[1].exit_code == 2 and runs[0].worst == "warn"


def test_on_change_records_again_after_the_interval(env: CapturedEnv) -> None:
    svc = Service(env)
    svc.inspector.record_every_s = 0.0
    ids = [svc.check("octopus", "tui", RecordPolicy.ON_CHANGE).run_id for _ in range(3)]
    assert None not in ids and len(set(ids)) == 3


def test_concurrent_callers_share_one_check(env: CapturedEnv) -> None:
    svc = Service(env)
    env.gate = threading.Event()
    outs: list[CheckOutcome] = []
    ts = [threading.Thread(target=lambda: outs.append(svc.check("octopus", "slack")))
          for _ in range(8)]
    for t in ts:
        t.start()
    time.sleep(0.3)
    env.gate.set()
    for t in ts:
        t.join(20)
    assert len(outs) == 8 and len({id(o) for o in outs}) == 1
    assert env.collects == 1 and len(env.journal.runs("octopus")) == 1


def test_since_reuses_only_a_run_that_started_after_it(env: CapturedEnv) -> None:
    svc = Service(env)
    old = svc.check("octopus", "alert")
    t0 = time.time()
    new = svc.check("octopus", "alert", since=t0)
    assert new is not old and svc.check("octopus", "alert", since=t0) is new
    assert env.collects == 2


def test_a_failed_check_reaches_every_waiter_and_the_next_call_retries(
        env: CapturedEnv) -> None:
    svc = Service(env)
    env.snapshots = []  # IndexError inside the check
    with pytest.raises(IndexError):
        svc.check("octopus", "slack")
    env.snapshots = [healthy_snapshot()]
    out = svc.check("octopus", "slack")  # not the failed run's error: a new check
    assert env.collects == 2 and out.run_id is not None


def test_unknown_cluster_is_a_clear_error_and_records_nothing(env: CapturedEnv) -> None:
    from core.settings import SettingsError

    svc = Service(env)
    with pytest.raises((SettingsError, KeyError, ValueError)):
        svc.check("prod", "cli")
    assert env.journal.runs() == []


def test_last_findings_come_back_as_findings(env: CapturedEnv) -> None:
    svc = Service(env)
    assert svc.records.last_findings("octopus") == (None, [])
    out = svc.check("octopus", "cli")
    run, found = svc.records.last_findings("octopus")
    assert run is not None and run.id == out.run_id
    assert all(isinstance(f, Finding) and isinstance(f.severity, Severity) for f in found)
    assert {f.key for f in found} == _keys(out)
    by = {f.key: f for f in found}
    for f in out.report.findings:
        g = by[f.key]
        assert (g.severity, g.message, g.runbook, g.target) == (
            f.severity, f.message, f.runbook, f.target)
        assert g.evidence == {k: v for k, v in f.to_dict()["evidence"].items()}


def test_mutes_hide_until_removed_and_refuse_what_would_mute_nothing(
        env: CapturedEnv) -> None:
    svc = Service(env)
    out = svc.check("octopus", "cli")
    f = next(f for f in out.report.findings if f.code == "OSD_DATA_UNMOUNTED")
    with pytest.raises(UnknownCode) as e:
        svc.records.mute("octopus", "OSD_DATA_UNM0UNTED", f.entity, 600, "typo", "alice")
    assert "OSD_DATA_UNMOUNTED" in e.value.known
    for code in ("OSD_DATA_UNM\u041eUNTED", "\uff2fSD_DOWN", "OSD_DOWN\u200b"):
        with pytest.raises(UnknownCode):  # look-alikes never match a real code
            svc.records.mute("octopus", code, None, 600, "x", "alice")
    with pytest.raises(MuteRefused):
        svc.records.mute("octopus", f.code, f.entity, 600, "   ", "alice")
    with pytest.raises(MuteRefused):
        svc.records.mute("octopus", f.code, f.entity, -5, "negative", "alice")
    assert svc.records.mutes("octopus") == []
    m = svc.records.mute("octopus", f.code.lower(), f.entity, 600, "disk swap", "alice")
    assert (m.code, m.entity, m.by) == (f.code, f.entity, "alice")
    assert f.key not in _keys(svc.check("octopus", "cli"))
    assert [x.what for x in svc.records.unmute("octopus", f.code, f.entity, "bob")] == [m.what]
    assert f.key in _keys(svc.check("octopus", "cli"))


def test_alert_stream_is_typed_and_empty_without_the_bot(env: CapturedEnv) -> None:
    svc = Service(env)
    assert svc.records.alert_stream() == []
    env.journal.db.table("alert_threads").insert_all([
        {"key": "a", "cluster": "octopus", "incident": "OSD_DOWN osd.1", "channel": "C",
         "ts": "1", "opened_at": 10.0, "closed_at": None, "title": "osd.1 down", "groups": ""},
        {"key": "b", "cluster": "octopus", "incident": "x", "channel": "C", "ts": "2",
         "opened_at": 20.0, "closed_at": 30.0, "title": "resolved one", "groups": ""}],
        pk="key")
    posts = svc.records.alert_stream()
    assert [(p.key, p.open) for p in posts] == [("b", False), ("a", True)]


def test_plan_fingerprint_ignores_when_and_sees_every_step() -> None:
    base: dict[str, Any] = {"runbook": "osd-remount", "target": "osd.1",
                            "steps": [{"index": 1, "command": "ceph osd set noout"}],
                            "created_at": 1.0}
    assert _fingerprint(base) == _fingerprint({**base, "created_at": 2.0})
    other = {**base, "steps": [{"index": 1, "command": "ceph osd set noup"}]}
    assert _fingerprint(base) != _fingerprint(other)


def test_run_report_wording_comes_from_typed_fields() -> None:
    f = Finding("OSD_DOWN", Severity.CRIT, "osd.1", "down")
    ok = RunReport(PlanKind.RUNBOOK, True, Outcome.SUCCESS, "done", True)
    left = RunReport(PlanKind.RUNBOOK, True, Outcome.SUCCESS, "done", True, (f,))
    bad = RunReport(PlanKind.RUNBOOK, False, Outcome.VERIFY_FAILED, "x", False, (f,))
    none = RunReport(PlanKind.RUNBOOK, False, Outcome.FAILED, "x", None)
    assert ok.verification == "checks pass again"
    assert left.verification == "checks pass again (osd.1 OSD_DOWN remain)"
    assert bad.verification == "still failing: osd.1 OSD_DOWN"
    assert none.verification == "not verified"


def test_the_tui_log_reads_ok_from_the_event_not_the_prose() -> None:
    # the message says "still failing" but the event says verification passed
    line = log_line(RunEvent(EventKind.VERIFY_DONE, None, "verify", "still failing?", ok=True))
    assert line.ok is True
    assert log_line(RunEvent(EventKind.DONE, None, "failed", "ok", ok=False)).ok is False
    assert log_line(RunEvent(EventKind.STEP_DONE, 1, "mount", "")).ok is True
    assert log_line(RunEvent(EventKind.STEP_STARTED, 2, "start", "systemctl start x")).text \
        == "2. start\n    $ systemctl start x"


def test_bench_helpers() -> None:
    assert is_bench("bench-rados") and not is_bench("osd-remount")
    assert bench_option_values({"mix": (80, 15, 5)})["modes"] == ("mix",)
    assert bench_option_values({"mix": (80, 15, 5), "modes": ("read",)})["modes"] == ("read",)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["duration_s", "size", "concurrency"]),
                       st.floats(allow_nan=True, allow_infinity=True), min_size=1))
def test_bench_option_values_never_pass_a_non_finite_number(d: dict[str, float]) -> None:
    try:
        out = bench_option_values(d)
    except ValueError as e:
        assert "finite" in str(e)
        assert any(not math.isfinite(v) for v in d.values())
        return
    assert all(math.isfinite(v) for v in out.values() if isinstance(v, float))


def _stored(env: CapturedEnv, group: str, ops: list[float], workload: str = "write") -> None:
    from runbooks.bench.model import BenchResult, fingerprint_fields
    from storage.benchstore import BenchStore

    fp = fingerprint_fields("octopus", "rados", "native", workload, "stordoc-bench", 4096, 16,
                            "client1", ["16.2.15"])
    for rep, v in enumerate(ops, 1):
        BenchStore(env.journal).save(BenchResult(
            cluster="octopus", kind="rados", engine="native", workload=workload,
            group_id=group, rep=rep, params={"size": 4096}, started_at=1000.0 + rep,
            fingerprint_fields=fp, ops=int(v * 5), ops_s=v, mb_s=v * 4096 / 2**20,
            lat_avg_ms=16000 / v).to_row())


def test_stored_benchmarks_baselines_and_their_refusals(env: CapturedEnv) -> None:
    """What `stordoc bench history|baseline|show` asks of the service, on a real journal."""
    from core.service.errors import ActionRefused, InvalidAction

    svc = Service(env)
    acts = svc.actions
    with pytest.raises(ActionRefused, match="no benchmark stored"):
        acts.set_baseline("octopus", "before")
    _stored(env, "g-fast", [1000, 1004, 998, 1001, 1003])
    _stored(env, "g-slow", [500, 503, 498, 501, 502])
    assert [r.group_id for r in acts.bench_history("octopus", 20)][:1] == ["g-slow"]
    rec = acts.set_baseline("octopus", "before", "g-fast", user="alice")
    assert rec["group_id"] == "g-fast" and rec["user"] == "alice"
    assert [b["name"] for b in acts.baselines("octopus")] == ["before"]
    # refused, and nothing changes: look-alike, blank, absurdly long, unknown group
    for bad in ("bеfore", "", "../x", "b" * 65, "before\u200b"):  # Cyrillic е, ZWSP
        with pytest.raises(ActionRefused, match="baseline names"):
            acts.set_baseline("octopus", bad, "g-fast")
    with pytest.raises(ActionRefused, match="no stored benchmark group"):
        acts.set_baseline("octopus", "other", "g-nope")
    assert [b["name"] for b in acts.baselines("octopus")] == ["before"]
    # a stored group, not compared, compared with the baseline, and a missing baseline
    plain = acts.stored_bench("octopus", "g-slow")
    assert plain.compared == () and not plain.slower and len(plain.rows) == 5
    cmp = acts.stored_bench("octopus", "g-slow", compare=True, baseline="before")
    assert cmp.slower and cmp.verdicts and cmp.verdicts[0][0] == "write"
    assert any("slower" in line for line in cmp.comparisons)
    same = acts.stored_bench("octopus", "g-fast", compare=True, baseline="before")
    assert not same.slower
    with pytest.raises(ActionRefused, match="no baseline named 'nope'.*known: before"):
        acts.stored_bench("octopus", "g-slow", compare=True, baseline="nope")
    # issue 27.5: without a name, the last other run of the same fingerprint, named
    last = acts.stored_bench("octopus", "g-fast", compare=True)
    assert "the last run of the same kind, target and parameters: g-slow" in \
        last.comparisons[0] and last.verdicts == (("write", "faster"),)
    assert "ops/s: 501.0 -> 1,001.0 ops/s (+99.8%)" in "\n".join(last.comparisons)
    _stored(env, "g-alone", [100, 101, 99], workload="seq")  # nothing like it stored
    alone = acts.stored_bench("octopus", "g-alone", compare=True)
    assert alone.verdicts == () and not alone.slower
    assert alone.no_comparison == "no baseline yet; this run is the baseline"
    assert alone.comparisons[0].startswith("Compared (seq): no baseline yet")
    with pytest.raises(InvalidAction, match="no stored benchmark group"):
        acts.stored_bench("octopus", "g-nope")
