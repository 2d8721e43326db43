"""Incidents on the real lab: every break scenario (and a killed OSD daemon) gives exactly
one incident whose root is the injected cause, at the top, with one next step that
plans (the runbook would not refuse); the CLI's first line names the cause.

The healthy lab has no findings at all, so any incident a test sees comes from its fault.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from checks.incidents import Incident
from checks.service import CheckOutcome
from lab import Lab
from stordoc.env import Env
from tests.lab.test_swift_dispersion import drop_dispersion

ROOT = Path(__file__).resolve().parents[2]


def until(env: Env, ok: Callable[[CheckOutcome], bool], timeout: float = 90.0,
          what: str = "") -> CheckOutcome:
    """Check the lab until ``ok`` holds (faults take a few seconds to show in Ceph)."""
    deadline = time.monotonic() + timeout * 3  # a loaded 2-core CI machine: waits, not limits
    out = env.check("lab")
    while not ok(out) and time.monotonic() < deadline:
        time.sleep(1.0)
        out = env.check("lab")
    assert ok(out), f"{what}: incidents {[i.id for i in out.incidents]}, findings " \
                    f"{[(f.code, f.entity) for f in out.report.findings]}"
    return out


def has_root(code: str, entity: str | None = None) -> Callable[[CheckOutcome], bool]:
    def ok(out: CheckOutcome) -> bool:
        return any(i.root.code == code and (entity is None or i.root.entity == entity)
                   for i in out.incidents)
    return ok


def the_incident(out: CheckOutcome, code: str, entity: str | None = None) -> Incident:
    """Exactly one incident, at the top, rooted in ``code`` (``entity``)."""
    assert out.incidents, "no incident"
    top = out.incidents[0]
    assert top.root.code == code, [i.id for i in out.incidents]
    if entity is not None:
        assert top.root.entity == entity
    return top


def cli(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stordoc", "--config", str(cfg), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
                          input="", env={**os.environ, "PYTHONWARNINGS": "ignore",
                                         "COLUMNS": "100"})


@pytest.fixture
def broken(lab: Lab) -> Iterator[Callable[..., str]]:
    """Break a scenario; heal it afterwards whatever the test did."""
    done: list[tuple[str, dict[str, object]]] = []

    def brk(scenario: str, **kw: object) -> str:
        done.append((scenario, kw))
        return lab.break_(scenario, **kw)  # type: ignore[arg-type]

    yield brk
    for scenario, kw in reversed(done):
        heal_kw = {k: v for k, v in kw.items() if k in ("osd", "device", "server")}
        if scenario == "osd-unmounted":
            osd = int(heal_kw.get("osd", 1))  # type: ignore[call-overload]
            if lab.osd_up(osd) and os.path.ismount(lab.osd_dir(osd)):  # fixed by the test
                lab.ceph("osd", "in", str(osd))
                continue
        lab.heal(scenario, **heal_kw)  # type: ignore[arg-type]


def test_osd_unmounted_out_is_one_incident_first_line_and_its_next_step_runs(
        lab: Lab, cfg: Path, broken: Callable[..., str]) -> None:
    """The seed fault: the cause is the first line of `stordoc check`, the `next:` line
    is the one runbook that runs, and running it clears the whole incident."""
    broken("osd-unmounted", osd=1, out=True)
    r = cli(cfg, "check")
    deadline = time.monotonic() + 90
    while "OSD_DATA_UNMOUNTED osd.1" not in r.stdout.splitlines()[0] and \
            time.monotonic() < deadline:
        time.sleep(1)
        r = cli(cfg, "check")
    lines = r.stdout.splitlines()
    assert lines[0].startswith("WARN lab: OSD_DATA_UNMOUNTED osd.1") or \
        lines[0].startswith("CRIT lab: OSD_DATA_UNMOUNTED osd.1"), r.stdout
    nexts = [ln.strip() for ln in lines if ln.strip().startswith("next:")]
    assert nexts == ["next: stordoc fix osd-remount osd.1"], r.stdout
    assert "fix: stordoc fix osd-start" not in r.stdout  # the refused hint is never shown
    assert "INCIDENTS (1)" in r.stdout
    j = cli(cfg, "check", "--json")
    import json
    doc = json.loads(j.stdout)
    assert doc["schema"] == 2 and len(doc["incidents"]) == 1
    inc = doc["incidents"][0]
    assert inc["root"] == {"code": "OSD_DATA_UNMOUNTED", "entity": "osd.1",
                           "message": inc["root"]["message"]}
    cons = {(c["code"], c["entity"]) for c in inc["consequences"]}
    assert ("OSD_DOWN_OUT", "osd.1") in cons
    assert {f["code"] for f in doc["findings"]} <= {"OSD_DATA_UNMOUNTED"} | {
        c for c, _ in cons}
    fix = cli(cfg, "fix", "osd-remount", "osd.1", "--yes")
    assert fix.returncode == 0, fix.stdout + fix.stderr
    assert lab.osd_up(1) and os.path.ismount(lab.osd_dir(1))


def test_osd_unmounted_in_folds_ceph_codes(lab: Lab, env: Env,
                                           broken: Callable[..., str]) -> None:
    broken("osd-unmounted", osd=2)
    out = until(env, lambda o: has_root("OSD_DATA_UNMOUNTED", "osd.2")(o) and any(
        f.code == "OSD_DOWN_IN" for f in o.report.findings), what="osd.2 unmounted")
    inc = the_incident(out, "OSD_DATA_UNMOUNTED", "osd.2")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    assert {f.key for f in inc.findings} == {f.key for f in out.report.findings}
    assert inc.next_step is not None and inc.next_step.command == \
        "stordoc fix osd-remount osd.2"
    assert inc.severity.label == "crit"  # still in: its PGs are degraded


def test_killed_osd_daemon_is_one_incident_with_cephs_codes_folded(
        lab: Lab, env: Env) -> None:
    """The issue's second case: four lines for one problem become one incident."""
    pid = lab.pid("osd.2")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    try:
        out = until(env, lambda o: has_root("OSD_DAEMON_STOPPED", "osd.2")(o) and any(
            f.code == "CEPH_HEALTH" for f in o.report.findings), what="osd.2 killed")
        inc = the_incident(out, "OSD_DAEMON_STOPPED", "osd.2")
        assert len(out.incidents) == 1, [i.id for i in out.incidents]
        keys = {f.key for f in inc.findings}
        assert ("OSD_DOWN_IN", "osd.2") in keys
        assert ("CEPH_HEALTH", "ceph OSD_DOWN") in keys
        assert inc.next_step is not None and inc.next_step.command == \
            "stordoc fix osd-start osd.2"
    finally:
        if lab.pid("osd.2") is None:
            lab.start_osd(2)


