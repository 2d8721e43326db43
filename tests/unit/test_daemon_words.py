"""Daemon words are true and stable (issue 38.4): the same stop gives the same diagnosis
each time, from what a lab host really said after a plain ``kill -TERM PID``
(tests/fixtures/daemons/: the facts script's sections), and from the saved mgr-stopped
snapshot with those facts in it. A stopped daemon's incident names ``daemon-start``; the
Swift proxy's failed healthcheck is words inside the proxy daemon's one incident."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from checks.daemons import evidence, judge
from checks.incidents import correlate
from checks.model import Finding, Severity
from checks.swift_rings import proxy_words
from core.service.pipeline import CheckRequest, run_check
from runbooks.nextstep import planning_context, with_next_steps
from storage.hostfacts.parse import (
    parse_daemon_section,
    parse_oom,
    parse_probes,
    split_sections,
)
from storage.model import DaemonFacts, DaemonLife
from storage.model.daemons import daemon_kind
from storage.model.mgrmon import MgrState
from tests.unit.test_replay import replay

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "daemons" / "pacific"
REEF = CAPTURES.parent / "reef"
LAB = "/var/tmp/stordoc-lab-daemon"
FILES = {"mgr.x": (f"{LAB}/ceph/run/ceph-mgr.x.pid", f"{LAB}/log/ceph-mgr.x.log", "asok"),
         "mon.a": (f"{LAB}/ceph/run/ceph-mon.a.pid", f"{LAB}/log/ceph-mon.a.log", "asok"),
         "swift-proxy-server": (f"{LAB}/pids/swift-proxy.pid", f"{LAB}/log/swift-proxy.log",
                                "http")}


def captured(name: str, extra: tuple[str, ...] = (), where: Path = CAPTURES) -> DaemonFacts:
    """The daemon's facts as the lab host said them (``extra``: lines added to its
    section, as a log that got to say more would have)."""
    text = (where / f"{name}.txt").read_text()
    sec = split_sections(text)
    dname = next(k for k in sec if k.startswith("daemon "))[len("daemon "):]
    pid_file, log_file, what = FILES[dname]
    lines = [*sec[f"daemon {dname}"], *extra]
    return parse_daemon_section(dname, daemon_kind(dname), lines,
                                parse_probes(sec.get("probes", [])),
                                parse_oom(sec.get("oom", [])), float(sec["now"][0]),
                                pid_file, log_file, what)


def words(s: str) -> str:
    """A summary without the numbers that change from stop to stop (pids, times)."""
    return re.sub(r"\d+", "N", s)


def test_the_manager_stopped_twice_by_sigterm_is_one_diagnosis() -> None:
    a, b = (judge(captured(f"mgr-sigterm-{n}"), "node1") for n in (1, 2))
    assert a.life is b.life is DaemonLife.STOPPED
    assert a.summary == b.summary  # not even a pid differs
    assert "crash" in a.summary and "SIGKILL" not in a.summary
    # ceph-mgr's "*** Got signal Terminated ***" reaches its log only now and then (it
    # _exit()s at once): with it the words are the same, and so with a crash in its
    # modules' teardown after it
    t = "2026-11-28T16:58:59.900+0000 7f10c3fff6c0 -1 "
    said = judge(captured("mgr-sigterm-2", (f"fatal {t} *** Got signal Terminated ***",)),
                 "node1")
    torn = judge(captured("mgr-sigterm-2", (
        f"fatal {t} *** Got signal Terminated ***",
        f"fatal {t} *** Caught signal (Segmentation fault) **")), "node1")
    assert said.life is torn.life is DaemonLife.STOPPED
    assert said.summary == torn.summary == a.summary
    assert said.signal == "SIGTERM"
    assert any("crashed while shutting down" in e for e in torn.evidence)
    # a crash with no stop asked for first is still a crash
    crash = judge(captured("mgr-sigterm-2", (
        f"fatal {t} *** Caught signal (Segmentation fault) **",)), "node1")
    assert crash.life is DaemonLife.CRASHED and crash.signal == "SIGSEGV"


def test_a_swift_proxy_stopped_by_sigterm_is_stopped_not_died_of_sigsegv() -> None:
    st = judge(captured("proxy-sigterm"), "node1")
    assert st.life is DaemonLife.STOPPED
    assert "SIGSEGV" not in st.summary and "died" not in st.summary
    assert "a plain kill leaves its pid file" in st.summary
    assert st.entity == "swift-proxy-server@node1"


def test_the_monitor_stopped_by_sigterm_names_the_signal_and_who_sent_it() -> None:
    st = judge(captured("mon-sigterm"), "node1")
    assert st.life is DaemonLife.STOPPED and st.signal == "SIGTERM"
    assert st.summary == "stopped cleanly by SIGTERM from bash (pid 4795)"
    assert "from bash /dev/fd/3  (PID: 4795)" in st.fatal_lines[0]


def _mgr_stopped(release: str, name: str):  # type: ignore[no-untyped-def]
    """mgr-stopped's snapshot (no manager; saved before the lab watched its daemons) with
    node1's daemon settings and facts of the osd-crash capture, mgr.x as a lab host said
    it after ``kill -TERM`` (capture ``name``); and the settings that name its start."""
    snap = replay(release, "mgr-stopped").outcome.snapshot
    crash = replay(release, "osd-crash")
    facts = crash.outcome.snapshot.hosts["node1"].daemon_facts
    mgr = captured(name)
    node1 = dataclasses.replace(snap.hosts["node1"], daemon_facts=tuple(
        mgr if d.name == "mgr.x" else d for d in facts if d.kind != "osd"))
    return dataclasses.replace(snap, hosts={**snap.hosts, "node1": node1}), crash.target


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_the_manager_stopped_is_one_incident_whose_next_step_starts_it(release: str) -> None:
    rp = replay(release, "mgr-stopped")
    tops = []
    for name in ("mgr-sigterm-1", "mgr-sigterm-2"):
        snap, target = _mgr_stopped(release, name)
        out = run_check(CheckRequest(target, rp.thresholds, (), None, snapshot=snap,
                        now=rp.doc.taken_at, source="snapshot"))
        ctx = planning_context("lab", target, rp.thresholds, offline=True)
        incidents = with_next_steps(ctx, snap, out.incidents)
        top = incidents[0]
        assert (top.root.code, top.root.entity) == ("DAEMON_STOPPED", "mgr.x"), top.root
        assert top.severity is Severity.CRIT  # no manager: the impact is CRIT
        assert {"MGR_NO_ACTIVE", "PGS_STATS_STALE"} <= {f.code for f in top.consequences}
        assert top.next_step is not None
        assert top.next_step.command == "stordoc fix daemon-start mgr.x"
        # one problem, one incident (the other daemons of the capture run)
        assert [i.root.entity for i in incidents] == ["mgr.x"], [i.id for i in incidents]
        tops.append((top.root.code, words(top.root.message), top.next_step.command))
    assert tops[0] == tops[1]


def test_the_proxy_healthcheck_is_words_inside_the_proxy_daemons_incident() -> None:
    url = "http://127.0.0.1:12010"
    st = judge(captured("proxy-sigterm"), "node1")
    daemon = Finding("DAEMON_STOPPED", Severity.WARN, st.entity,
                     f"{st.name} on node1 {st.summary}", evidence(st),
                     runbook="daemon-start", target=st.entity)
    proxy = Finding("SWIFT_PROXY_UNHEALTHY", Severity.CRIT, f"swift proxy {url}",
                    proxy_words(url, "connection refused"),
                    {"url": url, "error": "connection refused"})
    assert proxy.message.startswith("proxy 127.0.0.1:12010 refuses connections")
    snap = replay("pacific", "healthy").outcome.snapshot
    incidents = correlate([daemon, proxy], snap)
    assert len(incidents) == 1
    inc = incidents[0]
    assert inc.root.code == "DAEMON_STOPPED" and inc.severity is Severity.CRIT
    assert inc.impact.startswith("proxy 127.0.0.1:12010 refuses connections")


def _manager_back(after_s: float):  # type: ignore[no-untyped-def]
    """The healthy snapshot as the manager answers ``after_s`` seconds after it became
    active, before the OSDs reported to it: every PG unknown, ``pg dump_stuck`` listing
    them inactive (what a check read ~9 s after mgr.x came back on the lab)."""
    rp = replay("pacific", "healthy")
    snap = rp.outcome.snapshot
    st = snap.ceph
    assert st is not None and st.collected_at
    n = st.pgs.num_pgs
    pgids = tuple(f"1.{i:x}" for i in range(n))
    pgs = dataclasses.replace(st.pgs, by_state={"unknown": n}, stuck={"inactive": pgids})
    mgr = MgrState(epoch=9, active="x", active_gid=4100, available=True,
                   active_change=st.collected_at - after_s, answered=True)
    st2 = dataclasses.replace(st, pgs=pgs, mgr=mgr, pg_settle=None)
    return rp, dataclasses.replace(snap, ceph=st2)


def test_a_manager_just_back_is_settling_not_pgs_stuck() -> None:
    rp, snap = _manager_back(4.0)
    out = run_check(CheckRequest(rp.target, rp.thresholds, (), None, snapshot=snap,
                    now=rp.doc.taken_at, source="snapshot"))
    got = {f.code: f for f in out.report.findings}
    assert got["PGS_STUCK"].severity is Severity.INFO
    assert got["PGS_SETTLING"].severity is Severity.INFO
    assert "mgr.x became active 4 s ago" in got["PGS_SETTLING"].message
    assert "not reported yet" in got["PGS_SETTLING"].message
    assert int(out.report.verdict) == 0, [(f.code, f.severity) for f in out.report.findings]
    # unknown to a manager that has run for ten minutes: judged as always (CRIT)
    rp, late = _manager_back(600.0)
    out = run_check(CheckRequest(rp.target, rp.thresholds, (), None, snapshot=late,
                    now=rp.doc.taken_at, source="snapshot"))
    stuck = next(f for f in out.report.findings if f.code == "PGS_STUCK")
    assert stuck.severity is Severity.CRIT


def test_no_manager_while_stordoc_restarts_it_is_that_runs_doing() -> None:
    from checks.incidents import run_of
    from storage.model import RecentRun

    snap = replay("pacific", "mgr-stopped").outcome.snapshot
    out = replay("pacific", "mgr-stopped").outcome
    inc = out.incidents[0]
    assert inc.root.code == "DAEMON_STOPPED"  # no manager is its consequence
    running = RecentRun(7, "daemon-start", "mgr.x", snap.taken_at - 5, None, "running")
    by = run_of(inc, (running,))
    assert by is not None and by[0] is running and "DAEMON_STOPPED" in by[1]
    assert "MGR_NO_ACTIVE" in {f.code for f in inc.consequences}  # said by the run too
    # once the run ended, what is still wrong is its own incident again
    done = dataclasses.replace(running, finished_at=snap.taken_at - 1, outcome="failed")
    assert run_of(inc, (done,)) is None
    # a run on something else explains nothing
    other = dataclasses.replace(running, runbook="osd-start", target="osd.1")
    assert run_of(inc, (other,)) is None


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_a_stopped_storage_server_is_one_incident_with_its_daemons_words(release: str) -> None:
    """swift-object-server-stopped's snapshot (recon refused on every node; saved before
    the lab watched its daemons) with node1's daemon facts of the osd-crash capture, the
    object server stopped as ``lab break`` stops it (SIGTERM, pid file removed): one
    incident, SWIFT_SERVER_DOWN, whose words say the daemon's life; no second one."""
    rp = replay(release, "swift-object-server-stopped")
    snap = rp.outcome.snapshot
    crash = replay(release, "osd-crash")
    facts = crash.outcome.snapshot.hosts["node1"].daemon_facts
    stopped = tuple(dataclasses.replace(d, alive=False, proc_state="", probe="",
                                        pid_file_present=False)
                    if d.name == "swift-object-server" else d
                    for d in facts if d.kind != "osd")
    node1 = dataclasses.replace(snap.hosts["node1"], daemon_facts=stopped)
    snap = dataclasses.replace(snap, hosts={**snap.hosts, "node1": node1})
    out = run_check(CheckRequest(crash.target, rp.thresholds, (), None, snapshot=snap,
                    now=rp.doc.taken_at, source="snapshot"))
    assert [i.root.code for i in out.incidents] == ["SWIFT_SERVER_DOWN"], \
        [i.id for i in out.incidents]
    assert not [f for f in out.report.findings if f.code.startswith("DAEMON_")]
    root = out.incidents[0].root
    assert "its daemon stopped: " in root.message, root.message
    assert root.evidence["daemon"]["life"] == "stopped"  # type: ignore[index]


