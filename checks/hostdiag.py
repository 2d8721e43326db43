"""One host diagnosis: what is wrong with an OSD (or a Swift device) on its host.

Checks (``checks/mounts.py``, ``checks/osd.py``), the runbooks' refusals
(``runbooks/osd.py``, ``runbooks/swift/``) and the TUI's OSD screen all call these pure
functions over the snapshot, so that "which kernel I/O errors belong to this device",
"does this device hold this OSD" and "how was this OSD deployed" are written once: a rule
written twice drifts (the I/O-error rule lived in four places and disagreed).
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from storage.model import (
    DeviceIdentity,
    FstabLine,
    HostFacts,
    IoError,
    Mount,
    OsdState,
    UnitState,
)

DEFAULT_IO_WINDOW_S = 86400.0

# --------------------------------------------------------------------------- device names

_PART_RE = re.compile(r"^(?P<base>(?:nvme\d+n\d+|mmcblk\d+|loop\d+|nbd\d+))p\d+$"
                      r"|^(?P<sd>(?:sd|vd|xvd|hd)[a-z]+)\d+$")


def kernel_name(dev: str) -> str:
    """``/dev/sdb1`` -> ``sdb1`` (the name the kernel logs)."""
    return os.path.basename(dev.rstrip("/"))


def parent_name(name: str) -> str:
    """The whole disk of a partition's kernel name: sdb1 -> sdb, nvme0n1p2 -> nvme0n1,
    loop3p1 -> loop3; a whole disk is its own parent (nvme0n1 stays nvme0n1)."""
    m = _PART_RE.match(name)
    if not m:
        return name
    return m.group("base") or m.group("sd") or name


def device_names(facts: HostFacts, devices: Iterable[str]) -> set[str]:
    """Every kernel name under which errors of these devices are logged: the device, the
    loop devices attached to it when it is an image file, the image's loop device when it
    is a loop, and the whole disk of a partition."""
    names: set[str] = set()
    for d in devices:
        if not d:
            continue
        names.add(kernel_name(d))
        p = os.path.normpath(d)
        for b in facts.block_devices:
            if b.backing_file and os.path.normpath(b.backing_file) == p:
                names.add(kernel_name(b.path))  # the image file's loop device(s)
    return names | {parent_name(n) for n in names}


def io_errors_for(facts: HostFacts, devices: Iterable[str], now: float = 0.0,
                  window_s: float = DEFAULT_IO_WINDOW_S) -> list[IoError]:
    """Kernel I/O errors that belong to these devices (see ``device_names``), within the
    window when ``now`` is given. Errors on another partition of the same disk count: the
    disk is failing."""
    wanted = device_names(facts, devices)
    if not wanted:
        return []
    out = []
    for e in facts.io_errors:
        if e.when is not None and now and now - e.when > window_s:
            continue
        name = kernel_name(e.device)
        if name in wanted or parent_name(name) in wanted:
            out.append(e)
    return out


def fstab_lines(facts: HostFacts, path: str) -> tuple[list[FstabLine], list[FstabLine]]:
    """(active, commented-out) fstab lines for this mount point."""
    p = os.path.normpath(path)
    lines = [f for f in facts.fstab if os.path.normpath(f.mountpoint) == p]
    return [f for f in lines if not f.commented], [f for f in lines if f.commented]


def holds_osd(ident: DeviceIdentity, osd: OsdState, cluster_fsid: str) -> bool:
    """Does this device hold this OSD of this cluster (id, cluster fsid, and the OSD's
    uuid when both sides know it)?"""
    return (ident.whoami == osd.id and ident.ceph_fsid == cluster_fsid
            and (not osd.uuid or not ident.osd_fsid or ident.osd_fsid == osd.uuid))


# --------------------------------------------------------------------------- OSDs


class Flavour(enum.Enum):
    """How an OSD was deployed (decides how its data dir comes back)."""

    XFS = "xfs"  # ceph-disk era: the data dir is an XFS partition named in fstab
    RAW = "ceph-volume raw"  # tmpfs data dir rebuilt from the BlueStore label
    LVM = "ceph-volume lvm"  # tmpfs data dir rebuilt from the LV tags
    CEPHADM = "cephadm"  # container unit ceph-FSID@osd.N, data under /var/lib/ceph/FSID/
    PLAIN = "plain directory"  # data kept on the root filesystem
    UNKNOWN = "unknown"


class OsdHostState(enum.Enum):
    OK = "ok"
    UNMOUNTED = "data dir not mounted"  # a data partition to mount (osd-remount)
    NOT_ACTIVATED = "not activated"  # a label/LV to activate (osd-activate)
    MISSING = "data dir empty, no device found"
    STOPPED = "daemon stopped"  # data in place, daemon not running (osd-start)


@dataclass(frozen=True)
class OsdDiagnosis:
    """Everything a check, a runbook or a screen needs to say about one OSD's host side."""

    osd_id: int
    host: str
    data_dir: str
    flavour: Flavour
    evidence: tuple[str, ...]  # how the flavour was recognised, one fact per line
    state: OsdHostState
    mount: Mount | None
    populated: bool  # whoami in the data dir
    running: bool
    pid: int | None
    matches: tuple[DeviceIdentity, ...]  # unmounted devices that hold this OSD
    foreign: tuple[DeviceIdentity, ...]  # devices naming this OSD id of another cluster
    devices: tuple[str, ...]  # every device of this OSD seen on the host
    io_errors: tuple[IoError, ...]
    fstab_active: tuple[FstabLine, ...] = ()
    fstab_commented: tuple[FstabLine, ...] = ()
    units: tuple[UnitState, ...] = ()  # when systemd runs
    cluster_fsid: str = ""
    dir_exists: bool = False  # the data dir (mount point) itself is there

    @property
    def device(self) -> str | None:
        return self.matches[0].device if len(self.matches) == 1 else None

    @property
    def fstab_disabled(self) -> bool:
        return bool(self.fstab_commented) and not self.fstab_active

    def refusal(self) -> str | None:
        """Why bringing this OSD back by remount/activation is unsafe, else None. The
        check's ``*_safe`` evidence and the runbooks' refusals both come from here."""
        if self.io_errors:
            e = self.io_errors[-1]
            return (f"{e.device} on {self.host} shows kernel I/O errors, bringing osd."
                    f"{self.osd_id} back is unsafe: {e.line.strip()}")
        if self.fstab_disabled:
            line = self.fstab_commented[0]
            raw = (line.raw or f"#{line.device} {line.mountpoint}").strip()
            return (f"the fstab line for {self.data_dir} on {self.host} is commented out on "
                    f"purpose ({raw}): someone disabled this disk")
        if self.state in (OsdHostState.UNMOUNTED, OsdHostState.NOT_ACTIVATED,
                          OsdHostState.MISSING):
            if not self.matches:
                seen = "; seen: " + ", ".join(
                    f"{i.device} (whoami {i.whoami}, fsid {i.ceph_fsid})"
                    for i in self.foreign) if self.foreign else ""
                return (f"no device on {self.host} names osd.{self.osd_id} of cluster "
                        f"{self.cluster_fsid}{seen}")
            if len(self.matches) > 1:
                return (f"several devices on {self.host} name osd.{self.osd_id}: "
                        f"{', '.join(i.device for i in self.matches)}; pick the right one "
                        "by hand")
        return None

    def runbook(self) -> str | None:
        """The runbook that will actually run for this state."""
        return {OsdHostState.UNMOUNTED: "osd-remount",
                OsdHostState.NOT_ACTIVATED: "osd-activate",
                OsdHostState.STOPPED: "osd-start"}.get(self.state)

    def as_evidence(self) -> dict[str, object]:
        ev: dict[str, object] = {"flavour": self.flavour.value,
                                 "flavour_evidence": list(self.evidence),
                                 "host_state": self.state.value}
        if self.matches:
            ev["label_devices"] = [i.device for i in self.matches]
        if self.foreign:
            ev["foreign_labels"] = [{"device": i.device, "ceph_fsid": i.ceph_fsid,
                                     "osd_fsid": i.osd_fsid} for i in self.foreign]
        return ev


