"""The application service alone, on the real lab: what the CLI, the bot and the TUI share.

Check runs and their recording rule, a check in flight shared by concurrent callers, the
history as dataclasses, mutes, and the refusals that change nothing. No front end is
involved: if these hold, every front end that only parses, calls and renders gets them.
(A finding's runbook planned, run, audited and verified through the service: every front
end's fix does it, the CLI's in test_scenarios.py for every runbook.)
"""

from __future__ import annotations

import threading
import time

import pytest

from checks.model import Finding
from core.env import Env
from core.service import Service
from core.service.actions import ActionRefused, InvalidAction
from core.service.inspect import RecordPolicy
from core.service.records import UnknownCode
from lab import Lab
from storage.journal import CheckRun


def _codes(findings: tuple[Finding, ...] | list[Finding]) -> set[tuple[str, str]]:
    return {(f.code, f.entity) for f in findings}


def test_recording_rule_and_a_shared_check_in_flight(lab: Lab, env: Env) -> None:
    svc = Service(env)
    journal = env.journal
    out = svc.check("lab", "test", RecordPolicy.NEVER)
    assert out.run_id is None and journal.runs("lab") == []  # a look leaves no trace
    out = svc.check("lab", "test", RecordPolicy.ALWAYS)
    assert out.run_id is not None
    runs = svc.records.history("lab")
    assert [type(r) for r in runs] == [CheckRun] and runs[0].id == out.run_id
    assert runs[0].source == "test" and runs[0].host_facts is True
    assert runs[0].n_findings == len(out.report.findings)
    # ON_CHANGE: the first refresh is recorded, the next with the same findings is not
    first = svc.check("lab", "tui", RecordPolicy.ON_CHANGE)
    second = svc.check("lab", "tui", RecordPolicy.ON_CHANGE)
    assert first.run_id is not None and second.run_id is None
    assert second.delta == first.delta  # "new since last run" still answers from the run
    assert len(journal.runs("lab")) == 2
    # six callers at once: one check run, one outcome object, one row
    gate = threading.Barrier(6)
    outs = []

    def one() -> None:
        gate.wait()
        outs.append(svc.check("lab", "slack"))
    ts = [threading.Thread(target=one) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert len(outs) == 6 and len({id(o) for o in outs}) == 1
    assert len(journal.runs("lab")) == 3
    # since: a run that started after the moment asked for is reused, an older one is not
    t0 = time.time()
    fresh = svc.check("lab", "alert", since=t0)
    assert svc.check("lab", "alert", since=t0) is fresh
    assert len(journal.runs("lab")) == 4


def test_refusals_change_nothing(lab: Lab, env: Env) -> None:
    svc = Service(env)
    acts = svc.actions
    for runbook, target in (("osd-remount", "osd.99"), ("osd-remount", "osd.\u0661"),
                            ("osd-remont", "osd.1"), ("pool-pg-num", "no-such-pool")):
        with pytest.raises(ActionRefused):
            acts.plan("lab", runbook, target, source="test")
    with pytest.raises(InvalidAction):  # a misspelt runbook is a usage error
        acts.plan("lab", "osd-remont", "osd.1", source="test")
    with pytest.raises(ActionRefused):
        acts.plan_bench("lab", "rados", source="test", options={"duration_s": float("inf")})
    with pytest.raises(UnknownCode):
        svc.records.mute("lab", "OSD_D0WN", None, 600, "typo", "alice")
    assert svc.records.audit("lab") == [] and svc.records.mutes("lab") == []
    assert lab.osds_up_in() == (lab.n_osds, lab.n_osds)


def test_mute_hides_a_finding_until_unmuted(lab: Lab, env: Env,
                                            request: pytest.FixtureRequest) -> None:
    svc = Service(env)
    key = ("OSDMAP_FLAGS", "cluster lab flag noout")
    request.addfinalizer(lambda: lab.ceph("osd", "unset", "noout", check=False))
    lab.ceph("osd", "set", "noout")  # a real finding that moves no data
    assert key in _codes(svc.check("lab", "test").report.findings)
    m = svc.records.mute("lab", "osdmap_flags", key[1], 600, "maintenance", "alice")
    assert m.code == "OSDMAP_FLAGS" and m.by == "alice"
    hidden = svc.check("lab", "test", RecordPolicy.NEVER)
    assert key not in _codes(hidden.report.findings)
    assert [x.what for x in svc.records.unmute("lab", "OSDMAP_FLAGS", key[1], "bob")] \
        == [f"OSDMAP_FLAGS {key[1]}"]
    back = svc.check("lab", "test", RecordPolicy.NEVER)
    assert key in _codes(back.report.findings)
    run, findings = svc.records.last_findings("lab")
    assert run is not None and any(f.code == "OSDMAP_FLAGS" for f in findings)
