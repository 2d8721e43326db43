"""Parsers of the facts script's sections: ``split_sections`` cuts the output at its
``@@name`` headers, one parser per tool (findmnt or /proc/mounts, lsblk, losetup, fstab,
the kernel log, ps, ss, ip, md5sum, the OSD and Swift dir lines). Pure functions of text.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storage.model import (
    BlockDevice,
    Daemon,
    DaemonFacts,
    FstabLine,
    IoError,
    Mount,
    NetCounters,
    OsdDataDir,
    SwiftDeviceDir,
)


def split_sections(text: str) -> dict[str, list[str]]:
    """``@@name arg`` headers -> lines until the next header (key keeps the argument)."""
    out: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("@@"):
            cur = out.setdefault(line[2:].strip(), [])
        elif cur is not None:
            cur.append(line)
    return out


_PARTS_KIND = {"objects": "object", "containers": "container", "accounts": "account"}


def parse_swift_parts(lines: Sequence[str]) -> dict[str, int]:
    """``parts objects 57`` lines -> {"object": 57}: partition dirs on one Swift device."""
    out: dict[str, int] = {}
    for line in lines:
        p = line.split()
        if len(p) == 3 and p[0] == "parts" and p[1] in _PARTS_KIND and p[2].isdigit():
            out[_PARTS_KIND[p[1]]] = int(p[2])
    return out


def parse_addrs(lines: Sequence[str]) -> tuple[str, ...]:
    """``ip -o addr`` fourth fields (``127.0.0.1/8``, ``fe80::1/64``) -> the addresses, as
    Swift's whataremyips() lists them (exact addresses, not the networks)."""
    out: list[str] = []
    for line in lines:
        a = line.strip().split("/", 1)[0]
        if a and a not in out and re.fullmatch(r"[0-9A-Fa-f:.]+", a):
            out.append(a)
    return tuple(out)


def parse_netdev(lines: Sequence[str]) -> dict[str, NetCounters] | None:
    """``/proc/net/dev`` -> interface -> error/drop counters; None when no line parsed."""
    out: dict[str, NetCounters] = {}
    for line in lines:
        name, sep, rest = line.partition(":")
        f = rest.split()
        if not sep or len(f) < 12 or not all(x.isdigit() for x in f[:12]):
            continue
        out[name.strip()] = NetCounters(rx_errs=int(f[2]), rx_drop=int(f[3]),
                                        tx_errs=int(f[10]), tx_drop=int(f[11]))
    return out or None


def parse_findmnt(text: str) -> tuple[Mount, ...]:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return ()
    return tuple(Mount(str(fs.get("source") or ""), str(fs.get("target") or ""),
                       str(fs.get("fstype") or ""), str(fs.get("options") or ""))
                 for fs in data.get("filesystems", []))


