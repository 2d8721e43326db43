"""Disk faults made the way they happen: on a Swift device's loop-mounted XFS, ``mount -o
remount,ro`` (a filesystem that stops accepting writes) and ``xfs_io -x -c shutdown`` (a
real XFS shutdown, the kernel's answer to a failing disk: dmesg says ``User initiated
shutdown received ... Shutting down filesystem``); on an OSD, BlueStore's read error
injection (a disk that returns bad data, repaired from a replica)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lab.procs import LabError, run, wait
from lab.scenarios.base import DEVICE, OSD_ANY, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

UMOUNT_S = 60.0  # a Swift daemon walking the device holds it for a moment at most
PATIENCE_S = 10.0  # then the lab's own daemons holding it are stopped (and started again)


def _ppid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


STOPPABLE = ("swift-", "rsyncd")  # the daemons that may hold a Swift device


def _lab_daemons_holding(lab: Lab, target: Path) -> tuple[list[str], dict[int, str]]:
    """The lab's Swift daemons (by name) whose process or a child of it holds ``target``,
    and the other holders (named in an error, never stopped)."""
    from lab.mounts import holders

    held = holders(*lab.mounts.views(target))
    pids = {pid: name for name in lab.known_daemons() if name.startswith(STOPPABLE)
            and (pid := lab.pid(name)) is not None}
    names: list[str] = []
    other: dict[int, str] = {}
    for h, cl in held.items():
        p, hops = h, 0
        while p > 1 and p not in pids and hops < 32:
            p, hops = _ppid(p), hops + 1
        if p in pids:
            if pids[p] not in names:
                names.append(pids[p])
        else:
            other[h] = cl
    return names, other


def _restart(lab: Lab, names: list[str], step: str) -> None:
    """Start again the daemons ``_retry_busy`` stopped."""
    for name in names:
        kind = name.removeprefix("swift-").removesuffix("-replicator")
        if name == "rsyncd":
            lab.procs.spawn("rsyncd", ["rsync", "--daemon", "--no-detach",
                                       f"--config={lab.swift_etc / 'rsyncd.conf'}"], step)
        elif name.endswith("-replicator"):
            lab.swift_cluster.start_replicator(kind)
        else:
            lab.swift_cluster.start_server(kind)


def _retry_busy(lab: Lab, target: Path, argv: list[str], step: str) -> list[str]:
    """Run a mount command that a held filesystem refuses ("busy"), as an admin would: retry
    for a while, then stop the lab's own Swift daemons holding it (``fuser -m``), and retry
    until ``UMOUNT_S``. Returns the daemons stopped, for the caller to start again once the
    filesystem is as it wants it; another holder is waited for, then named in the error."""
    t0 = time.monotonic()
    stopped: list[str] = []
    while True:
        p = run(argv, step, check=False)
        if p.returncode == 0:
            return stopped
        if "busy" not in p.stderr:
            break
        if time.monotonic() - t0 > PATIENCE_S:
            names, _ = _lab_daemons_holding(lab, target)
            for name in names:
                if name not in stopped:
                    lab.procs.stop(name)
                    stopped.append(name)
        if time.monotonic() - t0 > UMOUNT_S:
            break
        time.sleep(0.5)
    names, other = _lab_daemons_holding(lab, target)
    _restart(lab, stopped, step)
    raise LabError(step, f"{' '.join(argv)}: {p.stderr.strip()} (after {UMOUNT_S:.0f} s; "
                   f"stopped {stopped}; still held by {names} {other})")


class SwiftDeviceReadonly(Scenario):
    name = "swift-device-readonly"
    summary = "a Swift device's filesystem remounted read-only"
    options = (DEVICE,)
    heal_options = (DEVICE,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        target = lab.swift_node / args.device
        step = f"break swift-device-readonly {args.device}"
        if not os.path.ismount(target):
            raise LabError(step, f"{target} is not mounted")
        _restart(lab, _retry_busy(lab, target, ["mount", "-o", "remount,ro", str(target)],
                                  step), step)
        return f"Swift device {args.device} remounted read-only ({target})"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        target = lab.swift_node / args.device
        step = f"heal swift-device-readonly {args.device}"
        if os.path.ismount(target):
            run(["mount", "-o", "remount,rw", str(target)], step)
        lab.swift_cluster.settle_replication(step)
        return f"Swift device {args.device} writable again"


class SwiftDeviceShutdown(Scenario):
    name = "swift-device-shutdown"
    summary = "a Swift device's XFS shut down (xfs_io -x -c shutdown)"
    options = (DEVICE,)
    heal_options = (DEVICE,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        target = lab.swift_node / args.device
        step = f"break swift-device-shutdown {args.device}"
        if not os.path.ismount(target):
            raise LabError(step, f"{target} is not mounted")
        run(["xfs_io", "-x", "-c", "shutdown", str(target)], step)
        return f"Swift device {args.device}: XFS shut down ({target})"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        """Unmount the dead filesystem (not lazily: a lazily detached shut-down XFS would
        be handed back by the next mount of the same loop device) and mount it again."""
        from lab.mounts import is_mounted

        device = args.device
        target = lab.swift_node / device
        step = f"heal swift-device-shutdown {device}"
        stopped: list[str] = []
        # every view, the chroot's first: a chrooted Swift server with a file open there
        # keeps that mount, and with it the dead filesystem, after the host's view is
        # gone; the next mount is then handed that same shut-down XFS (seen in CI: the
        # heal "succeeded" with no Unmounting/Mounting line in the kernel log)
        for view in reversed(lab.mounts.views(target)):
            if is_mounted(view):
                stopped += [n for n in _retry_busy(lab, view, ["umount", str(view)], step)
                            if n not in stopped]
        lab.mounts.mount_image(lab.images / f"swift-{device}.xfs", target, step)
        try:
            probe = target / ".stordoc-lab-heal-probe"
            probe.write_bytes(b"x")
            probe.unlink()
        except OSError as e:
            _restart(lab, stopped, step)
            raise LabError(step, f"{target} still fails after the remount ({e}): the old "
                           f"filesystem is still held ({_lab_daemons_holding(lab, target)})"
                           ) from None
        _restart(lab, stopped, step)
        lab.swift_cluster.settle_replication(step)
        return f"Swift device {device}: unmounted and mounted again"


READ_ERR_POOL = "rbd"  # the lab's own pool: no new pool (a pool of few PGs is a finding)
READ_ERR_OBJECT = "stordoc-lab-readerr"
READ_ERR_WAIT_S = 90.0


class OsdReadErrors(Scenario):
    """A disk that returns bad data, the way BlueStore's own error injection makes it:
    ``bluestore_debug_inject_read_err`` on the OSD, ``ceph tell osd.N injectdataerr`` on an
    object it is primary of, one read: the primary gets EIO, repairs the object from a
    replica and counts it. The lab lowers ``mon_osd_warn_num_repaired`` (10) to 0 so one
    repair raises Ceph's OSD_TOO_MANY_REPAIRS (heal puts the lab's value back)."""

    name = "osd-read-errors"
    summary = "an OSD's disk returns read errors (BlueStore error injection)"
    options = (OSD_ANY,)
    heal_options = (OSD_ANY,)

    def _rados(self, lab: Lab, step: str, *args: str, data: str | None = None) -> str:
        cc = lab.ceph_cluster
        return run(cc._argv("rados", "-c", cc._p(lab.conf), "-p", READ_ERR_POOL, *args),
                   step, input=data).stdout

    def _object(self, lab: Lab, osd: int, step: str) -> str:
        for i in range(200):
            name = f"{READ_ERR_OBJECT}-{i}"
            m = lab.ceph("osd", "map", READ_ERR_POOL, name, step=step)
            if isinstance(m, dict) and m.get("acting_primary") == osd:
                return name
        raise LabError(step, f"no object name of {READ_ERR_POOL} maps to osd.{osd} as primary")

    def _repairs_warned(self, lab: Lab) -> bool:
        h = lab.ceph("health", "detail", check=False)
        return isinstance(h, dict) and "OSD_TOO_MANY_REPAIRS" in (h.get("checks") or {})

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = f"break osd-read-errors osd.{args.osd}"
        name = self._object(lab, args.osd, step)
        self._rados(lab, step, "put", name, "-", data="stordoc lab: a read error\n")
        lab.ceph("config", "set", f"osd.{args.osd}", "bluestore_debug_inject_read_err",
                 "true", step=step)
        lab.ceph("config", "set", "mgr", "mon_osd_warn_num_repaired", "0", step=step)
        lab.ceph("tell", f"osd.{args.osd}", "injectdataerr", READ_ERR_POOL, name, step=step)
        self._rados(lab, step, "get", name, "-")  # EIO on the primary: repaired from a copy
        wait(lambda: self._repairs_warned(lab), READ_ERR_WAIT_S, step,
             "Ceph's OSD_TOO_MANY_REPAIRS")
        return (f"osd.{args.osd}: a read of {READ_ERR_POOL}/{name} failed (injected) and was "
                "repaired; Ceph warns OSD_TOO_MANY_REPAIRS")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = f"heal osd-read-errors osd.{args.osd}"
        lab.ceph("config", "rm", "mgr", "mon_osd_warn_num_repaired", step=step)
        lab.ceph("config", "rm", f"osd.{args.osd}", "bluestore_debug_inject_read_err",
                 step=step)
        listed = self._rados(lab, step, "ls").split()
        for name in (n for n in listed if n.startswith(READ_ERR_OBJECT)):
            self._rados(lab, step, "rm", name)
        wait(lambda: not self._repairs_warned(lab), READ_ERR_WAIT_S, step,
             "OSD_TOO_MANY_REPAIRS cleared")
        return f"osd.{args.osd}: error injection off, the lab's repair threshold back"
