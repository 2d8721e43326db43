"""The lab's disks: sparse image files under ``images/`` on loop devices, XFS mounts under
the base directory, and ceph-volume's tmpfs data dirs; only this lab's are ever touched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from lab.layout import SWIFT_DEVICE_HOST, SWIFT_DEVICES, host_of_osd
from lab.procs import LabError, run

if TYPE_CHECKING:
    from lab.site import LabSite


def mount_targets() -> list[str]:
    """Every mount point in this mount namespace's table (``/proc/self/mounts``)."""
    with open("/proc/self/mounts") as f:
        return [line.split()[1].replace("\\040", " ") for line in f]


def is_mounted(target: Path | str) -> bool:
    """Whether ``target`` is a mount point (a bind of a directory of the same filesystem
    included, which ``os.path.ismount`` does not see)."""
    return str(target) in mount_targets()


def mounts_under(path: Path | str, *prefixes: str) -> list[str]:
    """Mount points at or under ``path`` (or starting with one of ``prefixes``), deepest
    first: the order to unmount them in."""
    p = str(path)
    out = [t for t in mount_targets()
           if t == p or t.startswith(p + "/") or any(t.startswith(x) for x in prefixes)]
    return sorted(out, key=lambda t: -t.count("/"))


def holders(*views: Path | str) -> dict[int, str]:
    """The processes holding a path at or under one of ``views`` (open file, working
    directory or root; a mapped file): what ``fuser -m`` would name. Several views for one
    filesystem: the Reef lab's daemons see it through their chroot's bind of the base."""
    roots = [str(v).rstrip("/") for v in views]

    def under(link: str) -> bool:
        link = link.removesuffix(" (deleted)")
        return any(link == r or link.startswith(r + "/") for r in roots)

    out: dict[int, str] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        proc = Path("/proc") / d
        links: list[str] = []
        for name in ("cwd", "root"):
            try:
                links.append(os.readlink(proc / name))
            except OSError:
                pass
        try:
            for fd in os.listdir(proc / "fd"):
                try:
                    links.append(os.readlink(proc / "fd" / fd))
                except OSError:
                    pass
        except OSError:
            continue
        if any(under(x) for x in links):
            try:
                cl = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                    errors="replace").strip()
            except OSError:
                cl = ""
            out[int(d)] = cl[:160]
    return out


class Mounts:
    """Loop devices and mounts of one lab."""

    def __init__(self, lab: LabSite) -> None:
        self.lab = lab

    def under_base(self) -> list[str]:
        """Mounts of this lab: under its base dir, and its ceph-volume tmpfs data dirs
        (deepest first)."""
        return mounts_under(self.lab.base, f"{self.lab.cv_osd_root}/{self.lab.cv_cluster}-")

    def loop_devices(self) -> dict[str, str]:
        """Loop devices of this lab: device -> backing file."""
        p = subprocess.run(["losetup", "-J", "-l"], capture_output=True, text=True,
                           check=False, timeout=15)
        if p.returncode != 0 or not p.stdout.strip():
            return {}
        res = {}
        for d in json.loads(p.stdout).get("loopdevices", []):
            back = (d.get("back-file") or "").replace(" (deleted)", "")
            if back.startswith(str(self.lab.images) + "/"):
                res[d["name"]] = back
        return res

    def loop_for(self, image: Path) -> str | None:
        for dev, back in self.loop_devices().items():
            if back == str(image):
                return dev
        return None

    def attach(self, image: Path, step: str) -> str:
        dev = self.loop_for(image)
        if dev:
            return dev
        return run(["losetup", "-f", "--show", str(image)], step).stdout.strip()

    def mount(self, dev: str, target: Path, step: str) -> None:
        target.mkdir(parents=True, exist_ok=True)
        if os.path.ismount(target):
            return
        run(["mount", "-t", "xfs", "-o", "noatime", dev, str(target)], step)

    def mount_image(self, image: Path, target: Path, step: str) -> None:
        """Attach ``image`` (if it is not) and mount it on ``target`` (if nothing is)."""
        self.mount(self.attach(image, step), target, step)

    def views(self, target: Path) -> list[Path]:
        """``target`` and, on a chrooted release, the same mount as its daemons see it."""
        out = [target]
        root = getattr(self.lab.system, "root", None)
        if isinstance(root, Path):
            out.append(root / str(target).lstrip("/"))
        return out

    def umount(self, target: Path | str, step: str) -> None:
        # the mount table, not os.path.ismount: a bind of a directory of the same
        # filesystem (the chroot's view of the base directory) is not seen by ismount
        if not is_mounted(target):
            return
        p = run(["umount", str(target)], step, check=False)
        if p.returncode != 0:  # "target is busy": detach lazily, as an admin would
            run(["umount", "-l", str(target)], step)

    def make_image(self, image: Path, size: int) -> None:
        """A sparse file of ``size`` bytes (costs disk only as data lands)."""
        with open(image, "wb") as f:
            f.truncate(size)

    def write_fstabs(self) -> None:
        """``hosts/nodeN.fstab``: what each lab host would mount at boot (its xfs OSD data
        dir, its Swift devices), read by stordoc's host checks."""
        lab = self.lab
        fstabs: dict[str, list[str]] = {f"node{i}": [] for i in range(1, lab.n_hosts + 1)}
        for i in (i for i, k in enumerate(lab.kinds) if k == "xfs"):
            fstabs[host_of_osd(i)[0]].append(
                f"{lab.images / f'osd-{i}.xfs'} {lab.osd_dir(i)} xfs loop,noatime 0 0")
        for d in SWIFT_DEVICES:
            fstabs[SWIFT_DEVICE_HOST[d][0]].append(
                f"{lab.images / f'swift-{d}.xfs'} {lab.swift_node / d} xfs loop,noatime 0 0")
        for host, lines in fstabs.items():
            (lab.base / "hosts" / f"{host}.fstab").write_text(
                "# stordoc lab: what this host would mount at boot\n" + "\n".join(lines) + "\n")

    def cleanup(self, quiet: bool) -> tuple[list[str], list[str]]:
        """Unmount everything of this lab, detach its loop devices and, once nothing is
        mounted, remove its ceph-volume data dirs and bootstrap key. Returns (unmounted,
        detached)."""
        unmounted = []
        base = str(self.lab.base)

        def umount_all(targets: list[str]) -> None:
            for target in targets:
                try:
                    self.umount(target, "unmount")
                    unmounted.append(target)
                except LabError:
                    if not quiet:
                        raise

        # everything but the base dir itself, then the loop devices, then the base dir
        # (a chroot lab binds it onto itself): detaching a loop device after its backing
        # file's mount went away lazily would leak it under a path nobody recognises
        umount_all([t for t in self.under_base() if t != base])
        detached = []
        for dev in self.loop_devices():
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False,
                           timeout=15)
            detached.append(dev)
        umount_all([t for t in self.under_base() if t == base])
        if not self.under_base():
            for d in self.lab.cv_osd_root.glob(f"{self.lab.cv_cluster}-*"):
                if d.is_dir() and not os.path.ismount(d):
                    shutil.rmtree(d, ignore_errors=True)
            self.lab.bootstrap_keyring.unlink(missing_ok=True)
        return unmounted, detached