def test_cache_tier_misconfigured_is_one_incident(env: Env,
                                                  broken: Callable[..., str]) -> None:
    broken("cache-tier-misconfigured")
    out = until(env, has_root("CACHE_NO_TARGET", "pool lab-cache"), what="cache tier")
    inc = the_incident(out, "CACHE_NO_TARGET", "pool lab-cache")
    about = [i for i in out.incidents if any("lab-cache" in f.entity or "CACHE" in f.entity
                                             for f in i.findings)]
    assert about == [inc], [i.id for i in out.incidents]
    codes = {f.code for f in inc.findings}
    assert {"CACHE_NO_TARGET", "CACHE_RATIO_ORDER", "CACHE_NO_HIT_SET"} <= codes
    assert ("CEPH_HEALTH", "ceph CACHE_POOL_NO_HIT_SET") in {f.key for f in inc.findings}
    assert inc.next_step is not None and inc.next_step.command == \
        "stordoc fix cache-tier-tune lab-cache"


def test_pool_few_pgs_is_one_incident(env: Env, broken: Callable[..., str]) -> None:
    broken("pool-few-pgs")
    out = until(env, has_root("POOL_PG_NUM_LOW", "pool lab-fewpg"), what="few pgs")
    the_incident(out, "POOL_PG_NUM_LOW", "pool lab-fewpg")
    assert len(out.incidents) == 1
    assert out.incidents[0].next_step is not None
    assert out.incidents[0].next_step.command == "stordoc fix pool-pg-num lab-fewpg"


