"""Running programs for the lab: one-shot commands, polled waits, and daemons tracked by
pid files (stopped by pid only after checking the process is the lab's own)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from storage.procs import pid_alive

if TYPE_CHECKING:
    from lab.site import LabSite


class LabError(Exception):
    """A lab step failed; names the step and the log to read."""

    def __init__(self, step: str, detail: str, log: str | None = None) -> None:
        msg = f"lab step '{step}' failed: {detail.strip()[-800:]}"
        if log:
            msg += f" (see {log})"
        super().__init__(msg)
        self.step = step
        self.log = log


def run(argv: list[str], step: str, timeout: float = 60, log: str | None = None,
        input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one command to its end; a failure (or a missing program) is a LabError."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           input=input, check=False)
    except subprocess.TimeoutExpired:
        raise LabError(step, f"{argv[0]} timed out after {timeout:.0f}s", log) from None
    except FileNotFoundError:
        raise LabError(step, f"{argv[0]} not found: install the lab packages "
                       "(scripts/setup)", log) from None
    if check and p.returncode != 0:
        raise LabError(step, f"{' '.join(argv)} exited {p.returncode}: {p.stderr or p.stdout}",
                       log)
    return p


def wait(cond: Callable[[], bool], timeout: float, step: str, what: str,
         log: str | None = None, interval: float = 0.3) -> None:
    """Poll ``cond`` until it holds; a LabError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(interval)
    raise LabError(step, f"timed out after {timeout:.0f}s waiting for {what}", log)


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def group_members(pgid: int) -> list[int]:
    """The live processes of one process group (zombies, already ended, left out)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        # fields after the command's ")": state, ppid, pgrp
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            found.append(int(d.name))
    return found


class Procs:
    """The daemons of one lab, by name (``mon.a``, ``osd.1``, ``swift-object``, ...)."""

    def __init__(self, lab: LabSite) -> None:
        self.lab = lab

    def pidfile(self, name: str) -> Path:
        if name.startswith(("mon.", "mgr.", "osd.")):
            return self.lab.run_dir / f"ceph-{name}.pid"
        return self.lab.pids / f"{name}.pid"

    def pid(self, name: str) -> int | None:
        try:
            pid = int(self.pidfile(name).read_text().strip())
        except (OSError, ValueError):
            return None
        if not pid_alive(pid):
            return None
        # pid reuse guard: the process must be one of ours (its command line names our
        # base directory or our port)
        cl = cmdline(pid)
        if str(self.lab.base) not in cl and str(self.lab.ports.memcached) not in cl:
            return None
        return pid

    def stop(self, name: str, timeout: float = 20) -> bool:
        """Stop one daemon of this lab by its pid file. True if it was running."""
        pid = self.pid(name)
        if pid is None:
            return False
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.1)
        if pid_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            while pid_alive(pid):
                time.sleep(0.05)
        if not name.startswith(("mon.", "mgr.", "osd.")):
            # as swift-init does after a stop: a pid file left behind means the daemon
            # died on its own (checks/daemons.py), not that someone stopped it
            self.pidfile(name).unlink(missing_ok=True)
        return True

    def stop_group(self, name: str, timeout: float = 20) -> bool:
        """Stop a supervisor spawned by ``spawn`` and every process it started: they share
        its session's process group, and a child left running (a ceph-osd in the middle of
        a start) would hold the daemon's pid-file lock from the next start."""
        pid = self.pid(name)
        if pid is None:
            return False
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and group_members(pid):
                time.sleep(0.1)
            if not group_members(pid):
                break
        self.pidfile(name).unlink(missing_ok=True)
        return True

    def spawn(self, name: str, argv: list[str], step: str) -> int:
        """Start a non-daemonizing server in its own session, stdout to its log."""
        log = self.lab.log_dir / f"{name}.log"
        with open(log, "ab") as out:
            try:
                p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     close_fds=True)
            except FileNotFoundError:
                raise LabError(step, f"{argv[0]} not found: install the lab packages "
                               "(scripts/setup)", str(log)) from None
        self.pidfile(name).write_text(str(p.pid))
        time.sleep(0.05)
        if p.poll() is not None:
            raise LabError(step, f"{name} exited at once with {p.returncode}", str(log))
        return p.pid
