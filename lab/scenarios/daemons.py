"""A daemon's life, broken for real: an OSD that crashes (SIGSEGV: Ceph's fatal-signal
handler logs "Caught signal (Segmentation fault)" and writes a crash report to the lab's
crash dir, which the lab then posts as the ceph-crash agent does) and an OSD that hangs
(SIGSTOP: process state T, its admin socket does not answer; its peers report it and the
monitor marks it down)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from lab.procs import LabError, wait
from lab.scenarios.base import OSD_ANY, FaultArgs, Scenario
from storage.procs import pid_alive

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return ""


def crash_reports(lab: Lab, entity: str) -> list[Path]:
    """The crash report dirs Ceph wrote for ``entity`` (not yet posted), oldest first."""
    out = []
    for meta in sorted((lab.ceph_dir / "crash").glob("*/meta")):
        try:
            if json.loads(meta.read_text()).get("entity_name") == entity:
                out.append(meta.parent)
        except (OSError, ValueError):
            continue
    return out


def post_crashes(lab: Lab, entity: str, step: str) -> list[str]:
    """What the ceph-crash agent does every 10 minutes, once: ``ceph crash post`` each
    finished report of ``entity`` and move it to ``crash/posted/``."""
    posted = lab.ceph_dir / "crash" / "posted"
    posted.mkdir(exist_ok=True)
    done = []
    for d in crash_reports(lab, entity):
        done_file = d / "done"
        wait(done_file.exists, 30, step, f"{d.name} written")
        lab.ceph("crash", "post", "-i", lab.system.daemon_path(d / "meta"), step=step)
        os.rename(d, posted / d.name)
        done.append(d.name)
    return done


class OsdCrash(Scenario):
    name = "osd-crash"
    summary = "an OSD crashes (SIGSEGV): Ceph logs the signal and writes a crash report"
    options = (OSD_ANY,)
    heal_options = (OSD_ANY,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"break osd-crash osd.{osd}"
        pid = lab.pid(f"osd.{osd}")
        if pid is None:
            raise LabError(step, f"osd.{osd} is not running")
        os.kill(pid, signal.SIGSEGV)
        wait(lambda: not pid_alive(pid), 60, step, f"osd.{osd} (pid {pid}) gone")
        crashes = post_crashes(lab, f"osd.{osd}", step)
        wait(lambda: lab.osd_up(osd) is False, 60, step, f"osd.{osd} down")
        return (f"kill -SEGV {pid} (osd.{osd}): crashed, crash report "
                f"{', '.join(crashes) or 'none'} posted as ceph-crash would")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"heal osd-crash osd.{osd}"
        if lab.pid(f"osd.{osd}") is None:
            lab.start_osd(osd)
        wait(lambda: lab.osd_up(osd) is True, 60, step, f"osd.{osd} up",
             str(lab.log_dir / f"ceph-osd.{osd}.log"))
        lab.ceph("crash", "archive-all", step=step)
        lab.wait_pgs_clean(300, step)
        return f"osd.{osd} started, crash reports archived"


class OsdHung(Scenario):
    name = "osd-hung"
    summary = "an OSD hangs (SIGSTOP): alive in state T, its admin socket silent"
    options = (OSD_ANY,)
    heal_options = (OSD_ANY,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"break osd-hung osd.{osd}"
        pid = lab.pid(f"osd.{osd}")
        if pid is None:
            raise LabError(step, f"osd.{osd} is not running")
        os.kill(pid, signal.SIGSTOP)
        wait(lambda: _proc_state(pid) == "T", 10, step, f"osd.{osd} (pid {pid}) stopped")
        # its peers miss its heartbeats (osd_heartbeat_grace, 20 s) and report it
        wait(lambda: lab.osd_up(osd) is False, 120, step, f"osd.{osd} marked down")
        return f"kill -STOP {pid} (osd.{osd}): hung in state T, marked down by its peers"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"heal osd-hung osd.{osd}"
        pid = lab.pid(f"osd.{osd}")
        if pid is not None and _proc_state(pid) in ("T", "t"):
            os.kill(pid, signal.SIGCONT)  # it learns it was marked down and boots again
        elif pid is None:
            lab.start_osd(osd)
        wait(lambda: lab.osd_up(osd) is True, 90, step, f"osd.{osd} up",
             str(lab.log_dir / f"ceph-osd.{osd}.log"))
        lab.wait_pgs_clean(300, step)
        return f"osd.{osd} running and up"


# a restart loop needs a supervisor that restarts the daemon when it exits: systemd's
# Restart=on-failure in production; the lab has no systemd, so a shell loop of its own
# (``osd-N-loop``, pid in the lab's pids dir) restarts ceph-osd in the foreground with
# systemd's RestartSec, and the OSD fails at every start: its ``block`` symlink is moved
# aside, so BlueStore cannot open its device ("osd init failed"). What tells the loop is
# what tells it without systemd too: the lives in the OSD's log, each ended by a failure.
LOOP_SCRIPT = r"""
stop=$1; shift
while [ ! -e "$stop" ]; do
  "$@" -f >/dev/null 2>&1
  sleep 1
