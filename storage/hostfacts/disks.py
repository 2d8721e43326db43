"""Parsers of the facts script's disk sections (``@@fsprobe``, ``@@xfslog``, ``@@smart``):
pure functions of text, typed results (``storage.model.FsProbe``, ``XfsEvent``,
``SmartReport``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from storage.hostfacts.parse import _ts
from storage.model import FsProbe, SmartReport, XfsEvent


def _why(msg: str) -> str:
    """The error of a ``mktemp``/``sh``/``df`` message: ``mktemp: failed to create file
    via template '...': Read-only file system`` -> ``Read-only file system``."""
    msg = msg.strip()
    return msg.rsplit(": ", 1)[-1].strip() if ": " in msg else msg


def parse_fsprobe(kind: str, name: str, path: str, lines: Sequence[str]) -> FsProbe:
    """One ``@@fsprobe KIND NAME`` section: ``mounted 0`` or ``mount SRC FSTYPE OPTS``,
    ``write ok`` / ``write fail MSG``, ``df SIZE AVAIL IAVAIL`` (or df's error)."""
    mounted = False
    source = fstype = None
    readonly: bool | None = None
    write_ok: bool | None = None
    write_error = df_error = None
    size = avail = ifree = None
    for ln in lines:
        key, _, rest = ln.partition(" ")
        if key == "mount":
            p = rest.split()
            if p:
                mounted, source = True, p[0]
                fstype = p[1] if len(p) > 1 else None
                if len(p) > 2:
                    readonly = "ro" in p[2].split(",")
        elif key == "write":
            write_ok = rest.strip() == "ok"
            if not write_ok:
                write_error = _why(rest.removeprefix("fail")) or "failed"
        elif key == "df":
            nums = rest.split()
            if len(nums) == 3 and all(n.isdigit() for n in nums):
                size, avail, ifree = (int(n) for n in nums)
            elif rest.strip():
                df_error = _why(rest)
    return FsProbe(kind, name, path, mounted, source, fstype, readonly, write_ok,
                   write_error, size, avail, ifree, df_error)


_XFS_RE = re.compile(r"XFS \((?P<dev>[\w.-]+)\): (?P<msg>.*)$")


def _xfs_kind(msg: str) -> str | None:
    if msg.startswith("Mounting"):
        return "mount"
    if msg.startswith("Unmounting"):
        return "unmount"
    if ("shutdown" in msg.lower() or "shutting down filesystem" in msg.lower()
            or "has been shut down" in msg):
        return "shutdown"
    if "Corruption" in msg or "metadata I/O error" in msg:
        return "error"
    return None


def parse_xfs_events(lines: Iterable[str]) -> tuple[XfsEvent, ...]:
    """XFS kernel lines in log order: mounted, unmounted, shut down, an error."""
    out = []
    for line in lines:
        m = _XFS_RE.search(line)
        if not m:
            continue
        kind = _xfs_kind(m.group("msg"))
        if kind is not None:
            out.append(XfsEvent(m.group("dev"), kind, line.strip(), _ts(line)))
    return tuple(out)


# ATA attributes that count sectors a disk could not read or had to move: a disk that
# grows them is failing (Backblaze's and smartmontools' usual five)
FAILING_ATTRS = {5: "Reallocated_Sector_Ct", 187: "Reported_Uncorrect",
                 188: "Command_Timeout", 197: "Current_Pending_Sector",
                 198: "Offline_Uncorrectable"}


def parse_smart(device: str, lines: Sequence[str]) -> SmartReport:
    """One ``@@smart DEV`` section: ``virtual``, ``no smartctl`` or smartctl's JSON."""
    text = "\n".join(lines).strip()
    if text == "virtual":
        return SmartReport(device, False, reason=f"{device} is a virtual device: no SMART "
                                                 "data")
    if text == "no smartctl":
        return SmartReport(device, False, reason="smartctl is not installed on the host")
    try:
        doc: Any = json.loads(text) if text else None
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        return SmartReport(device, False, reason=f"smartctl gave no JSON: {text[:120]!r}")
    status = doc.get("smartctl", {}).get("exit_status")
    msgs = [str(m.get("string")) for m in doc.get("smartctl", {}).get("messages", [])
            if isinstance(m, dict) and m.get("string")]
    ss = doc.get("smart_status")
    passed = ss.get("passed") if isinstance(ss, dict) else None
    attrs: dict[str, int] = {}
    table = (doc.get("ata_smart_attributes") or {}).get("table") or []
    for a in table:
        if isinstance(a, dict) and a.get("id") in FAILING_ATTRS:
            raw = (a.get("raw") or {}).get("value")
            if isinstance(raw, int):
                attrs[FAILING_ATTRS[int(a["id"])]] = raw
    nvme = doc.get("nvme_smart_health_information_log")
    if isinstance(nvme, Mapping):
        for k in ("critical_warning", "media_errors", "percentage_used"):
            if isinstance(nvme.get(k), int):
                attrs[k] = int(nvme[k])
    if not isinstance(passed, bool) and not attrs:
        return SmartReport(device, False, reason="; ".join(msgs)[:200] or
                           "smartctl read no health status", exit_status=status)
    return SmartReport(device, True, passed if isinstance(passed, bool) else None,
                       "; ".join(msgs)[:200], attrs, status)
