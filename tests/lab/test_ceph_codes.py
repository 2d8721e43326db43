"""Ceph's own codes on the real lab: RECENT_CRASH from an OSD killed with SIGABRT (its
crash report posted as ceph-crash would, which the lab does not run), folded into the
OSD's crash incident, restarted by daemon-restart, which archives the report; OSD_NEARFULL by ratio,
explained and folded, then muted in Ceph and shown as muted; MGR_DOWN; and a stordoc
mute with expiry from the CLI on a real finding."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from checks.outcome import CheckOutcome
from core.env import Env
from core.service import Service
from lab import Lab
from tests.support.cli import cli as _cli
from tests.support.labtools import config_with_journal
from tests.support.poll import wait_until


def until(env: Env, ok: Callable[[CheckOutcome], bool], timeout: float, what: str
          ) -> CheckOutcome:
    last: list[CheckOutcome] = []

    def good() -> CheckOutcome | None:
        last[:] = [Service(env).check("lab", "cli")]
        return last[0] if ok(last[0]) else None

    def why() -> str:
        return f"{what}: {[(f.code, f.entity) for f in last[0].report.findings]}"

    return wait_until(good, timeout * 3, why)  # a loaded 2-core CI machine: waits, not limits


def ceph_finding(out: CheckOutcome, code: str):  # type: ignore[no-untyped-def]
    return next((f for f in (*out.report.findings, *out.report.muted)
                 if f.entity == f"ceph {code}"), None)


def ceph(lab: Lab, *args: str) -> str:
    return subprocess.run(["ceph", "-c", str(lab.base / "ceph" / "ceph.conf"), *args],
                          capture_output=True, text=True, timeout=60, check=True).stdout


def cli(lab: Lab, env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    journal = Path(env.settings.journal)
    return _cli(config_with_journal(lab.config_path, journal, journal.parent / "stordoc.toml"),
                *args)


@pytest.mark.release
def test_recent_crash_folds_into_the_osd_then_is_archived(lab: Lab, env: Env) -> None:
    ceph(lab, "crash", "archive-all")  # crashes of earlier tests: this one starts clean
    before = set(glob.glob(str(lab.base / "ceph" / "crash" / "*" / "meta")))
    pid = lab.pid("osd.2")
    assert pid is not None
    os.kill(pid, signal.SIGABRT)
    try:
        new = wait_until(lambda: set(glob.glob(str(lab.base / "ceph" / "crash" / "*" / "meta")))
                         - before, 60, "ceph-osd to write a crash report", 0.5)
        ceph(lab, "crash", "post", "-i", new.pop())  # what ceph-crash does
        # a crash, not a stop: the signal and the crash report are the incident's root
        # cause, Ceph's RECENT_CRASH folds into it, and its one next step restarts it
        out = until(env, lambda o: ceph_finding(o, "RECENT_CRASH") is not None and any(
            i.root.code == "OSD_DAEMON_CRASHED" and i.next_step is not None
            for i in o.incidents), 90, "crash")
        inc = out.incidents[0]
        assert (inc.root.code, inc.root.entity) == ("OSD_DAEMON_CRASHED", "osd.2")
        assert "SIGABRT" in inc.root.message, inc.root.message
        crash = ceph_finding(out, "RECENT_CRASH")
        assert crash is not None and crash in inc.consequences
        assert "osd.2 (node3)" in crash.message and crash.runbook == "crash-archive"
        assert crash.since is not None
        crash_id = crash.target
        assert inc.root.evidence.get("crash_id") == crash_id, inc.root.evidence
        assert inc.next_step is not None and inc.next_step.command == \
            "stordoc fix daemon-restart osd.2"
        r = cli(lab, env, "fix", "daemon-restart", "osd.2", "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        # the restart saved the evidence and archived the crash report it read: clean
        until(env, lambda o: ceph_finding(o, "RECENT_CRASH") is None and not o.incidents,
              120, "restarted and archived")
        assert crash_id in ceph(lab, "crash", "ls")  # archived, not deleted
    finally:
        if lab.pid("osd.2") is None:
            lab.start_osd(2)
        # a crash report left behind is RECENT_CRASH for every later test of the session
        ceph(lab, "crash", "archive-all")


@pytest.mark.on_reef  # one release each with the next test: Ceph's mute is the same on both
def test_nearfull_by_ratio_is_explained_then_muted_in_ceph(lab: Lab, env: Env) -> None:
    ceph(lab, "osd", "set-nearfull-ratio", "0.001")
    try:
        # every OSD nearfull before the mute: Ceph lifts a mute that is not --sticky when
        # its check gets worse (one more OSD nearfull), which CI once caught mid-way
        out = until(env, lambda o: (x := ceph_finding(o, "OSD_NEARFULL")) is not None
                    and len(x.evidence["osds"]) == lab.n_osds, 90, "every OSD nearfull")
        f = ceph_finding(out, "OSD_NEARFULL")
        assert f is not None and f.evidence["osds"]
        assert set(f.evidence["hosts"].values()) <= {f"node{i + 1}" for i in range(lab.n_osds)}
        assert "nearfull 0.00" in f.message and "%" in f.message
        # folded into the lowered ratio's incident of ours (issue 38.2: the ratio set under
        # the OSDs' fill is the cause, the OSDs past nearfull with it), not one of its own
        assert not any(i.root.key == f.key for i in out.incidents)
        assert any(i.root.code == "FULL_RATIO_LOWERED" and f in i.consequences
                   and {c.code for c in i.consequences} >= {"OSD_NEAR_FULL"}
                   for i in out.incidents), [(i.root.code, [c.code for c in i.consequences])
                                             for i in out.incidents]
        ceph(lab, "health", "mute", "OSD_NEARFULL", "10m")
        out = until(env, lambda o: (m := ceph_finding(o, "OSD_NEARFULL")) is not None
                    and m.evidence.get("muted_in_ceph") is True, 60, "muted in Ceph")
        m = ceph_finding(out, "OSD_NEARFULL")
        assert m is not None and m.severity.label == "info"
        assert m.message.startswith("muted in Ceph")
        assert "lifted by Ceph if it gets worse" in m.message and " more" in m.message
        assert m.evidence["mute_sticky"] is False
    finally:
        ceph(lab, "health", "unmute", "OSD_NEARFULL")
        ceph(lab, "osd", "set-nearfull-ratio", "0.85")
    # the nearfull finding gone (other findings, e.g. Swift's under load, are not this test's)
    until(env, lambda o: ceph_finding(o, "OSD_NEARFULL") is None, 90, "nearfull gone")


def test_a_mute_that_is_not_sticky_is_lifted_by_ceph_when_worse_and_said_so(
        lab: Lab, env: Env) -> None:
    """noout set and muted for 1h: the finding says the mute's terms; noin as well (the
    check's count grows) and Ceph lifts the mute itself: the finding is a warning again.
    A --sticky mute of the same check survives the same change."""
    try:
        ceph(lab, "osd", "set", "noout")
        until(env, lambda o: ceph_finding(o, "OSDMAP_FLAGS") is not None, 60, "flags")
        ceph(lab, "health", "mute", "OSDMAP_FLAGS", "1h")
        out = until(env, lambda o: (m := ceph_finding(o, "OSDMAP_FLAGS")) is not None
                    and m.evidence.get("muted_in_ceph") is True, 60, "muted")
        m = ceph_finding(out, "OSDMAP_FLAGS")
        assert m is not None and m.severity.label == "info"
        assert "(ceph health mute, for 59m more, lifted by Ceph if it gets worse)" in \
            m.message or "(ceph health mute, for 1h more, lifted by Ceph if it gets " \
            "worse)" in m.message, m.message
        ceph(lab, "osd", "set", "noin")
        # the monitor lifts it at its next health tick (seconds): wait for that
        out = until(env, lambda o: (m := ceph_finding(o, "OSDMAP_FLAGS")) is not None
                    and "noin" in m.message and not m.evidence.get("muted_in_ceph"), 60,
                    "mute lifted once noin joined the flags")
        m = ceph_finding(out, "OSDMAP_FLAGS")
        assert m is not None and m.severity.label == "warn", m.message
        assert not m.message.startswith("muted")
        # sticky: the same growth leaves it muted
        ceph(lab, "osd", "unset", "noin")
        ceph(lab, "health", "mute", "OSDMAP_FLAGS", "--sticky")
        until(env, lambda o: (m := ceph_finding(o, "OSDMAP_FLAGS")) is not None
              and m.evidence.get("mute_sticky") is True, 60, "sticky")
        ceph(lab, "osd", "set", "noin")
        out = until(env, lambda o: (m := ceph_finding(o, "OSDMAP_FLAGS")) is not None
                    and "noin" in m.message, 60, "noin again")
        time.sleep(12)  # two monitor ticks (5 s): the one that lifted the other mute
        out = Service(env).check("lab", "cli")
        m = ceph_finding(out, "OSDMAP_FLAGS")
        assert m is not None and m.severity.label == "info" and "noin" in m.message
        assert m.message.startswith("muted in Ceph (ceph health mute, sticky): "), m.message
    finally:
        ceph(lab, "health", "unmute", "OSDMAP_FLAGS")
        ceph(lab, "osd", "unset", "noin")
        ceph(lab, "osd", "unset", "noout")
    until(env, lambda o: ceph_finding(o, "OSDMAP_FLAGS") is None, 60, "flags gone")


def test_pause_is_one_incident_and_its_printed_next_step_unsets_it(lab: Lab,
                                                                   env: Env) -> None:
    """Issue 38: ``ceph osd set pause`` is ``pauserd,pausewr`` in the osdmap and Ceph
    refuses ``ceph osd unset pauserd``. ``stordoc check`` prints one incident whose next
    step is ``stordoc fix flag-unset pause``; running that printed line unsets it (Ceph's
    ``osd unset pause``) and the check is clean again."""
    import shlex

    def flags() -> set[str]:
        return set(json.loads(ceph(lab, "osd", "dump", "--format", "json"))["flags_set"])

    assert not {"pause", "pauserd", "pausewr"} & flags()
    try:
        ceph(lab, "osd", "set", "pause")
        until(env, lambda o: ceph_finding(o, "OSDMAP_FLAGS") is not None, 60, "pause")
        assert {"pauserd", "pausewr"} <= flags()  # how Ceph's osdmap spells it
        r = cli(lab, env, "check")
        text = r.stdout + r.stderr
        assert "unset pauserd" not in text and "unset pausewr" not in text, text
        steps = [ln.strip()[len("next: "):] for ln in r.stdout.splitlines()
                 if ln.strip().startswith("next: ")]
        # one incident (its own next line, repeated as the report's last line)
        assert set(steps) == {"stordoc fix flag-unset pause"}, text
        assert "1. CRIT OSDMAP_FLAGS  cluster lab flag pause" in r.stdout, text
        assert "\n  2. " not in r.stdout, text
        argv = shlex.split(steps[0])
        assert argv[:2] == ["stordoc", "fix"]
        fix = cli(lab, env, *argv[1:], "--yes")
        assert fix.returncode == 0, fix.stdout + fix.stderr
        assert "ceph osd unset pause" in fix.stdout, fix.stdout
        assert not {"pause", "pauserd", "pausewr"} & flags()
        until(env, lambda o: ceph_finding(o, "OSDMAP_FLAGS") is None and not o.incidents,
              60, "clean after flag-unset pause")
        again = cli(lab, env, "check")
        # a clean check's only next line is its last: nothing to do (issue 38.6)
        nexts = [ln.strip() for ln in again.stdout.splitlines()
                 if ln.strip().startswith("next: ")]
        assert nexts == ["next: nothing to do"] and "flag pause" not in again.stdout, \
            again.stdout
    finally:
        ceph(lab, "osd", "unset", "pause")


@pytest.mark.on_reef  # the manager stopped on Pacific: test_mgrmon_lab.py (daemon-start)
def test_stopped_manager_the_osd_picture_then_mgr_down_says_what_is_stale(
        lab: Lab, env: Env) -> None:
    """One manager stop, two facts: the collector still gives the OSD picture (the manager
    costs one timeout, not one per command), and once Ceph says MGR_DOWN stordoc says
    which statistics are stale."""
    from dataclasses import replace

    from storage.ceph import OPTIONAL, collect_ceph

    target = env.settings.cluster("lab").target("lab").ceph
    assert target is not None
    assert lab.stop("mgr.x")
    try:
        state, err = collect_ceph(replace(target, timeout_s=3))
        assert err is None and state is not None
        assert len(state.osds) == lab.n_osds and state.pool("rbd") is not None
        errs = state.errors
        mgr_cmds = {c.key for c in OPTIONAL if c.mgr} | {"config show"}
        assert mgr_cmds <= set(errs), set(errs)
        # one timeout for the manager, not one per manager command
        assert sum(errs[k].startswith("skipped") for k in mgr_cmds) == len(mgr_cmds) - 1
        assert state.crashes is None and state.osd_config is None
        assert all(p.autoscale is None for p in state.pools)
        out = until(env, lambda o: ceph_finding(o, "MGR_DOWN") is not None, 120, "MGR_DOWN")
        f = ceph_finding(out, "MGR_DOWN")
        assert f is not None and "stale" in f.message and "pg stat" in f.message
    finally:
        lab.start_mgr()
    until(env, lambda o: ceph_finding(o, "MGR_DOWN") is None, 120, "mgr back")


@pytest.mark.on_reef
def test_cli_mute_with_expiry_hides_a_real_finding_and_is_audited(lab: Lab,
                                                                 env: Env) -> None:
    lab.break_("pool-few-pgs")
    try:
        until(env, lambda o: any(f.code == "POOL_PG_NUM_LOW" for f in o.report.findings),
              60, "few pgs")
        r = cli(lab, env, "mute", "POOL_PG_NUM_LOW", "pool lab-fewpg", "--for", "10m",
                "--reason", "test pool, removed soon")
        assert r.returncode == 0, r.stderr
        r = cli(lab, env, "check")
        assert r.returncode == 0, r.stdout  # nothing else: OK
        assert r.stdout.startswith("OK lab: no incidents") and "1 muted" in r.stdout
        listing = cli(lab, env, "mute", "--list").stdout
        assert "POOL_PG_NUM_LOW pool lab-fewpg" in listing and "test pool" in listing
        r = cli(lab, env, "unmute", "POOL_PG_NUM_LOW", "pool lab-fewpg")
        assert r.returncode == 0
        assert cli(lab, env, "check").returncode == 1
    finally:
        lab.heal("pool-few-pgs")


def test_pool_without_application_is_found_and_fixed_by_its_printed_next_step(
        lab: Lab, env: Env) -> None:
    """Issue 38: POOL_APP_NOT_ENABLED made by plain commands: a pool created and written
    with ``rados put``, no application enabled. ``stordoc check`` prints Ceph's code with
    the pool and the next step ``stordoc fix pool-app-enable lab-noapp``; running that
    printed line enables it (``ceph osd pool application enable lab-noapp rados``) and
    Ceph's code clears."""
    import shlex

    conf = str(lab.base / "ceph" / "ceph.conf")
    pool = "lab-noapp"
    try:
        ceph(lab, "osd", "pool", "create", pool, "32", "32", "replicated")
        payload = lab.base / "noapp-object"
        payload.write_bytes(b"x" * 4096)
        subprocess.run(["rados", "-c", conf, "-p", pool, "put", "obj1", str(payload)],
                       check=True, timeout=60, capture_output=True)
        out = until(env, lambda o: ceph_finding(o, "POOL_APP_NOT_ENABLED") is not None,
                    120, "POOL_APP_NOT_ENABLED")
        f = ceph_finding(out, "POOL_APP_NOT_ENABLED")
        assert f is not None and f"pool(s) {pool}" in f.message, f.message
        r = cli(lab, env, "check")
        text = r.stdout + r.stderr
        steps = [ln.strip()[len("next: "):] for ln in r.stdout.splitlines()
                 if ln.strip().startswith("next: ")]
        want = f"stordoc fix pool-app-enable {pool}"
        assert want in steps, text
        argv = shlex.split(want)
        fix = cli(lab, env, *argv[1:], "--yes")
        assert fix.returncode == 0, fix.stdout + fix.stderr
        assert f"ceph osd pool application enable {pool} rados" in fix.stdout, fix.stdout
        apps = json.loads(ceph(lab, "osd", "pool", "application", "get", pool,
                               "--format", "json"))
        assert list(apps) == ["rados"], apps
        until(env, lambda o: ceph_finding(o, "POOL_APP_NOT_ENABLED") is None, 90,
              "POOL_APP_NOT_ENABLED cleared")
        again = cli(lab, env, "check")
        assert "pool-app-enable" not in again.stdout, again.stdout
    finally:
        if pool in ceph(lab, "osd", "pool", "ls").split():
            ceph(lab, "osd", "pool", "delete", pool, pool, "--yes-i-really-really-mean-it")