done
"""
BLOCK_ASIDE = "block.stordoc-lab-loop"


class OsdRestartLoop(Scenario):
    name = "osd-restart-loop"
    summary = ("an xfs OSD restarted again and again by a supervisor, failing at each start "
               "(its block symlink moved aside)")
    options = (OSD_ANY,)
    heal_options = (OSD_ANY,)

    @staticmethod
    def _stopfile(lab: Lab, osd: int) -> Path:
        return lab.pids / f"osd-{osd}-loop.stop"

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"break osd-restart-loop osd.{osd}"
        if lab.kinds[osd] != "xfs":
            raise LabError(step, f"osd.{osd} is a {lab.kinds[osd]} OSD; the loop moves an "
                           "xfs OSD's block symlink")
        d = lab.osd_dir(osd)
        lab.stop(f"osd.{osd}")
        os.rename(d / "block", d / BLOCK_ASIDE)
        self._stopfile(lab, osd).unlink(missing_ok=True)
        log = lab.log_dir / f"ceph-osd.{osd}.log"
        before = log.read_text(errors="replace").count("osd init failed") \
            if log.exists() else 0
        lab.procs.spawn(f"osd-{osd}-loop",
                        ["sh", "-c", LOOP_SCRIPT, "stordoc-lab-loop",
                         str(self._stopfile(lab, osd)), *lab.ceph_cluster.osd_start_argv(osd)],
                        step)
        wait(lambda: log.read_text(errors="replace").count("osd init failed") >= before + 3,
             90, step, f"osd.{osd} failing three starts in a row", str(log))
        wait(lambda: lab.osd_up(osd) is False, 60, step, f"osd.{osd} down")
        return (f"osd.{osd} restart-looping: a supervisor restarts it every second and each "
                f"start fails (block symlink moved to {BLOCK_ASIDE})")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"heal osd-restart-loop osd.{osd}"
        self._stopfile(lab, osd).touch()
        # the loop and the ceph-osd it started last: that one may be mid-start, holding
        # the OSD's pid-file lock
        lab.procs.stop_group(f"osd-{osd}-loop")
        self._stopfile(lab, osd).unlink(missing_ok=True)
        d = lab.osd_dir(osd)
        if (d / BLOCK_ASIDE).is_symlink():
            os.rename(d / BLOCK_ASIDE, d / "block")
        if lab.pid(f"osd.{osd}") is None:
            lab.start_osd(osd)
        wait(lambda: lab.osd_up(osd) is True, 60, step, f"osd.{osd} up",
             str(lab.log_dir / f"ceph-osd.{osd}.log"))
        lab.wait_pgs_clean(300, step)
        return f"osd.{osd} supervisor stopped, block symlink back, started and up"
