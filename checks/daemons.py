"""A daemon's life, judged from what its host said (``storage.model.daemons``): running,
crashed (signal, Ceph's crash report, the fatal log lines), stopped on purpose (a clean
shutdown logged, or its pid file removed as a clean stop does), hung (alive, but state
T/D or its admin socket/port silent), restart-looping (systemd's restart counter, or
starts in its log within a window), or missing.

One pure function (``judge``) for the check below, the restart runbook's refusals and the
front ends: a rule written twice drifts.

OSD codes carry the OSD as entity (``osd.2``) so that they fold with Ceph's OSD_DOWN in
one incident; every other daemon's codes are ``DAEMON_*`` with its entity (``mon.a``,
``swift-object-server@node1``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import ClusterSnapshot, DaemonFacts, DaemonLife, DaemonStatus, HostFacts
from storage.model.daemons import CEPH_KINDS

# a daemon that started this many times within the window loops (systemd's default
# StartLimitBurst is 5 in 10 s; Ceph's units allow 3 in 30 min)
LOOP_STARTS = 3
LOOP_WINDOW_S = 1800.0
FRESH_S = 60.0
LOOP_LIFE_S = 30.0  # a life that failed sooner than this after its start is part of a loop  # a daemon that started less than this ago has not proved it stays up

_SIGNALS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
            "Illegal instruction": "SIGILL", "Floating point exception": "SIGFPE"}
_SIGNUM = {"4": "SIGILL", "6": "SIGABRT", "7": "SIGBUS", "8": "SIGFPE", "9": "SIGKILL",
           "11": "SIGSEGV", "15": "SIGTERM"}
_CAUGHT_RE = re.compile(r"Caught signal \(([^)]+)\)")
_ASSERT_RE = re.compile(r"ceph_assert|FAILED assert|terminate called")
_CLEAN_RE = re.compile(r"received  ?signal: (Terminated|Interrupt|Hangup)|Got [Ss]ignal "
                       r"(Terminated|Interrupt)|starting shutdown|shutdown complete|SIGTERM")
_TS_RE = re.compile(r"\s*(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)")
# who sent a stop: Ceph's "received  signal: Terminated from bash /dev/fd/3  (PID: 4795)"
_FROM_RE = re.compile(r"signal: \w+ from (.*?)\s*\(PID: (\d+)\)")


def _line_time(line: str) -> float | None:
    from storage.hostfacts.parse import log_time

    return log_time(line)


def crash_time(crash_id: str) -> float | None:
    """``2026-11-27T01:22:28.888270Z_c12b...`` -> epoch seconds."""
    m = _TS_RE.match(crash_id)
    if not m:
        return None
    try:
        return datetime.fromisoformat(m.group(1) + "+00:00").timestamp()
    except ValueError:
        return None


_FAILED_RE = re.compile(r"Caught signal|ceph_assert|FAILED assert|terminate called|"
                        r"init failed|unable to mount|Traceback")


def _failed_lives(starts: tuple[float, ...], fatal: tuple[str, ...], window_s: float,
                  now: float, life_s: float = LOOP_LIFE_S) -> int:
    """How many of the latest lives in a row (from one start to the next, the newest
    first) ended in a crash or a failed start within ``life_s`` of starting: a loop. A
    life that ran a while, or ended without a failure, ends the count."""
    times = sorted(t for t in (_line_time(ln) for ln in fatal if _FAILED_RE.search(ln))
                   if t is not None)
    n = 0
    for i in range(len(starts) - 1, -1, -1):
        t0 = starts[i]
        if now and now - t0 > window_s:
            break
        t1 = starts[i + 1] if i + 1 < len(starts) else float("inf")
        if not any(t0 <= t < min(t1, t0 + life_s) for t in times):
            if i == len(starts) - 1 and not any(t0 <= t for t in times) and n == 0 \
                    and (not now or now - t0 < life_s):
                continue  # the current life is young and has not failed (yet)
            break
        n += 1
    return n


def judge(f: DaemonFacts, host: str, window_s: float = LOOP_WINDOW_S,
          loop_starts: int = LOOP_STARTS) -> DaemonStatus:
    """The life of one daemon, with its evidence (one fact per line)."""
    ev: list[str] = []
    last_start = f.start_times[-1] if f.start_times else None
    recent = [t for t in f.start_times if not f.now or f.now - t <= window_s]
    # a loop is lives that ended in failure, one after the other: starts alone are not
    # (deployment and maintenance start a daemon several times in a row)
    failed = _failed_lives(f.start_times, f.fatal_lines, window_s, f.now)
    looping = (f.unit_restarts is not None and f.unit_restarts >= loop_starts) \
        or failed >= loop_starts
    # what the log says since the last start (older lines are an earlier life)
    since = [ln for ln in f.fatal_lines
             if last_start is None or (_line_time(ln) or last_start) >= last_start]
    crash = next((c for c in reversed(f.crash_ids)
                  if last_start is None or (crash_time(c) or 0.0) >= last_start - 1.0), None)
    if f.pid_file:
        ev.append(f"pid file {f.pid_file}: " + (
            f"pid {f.pid}" if f.pid_file_present and f.pid else
            "present, empty" if f.pid_file_present else "absent"))
    if f.alive:
        ev.append(f"process {f.pid} state {f.proc_state}: {f.cmdline[:160]}")
    if f.probe != "none":
        ev.append(f"{f.probe_detail or 'probe'}: {f.probe}")
    if f.unit:
        ev.append(f"systemd {f.unit}: Result={f.unit_result or '?'} "
                  f"ExecMainStatus={f.unit_status or '?'} NRestarts={f.unit_restarts}")
    if f.log_read:
        ev.append(f"log {f.log_file}: last line: {f.log_last[:300]}")
    elif f.log_file:
        ev.append(f"log {f.log_file}: not readable")
    if recent:
        ev.append(f"{len(recent)} start(s) in the last {window_s / 60:.0f} min of its log")

    def status(life: DaemonLife, summary: str, sig: str | None = None,
               fatal: Iterable[str] = ()) -> DaemonStatus:
        return DaemonStatus(f.name, f.kind, host, life, summary, f.pid, sig, crash,
                            crash in f.crash_posted if crash else False, tuple(fatal),
                            len(recent), tuple(ev), f.log_file, f.pid_file)

    loop_why = (f"systemd restarted it {f.unit_restarts} times" if f.unit_restarts
                and f.unit_restarts >= loop_starts else
                f"{failed} of its last lives ended in a failure within "
                f"{window_s / 60:.0f} min (its log)")
    if f.alive:
        if f.proc_state in ("T", "t"):
            return status(DaemonLife.HUNG, f"hung: process {f.pid} is stopped (state "
                          f"{f.proc_state}: SIGSTOP, SIGTSTP or a debugger)"
                          + (f"; {f.probe_detail or 'probe'} {f.probe}"
                             if f.probe == "timeout" else ""))
        if f.probe == "timeout":
            return status(DaemonLife.HUNG, f"hung: process {f.pid} (state {f.proc_state}) "
                          f"does not answer ({f.probe_detail or 'probe'} timed out)")
        if f.proc_state == "D" and f.probe not in ("ok",):
            # the facts script reports D only when it stayed D over 5 looks in 1 s
            return status(DaemonLife.HUNG, f"hung: process {f.pid} stays in uninterruptible "
                          "I/O (state D for a second and more)")
        # a daemon up for a while is running whatever its history (the starts stay as
        # evidence); one that started moments ago after many starts is still looping
        fresh = last_start is not None and bool(f.now) and f.now - last_start < FRESH_S
        if looping and (fresh or (f.unit_restarts or 0) >= loop_starts):
            return status(DaemonLife.LOOPING, f"restart-looping: {loop_why}; "
                          f"running now as pid {f.pid}", fatal=since[-3:])
        return status(DaemonLife.RUNNING, f"running as pid {f.pid}")
    caught_at = [i for i, ln in enumerate(since)
                 if _CAUGHT_RE.search(ln) or _ASSERT_RE.search(ln)]
    stop_at = [i for i, ln in enumerate(since) if _CLEAN_RE.search(ln)]
    # a stop asked for before any crash line: the life ended on purpose, whatever
    # happened while it shut down (ceph-mgr may crash in its modules' teardown)
    stopped_first = bool(stop_at) and (not caught_at or stop_at[0] < caught_at[0])
    if looping:
        last = (since[-1] if since else f.log_last)[:200]
        return status(DaemonLife.LOOPING, f"restart-looping: {loop_why}; not running now"
                      + (f"; last: {last}" if last else ""), fatal=since[-3:])
    if caught_at and not stopped_first:
        caught = [m.group(1) for m in (_CAUGHT_RE.search(ln) for ln in since) if m]
        sig = _SIGNALS.get(caught[-1], caught[-1]) if caught else "SIGABRT"
        what = f"{sig} ({caught[-1]})" if caught else "an assertion (abort)"
        fatal = [since[i] for i in caught_at]
        return status(DaemonLife.CRASHED, f"crashed: {what}"
                      + (f", crash report {crash}" if crash else "")
                      + (f"; log: {fatal[-1].strip()[:200]}" if fatal else ""),
                      sig, fatal[-3:])
    if f.unit_result in ("signal", "core-dump", "exit-code", "watchdog"):
        usig: str | None = _SIGNUM.get(f.unit_status, f"signal {f.unit_status}") \
            if f.unit_result != "exit-code" else None
        what = usig or f"exit code {f.unit_status}"
        return status(DaemonLife.CRASHED, f"crashed: {what} (systemd: {f.unit_result})"
                      + (f", crash report {crash}" if crash else ""), usig, since[-3:])
    if f.oom_lines:
        return status(DaemonLife.CRASHED, f"killed by the kernel's OOM killer: "
                      f"{f.oom_lines[-1][:200]}", "SIGKILL", f.oom_lines[-1:])
    if stopped_first:
        first = since[stop_at[0]]
        stop_sig = stop_signal(first)
        if caught_at:
            ev.append(f"it crashed while shutting down: {since[caught_at[0]].strip()[:200]}")
        if f.kind in QUIET_STOP:
            # the same words whether or not the daemon got to log its stop (below)
            return status(DaemonLife.STOPPED, quiet_stop(f), stop_sig,
                          fatal=[since[i] for i in stop_at][:3])
        who = _FROM_RE.search(first)
        # the sender's program (its whole command line stays in the evidence's log lines)
        prog = who.group(1).split()[0].rsplit("/", 1)[-1] if who and who.group(1).split() \
            else "?"
        by = f" from {prog} (pid {who.group(2)})" if who else ""
        return status(DaemonLife.STOPPED,
                      f"stopped cleanly by {stop_sig}{by}" if stop_sig else
                      f"stopped cleanly: {_TS_RE.sub('', first).strip()[:160]}", stop_sig,
                      fatal=[since[i] for i in stop_at][:3])
    if crash:
        return status(DaemonLife.CRASHED, f"crashed: crash report {crash}", None, since[-3:])
    if f.pid_file_present and f.kind in QUIET_STOP:
        return status(DaemonLife.STOPPED, quiet_stop(f))
    if f.pid_file_present and f.kind in CEPH_KINDS:
        # Ceph's own handler logs every fatal signal it can catch: silence is SIGKILL
        told = "no crash report, no fatal or shutdown line in its log" if f.log_read else \
            "its log was not read"
        return status(DaemonLife.CRASHED, f"killed: pid {f.pid} is gone without a clean "
                      f"shutdown ({told}; SIGKILL or the OOM killer leave no trace); its pid "
                      "file is left behind", "SIGKILL?")
    if f.pid_file_present:
        return status(DaemonLife.CRASHED, f"died: pid {f.pid} is gone and its pid file is "
                      "left behind; nothing in its log says why")
    # a daemon with no log configured (memcached) and its pid file removed was stopped:
    # missing is a configured log (or no pid file to go by) with no trace either
    if not f.log_read and not f.start_lines and not f.crash_ids \
            and (f.log_file or not f.pid_file or f.kind not in QUIET_STOP):
        return status(DaemonLife.MISSING, "missing: no process, no pid file, no log")
    if f.kind in QUIET_STOP:
        return status(DaemonLife.STOPPED, quiet_stop(f))
    return status(DaemonLife.STOPPED, "stopped: no process, and its pid file was removed as "
                  "a clean stop does" + (f"; log: {f.log_last[:160]}" if f.log_last else ""))


# Daemons whose stop leaves no reliable word: ceph-mgr answers SIGTERM/SIGINT with
# ``_exit(0)`` at once (its Python modules do not shut down reliably), leaving its pid
# file and admin socket, and its "*** Got signal Terminated ***" line is lost as often
# as not (its log is written by a thread that dies with it); a Swift server with
# ``workers = 0`` dies of SIGTERM's default action, and swift-init, not the server,
# removes its pid file; memcached and rsync say nothing. Gone without a crash line, a
# crash report or an OOM kill, such a daemon is judged stopped, in the same words
# whether or not a stop line made it to its log: two stops are one diagnosis.
QUIET_STOP = frozenset({"mgr", "proxy-server", "account-server", "container-server",
                        "object-server", "account-replicator", "container-replicator",
                        "object-replicator", "account-auditor", "container-auditor",
                        "object-auditor", "container-updater", "object-updater",
                        "object-expirer", "memcached", "rsyncd"})
_STOP_SIGNALS = (("Terminated", "SIGTERM"), ("SIGTERM", "SIGTERM"), ("Interrupt", "SIGINT"),
                 ("SIGINT", "SIGINT"), ("Hangup", "SIGHUP"), ("SIGHUP", "SIGHUP"))


def stop_signal(line: str) -> str | None:
    """The signal a stop line names (``received  signal: Terminated`` -> SIGTERM); None
    for a shutdown logged without one."""
    return next((sig for word, sig in _STOP_SIGNALS if word in line), None)


def quiet_stop(f: DaemonFacts) -> str:
    """The one summary of a daemon of ``QUIET_STOP`` that is gone without a crash."""
    seen = "no crash report, no crash line in its log" if f.kind == "mgr" else \
        "no crash line in its log" if f.log_read else "no log to read"
    how = ("ceph-mgr exits at once on SIGTERM, without a clean shutdown" if f.kind == "mgr"
           else "a plain kill leaves its pid file" if f.pid_file_present
           else "its pid file was removed, as a stop by its init script does")
    return f"stopped: its process is gone without a crash ({seen}, no OOM kill; {how})"


def statuses(facts: HostFacts) -> Iterator[DaemonStatus]:
    for f in facts.daemon_facts:
        yield judge(f, facts.name)


def status_on(facts: HostFacts, name: str) -> DaemonStatus | None:
    """The judged life of daemon ``name`` on this host; None when not watched there."""
    f = next((x for x in facts.daemon_facts if x.name == name), None)
    return judge(f, facts.name) if f is not None else None


def status_of(snap: ClusterSnapshot, name: str, host: str | None = None) -> DaemonStatus | None:
    """The judged life of daemon ``name`` (``osd.2``, ``mon.a``, ``swift-object-server``)
    on ``host`` (any host when None)."""
    for hname, facts in sorted(snap.hosts.items()):
        if host is not None and hname != host:
            continue
        for f in facts.daemon_facts:
            if f.name == name:
                return judge(f, hname)
    return None


CODES = (
    CodeInfo("OSD_DAEMON_CRASHED", Severity.CRIT,
             "An OSD's daemon died without a clean shutdown: the signal, Ceph's crash "
             "report and the last fatal log lines are the evidence.", "daemon-restart"),
    CodeInfo("OSD_DAEMON_HUNG", Severity.CRIT,
             "An OSD's process is alive but does not answer its admin socket, or is "
             "stopped (state T) or stuck in I/O (state D).", "daemon-restart"),
    CodeInfo("OSD_DAEMON_RESTART_LOOP", Severity.CRIT,
             "An OSD's daemon started again and again (systemd's restart counter or its "
             "log): restarting it once more will not help; read what the loop shows."),
    CodeInfo("DAEMON_CRASHED", Severity.CRIT,
             "A Ceph mon/mgr or Swift/rsync/memcached daemon died without a clean "
             "shutdown.", "daemon-restart"),
    CodeInfo("DAEMON_HUNG", Severity.CRIT,
             "A daemon's process is alive but its admin socket or port does not answer, or "
             "it is stopped (state T) or stuck in I/O (state D).", "daemon-restart"),
    CodeInfo("DAEMON_RESTART_LOOP", Severity.CRIT,
             "A daemon started again and again: read what the loop shows."),
    CodeInfo("DAEMON_STOPPED", Severity.WARN,
             "A daemon was stopped (a clean shutdown, or gone without any crash) and is "
             "not running.", "daemon-start"),
    CodeInfo("DAEMON_MISSING", Severity.WARN,
             "A daemon named in the host's settings left no trace: no process, no pid file, "
             "no log."),
)
_CODE = {DaemonLife.CRASHED: "DAEMON_CRASHED", DaemonLife.HUNG: "DAEMON_HUNG",
         DaemonLife.LOOPING: "DAEMON_RESTART_LOOP", DaemonLife.STOPPED: "DAEMON_STOPPED",
         DaemonLife.MISSING: "DAEMON_MISSING"}
_OSD_CODE = {DaemonLife.CRASHED: "OSD_DAEMON_CRASHED", DaemonLife.HUNG: "OSD_DAEMON_HUNG",
             DaemonLife.LOOPING: "OSD_DAEMON_RESTART_LOOP"}


STORAGE_SERVERS = ("account-server", "container-server", "object-server")


def _recon_refused(snap: ClusterSnapshot, facts: HostFacts, kind: str) -> bool:
    """Recon of this host's ``kind`` server (``object-server``) refuses connections: the
    one problem is SWIFT_SERVER_DOWN's (its runbook starts the server), not a second
    incident of the daemon."""
    if snap.swift is None:
        return False
    server = kind.split("-", 1)[0]
    return any(r.server == server and r.ip == facts.address
               and r.error_kind in ("refused", "unreachable") for r in snap.swift.recon)


def evidence(st: DaemonStatus) -> dict[str, object]:
    ev: dict[str, object] = {"host": st.host, "daemon": st.name, "kind": st.kind,
                             "life": st.life.value,
                             "pid": st.pid, "facts": list(st.evidence)}
    if st.signal:
        ev["signal"] = st.signal
    if st.crash_id:
        ev["crash_id"] = st.crash_id
        ev["crash_posted"] = st.crash_posted
    if st.fatal_lines:
        ev["log_tail"] = list(st.fatal_lines)
    if st.starts_in_window:
        ev["starts_in_window"] = st.starts_in_window
    return ev


def loop_step(st: DaemonStatus) -> str | None:
    """A restart loop's first step by hand, an exact command that shows why its lives end:
    Ceph's crash report when one was posted, else the end of its log on its host (no
    runbook restarts a loop: one more start would end the same way)."""
    tail = "fix that, then start it once (daemon-start refuses a loop)"
    if st.crash_id and st.crash_posted:
        return f"read why it crashed: `ceph crash info {st.crash_id}`; {tail}"
    if st.log_file and not any(c.isspace() or c in "`'\"$" for c in st.log_file):
        return f"read why each life ended: `tail -n 50 {st.log_file}` on {st.host}; {tail}"
    return None


@check("daemon-life", codes=CODES, needs=("hosts",), reads=("swift",))
def daemon_life(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    """Every watched daemon's life on its host. An OSD that is stopped on purpose stays
    ``OSD_DAEMON_STOPPED`` (checks/mounts.py, with the shutdown line as evidence)."""
    osds = {o.name: o for o in snap.ceph.osds} if snap.ceph is not None else {}
    out: list[Finding] = []
    for hname, facts in sorted(snap.hosts.items()):
        if not facts.reachable:
            continue
        for st in statuses(facts):
            if st.life is DaemonLife.RUNNING:
                continue
            if st.kind == "osd":
                o = osds.get(st.name)
                code = _OSD_CODE.get(st.life)
                if code is None or o is None:
                    continue  # stopped/missing OSDs: checks/mounts.py says why
                # still up in the map is no reason to wait: the monitor marks a crashed
                # OSD down a moment later, a hung one after its peers' grace (20 s)
                sev = Severity.CRIT if o.in_ else Severity.WARN
                since = o.down_since
            elif st.kind in STORAGE_SERVERS and _recon_refused(snap, facts, st.kind):
                continue  # SWIFT_SERVER_DOWN says it, with this life (checks/swift_servers)
            else:
                code = _CODE[st.life]
                sev = Severity.WARN if st.life in (DaemonLife.STOPPED, DaemonLife.MISSING) \
                    else Severity.CRIT
                since = None
            runbook = "daemon-restart" if st.life in (DaemonLife.CRASHED, DaemonLife.HUNG) \
                else "daemon-start" if st.life is DaemonLife.STOPPED else None
            ev = evidence(st)
            if st.life is DaemonLife.LOOPING and (why := loop_step(st)):
                ev["manual"] = why
            out.append(Finding(code, sev, st.entity,
                               f"{st.name} on {hname} {st.summary}", ev,
                               runbook=runbook, target=st.entity if runbook else None,
                               since=since))
    return out
