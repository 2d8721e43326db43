"""The manager failover on the real lab (runbooks/mgr.py, checks/managers.py): its bad
input and its refusal without a standby change nothing; with a standby mgr.y started for
the test it fails mgr.x over; then the active manager is stopped by its pid and `check`
exits 2 before Ceph's 30 s beacon grace, naming it and the failover to its standby, which
the `next:` runbook then does. The only manager and the Swift proxy stopped by a
plain `kill -TERM PID` (Reef; Pacific's stopped manager: test_scenarios.py's mgr-stopped): the printed `daemon-start` starts them to a
clean check (issue 38.4; the same words for two kills: tests/unit/test_daemon_words.py). (What the three new scenarios read is asserted on their
snapshots: tests/unit/test_replay.py; their one live break each: test_scenarios.py.)"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from core.env import Env
from core.exitstatus import ExitStatus
from lab import Lab
from lab.scenarios.mgrmon import mgr_stat, start_standby_mgr, stop_standby_mgr
from storage.audit import Audit
from storage.procs import pid_alive
from tests.support.cli import cli
from tests.support.poll import wait_until


def standbys(lab: Lab) -> list[str]:
    d = lab.ceph("mgr", "dump", timeout=10, check=False)
    return [s["name"] for s in d.get("standbys", [])] if isinstance(d, dict) else []


@pytest.mark.on_reef
def test_mgr_failover_refusals_then_a_dead_manager_before_the_grace(
        lab: Lab, cfg: Path, env: Env, request: pytest.FixtureRequest) -> None:
    r = cli(cfg, "fix", "mgr-failover", "mgr.nosuch", "--yes")
    assert r.returncode == ExitStatus.USAGE, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "mgr.nosuch is not a manager" in r.stderr
    r = cli(cfg, "fix", "mgr-failover", "mgr.x", "--yes")
    assert r.returncode == ExitStatus.REFUSED and "no standby manager" in r.stderr
    assert mgr_stat(lab).get("active_name") == "x"
    assert not Audit(env.journal).runs(cluster="lab")  # nothing was run

    request.addfinalizer(lambda: stop_standby_mgr(lab))
    start_standby_mgr(lab)
    r = cli(cfg, "fix", "mgr-failover", "mgr.x", "--yes")
    assert r.returncode == 0 and "verified" in r.stdout, r.stdout[-2000:] + r.stderr
    assert "$ ceph mgr fail x" in r.stdout
    assert mgr_stat(lab).get("active_name") == "y"

    # the failed mgr.x comes back as a standby; then the active mgr.y dies. A check and a
    # plan each wait out one manager timeout (10 s): the beacon grace is raised for the
    # test so that Ceph does not fail over by itself first (the runbook's point is sooner)
    request.addfinalizer(lambda: lab.ceph("config", "rm", "mon", "mon_mgr_beacon_grace",
                                          check=False))
    lab.ceph("config", "set", "mon", "mon_mgr_beacon_grace", "120")
    wait_until(lambda: "x" in standbys(lab), 90, "mgr.x back as a standby")
    pid = lab.pid("mgr.y")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    r = cli(cfg, "check", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 2, r.stdout[-2000:]
    assert doc["incidents"][0]["root"]["code"] == "MGR_NOT_ANSWERING"
    assert doc["incidents"][0]["next_step"]["command"] == "stordoc fix mgr-failover mgr.y"
    # Ceph has not noticed yet: the map still names mgr.y active and available
    stat = mgr_stat(lab)
    assert stat.get("active_name") == "y" and stat.get("available") is True
    codes = {f["code"] for f in doc["findings"]}
    assert {"MGR_NOT_ANSWERING", "PGS_STATS_STALE"} <= codes
    assert not codes & {"PGS_NOT_ACTIVE_CLEAN", "PGS_SETTLING"}
    r = cli(cfg, "fix", "mgr-failover", "mgr.y", "--yes")
    assert r.returncode == 0 and "verified" in r.stdout, r.stdout[-2000:] + r.stderr
    assert mgr_stat(lab).get("active_name") == "x"
    runs = Audit(env.journal).runs(cluster="lab")
    assert [(x.runbook, x.target, x.outcome) for x in runs] == [
        ("mgr-failover", "mgr.y", "success"), ("mgr-failover", "mgr.x", "success")]


def _kill_term(lab: Lab, name: str) -> None:
    """``kill -TERM PID`` by the pid the lab tracks (lab/procs.py), and wait until gone."""
    pid = lab.pid(name)
    assert pid is not None, f"{name} is not running"
    os.kill(pid, signal.SIGTERM)
    # gone, or a zombie of this test process (a lab it brought up spawned it)
    wait_until(lambda: not pid_alive(pid), 60, f"{name} (pid {pid}) gone")


def _top(cfg: Path, entity: str) -> dict:  # type: ignore[type-arg]
    r = cli(cfg, "check", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 2, r.stdout[-2000:]
    top = doc["incidents"][0]
    assert (top["root"]["code"], top["root"]["entity"]) == ("DAEMON_STOPPED", entity), top
    # one problem, one incident
    assert [i["root"]["entity"] for i in doc["incidents"]] == [entity], doc["incidents"]
    return top


# on Reef: on Pacific the stopped manager is test_scenarios.py's live mgr-stopped case,
# repaired by its printed daemon-start
@pytest.mark.on_reef
def test_a_manager_and_the_proxy_stopped_by_a_plain_kill_are_started_by_daemon_start(
        lab: Lab, cfg: Path, env: Env) -> None:
    # once: that two kills give the same words is proven on the daemons' captured
    # evidence (tests/unit/test_daemon_words.py), not by a second live kill
    _kill_term(lab, "mgr.x")
    top = _top(cfg, "mgr.x")
    assert top["next_step"]["command"] == "stordoc fix daemon-start mgr.x"
    assert "SIGSEGV" not in top["root"]["message"], top["root"]
    r = cli(cfg, *top["next_step"]["command"].split()[1:], "--yes")
    assert r.returncode == 0 and "verified" in r.stdout, r.stdout[-2000:] + r.stderr
    # right after: the manager settles (PGs unknown until the OSDs report), no CRIT
    r = cli(cfg, "check", "--json")
    assert r.returncode == 0, r.stdout[-3000:]
    assert mgr_stat(lab).get("active_name") == "x"
    expected = [("daemon-start", "mgr.x", "success")]

    # the Swift proxy (the same Swift on both labs)
    _kill_term(lab, "swift-proxy")
    top = _top(cfg, "swift-proxy-server@node1")
    # the proxy's refused healthcheck is in words, inside the daemon's one incident
    assert [c["code"] for c in top["consequences"]] == ["SWIFT_PROXY_UNHEALTHY"], top
    assert top["severity"] == "crit" and top["impact"].startswith(
        f"proxy 127.0.0.1:{lab.ports.proxy} refuses connections"), top
    assert "SIGSEGV" not in top["root"]["message"] and "Error(" not in json.dumps(top)
    assert top["next_step"]["command"] == \
        "stordoc fix daemon-start swift-proxy-server@node1"
    r = cli(cfg, *top["next_step"]["command"].split()[1:], "--yes")
    assert r.returncode == 0 and "verified" in r.stdout, r.stdout[-2000:] + r.stderr
    assert lab.swift_cluster.healthy() is True
    r = cli(cfg, "check", "--json")
    assert r.returncode == 0, r.stdout[-3000:]
    expected.insert(0, ("daemon-start", "swift-proxy-server@node1", "success"))
    runs = Audit(env.journal).runs(cluster="lab")
    assert [(x.runbook, x.target, x.outcome) for x in runs] == expected  # newest first
