"""Filesystems and disks: every OSD data dir and Swift device judged, not only "mounted".

From the facts script's disk sections (``storage.hostfacts.disks``): is the filesystem
read-only, shut down (XFS's answer to a failing disk: every call returns EIO, the kernel
says ``Filesystem has been shut down``), full, does a write of a file of stordoc's own
succeed, does the kernel log I/O errors for the disk, what SMART says. Findings are per
**physical device** (``disk /dev/sdb@node2``) and name every OSD and Swift device on it;
the incident rule of scope ``disk`` (``checks.incident_rules``) makes one incident of a
disk, its OSDs' and Swift devices' findings and Ceph's codes naming those OSDs.

No SMART data (loop and virtual devices, smartctl missing) is said as "unknown", never as
healthy. Hosts whose facts predate these sections (older saved snapshots) give nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from checks.device_health import Prediction, predictions, smart_failing
from checks.hostdiag import io_errors_for, kernel_name, parent_name
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import ClusterSnapshot, FsProbe, HostFacts, SmartReport, XfsEvent

# the runbooks that replace a disk (built by the disk replacement work): named in the
# evidence and the manual hint until they exist in this tree's catalog
OSD_REPLACE = "osd-replace-disk"
SWIFT_REPLACE = "swift-replace-drive"
# the kernel log's errors and warnings, with wall-clock times: a person's first look on the host
DMESG = "dmesg -T --level=err,warn"

DISK_CODES = (
    CodeInfo("FS_SHUTDOWN", Severity.CRIT,
             "An OSD's or Swift device's XFS shut itself down (the kernel's answer to a "
             "failing disk or corrupt metadata): every read and write on it fails with EIO."),
    CodeInfo("DEVICE_IO_ERRORS", Severity.CRIT,
             "Recent kernel I/O errors on a physical device that holds OSDs or Swift "
             "devices (one finding per device, naming all of them)."),
    CodeInfo("DEVICE_FAILING", Severity.CRIT,
             "SMART says the disk is failing (overall health FAILED: crit) or counts "
             "reallocated, pending or uncorrectable sectors (warn)."),
    CodeInfo("FS_READONLY", Severity.CRIT,
             "An OSD's or Swift device's filesystem is mounted read-only (by hand, or by the "
             "kernel after errors): writes to it fail."),
    CodeInfo("FS_WRITE_FAILED", Severity.CRIT,
             "A write probe (a new file of stordoc's own, removed at once) failed on an OSD "
             "data dir or Swift device for another reason (EIO, a hang)."),
    CodeInfo("FS_FULL", Severity.CRIT,
             "An OSD data dir or Swift device has no space left: the write probe got ENOSPC."),
)
# the order in which a disk's codes explain each other (worst cause first)
ORDER = tuple(c.code for c in DISK_CODES)


@dataclass
class Disk:
    """One physical device of a host and what lives on it."""

    host: str
    address: str
    device: str  # /dev/sdb, /dev/nvme0n1, /dev/loop5
    probes: list[FsProbe] = field(default_factory=list)
    osds: set[int] = field(default_factory=set)
    swift: set[str] = field(default_factory=set)

    @property
    def entity(self) -> str:
        return f"disk {self.device}@{self.host}"

    def what(self) -> str:
        """``osd.1 and Swift device d2``: everything on it."""
        parts = [f"osd.{i}" for i in sorted(self.osds)]
        if self.swift:
            parts.append("Swift device" + ("s " if len(self.swift) > 1 else " ")
                         + ", ".join(sorted(self.swift)))
        return " and ".join(parts) or "nothing stordoc knows"


def whole_disk(dev: str) -> str:
    """``/dev/sdb1`` -> ``/dev/sdb`` (the physical device of a partition)."""
    return "/dev/" + parent_name(kernel_name(dev))


def disks_of(facts: HostFacts) -> dict[str, Disk]:
    """The host's physical devices under its OSD data dirs (and their ``block``) and
    Swift devices, with the probes of the filesystems on them."""
    out: dict[str, Disk] = {}

    def disk(dev: str) -> Disk:
        d = whole_disk(dev)
        return out.setdefault(d, Disk(facts.name, facts.address, d))

    for p in facts.fs_probes:
        if not (p.mounted and p.source and p.source.startswith("/dev/")):
            continue
        d = disk(p.source)
        d.probes.append(p)
        if p.kind == "osd" and p.name.isdigit():
            d.osds.add(int(p.name))
        elif p.kind == "swift":
            d.swift.add(p.name)
    for osd_id, data in facts.osd_data.items():
        if data.block and data.block.startswith("/dev/"):
            disk(data.block).osds.add(osd_id)
    return out


def smart_words(r: SmartReport | None) -> str:
    """What SMART says of a disk, honestly: unknown is unknown."""
    if r is None:
        return "SMART: unknown (not read)"
    if not r.available:
        return f"SMART: unknown ({r.reason})"
    bad = {k: v for k, v in r.attributes.items() if v}
    if r.passed is False:
        return "SMART: FAILED" + (f" ({_attrs(bad)})" if bad else "")
    if bad:
        return f"SMART: passed, but {_attrs(bad)}"
    return "SMART: passed" if r.passed else "SMART: no overall status"


def _attrs(a: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(a.items()))


def _shutdown(facts: HostFacts, p: FsProbe) -> XfsEvent | None:
    """The kernel line saying this XFS shut down, when that is the last word on it since
    it was mounted and writes do not succeed."""
    if p.fstype != "xfs" or not p.source or p.write_ok is True:
        return None
    name = kernel_name(p.source)
    last = None
    for e in facts.xfs_events:
        if e.device == name and e.kind in ("mount", "unmount", "shutdown"):
            if e.kind != "shutdown" or last is None or last.kind != "shutdown":
                last = e  # the first line of a shutdown is when it happened
    return last if last is not None and last.kind == "shutdown" else None


def _where(p: FsProbe) -> str:
    return f"osd.{p.name}'s data dir" if p.kind == "osd" else f"Swift device {p.name}"


def _drain(d: Disk) -> str:
    """Move the data off while the disk still reads."""
    ways = []
    if d.osds:
        ways.append(f"`ceph osd out {' '.join(str(i) for i in sorted(d.osds))}`")
    if d.swift:
        ways.append(f"weight 0 for {', '.join(sorted(d.swift))} in the rings")
    return "first move the data off while the disk still reads: " + " and ".join(ways)


def _replace(d: Disk) -> str:
    if d.osds and d.swift:
        return f"{OSD_REPLACE} / {SWIFT_REPLACE}"
    return OSD_REPLACE if d.osds else SWIFT_REPLACE


@check("disks", codes=DISK_CODES, needs=("hosts",))
def check_disks(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    """Each physical device under an OSD or Swift device: shut down, I/O errors, SMART,
    read-only, unwritable, full."""
    out: list[Finding] = []
    window = ctx.thresholds.io_error_window_s
    # Ceph's own prediction (checks.device_health): said here too when SMART fails
    preds = predictions(snap.ceph, snap.hosts, ctx.thresholds, ctx.now)
    for _, facts in sorted(snap.hosts.items()):
        if not facts.reachable or not facts.disks_collected:
            continue
        for _, d in sorted(disks_of(facts).items()):
            out.extend(_judge(facts, d, ctx.now, window, preds.get((d.host, d.device))))
    return out


def _judge(facts: HostFacts, d: Disk, now: float, window: float,
           pred: Prediction | None = None) -> list[Finding]:
    smart = facts.smart.get(d.device)
    sw = smart_words(smart)
    ev: dict[str, object] = {
        "host": d.host, "ip": d.address, "disk": d.device, "disk_key": f"{d.host}:{d.device}",
        "osds": sorted(d.osds), "swift_devices": sorted(d.swift),
        "swift_keys": [[d.address, s] for s in sorted(d.swift)],
        "has_osds": bool(d.osds),
        "filesystems": [{"path": p.path, "of": _where(p), "source": p.source,
                         "fstype": p.fstype, "readonly": p.readonly,
                         "write_ok": p.write_ok, "write_error": p.write_error,
                         "size": p.size, "avail": p.avail} for p in d.probes],
        "smart": sw, "smart_available": bool(smart and smart.available),
        "replace_runbook": _replace(d)}
    on = f"{d.device} on {d.host} ({d.what()})"
    replace = (f"replace the drive ({_replace(d)}); " if d.osds or d.swift else "")
    found: list[Finding] = []

    def add(code: str, sev: Severity, msg: str, manual: str, since: float | None = None,
            **extra: object) -> None:
        if any(f.code == code for f in found):  # one per code and disk
            return
        found.append(Finding(code, sev, d.entity, msg,
                             {**ev, **extra, "manual": manual}, since=since))

    for p in d.probes:
        e = _shutdown(facts, p)
        if e is not None:
            add("FS_SHUTDOWN", Severity.CRIT,
                f"the XFS of {_where(p)} on {d.host} ({p.source}) shut itself down: every "
                f"read and write fails ({p.write_error or 'EIO'}); {sw}",
                f"read the kernel log on {d.host} (`{DMESG}`) for why; stop what uses "
                f"{p.path}, unmount it, `xfs_repair -n {p.source}` shows the damage; "
                f"{replace}a remount alone only hides it", since=e.when,
                kernel_line=e.line, path=p.path)
            break
    devices = [d.device, *(p.source for p in d.probes if p.source)]
    errs = io_errors_for(facts, devices, now, window)
    if errs:
        add("DEVICE_IO_ERRORS", Severity.CRIT,
            f"{len(errs)} kernel I/O error(s) on {on}; last: {errs[-1].line.strip()[:160]};"
            f" {sw}",
            f"do not remount or restart anything on {d.device}: check the disk (SMART, "
            f"cabling); {replace}{_drain(d)}", since=errs[0].when,
            lines=[e.line for e in errs[-5:]], count=len(errs))
    if smart is not None and smart_failing(smart):
        sev = Severity.CRIT if smart.passed is False else Severity.WARN
        add("DEVICE_FAILING", max(sev, pred.severity) if pred else sev,
            f"{on}: {sw}" + (f"; {pred.words}" if pred else ""), f"{replace}{_drain(d)}",
            attributes=dict(smart.attributes),
            ceph_prediction=dict(pred.evidence) if pred else None)
    shut = any(f.code == "FS_SHUTDOWN" for f in found)
    for p in d.probes:
        if shut:
            break
        err = (p.write_error or "").lower()
        if p.readonly or "read-only" in err:
            add("FS_READONLY", Severity.CRIT,
                f"{_where(p)} on {d.host} ({p.source}) is mounted read-only: writes to it "
                f"fail; {sw}",
                f"read the kernel log on {d.host} (`{DMESG}`) for why it went read-only; "
                "if the kernel did it after errors, " + (replace or "replace the drive; ")
                + f"if it was set by hand, `mount -o remount,rw {p.path}`", path=p.path)
        elif "no space left" in err:
            add("FS_FULL", Severity.CRIT,
                f"{_where(p)} on {d.host} ({p.source}) is full: a write got ENOSPC"
                + (f" ({p.avail} bytes free of {p.size})" if p.size else ""),
                "free space or add capacity (for Swift: lower the device's weight in the "
                "ring; for Ceph: see OSD_FULL)", path=p.path)
        elif p.write_ok is False:
            add("FS_WRITE_FAILED", Severity.CRIT,
                f"a write to {_where(p)} on {d.host} ({p.source}) failed: "
                f"{p.write_error}; {sw}",
                f"read the kernel log on {d.host} (`{DMESG}`) and check the disk; "
                + (replace.removesuffix("; ") or "replace it if it is failing"), path=p.path)
    return found

