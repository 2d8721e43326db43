"""Process liveness on this machine, shared by the lab (its daemons) and the audit
(stale locks): a zombie counts as dead, a process we may not signal as alive. A process
is named by its pid and its start (``process_start``: the boot and the start time in
clock ticks since boot), so a pid the kernel gave to another process since is not it."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def process_start(pid: int) -> str | None:
    """``BOOT_ID:STARTTIME`` of process ``pid`` (``/proc/PID/stat`` field 22, clock ticks
    after boot), None when it is not there (or no /proc)."""
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    # after the name: state is field 3, starttime field 22
    if len(fields) < 20:
        return None
    return f"{_boot_id()}:{fields[19]}"


def process_gone(pid: int, start: str | None) -> bool:
    """The process ``pid`` that started at ``start`` (``process_start``; None: not
    recorded) is no longer there: dead, a zombie, or its pid now another process's."""
    if not pid_alive(pid):
        return True
    if not start:
        return False
    now = process_start(pid)
    return now is not None and now != start