@pytest.fixture
def strict_env(lab: Lab, tmp_path: Path) -> Iterator[Env]:
    """An Env for which one replication failure is a finding (the lab's passes are small)."""
    from stordoc.settings import ThresholdSettings, load_settings

    s = load_settings(lab.config_path)
    e = Env(s.model_copy(update={
        "journal": str(tmp_path / "strict.db"),
        "thresholds": ThresholdSettings(swift_replication_failures_warn=0)}))
    yield e
    e.close()


def test_swift_device_unmounted_is_one_incident(lab: Lab, strict_env: Env,
                                                broken: Callable[..., str]) -> None:
    """d2 unmounted answers 507: the other nodes' replication passes towards it fail for
    real, and those failures are consequences of the one device, not incidents of their own."""
    t0 = time.time()
    broken("swift-device-unmounted", device="d2")
    for kind in ("object", "container"):
        lab.wait_replication_pass(kind, t0, "a pass with d2 unmounted")
    out = until(strict_env, has_root("SWIFT_DEVICE_UNMOUNTED"), what="d2 unmounted")
    inc = the_incident(out, "SWIFT_DEVICE_UNMOUNTED")
    assert len(out.incidents) == 1 and "d2@" in inc.root.entity, \
        [(i.id, [f.code for f in i.findings]) for i in out.incidents]
    assert inc.next_step is not None and inc.next_step.runbook == "swift-device-remount"
    repl = [f for f in out.report.findings if f.code == "SWIFT_REPLICATION_FAILURES"]
    assert repl, "no replication pass failed towards the unmounted device"
    assert {f.key for f in repl} <= {f.key for f in inc.findings}


@pytest.mark.parametrize("server", ["object", "container"])
def test_swift_server_stopped_is_one_incident(env: Env, broken: Callable[..., str],
                                              server: str) -> None:
    """One server process answers for every lab node: stopped, it is one cause."""
    broken("swift-server-stopped", server=server)
    out = until(env, has_root("SWIFT_SERVER_DOWN"), what=f"{server} stopped")
    inc = the_incident(out, "SWIFT_SERVER_DOWN")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    assert inc.root.entity.startswith(f"{server} server")
    assert sum(1 for f in inc.findings if f.code == "SWIFT_SERVER_DOWN") == 3
    assert inc.impact.startswith(f"{server} server down on 3 node(s)")
    assert inc.next_step is not None and inc.next_step.runbook == "swift-server-start"


def test_swift_device_full_is_one_incident(env: Env, broken: Callable[..., str]) -> None:
    broken("swift-device-full", device="d2")
    out = until(env, has_root("SWIFT_DEVICE_FULL"), what="d2 full")
    inc = the_incident(out, "SWIFT_DEVICE_FULL")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    assert "d2@" in inc.root.entity


def test_swift_quarantine_is_one_incident(env: Env, broken: Callable[..., str]) -> None:
    env.check("lab")  # the journal's recon baseline: growth is judged against it
    broken("swift-quarantine")
    out = until(env, has_root("SWIFT_QUARANTINE_GROWTH"), what="quarantine")
    inc = the_incident(out, "SWIFT_QUARANTINE_GROWTH")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    assert inc.next_step is None


@pytest.mark.parametrize("mode,root", [("drift", "SWIFT_BUILDER_NEWER_THAN_RING"),
                                       ("replicas", "SWIFT_REPLICAS_EXCEED_DEVICES")])