_CEPHADM_DIR_RE = re.compile(r"/var/lib/ceph/[0-9a-f-]{36}/osd\.\d+/?$")


def _flavour(data_dir: str, mount: Mount | None, block: str | None,
             matches: Sequence[DeviceIdentity], fstab_any: bool,
             populated: bool, lvm_tagged: bool) -> tuple[Flavour, list[str]]:
    ev: list[str] = []
    if _CEPHADM_DIR_RE.search(data_dir):
        ev.append(f"data dir {data_dir} is cephadm's /var/lib/ceph/FSID/osd.N")
        return Flavour.CEPHADM, ev
    if mount is not None and mount.fstype == "tmpfs":
        ev.append(f"data dir is a tmpfs ({mount.source})")
        if block and ("/dev/mapper/ceph-" in block or "/dev/ceph-" in block or lvm_tagged):
            ev.append(f"block -> {block} (an LV)")
            return Flavour.LVM, ev
        if block:
            ev.append(f"block -> {block}")
        if lvm_tagged:
            ev.append("an LV carries this OSD's ceph.osd_id tag")
            return Flavour.LVM, ev
        return Flavour.RAW, ev
    if mount is not None:
        ev.append(f"data dir is a {mount.fstype or 'filesystem'} mount of {mount.source}")
        return Flavour.XFS, ev
    kinds = {i.kind for i in matches}
    if "xfs" in kinds or fstab_any:
        if fstab_any:
            ev.append("fstab names a device for the data dir")
        if "xfs" in kinds:
            ev.append("an unmounted XFS device holds whoami/ceph_fsid of this OSD")
        return Flavour.XFS, ev
    if "lvm" in kinds or lvm_tagged:
        ev.append("an LV carries this OSD's ceph.osd_id/ceph.cluster_fsid tags")
        return Flavour.LVM, ev
    if "bluestore" in kinds:
        ev.append("a device's BlueStore label names this OSD (ceph-volume raw)")
        return Flavour.RAW, ev
    if populated:
        ev.append("data dir holds whoami without a mount of its own")
        return Flavour.PLAIN, ev
    return Flavour.UNKNOWN, ev


