"""Disk replacement in the lab: a spare "disk" (a sparse image on a loop device) beside an
OSD, and after the runbook ``osd-replace-disk`` put it in, the lab adopts it as that
OSD's device (the old image detached and removed, the spare renamed to the OSD's image
name: a loop device follows its backing file's rename), so later breaks and heals of
that OSD find its device where the lab keeps it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from lab.layout import OSD_BLOCK_BYTES

if TYPE_CHECKING:
    from lab.parts import LabParts


def spare_image(lab: LabParts, osd_id: int) -> Path:
    return lab.images / f"osd-{osd_id}.spare.block"


def attach_spare(lab: LabParts, osd_id: int) -> str:
    """A new empty disk for ``osd.N``: its loop device path."""
    img = spare_image(lab, osd_id)
    if not img.exists():
        lab.mounts.make_image(img, OSD_BLOCK_BYTES)
    return lab.mounts.attach(img, f"spare disk for osd.{osd_id}")


def adopt_spare(lab: LabParts, osd_id: int) -> str:
    """After a replacement onto the spare: it becomes ``osd-N.block``; the old disk goes."""
    old = lab.images / f"osd-{osd_id}.block"
    spare = spare_image(lab, osd_id)
    old_dev = lab.mounts.loop_for(old)
    if old_dev is not None:
        subprocess.run(["losetup", "-d", old_dev], capture_output=True, check=False,
                       timeout=15)
    old.unlink(missing_ok=True)
    spare.rename(old)
    dev = lab.mounts.loop_for(old) or ""
    lab.write_state(**{f"osd{osd_id}_device": dev})
    return dev


def drop_spare(lab: LabParts, osd_id: int) -> None:
    """A spare that was not used: detached and removed."""
    spare = spare_image(lab, osd_id)
    dev = lab.mounts.loop_for(spare)
    if dev is not None:
        subprocess.run(["losetup", "-d", dev], capture_output=True, check=False, timeout=15)
    spare.unlink(missing_ok=True)


def swift_spare_image(lab: LabParts, device: str) -> Path:
    return lab.images / f"swift-{device}.spare.xfs"


def attach_swift_spare(lab: LabParts, device: str) -> str:
    """A new empty drive for Swift device ``device`` (no filesystem: the runbook makes it)."""
    from lab.swift import SWIFT_DEVICE_BYTES

    img = swift_spare_image(lab, device)
    if not img.exists():
        lab.mounts.make_image(img, SWIFT_DEVICE_BYTES)
    return lab.mounts.attach(img, f"spare drive for {device}")


def adopt_swift_spare(lab: LabParts, device: str) -> None:
    """After a replacement onto the spare: it becomes ``swift-DEV.xfs`` (the image the
    lab's fstab and heals name); the old image goes."""
    old = lab.images / f"swift-{device}.xfs"
    old_dev = lab.mounts.loop_for(old)
    if old_dev is not None and not any(
            line.split()[0] == old_dev for line in open("/proc/self/mounts")):
        subprocess.run(["losetup", "-d", old_dev], capture_output=True, check=False,
                       timeout=15)
    if old.exists():  # a lazily unmounted old drive may stay open: keep its name apart
        gone = lab.images / f"swift-{device}.replaced.xfs"
        old.rename(gone)
        gone.unlink()
    swift_spare_image(lab, device).rename(old)


def adopt_xfs_spare(lab: LabParts, osd_id: int, osd_uuid: str) -> None:
    """After an xfs OSD was rebuilt on the spare (an XFS with BlueStore's block as a file
    inside): the spare becomes ``osd-N.xfs`` (the image the lab's fstab and heals name);
    the old data image and the old block disk go; the lab's state gets the new uuid."""
    spare = spare_image(lab, osd_id)
    for old in (lab.images / f"osd-{osd_id}.xfs", lab.images / f"osd-{osd_id}.block"):
        dev = lab.mounts.loop_for(old)
        if dev is not None:
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False,
                           timeout=15)
        old.unlink(missing_ok=True)
    spare.rename(lab.images / f"osd-{osd_id}.xfs")
    lab.write_state(**{f"osd{osd_id}_uuid": osd_uuid})