def _unescape_mount(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def parse_proc_mounts(text: str) -> tuple[Mount, ...]:
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            out.append(Mount(_unescape_mount(parts[0]), _unescape_mount(parts[1]), parts[2],
                             parts[3]))
    return tuple(out)


def parse_losetup(text: str) -> dict[str, str]:
    """loop device path -> backing file."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return {}
    return {str(d.get("name")): str(d.get("back-file") or "").removesuffix(" (deleted)")
            for d in data.get("loopdevices", []) if d.get("name")}


@dataclass(frozen=True)
class LsblkDevice:
    """A block device with what ``BlockDevice`` leaves out: its label, whether it has
    children (partitions, holders)."""

    dev: BlockDevice
    label: str | None
    has_children: bool


def parse_lsblk(text: str, backing: Mapping[str, str]) -> list[LsblkDevice]:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return []
    out: list[LsblkDevice] = []

    def walk(nodes: list[dict[str, Any]]) -> None:
        for n in nodes:
            path = str(n.get("path") or f"/dev/{n.get('name')}")
            kids = n.get("children") or []
            size = n.get("size")
            out.append(LsblkDevice(BlockDevice(
                path=path, type=str(n.get("type") or ""),
                size=int(size) if isinstance(size, (int, str)) and str(size).isdigit() else 0,
                fstype=n.get("fstype"), uuid=n.get("uuid"), mountpoint=n.get("mountpoint"),
                backing_file=backing.get(path)), n.get("label"), bool(kids)))
            walk(kids)

    walk(data.get("blockdevices", []))
    return out


def parse_fstab(text: str) -> tuple[FstabLine, ...]:
    """Active and commented-out mount lines (a ``#`` line that still parses as a mount)."""
    out = []
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        commented = s.startswith("#")
        body = s.lstrip("#").strip() if commented else s
        parts = body.split()
        if len(parts) < 3 or not (parts[1].startswith("/") or parts[1] in ("none", "swap")):
            continue  # a comment in prose, not a disabled mount line
        if commented and not (parts[0].startswith(("/", "UUID=", "LABEL=", "PARTUUID="))):
            continue
        out.append(FstabLine(_unescape_mount(parts[0]), _unescape_mount(parts[1]), parts[2],
                             parts[3] if len(parts) > 3 else "defaults", commented, raw))
    return tuple(out)


_IO_PATTERNS = (
    re.compile(r"I/O error, dev (?P<dev>[\w.-]+?),? sector"),
    re.compile(r"Buffer I/O error on (?:dev|device) (?P<dev>[\w.-]+?),"),
    re.compile(r"XFS \((?P<dev>[\w.-]+)\): (?:metadata I/O error|Corruption)"),
    re.compile(r"\b(?P<dev>sd[a-z]+|nvme\d+n\d+|vd[a-z]+|loop\d+)\b.*(?:medium error|I/O error)"),
)
_TS_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[,.](\d+))?([+-]\d\d:?\d\d)?\s")


def _ts(line: str) -> float | None:
    m = _TS_RE.match(line)
    if not m:
        return None
    tz = m.group(3) or "+00:00"
    if ":" not in tz:
        tz = tz[:3] + ":" + tz[3:]
    try:
        return datetime.fromisoformat(m.group(1) + tz).timestamp()
    except ValueError:
        return None


# the kernel attaching a device under a name: a loop device set up, a SCSI or virtio disk
# probed (a replacement disk often gets the old one's name)
_ATTACH_PATTERNS = (
    re.compile(r"\b(?P<dev>[\w.-]+): detected capacity change from 0 to [1-9]"),
    re.compile(r"\[(?P<dev>sd[a-z]+)\] Attached SCSI (?:removable )?disk"),
    re.compile(r"virtio_blk \S+ \[(?P<dev>vd[a-z]+)\] \d+ \d+-byte logical blocks"),
)
_PART_RE = re.compile(r"^((?:nvme\d+n\d+|mmcblk\d+|loop\d+)(?=p\d+$)|(?:sd|vd|xvd)[a-z]+(?=\d+$))")


def _disk_of(dev: str) -> str:
    """The whole disk of a kernel name (sdb1 -> sdb, loop3p1 -> loop3, nvme0n1p2 -> nvme0n1)."""
    m = _PART_RE.match(dev)
    return m.group(1) if m else dev


def parse_io_errors(lines: Iterable[str], now: float, window_s: float) -> tuple[IoError, ...]:
    """Kernel I/O error lines within the window; ``device`` is the kernel name (loop3, sdb1).

    An error logged before the kernel last attached a device under that name belongs to the
    device that had the name before (a detached loop device's number reused by the next
    ``losetup``, a failed disk swapped for one that got its ``sdX``): it is dropped, or the
    new disk would be called failing for its predecessor's errors."""
    found: list[tuple[IoError, int]] = []
    attached: dict[str, int] = {}
    for i, line in enumerate(lines):
        for apat in _ATTACH_PATTERNS:
            am = apat.search(line)
            if am:
                attached[am.group("dev")] = i
                break
        else:
            for pat in _IO_PATTERNS:
                m = pat.search(line)
                if m:
                    when = _ts(line)
                    if when is not None and now - when > window_s:
                        break
                    found.append((IoError(m.group("dev"), line.strip(), when), i))
                    break
    return tuple(e for e, i in found if i > attached.get(_disk_of(e.device), -1))


def keep_io_errors(errors: Iterable[IoError], names: set[str]) -> tuple[IoError, ...]:
    """The errors on a host's own devices (``names``: kernel names of what is mounted on
    its OSD dirs and Swift devices, and their block devices): a partition's error is its
    disk's, a disk's error is its partitions'."""
    return tuple(e for e in errors if e.device in names
                 or re.sub(r"p?\d+$", "", e.device) in names
                 or any(k.startswith(e.device) for k in names))


# ``-i N`` / ``--id N``, or ``-n osd.N`` / ``--name osd.N`` (cephadm's containers)
_OSD_ARG_RE = re.compile(r"(?:^|\s)(?:(?:-i|--id)(?:\s+|=)|(?:-n|--name)(?:\s+|=)osd\.)"
                         r"(\d+)(?:\s|$)")


_CLUSTER_ARG_RE = re.compile(r"(?:^|\s)--cluster(?:\s+|=)(\S+)")


def parse_ps_osds(lines: Iterable[str], cluster: str = "ceph") -> dict[int, int]:
    """OSD id -> pid from ``ps -eo pid=,args=`` lines of ceph-osd processes of ``cluster``."""
    out: dict[int, int] = {}
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        args = parts[1]
        if "ceph-osd" not in args.split(None, 1)[0]:
            continue
        cm = _CLUSTER_ARG_RE.search(args)
        if (cm.group(1) if cm else "ceph") != cluster:
            continue
        m = _OSD_ARG_RE.search(args)
        if m:
            out.setdefault(int(m.group(1)), int(parts[0]))
    return out


_SS_PROC_RE = re.compile(r'\("([^"]*)",pid=(\d+)')
_SWIFT_PS_RE = re.compile(r"swift-(object|container|account)-(server|replicator)")


def parse_listeners(lines: Iterable[str]) -> dict[int, tuple[int | None, str]] | None:
    """TCP port -> (pid, process name) from ``ss -Hltnp``; None when ss is not there."""
    lines = list(lines)
    if any(ln.strip() == "unknown" for ln in lines):
        return None
    out: dict[int, tuple[int | None, str]] = {}
    for line in lines:
        f = line.split()
        if len(f) < 4 or ":" not in f[3]:
            continue
        port_s = f[3].rsplit(":", 1)[1]
        if not port_s.isdigit():
            continue
        m = _SS_PROC_RE.search(line)
        out.setdefault(int(port_s), (int(m.group(2)), m.group(1)) if m else (None, ""))
    return out


def parse_md5sums(lines: Iterable[str]) -> dict[str, str]:
    """path -> md5 from ``md5sum`` lines (``<32 hex>  <path>``)."""
    out: dict[str, str] = {}
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and re.fullmatch(r"[0-9a-f]{32}", parts[0]):
            out[parts[1].lstrip("*")] = parts[0]
    return out


def parse_ps_swift(lines: Iterable[str]) -> list[Daemon]:
    """Swift storage server and replicator processes from ``ps -eo pid=,args=`` (ident =
    the config path; kind ``swift-object-server``, ``swift-object-replicator``...)."""
    out: list[Daemon] = []
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        words = parts[1].split()
        idx = next((i for i, w in enumerate(words[:3])
                    if _SWIFT_PS_RE.fullmatch(os.path.basename(w))), None)
        if idx is None:
            continue
        m = _SWIFT_PS_RE.fullmatch(os.path.basename(words[idx]))
        assert m is not None
        conf = words[idx + 1] if len(words) > idx + 1 else ""
        out.append(Daemon(f"swift-{m.group(1)}-{m.group(2)}", conf, int(parts[0]), True))
    return out


@dataclass(frozen=True)
class OsdSection:
    """One ``@@osd ID`` section: the data dir's state and what its pid file says."""

    data_dir: OsdDataDir
    pid: int | None = None  # from the pid file; None when there is none or it is empty
    pid_file_read: bool = False  # the pid file was there and read
    cmdline: str = ""  # /proc/PID/cmdline of that pid, when the process exists


def _kv(lines: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for ln in lines:
        k, _, v = ln.partition(" ")
        out.setdefault(k, v)
    return out


def parse_osd_section(osd_id: int, path: str, lines: Sequence[str]) -> OsdSection:
    """``dir 1`` / ``whoami 1`` / ``block /dev/loop3`` / ``pid 123 1 ceph-osd -i 0 ...``."""
    kv = _kv(lines)
    d = OsdDataDir(osd_id, path, exists=kv.get("dir") == "1",
                   has_whoami=kv.get("whoami") == "1", block=kv.get("block") or None)
    if "pid" not in kv:
        return OsdSection(d)
    p = kv["pid"].split(" ", 2)
    pid = int(p[0]) if p[0].isdigit() and p[0] != "0" else None
    alive = len(p) >= 2 and p[1] == "1"
    return OsdSection(d, pid, True, p[2] if alive and len(p) > 2 else "")


def parse_swift_section(device: str, path: str, lines: Sequence[str]) -> SwiftDeviceDir:
    """``dir 1`` / ``parts objects 57`` lines of one ``@@swift NAME`` section."""
    return SwiftDeviceDir(device, path, exists="dir 1" in lines,
                          partitions=parse_swift_parts(lines))


# --------------------------------------------------------------------------- daemons
_TS_ANY_RE = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,]\d+)?"
                        r"([+-]\d\d:?\d\d|Z)?")


