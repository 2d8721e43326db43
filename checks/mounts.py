"""Root causes on the host: OSD data dirs and Swift devices that are not mounted, daemons that
are not running, and the reasons a remount would be unsafe (kernel I/O errors, an fstab line
commented out on purpose — Swift's drive-audit does that to failing drives).

The OSD codes need Ceph and host facts. The Swift device codes need Swift; they use host
facts when they were collected (directory missing, I/O errors, fstab) and recon alone
otherwise (recon only lists directories that exist, so SWIFT_DEVICE_NO_DIR needs the host).
"""

from __future__ import annotations

from collections.abc import Iterable

from checks.daemons import status_on as daemon_status
from checks.hostdiag import OsdHostState, diagnose_osd, diagnose_swift_device
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.swift_names import device_name
from storage.model import ClusterSnapshot, DaemonLife, OsdState, RingDevice

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
    CodeInfo("OSD_NOT_ACTIVATED", Severity.CRIT,
             "A ceph-volume (raw/lvm) OSD's tmpfs data dir was not re-created after a boot: "
             "its device's BlueStore label or LV tags name it, the dir is empty.",
             "osd-activate"),
    CodeInfo("OSD_LABEL_FOREIGN", Severity.WARN,
             "The only device naming this OSD id carries another cluster's fsid."),
    CodeInfo("OSD_LV_INACTIVE", Severity.CRIT,
             "An LV tagged for this OSD by ceph-volume lvm is not active."),
    CodeInfo("OSD_UNIT_FAILED", Severity.CRIT,
             "A systemd unit of this OSD (ceph-osd@N, ceph-volume@lvm-N-UUID, "
             "ceph-FSID@osd.N) failed; its last log lines are the evidence."),
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

def _telling(log: tuple[str, ...]) -> str:
    """The log line that says why: the last one not written by systemd itself."""
    for ln in reversed(log):
        if "systemd[1]:" not in ln:
            return ln.strip()
    return log[-1].strip()


def _osds_by_host(snap: ClusterSnapshot) -> dict[str, list[OsdState]]:
    """The OSDs of each CRUSH host (once: a scan of the whole map per host made a
    5,000-host check quadratic)."""
    assert snap.ceph is not None
    out: dict[str, list[OsdState]] = {}
    for o in snap.ceph.osds:
        if o.host and o.exists and not o.destroyed and not o.new:
            out.setdefault(o.host, []).append(o)
    return out


