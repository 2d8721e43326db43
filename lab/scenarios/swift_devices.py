"""Swift faults on a device: unmounted, nearly full, a dispersion replica missing, object
replicas corrupted and quarantined."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lab.layout import SWIFT_USER
from lab.procs import LabError
from lab.scenarios.base import DEVICE, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

SWIFT_FILL_FILE = "stordoc-lab-fill"  # at the device's root: no Swift daemon reads it
SWIFT_FILL_TO = 0.85  # above the default warn (0.80), below crit (0.90)
QUARANTINE_CONTAINER = "stordoc-lab-quarantine"
QUARANTINE_OBJECTS = 4  # x 3 replicas = 12 quarantined, above the default growth warn (10)


class SwiftDeviceUnmounted(Scenario):
    name = "swift-device-unmounted"
    summary = "a Swift device unmounted"
    options = (DEVICE,)
    heal_options = (DEVICE,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        device = args.device
        lab.mounts.umount(lab.swift_node / device, f"break swift-device-unmounted {device}")
        return f"Swift device {device} unmounted from {lab.swift_node / device}"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        device = args.device
        step = f"heal swift-device-unmounted {device}"
        lab.mounts.mount_image(lab.images / f"swift-{device}.xfs", lab.swift_node / device,
                               step)
        # the passes that failed towards it (507) count until each replicator's next one
        lab.swift_cluster.settle_replication(step)
        return f"Swift device {device} mounted again"


class SwiftDeviceFull(Scenario):
    name = "swift-device-full"
    summary = f"a Swift device filled to {SWIFT_FILL_TO:.0%}"
    options = (DEVICE,)
    heal_options = (DEVICE,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        device = args.device
        root = lab.swift_node / device
        if not os.path.ismount(root):
            raise LabError(f"break swift-device-full {device}", f"{root} is not mounted")
        st = os.statvfs(root)
        size = st.f_blocks * st.f_frsize
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        want = int(size * SWIFT_FILL_TO) - used
        if want > 0:
            with open(root / SWIFT_FILL_FILE, "ab") as fill:
                os.posix_fallocate(fill.fileno(), 0, want)
        return f"Swift device {device} filled to {SWIFT_FILL_TO:.0%} ({root / SWIFT_FILL_FILE})"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        device = args.device
        (lab.swift_node / device / SWIFT_FILL_FILE).unlink(missing_ok=True)
        lab.swift_cluster.settle_replication(f"heal swift-device-full {device}")
        return f"Swift device {device}: fill file removed"


class SwiftDispersionMissing(Scenario):
    """One replica of one of stordoc's dispersion objects removed from the device (its hash
    directory moved aside, kept for heal). Needs ``swift dispersion populate``."""

    name = "swift-dispersion-missing"
    summary = "one replica of a dispersion object removed from a device"
    options = (DEVICE,)

    @staticmethod
    def _aside(lab: Lab) -> Path:
        return lab.base / "swift" / "dispersion-removed"

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        from storage.dispersion import OBJECT_CONTAINER, hash_prefix_suffix, object_names

        device = args.device
        step = "break swift-dispersion-missing"
        # a replication pass first: it hashes the suffixes populate's PUTs invalidated, so
        # the copy removed below stays missing (hashed after it, the suffix would differ
        # from its peers' and the replicators would put the copy straight back)
        lab.wait_replication_pass("object", time.time(), step)
        pre, suf = hash_prefix_suffix()
        account = f"AUTH_{SWIFT_USER.split(':')[0]}"
        for name in object_names(10_000):
            h = hashlib.md5(pre + b"/" + f"{account}/{OBJECT_CONTAINER}/{name}".encode()
                            + suf, usedforsecurity=False).hexdigest()
            found = list((lab.swift_node / device / "objects").glob(f"*/{h[-3:]}/{h}"))
            if not found:
                continue
            src = found[0]
            dst = self._aside(lab) / device / src.relative_to(lab.swift_node / device)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(src), str(dst))
            return f"replica of {OBJECT_CONTAINER}/{name} removed from {device} ({src})"
        raise LabError(step, f"no dispersion object has a replica on {device}: run "
                       "'stordoc swift dispersion populate' first")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        n = 0
        aside = self._aside(lab)
        if aside.exists():
            for dev_dir in aside.iterdir():
                for hdir in sorted(dev_dir.glob("objects/*/*/*")):
                    dst = lab.swift_node / dev_dir.name / hdir.relative_to(dev_dir)
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    if not dst.exists():
                        shutil.move(str(hdir), str(dst))
                        n += 1
            shutil.rmtree(aside)
        return f"{n} removed replica(s) put back"


class SwiftQuarantine(Scenario):
    """Objects PUT, their replicas corrupted on disk, the object auditor run once."""

    name = "swift-quarantine"
    summary = "object replicas corrupted on disk and quarantined by the auditor"

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = "break swift-quarantine"
        swift = lab.swift_cluster
        before = swift.data_files()
        conn = swift.conn()
        conn.put_container(QUARANTINE_CONTAINER)
        for i in range(QUARANTINE_OBJECTS):
            conn.put_object(QUARANTINE_CONTAINER, f"obj-{i}", contents=b"stordoc lab " * 64)
        conn.close()
        ours = sorted(swift.data_files() - before)
        for path in ours:  # same size, other bytes: the ETag no longer matches
            with open(path, "r+b") as f:
                f.write(b"X" * path.stat().st_size)
        devices = sorted({p.relative_to(lab.swift_node).parts[0] for p in ours})
        swift.run_once("object-auditor", "once", "--devices", ",".join(devices), step=step,
                       timeout=300, log=True)
        quarantined = list(lab.swift_node.glob("d*/quarantined/objects/*"))
        return (f"{len(ours)} object replica(s) corrupted, the auditor quarantined "
                f"{len(quarantined)}")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        lab.swift_cluster.delete_container(QUARANTINE_CONTAINER)
        n = 0
        for d in lab.swift_node.glob("d*/quarantined"):
            n += len(list(d.glob("objects/*")))
            shutil.rmtree(d)
        return f"lab objects deleted, {n} quarantined replica(s) removed"