def diagnose_osd(facts: HostFacts, osd: OsdState, cluster_fsid: str, now: float = 0.0,
                 window_s: float = DEFAULT_IO_WINDOW_S) -> OsdDiagnosis | None:
    """The host-side state of one OSD; None when the host does not know its data dir."""
    data = facts.osd_data.get(osd.id)
    if data is None:
        return None
    d = data.path
    mount = facts.mount_at(d)
    populated = data.has_whoami
    daemon = next((x for x in facts.daemons if x.kind == "ceph-osd"
                   and x.ident == str(osd.id)), None)
    running = daemon is not None and daemon.running
    active, commented = fstab_lines(facts, d)
    block = data.block
    idents = [i for i in facts.identities if i.whoami == osd.id]
    lvs = [v for v in facts.lvm_volumes if v.osd_id == osd.id and v.type == "block"]
    for v in lvs:
        idents.append(DeviceIdentity(device=v.lv_path, whoami=v.osd_id,
                                     ceph_fsid=v.cluster_fsid, osd_fsid=v.osd_fsid,
                                     kind="lvm", activatable=v.active))
    matches = tuple(i for i in idents if holds_osd(i, osd, cluster_fsid))
    foreign = tuple(i for i in idents if i not in matches)
    flavour, fev = _flavour(d, mount, block, matches, bool(active or commented), populated,
                            any(v.cluster_fsid == cluster_fsid for v in lvs))
    devices: list[str] = []
    if mount is not None and mount.fstype != "tmpfs":
        devices.append(mount.source)
    if block:
        devices.append(block)
    if mount is None:
        devices += [i.device for i in matches]
        devices += [f.device for f in active]
    devices = list(dict.fromkeys(devices))
    errs = io_errors_for(facts, devices, now, window_s)
    if mount is not None or populated:
        state = OsdHostState.OK if running or osd.up else OsdHostState.STOPPED
    elif running and osd.up:
        state = OsdHostState.OK  # odd, but the daemon serves: nothing to repair here
    elif any(i.kind == "xfs" for i in matches) or (active and not matches):
        state = OsdHostState.UNMOUNTED
    elif matches:
        state = OsdHostState.NOT_ACTIVATED
    else:
        state = OsdHostState.MISSING
    units = tuple(u for u in facts.units if u.osd_id == osd.id)
    return OsdDiagnosis(osd.id, facts.name, d, flavour, tuple(fev), state, mount, populated,
                        running, daemon.pid if daemon else None, matches, foreign,
                        tuple(devices), tuple(errs), tuple(active), tuple(commented), units,
                        cluster_fsid, data.exists)