@check("osd-mounts", codes=OSD_CODES, needs=("ceph", "hosts"))
def osd_mounts(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    """Why an OSD is down, seen from its host (one diagnosis: ``checks.hostdiag``)."""
    ceph = snap.ceph
    assert ceph is not None
    out: list[Finding] = []
    window = ctx.thresholds.io_error_window_s
    by_host = _osds_by_host(snap)
    for hname, facts in sorted(snap.hosts.items()):
        if not facts.reachable:
            continue
        for o in by_host.get(facts.name, ()):
            dg = diagnose_osd(facts, o, ceph.fsid, ctx.now, window)
            if dg is None:
                continue
            d = dg.data_dir
            base_ev: dict[str, object] = {"host": hname, "data_dir": d, "osd_up": o.up,
                                          "osd_in": o.in_, **dg.as_evidence()}
            sev = Severity.CRIT if o.in_ else Severity.WARN
            errs = list(dg.io_errors)
            active, commented = dg.fstab_active, dg.fstab_commented
            safe = dg.refusal() is None
            down = not o.up or not dg.running
            if dg.state is OsdHostState.NOT_ACTIVATED and down:
                m = dg.matches[0]
                ev = dict(base_ev, dir_exists=dg.dir_exists,
                          daemon_running=dg.running, device=m.device,
                          device_whoami=m.whoami, device_ceph_fsid=m.ceph_fsid,
                          device_osd_fsid=m.osd_fsid, activate_safe=safe)
                what = "LV" if m.kind == "lvm" else "BlueStore label"
                out.append(Finding(
                    "OSD_NOT_ACTIVATED", sev, o.name,
                    f"{o.name} ({dg.flavour.value}) was not activated on {hname}: "
                    f"{d} is empty while the {what} on {m.device} names it "
                    "(activation did not run or failed after a reboot)", ev,
                    runbook="osd-activate", target=o.name, since=o.down_since))
            elif dg.state in (OsdHostState.UNMOUNTED, OsdHostState.MISSING) and down:
                matched = next((i for i in dg.matches if i.kind == "xfs"), None)
                ev = dict(base_ev, dir_exists=dg.dir_exists,
                          daemon_running=dg.running)
                if matched:
                    ev.update(device=matched.device, device_whoami=matched.whoami,
                              device_ceph_fsid=matched.ceph_fsid,
                              device_osd_fsid=matched.osd_fsid)
                    where = f"; {matched.device} holds osd.{o.id} of this cluster"
                else:
                    ev["device"] = "no matching device found"
                    where = "; no unmounted device holding it was found"
                if dg.foreign:
                    ev["other_candidates"] = [
                        {"device": i.device, "ceph_fsid": i.ceph_fsid, "osd_fsid": i.osd_fsid}
                        for i in dg.foreign]
                if active:
                    ev["fstab"] = active[0].raw or f"{active[0].device} {active[0].mountpoint}"
                ev["remount_safe"] = safe
                out.append(Finding(
                    "OSD_DATA_UNMOUNTED", sev, o.name,
                    f"{o.name} data dir {d} is not mounted on {hname}{where}", ev,
                    runbook="osd-remount", target=o.name, since=o.down_since))
                if dg.foreign and not dg.matches:
                    f0 = dg.foreign[0]
                    out.append(Finding(
                        "OSD_LABEL_FOREIGN", Severity.WARN, o.name,
                        f"{f0.device} on {hname} names osd.{o.id} of another cluster "
                        f"({f0.ceph_fsid}, this one is {ceph.fsid}): do not activate or "
                        "mount it as this OSD", dict(base_ev, device=f0.device,
                                                     device_ceph_fsid=f0.ceph_fsid)))
            elif dg.state is OsdHostState.STOPPED:
                mount = dg.mount
                src = mount.source if mount and mount.fstype != "tmpfs" else None
                ev = dict(base_ev, device=src, pid=dg.pid)
                life = daemon_status(facts, o.name)
                if life is not None and life.life in (DaemonLife.CRASHED, DaemonLife.LOOPING):
                    pass  # crashed or looping: checks/daemons.py says so, with its evidence
                else:
                    how = f": {life.summary}" if life is not None else ""
                    if life is not None:
                        ev.update(life=life.life.value, life_facts=list(life.evidence))
                    out.append(Finding(
                        "OSD_DAEMON_STOPPED", sev, o.name,
                        f"{o.name} data is in place on {hname} "
                        f"({src or d}) but ceph-osd is not running{how}", ev,
                        runbook="osd-start", target=o.name, since=o.down_since))
            for lv in (v for v in facts.lvm_volumes if v.osd_id == o.id and not v.active
                       and v.cluster_fsid == ceph.fsid):
                out.append(Finding(
                    "OSD_LV_INACTIVE", Severity.CRIT if down else Severity.WARN, o.name,
                    f"{o.name}'s {lv.type} LV {lv.vg_name}/{lv.lv_name} on {hname} is not "
                    "active: activate the volume group before the OSD",
                    dict(base_ev, lv=lv.lv_path, lv_type=lv.type, devices=list(lv.devices))))
            for u in dg.units:
                if u.active_state != "failed":
                    continue
                out.append(Finding(
                    "OSD_UNIT_FAILED", Severity.CRIT if down else Severity.WARN, o.name,
                    f"{u.unit} on {hname} failed ({u.result or u.sub_state}"
                    + (f", since {u.since}" if u.since else "") + ")"
                    + (f": {_telling(u.log_tail)}" if u.log_tail else ""),
                    dict(base_ev, unit=u.unit, result=u.result, since=u.since,
                         log_tail=list(u.log_tail)),
                    runbook=dg.runbook() if down else None,
                    target=o.name if down and dg.runbook() else None))
            if errs:
                out.append(Finding(
                    "OSD_DEVICE_IO_ERRORS", Severity.CRIT, o.name,
                    f"{len(errs)} kernel I/O error(s) for {o.name}'s device on {hname} "
                    f"({errs[-1].device}): do not remount or restart before checking the disk",
                    dict(base_ev, devices=sorted(set(dg.devices)),
                         lines=[e.line for e in errs[-5:]], count=len(errs))))
            if dg.fstab_disabled:
                out.append(Finding(
                    "OSD_FSTAB_DISABLED", Severity.WARN, o.name,
                    f"the fstab line for {o.name} ({d}) on {hname} is commented out",
                    dict(base_ev, fstab_line=commented[0].raw,
                         device=commented[0].device)))
    return out


_RING_PREF = {"object": 0, "container": 1, "account": 2}


def _host_names_by_ip(snap: ClusterSnapshot) -> dict[str, str]:
    """Host name by address (the first host of an address, as a scan would find it)."""
    out: dict[str, str] = {}
    for name, f in snap.hosts.items():
        out.setdefault(f.address, name)
    return out


@check("swift-device-mounts", codes=SWIFT_CODES, needs=("swift",), reads=("hosts",))
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
        if r.error is None or r.unmounted_answered:
            recon_ok.add((r.ip, r.port))
            recon_unmounted[(r.ip, r.port)] = set(r.unmounted)
    out: list[Finding] = []
    names_by_ip = _host_names_by_ip(snap)
    for (ip, dev), entries in sorted(devs.items()):
        entries.sort(key=lambda e: (_RING_PREF.get(e[0].split("-")[0], 3), e[0]))
        rd = entries[0][1]
        hname = names_by_ip.get(ip)
        entity = target = device_name(dev, ip, {ip: hname} if hname else None)
        recon_says = sorted(f"{k}@{d.port}" for k, d in entries
                            if dev in recon_unmounted.get((d.ip, d.port), set()))
        recon_asked = any((d.ip, d.port) in recon_ok for _, d in entries)
        facts = snap.hosts.get(hname) if hname else None
        have_facts = facts is not None and facts.reachable and dev in facts.swift_dirs
        ev: dict[str, object] = {"host": hname, "ip": ip, "device": dev,
                                 "ring_entry": rd.endpoint,
                                 "rings": sorted({k for k, _ in entries}),
                                 "recon_unmounted_on": recon_says}
        if have_facts:
            assert facts is not None
            sd = diagnose_swift_device(facts, dev, ctx.now, ctx.thresholds.io_error_window_s)
            assert sd is not None
            path, mount, exists = sd.path, sd.mount, sd.exists
            active, commented = list(sd.fstab_active), list(sd.fstab_commented)
            errs = list(sd.io_errors)
            ev.update(path=path, dir_exists=exists)
            if active:
                ev["fstab"] = active[0].raw
            if sd.unmounted_device:
                ev["unmounted_device"] = sd.unmounted_device
            if not exists and mount is None:  # a mounted dir that fails stat: disks.py
                out.append(Finding(
                    "SWIFT_DEVICE_NO_DIR", Severity.CRIT, entity,
                    f"ring device {dev} has no directory {path} on {hname}: recon cannot "
                    "report it, its partitions go to handoffs", ev, target=target))
            elif mount is None:
                ev["remount_safe"] = sd.refusal() is None
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
                f"recon on {hname or ip} reports Swift device {dev} unmounted", ev,
                runbook="swift-device-remount", target=target))
    return out