def test_the_lab_config_names_a_start_command_for_every_lab_daemon(tmp_path: Path) -> None:
    """Every ``[[clusters.lab.hosts.daemons]]`` the lab writes has a ``start`` (so
    daemon-start can start any of them), and the start script it names knows the proxy
    and rsyncd, each recording the pid file the settings name."""
    import shlex
    import tomllib

    from lab import Lab
    from lab.config import config_text
    from lab.swift_conf import start_script

    lab = Lab(tmp_path / "lab", 29000, "mixed")
    cfg = tomllib.loads(config_text(lab))
    daemons = [d for h in cfg["clusters"]["lab"]["hosts"] for d in h.get("daemons", [])]
    names = {d["name"] for d in daemons}
    assert {"mon.a", "mgr.x", "swift-proxy-server", "memcached", "rsyncd",
            "swift-object-server"} <= names
    assert [d["name"] for d in daemons if not d.get("start")] == []
    script = start_script(lab, "server")
    for d in daemons:
        if d["start"][0] == str(lab.swift_start_script):
            case = d["start"][1]
            body = script.split(f"\n{case}) ", 1)[1].split(";;", 1)[0]
            assert f"echo $! >{shlex.quote(d['pid_file'])}" in body, (case, body)


def test_a_reef_manager_whose_modules_raised_is_stopped_not_crashed() -> None:
    """Reef's ceph-mgr reports each Python module exception as a crash of ``mgr.x``
    (``mgr_module`` in the crash meta) while the daemon runs on: such a report is not how
    the daemon ended, so its stop reads as the Pacific one does."""
    f = captured("mgr-sigterm-modules", where=REEF)
    assert f.crash_ids == ()  # ten module crashes, none of them the daemon's end
    st = judge(f, "node1")
    assert st.life is DaemonLife.STOPPED and st.crash_id is None
    assert st.summary == judge(captured("mgr-sigterm-1"), "node1").summary


def test_memcached_stopped_by_sigterm_is_stopped_not_missing() -> None:
    """memcached removes its pid file on SIGTERM and has no log (the Reef lab's, after
    ``kill -TERM``): stopped, and daemon-start's to start; not "no trace"."""
    f = parse_daemon_section("memcached", "memcached", ["pidfile 0"], {}, {}, 1795888500.0,
                             f"{LAB}/pids/memcached.pid", "", "memcached")
    st = judge(f, "node1")
    assert st.life is DaemonLife.STOPPED
    assert "its pid file was removed" in st.summary and "no log to read" in st.summary
    # configured with a log that is not there either: no trace at all
    g = parse_daemon_section("rsyncd", "rsyncd", ["pidfile 0", "log 0"], {}, {},
                             1795888500.0, f"{LAB}/pids/rsyncd.pid", f"{LAB}/log/rsyncd.log")
    assert judge(g, "node1").life is DaemonLife.MISSING
