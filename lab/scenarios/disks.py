"""Filesystem faults on a Swift device's loop-mounted XFS, made the way they happen:
``mount -o remount,ro`` (a filesystem that stops accepting writes) and ``xfs_io -x -c
shutdown`` (a real XFS shutdown, the kernel's answer to a failing disk: dmesg says
``User initiated shutdown received ... Shutting down filesystem``)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from lab.procs import LabError, run
from lab.scenarios.base import DEVICE, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.core import Lab

UMOUNT_S = 60.0  # a Swift daemon walking the device holds it for a moment at most


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
        run(["mount", "-o", "remount,ro", str(target)], step)
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
        deadline = time.monotonic() + UMOUNT_S
        while is_mounted(target):
            p = run(["umount", str(target)], step, check=False)
            if p.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise LabError(step, f"{target} stayed busy for {UMOUNT_S:.0f} s: "
                               f"{p.stderr.strip()}")
            time.sleep(0.5)
        lab.mounts.mount_image(lab.images / f"swift-{device}.xfs", target, step)
        lab.swift_cluster.settle_replication(step)
        return f"Swift device {device}: unmounted and mounted again"