def test_swift_ring_bad_is_one_incident(env: Env, broken: Callable[..., str], mode: str,
                                        root: str) -> None:
    broken("swift-ring-bad", mode=mode)
    out = until(env, has_root(root), what=f"ring {mode}")
    inc = the_incident(out, root, "object ring")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    if mode == "drift":
        assert inc.next_step is not None and inc.next_step.runbook == "swift-ring-rebalance"
    else:  # the rebalance would refuse (5 replicas over 4 devices): never offered
        assert inc.next_step is None and inc.manual and "refuses" in inc.manual


def test_osd_not_activated_is_one_incident_and_its_next_step_activates(
        lab: Lab, env: Env, broken: Callable[..., str]) -> None:
    """The seed fault's modern form (issue 11): a ceph-volume raw OSD whose tmpfs data dir
    was not re-activated; its rule is one line in the table."""
    raw = [i for i, k in enumerate(lab.kinds) if k == "raw"]
    if not raw:
        pytest.skip("this lab has no ceph-volume raw OSD")
    osd = raw[0]
    broken("osd-not-activated", osd=osd, out=True)
    out = until(env, has_root("OSD_NOT_ACTIVATED", f"osd.{osd}"), what="not activated")
    inc = the_incident(out, "OSD_NOT_ACTIVATED", f"osd.{osd}")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    assert ("OSD_DOWN_OUT", f"osd.{osd}") in {f.key for f in inc.consequences}
    assert inc.next_step is not None and inc.next_step.command == \
        f"stordoc fix osd-activate osd.{osd}"


def test_swift_replicator_stopped_is_one_incident(env: Env,
                                                  broken: Callable[..., str]) -> None:
    broken("swift-replication-stalled")
    out = until(env, has_root("SWIFT_REPLICATOR_NOT_RUNNING"), what="replicator")
    inc = the_incident(out, "SWIFT_REPLICATOR_NOT_RUNNING")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    assert len(inc.findings) == 3  # one replicator process for every lab node


def test_swift_ring_stale_on_every_server_is_one_incident(
        env: Env, broken: Callable[..., str]) -> None:
    broken("swift-ring-stale")
    out = until(env, has_root("SWIFT_RING_MD5_MISMATCH"), what="stale ring")
    inc = the_incident(out, "SWIFT_RING_MD5_MISMATCH")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    assert inc.impact.startswith("on 3 servers alike")
    assert inc.next_step is not None and inc.next_step.command == \
        "stordoc fix swift-ring-push object"


def test_swift_dispersion_missing_is_one_incident(env: Env, cfg: Path, lab: Lab) -> None:
    """One replica gone from d2: one incident rooted at that device's missing copies."""
    t0 = time.time()
    r = cli(cfg, "swift", "dispersion", "populate", "--objects", "16", "--containers", "4",
            "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        # a container copy a busy server missed at the PUT comes with the next pass
        lab.wait_replication_pass("container", t0, "dispersion containers replicated")
        lab.break_("swift-dispersion-missing", device="d2")
        out = until(env, has_root("SWIFT_DISPERSION_OBJECT_COPIES"), what="copy missing")
        inc = the_incident(out, "SWIFT_DISPERSION_OBJECT_COPIES")
        assert len(out.incidents) == 1, [i.id for i in out.incidents]
        assert "d2@" in inc.root.entity
    finally:
        lab.heal("swift-dispersion-missing", device="d2")
        drop_dispersion(lab)  # they are this test's: later tests start without them


# last: under load one updater pass may leave pendings (the heal now passes again until none)
def test_swift_async_pending_folds_into_the_stopped_container_server(
        env: Env, broken: Callable[..., str]) -> None:
    broken("swift-async-pending")
    out = until(env, lambda o: has_root("SWIFT_SERVER_DOWN")(o) and any(
        f.code == "SWIFT_ASYNC_PENDING" for f in o.report.findings), what="async")
    inc = the_incident(out, "SWIFT_SERVER_DOWN")
    assert len(out.incidents) == 1, [i.id for i in out.incidents]
    assert inc.root.entity.startswith("container server")
    assert "SWIFT_ASYNC_PENDING" in {f.code for f in inc.consequences}
    assert "container updates queued" in inc.impact