def log_time(line: str) -> float | None:
    """The time a log line starts with: Ceph's ``2026-11-27T01:21:24.494+0000``, rsync's
    ``2026/11/27 01:21:40`` (no zone: read as UTC), ISO with a zone."""
    m = _TS_ANY_RE.match(line.strip())
    if not m:
        return None
    tz = m.group(5) or "+00:00"
    if tz == "Z":
        tz = "+00:00"
    elif ":" not in tz:
        tz = tz[:3] + ":" + tz[3:]
    try:
        return datetime.fromisoformat(
            f"{m.group(1)}-{m.group(2)}-{m.group(3)}T{m.group(4)}{tz}").timestamp()
    except ValueError:
        return None


def parse_probes(lines: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``@@probes``: ``NAME ok`` / ``NAME timeout`` / ``NAME error ConnectionResetError``
    -> name -> (result, detail)."""
    out: dict[str, tuple[str, str]] = {}
    for line in lines:
        p = line.split()
        if len(p) >= 2:
            out[p[0]] = (p[1], " ".join(p[2:]))
    return out


_OOM_RE = re.compile(r"Killed process (\d+) \(([^)]*)\)")


def parse_oom(lines: Iterable[str]) -> dict[int, str]:
    """``@@oom``: the kernel's OOM-killer lines by the pid they killed."""
    out: dict[int, str] = {}
    for line in lines:
        m = _OOM_RE.search(line)
        if m:
            out[int(m.group(1))] = line.strip()
    return out


_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # Ceph colours "** ERROR: ..." on a tty
_UNIT_KEYS = {"Id": "unit", "NRestarts": "restarts", "Result": "result",
              "ExecMainStatus": "status"}
_START_PID_RE = re.compile(r"process [\w-]+, pid (\d+)|\[(\d+)\] rsyncd version")


def parse_daemon_section(name: str, kind: str, lines: Sequence[str],
                         probes: Mapping[str, tuple[str, str]], oom: Mapping[int, str],
                         now: float, pid_file: str = "", log_file: str = "",
                         probe_what: str = "") -> DaemonFacts:
    """One ``@@daemon NAME`` section (``pidfile 1 PID`` / ``proc STATE CMDLINE`` /
    ``log 1`` / ``fatal LINE`` / ``start LINE`` / ``last LINE`` / ``crash META`` /
    ``unit K=V``) with its probe's answer and the OOM killer's lines."""
    pid: int | None = None
    present = alive = log_read = False
    state = cmd = last = ""
    fatal: list[str] = []
    starts: list[str] = []
    crashes: list[str] = []
    posted: list[str] = []
    module_crashes: set[str] = set()  # a mgr module's exception: not the daemon's end
    unit: dict[str, str] = {}
    for ln in lines:
        key, _, rest = _ANSI_RE.sub("", ln).partition(" ")
        if key == "pidfile":
            f = rest.split()
            present = bool(f) and f[0] == "1"
            if len(f) > 1 and f[1].isdigit() and f[1] != "0":
                pid = int(f[1])
        elif key == "proc":
            state, _, cmd = rest.partition(" ")
            alive = state != "Z"
        elif key == "log":
            log_read = rest.strip() == "1"
        elif key == "fatal":
            fatal.append(rest.rstrip())
        elif key == "start":
            starts.append(rest.rstrip())
        elif key == "last":
            last = rest.rstrip()
        elif key == "modcrash":
            module_crashes.add(os.path.basename(os.path.dirname(rest.strip())))
        elif key == "crash":
            meta = rest.strip()
            crash_id = os.path.basename(os.path.dirname(meta))
            if crash_id:
                crashes.append(crash_id)
                if os.path.basename(os.path.dirname(os.path.dirname(meta))) == "posted":
                    posted.append(crash_id)
        elif key == "unit":
            k, _, v = rest.partition("=")
            if k in _UNIT_KEYS:
                unit[_UNIT_KEYS[k]] = v.strip()
    times = tuple(t for t in (log_time(s) for s in starts) if t is not None)
    probe, detail = probes.get(name, ("none", ""))
    if not alive:
        probe, detail = "none", ""
    pids = {pid} if pid else set()
    for s in starts:
        m = _START_PID_RE.search(s)
        if m:
            pids.add(int(m.group(1) or m.group(2)))
    restarts = unit.get("restarts", "")
    crashes = sorted(c for c in crashes if c not in module_crashes)  # ids begin with a time
    posted = [c for c in posted if c not in module_crashes]
    return DaemonFacts(
        name=name, kind=kind, pid_file=pid_file, pid_file_present=present, pid=pid,
        alive=alive, proc_state=state, cmdline=cmd.strip(), probe=probe,
        probe_detail=(f"{probe_what} {detail}".strip()), log_file=log_file,
        log_read=log_read, log_last=last, fatal_lines=tuple(fatal),
        start_lines=tuple(starts), start_times=times, crash_ids=tuple(crashes),
        crash_posted=tuple(posted), oom_lines=tuple(oom[p] for p in sorted(pids) if p in oom),
        unit=unit.get("unit", ""),
        unit_restarts=int(restarts) if restarts.isdigit() else None,
        unit_result=unit.get("result", ""), unit_status=unit.get("status", ""), now=now)