# --------------------------------------------------------------------------- Swift


@dataclass(frozen=True)
class SwiftDeviceDiagnosis:
    device: str
    host: str
    path: str
    exists: bool
    mount: Mount | None
    unmounted_device: str | None
    devices: tuple[str, ...]
    io_errors: tuple[IoError, ...]
    fstab_active: tuple[FstabLine, ...]
    fstab_commented: tuple[FstabLine, ...]

    def refusal(self) -> str | None:
        if self.io_errors:
            e = self.io_errors[-1]
            return (f"{e.device} on {self.host} shows kernel I/O errors, remounting Swift "
                    f"device {self.device} is unsafe: {e.line.strip()}")
        if self.fstab_commented and not self.fstab_active:
            raw = (self.fstab_commented[0].raw or self.fstab_commented[0].device).strip()
            return (f"the fstab line for {self.path} on {self.host} is commented out "
                    f"({raw}): drive-audit or an operator disabled this drive")
        return None


def diagnose_swift_device(facts: HostFacts, device: str, now: float = 0.0,
                          window_s: float = DEFAULT_IO_WINDOW_S,
                          extra_devices: Sequence[str] = ()) -> SwiftDeviceDiagnosis | None:
    sd = facts.swift_devices.get(device)
    if sd is None:
        return None
    path = sd.path
    mount = facts.mount_at(path)
    active, commented = fstab_lines(facts, path)
    ident = next((i for i in facts.identities if i.label == device), None)
    devs = [mount.source] if mount else []
    if ident:
        devs.append(ident.device)
    devs += [f.device for f in active]
    devs += list(extra_devices)
    devs = list(dict.fromkeys(devs))
    return SwiftDeviceDiagnosis(device, facts.name, path, sd.exists, mount,
                                ident.device if ident else None, tuple(devs),
                                tuple(io_errors_for(facts, devs, now, window_s)),
                                tuple(active), tuple(commented))


def osd_diagnoses(hosts: Mapping[str, HostFacts], osds: Iterable[OsdState],
                  cluster_fsid: str, now: float = 0.0,
                  window_s: float = DEFAULT_IO_WINDOW_S) -> dict[int, OsdDiagnosis]:
    """Diagnoses of every OSD whose CRUSH host answered."""
    out: dict[int, OsdDiagnosis] = {}
    for o in osds:
        f = hosts.get(o.host or "")
        if f is None or not f.reachable:
            continue
        dg = diagnose_osd(f, o, cluster_fsid, now, window_s)
        if dg is not None:
            out[o.id] = dg
    return out
