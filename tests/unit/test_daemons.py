"""A daemon's life (checks/daemons.py): the facts script's ``@@daemon`` section parsed
and judged, from lines as the lab's Ceph and Swift daemons wrote them, and from the saved
lab snapshots of a crash (SIGSEGV), a kill (SIGKILL) and a hang (SIGSTOP)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.daemons import judge
from runbooks.model import InvalidRequest
from runbooks.targets import canonical_daemon
from storage.hostfacts.parse import parse_daemon_section, parse_oom, parse_probes
from storage.model import DaemonLife

NOW = 1795743000.0  # 2026-11-27T01:30:00Z
START = ("2026-11-27T01:21:24.494+0000 7f3662e1f1c0  0 ceph version 16.2.15 (618f) "
         "pacific (stable), process ceph-osd, pid {pid}")
T = "2026-11-27T01:{m:02d}:10.218+0000 7f2c33a461c0 -1 "
SOON = "2026-11-27T01:{m:02d}:30.000+0000 7f2c33a461c0 -1 "  # 6 s after start(m)


def section(*lines: str, probes: str = "", oom: str = "", now: float = NOW):
    return parse_daemon_section("osd.2", "osd", list(lines), parse_probes(probes.splitlines()),
                                parse_oom(oom.splitlines()), now, "/run/ceph-osd.2.pid",
                                "/var/log/ceph/ceph-osd.2.log", "asok")


def start(m: int, pid: int) -> str:
    return "start " + START.replace("01:21", f"01:{m:02d}").format(pid=pid)


def test_segv_is_a_crash_with_its_signal_report_and_log_line() -> None:
    f = section("pidfile 0", "log 1", start(20, 10),
                "fatal " + T.format(m=22) + "*** Caught signal (Segmentation fault) **",
                "last " + T.format(m=22) + "--- end dump of recent events ---",
                "crash /c/crash/2026-11-27T01:22:10.222044Z_f978/meta")
    st = judge(f, "node3")
    assert st.life is DaemonLife.CRASHED
    assert st.signal == "SIGSEGV"
    assert st.crash_id == "2026-11-27T01:22:10.222044Z_f978" and not st.crash_posted
    assert "Caught signal (Segmentation fault)" in st.fatal_lines[-1]
    assert st.summary.startswith("crashed: SIGSEGV")


def test_a_crash_before_the_last_start_is_history_not_the_present() -> None:
    f = section("pidfile 1 12", "proc S ceph-osd -i 2", "log 1", start(20, 10),
                "fatal " + T.format(m=21) + "*** Caught signal (Aborted) **", start(22, 12),
                "crash /c/crash/posted/2026-11-27T01:21:10.2Z_a/meta",
                probes="osd.2 ok")
    assert judge(f, "node3").life is DaemonLife.RUNNING


def test_sigterm_is_stopped_on_purpose_and_names_who() -> None:
    f = section("pidfile 1 11", "log 1", start(20, 11),
                "fatal " + T.format(m=23) + "received  signal: Terminated from bash (PID: 9) UID: 0",
                "fatal " + T.format(m=23) + "osd.2 28 *** Got signal Terminated ***")
    st = judge(f, "node3")
    assert st.life is DaemonLife.STOPPED and st.signal == "SIGTERM"
    assert st.summary == "stopped cleanly by SIGTERM from bash (pid 9)"
    assert "received  signal: Terminated from bash (PID: 9)" in st.fatal_lines[0]


def test_sigkill_leaves_its_pid_file_and_no_word() -> None:
    f = section("pidfile 1 11", "log 1", start(20, 11), "last " + T.format(m=24) + "tick")
    st = judge(f, "node3")
    assert st.life is DaemonLife.CRASHED and st.signal == "SIGKILL?"
    assert "pid file is left behind" in st.summary


def test_the_oom_killer_is_named() -> None:
    f = section("pidfile 1 11", "log 1", start(20, 11),
                oom="2026-11-27T01:25:00+00:00 Out of memory: Killed process 11 (ceph-osd)")
    st = judge(f, "node3")
    assert st.life is DaemonLife.CRASHED and "OOM killer" in st.summary


@pytest.mark.parametrize(("state", "probe", "life"), [
    ("T", "osd.2 timeout", DaemonLife.HUNG),
    ("S", "osd.2 timeout", DaemonLife.HUNG),
    ("D", "osd.2 timeout", DaemonLife.HUNG),
    ("D", "osd.2 ok", DaemonLife.RUNNING),
    ("S", "osd.2 ok", DaemonLife.RUNNING),
])
def test_hung_is_state_t_or_a_silent_socket(state: str, probe: str, life: DaemonLife) -> None:
    f = section("pidfile 1 12", f"proc {state} ceph-osd -i 2", "log 1", start(20, 12),
                probes=probe)
    assert judge(f, "node3").life is life


def test_failed_lives_in_a_row_are_a_loop_and_deploy_starts_are_not() -> None:
    lines = ["pidfile 0", "log 1"]
    for i, m in enumerate((20, 22, 24)):  # each fails 6 s after its start
        lines += [start(m, 20 + i), "fatal " + SOON.format(m=m)
                  + "** ERROR: osd init failed: (2) No such file"]
    st = judge(section(*lines), "node3")
    assert st.life is DaemonLife.LOOPING
    assert "3 of its last lives ended in a failure" in st.summary
    assert "osd init failed" in st.summary
    # three crashes, each after a life of a minute or more: no loop, a crash
    lines = ["pidfile 0", "log 1"]
    for i, m in enumerate((20, 22, 24)):
        lines += [start(m, 20 + i),
                  "fatal " + T.format(m=m + 1) + "*** Caught signal (Aborted) **"]
    assert judge(section(*lines), "node3").life is DaemonLife.CRASHED
    # three plain starts (mkfs, start, restart) are no loop
    calm = section("pidfile 0", "log 1", start(20, 1), start(21, 2), start(22, 3),
                   "fatal " + T.format(m=23) + "received  signal: Terminated from kill")
    assert judge(calm, "node3").life is DaemonLife.STOPPED


def test_systemd_restart_counter_and_result() -> None:
    f = section("pidfile 0", "unit Id=ceph-osd@2.service", "unit NRestarts=0",
                "unit Result=signal", "unit ExecMainStatus=6")
    st = judge(f, "node3")
    assert st.life is DaemonLife.CRASHED and st.signal == "SIGABRT"
    loop = section("pidfile 0", "unit Id=ceph-osd@2.service", "unit NRestarts=5",
                   "unit Result=exit-code", "unit ExecMainStatus=1")
    assert judge(loop, "node3").life is DaemonLife.LOOPING


def test_a_daemon_without_a_trace_is_missing_and_a_removed_pid_file_is_a_stop() -> None:
    assert judge(section("pidfile 0"), "n").life is DaemonLife.MISSING
    f = parse_daemon_section("swift-object-server", "object-server", ["pidfile 0", "log 1"],
                             {}, {}, NOW, "/p", "/l")
    st = judge(f, "node1")
    assert st.life is DaemonLife.STOPPED and st.entity == "swift-object-server@node1"
    # gone with its pid file left and no crash line: a plain kill (SIGTERM kills a
    # workers=0 server outright), not a crash (issue 38.4)
    dead = parse_daemon_section("swift-object-server", "object-server",
                                ["pidfile 1 77", "log 1"], {}, {}, NOW, "/p", "/l")
    assert judge(dead, "node1").life is DaemonLife.STOPPED


@pytest.mark.parametrize(("raw", "want"), [
    ("osd.02", "osd.2"), ("mon.a", "mon.a"), ("mgr.x", "mgr.x"),
    ("swift-object-server@node1", "swift-object-server@node1"),
    ("memcached@node1", "memcached@node1"),
])
def test_daemon_targets(raw: str, want: str) -> None:
    assert canonical_daemon(raw) == want


@pytest.mark.parametrize("raw", ["swift-object-server", "nginx@node1", "mon.a;rm", "osd.x",
                                 "swift-object-server@no de"])
def test_bad_daemon_targets(raw: str) -> None:
    with pytest.raises(InvalidRequest):
        canonical_daemon(raw)


def test_the_facts_script_reads_a_daemon_for_real(tmp_path: Path) -> None:
    """The real ``sh`` script on this machine: our own process as the daemon (its pid
    file), a log with a start and a fatal line, a crash report naming it, and an admin
    socket that answers (a listening UNIX socket that writes back)."""
    import os
    import socket
    import subprocess
    import threading

    from storage.hostfacts.parse import split_sections
    from storage.hostfacts.scripts import DaemonProbe, facts_argv

    pidf = tmp_path / "osd.2.pid"
    pidf.write_text(f"{os.getpid()}\n")
    log = tmp_path / "osd.2.log"
    log.write_text(START.format(pid=1) + "\n" + T.format(m=22)
                   + "*** Caught signal (Aborted) **\n" + "   -5> 2026 noise shutdown\n")
    crash = tmp_path / "crash" / "2026-11-27T01:22:10.2Z_abc"
    crash.mkdir(parents=True)
    (crash / "meta").write_text('{\n    "entity_name": "osd.2",\n}\n')
    asok = tmp_path / "osd.2.asok"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(asok))
    srv.listen(1)

    def answer() -> None:
        c, _ = srv.accept()
        c.recv(64)
        c.sendall(b"\0\0\0\2{}")
        c.close()

    threading.Thread(target=answer, daemon=True).start()
    argv = facts_argv(str(tmp_path / "fstab"), [], [], [], [DaemonProbe(
        "osd.2", str(pidf), f"asok:{asok}", str(log), str(tmp_path / "crash"))])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    srv.close()
    sec = split_sections(out)
    f = parse_daemon_section("osd.2", "osd", sec["daemon osd.2"],
                             parse_probes(sec.get("probes", [])), {}, NOW, str(pidf), str(log),
                             "asok")
    assert f.alive and f.pid == os.getpid() and f.proc_state in ("R", "S")
    assert f.probe == "ok" and f.crash_ids == ("2026-11-27T01:22:10.2Z_abc",)
    assert [ln.split(" -1 ")[-1] for ln in f.fatal_lines] == ["*** Caught signal (Aborted) **"]
    assert len(f.start_lines) == 1 and "@@end" in out


def test_the_facts_script_keeps_the_fatal_line_of_a_dump_longer_than_its_tail(
        tmp_path: Path) -> None:
    """An abort under load dumps up to 10000 recent events after the ``Caught signal`` line:
    the tail read no longer reaches the first copy, the dump's ``0>`` entry is that line
    (CI met the crash read as "crash report" with no signal)."""
    import subprocess

    from storage.hostfacts.parse import split_sections
    from storage.hostfacts.scripts import DaemonProbe, facts_argv

    log = tmp_path / "osd.2.log"
    dump = "".join(f"  -{i}> " + T.format(m=22) + "noise shutdown\n" for i in range(6000, 0, -1))
    log.write_text(START.format(pid=1) + "\n" + T.format(m=22)
                   + "*** Caught signal (Aborted) **\n --- begin dump of recent events ---\n"
                   + dump + "     0> " + T.format(m=22) + "*** Caught signal (Aborted) **\n"
                   + "--- end dump of recent events ---\n")
    argv = facts_argv(str(tmp_path / "fstab"), [], [], [], [DaemonProbe(
        "osd.2", str(tmp_path / "osd.2.pid"), "", str(log), str(tmp_path / "crash"))])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    sec = split_sections(out)
    f = parse_daemon_section("osd.2", "osd", sec["daemon osd.2"],
                             parse_probes(sec.get("probes", [])), {}, NOW,
                             str(tmp_path / "osd.2.pid"), str(log), "")
    assert [ln.split(" -1 ")[-1] for ln in f.fatal_lines] == ["*** Caught signal (Aborted) **"]
    assert judge(f, "node3").signal == "SIGABRT"
