"""One model of a daemon's life, for every kind stordoc looks after: Ceph's mon, mgr and
osd, Swift's proxy, account/container/object servers, replicators, auditors, updaters,
rsyncd and memcached.

``DaemonFacts`` is what a host said about one daemon over SSH (the facts script's
``@@daemon NAME`` section: its pid file, the process state, whether its admin socket or
port answered, the fatal lines and the start lines of its log, its crash reports); the
judgement (``checks.daemons.judge``) turns it into a ``DaemonLife`` with its evidence.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# kinds, by the name a daemon carries in the settings and on its host
CEPH_KINDS = ("mon", "mgr", "osd")
SWIFT_KINDS = ("proxy-server", "account-server", "container-server", "object-server",
               "account-replicator", "container-replicator", "object-replicator",
               "account-auditor", "container-auditor", "object-auditor",
               "container-updater", "object-updater", "object-expirer")
OTHER_KINDS = ("rsyncd", "memcached")


def daemon_kind(name: str) -> str:
    """``osd.3`` -> ``osd``; ``swift-object-server`` -> ``object-server``; ``memcached``.
    ValueError for a name of no known kind."""
    head, dot, _ = name.partition(".")
    if dot and head in CEPH_KINDS:
        return head
    if name.startswith("swift-") and name[len("swift-"):] in SWIFT_KINDS:
        return name[len("swift-"):]
    if name in OTHER_KINDS:
        return name
    raise ValueError(f"{name!r} is no daemon stordoc knows: mon.ID, mgr.ID, osd.N, "
                     f"swift-<{'|'.join(SWIFT_KINDS)}>, {', '.join(OTHER_KINDS)}")


class DaemonLife(enum.Enum):
    """Where a daemon is in its life (worst first for sorting is the check's business)."""

    RUNNING = "running"
    CRASHED = "crashed"  # died without a clean shutdown: signal, abort, killed
    STOPPED = "stopped"  # shut down cleanly (on purpose): SIGTERM, shutdown logged
    HUNG = "hung"  # alive, but its admin socket/port does not answer, or state D/T
    LOOPING = "restart-looping"  # started again and again within the window
    MISSING = "missing"  # configured, but no trace of it on the host


@dataclass(frozen=True)
class DaemonFacts:
    """What one host said about one daemon (``@@daemon NAME``). Times are the host's
    epoch seconds; log lines are as the daemon wrote them."""

    name: str  # "osd.2", "mon.a", "swift-object-server", "memcached"
    kind: str  # daemon_kind(name)
    pid_file: str = ""
    pid_file_present: bool = False
    pid: int | None = None
    alive: bool = False  # the pid file's process exists (and is not a zombie)
    proc_state: str = ""  # /proc/PID/stat state: R S D T t Z
    cmdline: str = ""
    probe: str = "none"  # ok | timeout | refused | error | none (nothing to ask)
    probe_detail: str = ""  # what was asked: "asok /run/ceph/ceph-osd.2.asok", "http :6200"
    log_file: str = ""
    log_read: bool = False  # the log file was there and read
    log_last: str = ""  # its last line
    fatal_lines: tuple[str, ...] = ()  # the last lines that tell how it ended
    start_lines: tuple[str, ...] = ()  # its last start lines ("ceph version ... pid N")
    start_times: tuple[float, ...] = ()  # when each of those starts happened (parsed)
    crash_ids: tuple[str, ...] = ()  # crash reports of this daemon in the crash dir, newest last
    crash_posted: tuple[str, ...] = ()  # of those, the ones ceph-crash already posted
    oom_lines: tuple[str, ...] = ()  # kernel OOM-killer lines naming this daemon's pid
    unit: str = ""  # its systemd unit when systemd runs it
    unit_restarts: int | None = None  # systemd's NRestarts
    unit_result: str = ""  # systemd's Result (signal, core-dump, exit-code, success)
    unit_status: str = ""  # ExecMainStatus (exit code or signal number)
    now: float = 0.0  # the host's clock when it answered


@dataclass(frozen=True)
class DaemonStatus:
    """The judged life of one daemon on one host, with the evidence for it."""

    name: str
    kind: str
    host: str
    life: DaemonLife
    summary: str  # one line: "crashed: SIGSEGV (Segmentation fault), crash 2026-...; ..."
    pid: int | None = None
    signal: str | None = None  # SIGSEGV, SIGABRT, SIGKILL? (None when unknown)
    crash_id: str | None = None  # the newest crash report Ceph made for it
    crash_posted: bool = False  # ceph-crash posted it (``crash ls-new`` can list it)
    fatal_lines: tuple[str, ...] = ()
    starts_in_window: int = 0
    evidence: tuple[str, ...] = ()  # one fact per line
    log_file: str = ""
    pid_file: str = ""

    @property
    def entity(self) -> str:
        """``osd.2``, ``mon.a`` (unique in the cluster); Swift and the rest by host:
        ``swift-object-server@node1``."""
        return self.name if self.kind in CEPH_KINDS else f"{self.name}@{self.host}"
