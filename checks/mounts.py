"""Root causes on the host: OSD data dirs and Swift devices that are not mounted, daemons that
are not running, and the reasons a remount would be unsafe (kernel I/O errors, an fstab line
commented out on purpose — Swift's drive-audit does that to failing drives).

The OSD codes need Ceph and host facts. The Swift device codes need Swift; they use host
facts when they were collected (directory missing, I/O errors, fstab) and recon alone
otherwise (recon only lists directories that exist, so SWIFT_DEVICE_NO_DIR needs the host).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import (
    ClusterSnapshot,
    DeviceIdentity,
    FstabLine,
    HostFacts,
    IoError,
    OsdState,
    RingDevice,
)

OSD_CODES = (
    CodeInfo("OSD_DATA_UNMOUNTED", Severity.CRIT,
             "An OSD's data directory is not a mount point on its host; the device that "
             "holds it (matched by whoami/ceph_fsid) is named when found.", "osd-remount"),
    CodeInfo("OSD_DAEMON_STOPPED", Severity.CRIT,
             "An OSD's data is mounted but its daemon is not running.", "osd-start"),
    CodeInfo("OSD_DEVICE_IO_ERRORS", Severity.CRIT,
             "Recent kernel I/O errors for an OSD's device: a remount or restart is unsafe."),
    CodeInfo("OSD_FSTAB_DISABLED", Severity.WARN,
             "The fstab line for an OSD data dir is commented out (disabled on purpose?)."),
)
SWIFT_CODES = (
    CodeInfo("SWIFT_DEVICE_UNMOUNTED", Severity.CRIT,
             "A Swift ring device is not mounted on its host (recon and/or host facts).",
             "swift-device-remount"),
    CodeInfo("SWIFT_DEVICE_NO_DIR", Severity.CRIT,
             "A ring device has no directory at all on its host (recon cannot see it)."),
    CodeInfo("SWIFT_DEVICE_IO_ERRORS", Severity.CRIT,
             "Recent kernel I/O errors for a Swift device: a remount is unsafe."),
    CodeInfo("SWIFT_FSTAB_DISABLED", Severity.WARN,
             "The fstab line for a Swift device is commented out (drive-audit or by hand)."),
)

_PART_RE = re.compile(r"^(?P<base>(?:nvme\d+n\d+|mmcblk\d+|loop\d+))p\d+$|^(?P<sd>[a-z]+)\d+$")


def _kname(dev: str) -> str:
    return os.path.basename(dev.rstrip("/"))


def _parent(name: str) -> str:
    m = _PART_RE.match(name)
    if not m:
        return name
    return m.group("base") or m.group("sd") or name


def _backing_loops(facts: HostFacts, path: str) -> set[str]:
    """Kernel names of loop devices attached to an image file (lab, file-backed OSDs)."""
    p = os.path.normpath(path)
    return {_kname(b.path) for b in facts.block_devices
            if b.backing_file and os.path.normpath(b.backing_file) == p}


def _errors_for(facts: HostFacts, devices: Iterable[str], ctx: CheckContext) -> list[IoError]:
    names: set[str] = set()
    for d in devices:
        if not d:
            continue
        names.add(_kname(d))
        names |= _backing_loops(facts, d)
    if not names:
        return []
    wanted = names | {_parent(n) for n in names}
    out = []
    for e in facts.io_errors:
        if e.when is not None and ctx.now and ctx.now - e.when > ctx.thresholds.io_error_window_s:
            continue
        if e.device in wanted or _parent(e.device) in wanted:
            out.append(e)
    return out


def _fstab_for(facts: HostFacts, path: str) -> tuple[list[FstabLine], list[FstabLine]]:
    p = os.path.normpath(path)
    lines = [f for f in facts.fstab if os.path.normpath(f.mountpoint) == p]
    return [f for f in lines if not f.commented], [f for f in lines if f.commented]


def _match_osd_device(facts: HostFacts, osd: OsdState, fsid: str) -> tuple[
        DeviceIdentity | None, list[DeviceIdentity]]:
    """The unmounted device whose whoami/ceph_fsid name this OSD, plus near misses."""
    exact = [i for i in facts.identities if i.whoami == osd.id and i.ceph_fsid == fsid
             and (not osd.uuid or not i.osd_fsid or i.osd_fsid == osd.uuid)]
    other = [i for i in facts.identities if i.whoami == osd.id and i not in exact]
    return (exact[0] if exact else None), other


def _host_osds(snap: ClusterSnapshot, facts: HostFacts) -> Iterator[OsdState]:
    assert snap.ceph is not None
    for o in snap.ceph.osds:
        if o.host == facts.name and o.exists and not o.destroyed and not o.new:
            yield o


@check("osd-mounts", codes=OSD_CODES, needs=("ceph", "hosts"))
def osd_mounts(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    """Why an OSD is down, seen from its host."""
    ceph = snap.ceph
    assert ceph is not None
    out: list[Finding] = []
    for hname, facts in sorted(snap.hosts.items()):
        if not facts.reachable:
            continue
        for o in _host_osds(snap, facts):
            d = facts.osd_dirs.get(o.id)
            if d is None:
                continue
            mount = facts.mount_at(d)
            # a data dir kept on the root fs (not a mount point by design) holds its files
            populated = facts.dirs.get(os.path.join(d, "whoami"), False)
            daemon = next((x for x in facts.daemons if x.kind == "ceph-osd"
                           and x.ident == str(o.id)), None)
            running = daemon is not None and daemon.running
            active, commented = _fstab_for(facts, d)
            base_ev = {"host": hname, "data_dir": d, "osd_up": o.up, "osd_in": o.in_}
            devices: list[str] = []
            if mount is not None:
                devices.append(mount.source)
            blk = facts.links.get(os.path.join(d, "block"))
            if blk:
                devices.append(blk)
            matched, others = _match_osd_device(facts, o, ceph.fsid)
            if mount is None:
                if matched:
                    devices.append(matched.device)
                devices += [f.device for f in active]
            errs = _errors_for(facts, devices, ctx)
            if mount is None and not populated and (not o.up or not running):
                ev = dict(base_ev, dir_exists=facts.dirs.get(d, False), daemon_running=running)
                if matched:
                    ev.update(device=matched.device, device_whoami=matched.whoami,
                              device_ceph_fsid=matched.ceph_fsid,
                              device_osd_fsid=matched.osd_fsid)
                    where = f"; {matched.device} holds osd.{o.id} of this cluster"
                else:
                    ev["device"] = "no matching device found"
                    where = "; no unmounted device holding it was found"
                if others:
                    ev["other_candidates"] = [
                        {"device": i.device, "ceph_fsid": i.ceph_fsid, "osd_fsid": i.osd_fsid}
                        for i in others]
                if active:
                    ev["fstab"] = active[0].raw or f"{active[0].device} {active[0].mountpoint}"
                ev["remount_safe"] = not errs and not (commented and not active)
                out.append(Finding(
                    "OSD_DATA_UNMOUNTED", Severity.CRIT if o.in_ else Severity.WARN, o.name,
                    f"{o.name} data dir {d} is not mounted on {hname}{where}", ev,
                    runbook="osd-remount", target=o.name, since=o.down_since))
            elif (mount is not None or populated) and not running:
                ev = dict(base_ev, device=mount.source if mount else None, pid=daemon.pid if daemon else None)
                out.append(Finding(
                    "OSD_DAEMON_STOPPED", Severity.CRIT if o.in_ else Severity.WARN, o.name,
                    f"{o.name} data is in place on {hname} "
                    f"({mount.source if mount else d}) but ceph-osd "
                    "is not running", ev, runbook="osd-start", target=o.name,
                    since=o.down_since))
            if errs:
                out.append(Finding(
                    "OSD_DEVICE_IO_ERRORS", Severity.CRIT, o.name,
                    f"{len(errs)} kernel I/O error(s) for {o.name}'s device on {hname} "
                    f"({errs[-1].device}): do not remount or restart before checking the disk",
                    dict(base_ev, devices=sorted(set(devices)),
                         lines=[e.line for e in errs[-5:]], count=len(errs))))
            if commented and not active:
                out.append(Finding(
                    "OSD_FSTAB_DISABLED", Severity.WARN, o.name,
                    f"the fstab line for {o.name} ({d}) on {hname} is commented out",
                    dict(base_ev, fstab_line=commented[0].raw,
                         device=commented[0].device)))
    return out


_RING_PREF = {"object": 0, "container": 1, "account": 2}


def _host_name_for(snap: ClusterSnapshot, ip: str) -> str | None:
    for name, f in snap.hosts.items():
        if f.address == ip:
            return name
    return None


@check("swift-device-mounts", codes=SWIFT_CODES, needs=("swift",))
def swift_device_mounts(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    """Ring devices against recon and their hosts: unmounted, missing dir, disk errors."""
    sw = snap.swift
    assert sw is not None
    # one finding per (ip, device): pick the object ring's endpoint for the entity
    devs: dict[tuple[str, str], list[tuple[str, RingDevice]]] = {}
    for ring in sw.rings:
        for d in ring.devices:
            devs.setdefault((d.ip, d.device), []).append((ring.kind, d))
    recon_unmounted: dict[tuple[str, int], set[str]] = {}
    recon_ok: set[tuple[str, int]] = set()
    for r in sw.recon:
        if r.error is None or "unmounted" in r.raw:
            recon_ok.add((r.ip, r.port))
            recon_unmounted[(r.ip, r.port)] = set(r.unmounted)
    out: list[Finding] = []
    for (ip, dev), entries in sorted(devs.items()):
        entries.sort(key=lambda e: (_RING_PREF.get(e[0].split("-")[0], 3), e[0]))
        kind, rd = entries[0]
        entity = f"{kind} ring {rd.endpoint}"
        hname = _host_name_for(snap, ip)
        target = f"{dev}@{hname or ip}"
        recon_says = sorted(f"{k}@{d.port}" for k, d in entries
                            if dev in recon_unmounted.get((d.ip, d.port), set()))
        recon_asked = any((d.ip, d.port) in recon_ok for _, d in entries)
        facts = snap.hosts.get(hname) if hname else None
        have_facts = facts is not None and facts.reachable and dev in facts.swift_dirs
        ev: dict[str, object] = {"host": hname, "ip": ip, "device": dev,
                                 "rings": sorted({k for k, _ in entries}),
                                 "recon_unmounted_on": recon_says}
        if have_facts:
            assert facts is not None
            path = facts.swift_dirs[dev]
            mount = facts.mount_at(path)
            exists = facts.dirs.get(path, False)
            active, commented = _fstab_for(facts, path)
            ident = next((i for i in facts.identities if i.label == dev), None)
            devices = [mount.source] if mount else []
            if ident:
                devices.append(ident.device)
            devices += [f.device for f in active]
            errs = _errors_for(facts, devices, ctx)
            ev.update(path=path, dir_exists=exists)
            if active:
                ev["fstab"] = active[0].raw
            if ident:
                ev["unmounted_device"] = ident.device
            if not exists:
                out.append(Finding(
                    "SWIFT_DEVICE_NO_DIR", Severity.CRIT, entity,
                    f"ring device {dev} has no directory {path} on {hname}: recon cannot "
                    "report it, its partitions go to handoffs", ev, target=target))
            elif mount is None:
                ev["remount_safe"] = not errs and not (commented and not active)
                out.append(Finding(
                    "SWIFT_DEVICE_UNMOUNTED", Severity.CRIT, entity,
                    f"Swift device {dev} is not mounted at {path} on {hname}"
                    + (" (recon agrees)" if recon_says else ""), ev,
                    runbook="swift-device-remount", target=target))
            if errs:
                out.append(Finding(
                    "SWIFT_DEVICE_IO_ERRORS", Severity.CRIT, entity,
                    f"{len(errs)} kernel I/O error(s) for Swift device {dev} on {hname} "
                    f"({errs[-1].device}): do not remount before checking the disk",
                    dict(ev, lines=[e.line for e in errs[-5:]], count=len(errs)),
                    target=target))
            if commented and not active:
                out.append(Finding(
                    "SWIFT_FSTAB_DISABLED", Severity.WARN, entity,
                    f"the fstab line for Swift device {dev} ({path}) on {hname} is commented "
                    "out (drive-audit?)", dict(ev, fstab_line=commented[0].raw), target=target))
        elif recon_says and recon_asked:
            out.append(Finding(
                "SWIFT_DEVICE_UNMOUNTED", Severity.CRIT, entity,
                f"recon on {ip} reports Swift device {dev} unmounted", ev,
                runbook="swift-device-remount", target=target))
    return out
