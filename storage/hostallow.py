"""A host's allowlist for the restricted key (storage/hostguard.py reads it on the host).

Each rule is built by calling the same code that makes the command, with marker values
for what varies (an OSD id, a device, a pid, a UUID), then turning each marker into a
typed pattern: the allowlist follows the product's commands instead of a second table of
them. What is fixed by the host's settings (its fstab, daemons, paths, templates) is
matched literally. What it leaves out needs the full key: the multi-client benchmarks
(staged programs, socket forwarding).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from storage.hostfacts.collect import daemon_probes
from storage.hostfacts.identity import identity_argv
from storage.hostfacts.scripts import facts_argv
from storage.hostguard import VERSION
from storage.hostscripts import ALIVE_SCRIPT, EVIDENCE_SCRIPT, KILL_SCRIPT, PROGRAM, put_argv
from storage.targets import ClusterTarget, HostTarget

# a path component that cannot be "." or "..": it does not start with a dot
_COMP = r"[A-Za-z0-9_:+@=-][A-Za-z0-9_.:+@=-]{0,127}"
SLOTS: dict[str, str] = {
    "\x01id\x01": r"[0-9]{1,5}",
    "\x01pid\x01": r"[1-9][0-9]{0,9}",
    "\x01device\x01": rf"/dev/(?:{_COMP}/){{0,4}}{_COMP}",
    "\x01osd_fsid\x01": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "\x01fs_uuid\x01": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "\x01osd_uuid\x01": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "\x01fsid\x01": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "\x01name\x01": _COMP,  # a Swift device name, an evidence dir's name
    "\x01crash\x01": _COMP,  # a crash report's id
    "\x01server\x01": r"(?:object|container|account)",
    "\x01fstype\x01": r"(?:xfs|ext4|ext3|btrfs)",
    "\x01opts\x01": "",  # set below: the mount options
    # a ring file (a storage policy's object-N too) and the suffix a ring push gives its
    # copies (runbooks/swift/ring_distribution.py: stordoc-, rb-/rd-/rn- or not, 12 hex digits)
    "\x01ring\x01": r"(?:object(?:-[0-9]{1,4})?|container|account)\.ring\.gz",
    "\x01suffix\x01": r"stordoc-(?:r[bdn]-)?[0-9a-f]{12}",
}
M = {k.strip("\x01"): k for k in SLOTS}
# mount options stordoc copies from a host's fstab line (runbooks/base.mount_options)
_OPT = (r"(?:noatime|nodiratime|relatime|strictatime|inode64|inode32|nobarrier|barrier|"
        r"largeio|swalloc|attr2|noattr2|noquota|user_xattr|acl|noacl|discard|nodiscard|rw|"
        r"ro|nodev|nosuid|noexec|loop|(?:logbufs|logbsize|allocsize|sunit|swidth|commit)="
        r"[0-9]+[kKmMgG]?|errors=(?:continue|remount-ro|panic))")
SLOTS["\x01opts\x01"] = f"{_OPT}(?:,{_OPT}){{0,15}}"
_MARK = re.compile("|".join(re.escape(re.escape(m)) for m in SLOTS))
SEP = "\\x00"  # between arguments in a rule's pattern (an argument holds no NUL)


class _Names:
    """Each marker is a named group where it first appears in a command and the same
    value (a backreference) wherever it appears again: ``osd 3 .../ceph-3`` and never
    ``osd 3 .../ceph-4``; names numbered per rule so alternatives never clash."""

    def __init__(self) -> None:
        self.n = 0
        self.seen: dict[str, str] = {}

    def scope(self) -> None:
        self.seen = {}

    def sub(self, m: re.Match[str]) -> str:
        marker = next(k for k in SLOTS if re.escape(k) == m.group())
        slot = marker.strip("\x01")
        if slot in self.seen:
            return f"(?P={self.seen[slot]})"
        self.n += 1
        name = f"{slot}{self.n}"
        self.seen[slot] = name
        return f"(?P<{name}>{SLOTS[marker]})"


def _rx(argv: list[str] | tuple[str, ...], names: _Names | None = None) -> str:
    """Arguments as a pattern over each one preceded by NUL (no argument holds one)."""
    names = names or _Names()
    return "".join(SEP + _MARK.sub(names.sub, re.escape(a)) for a in argv)


def _split(argv: list[str] | tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The literal head (compared as strings on the host, no regex to compile: a script's
    text is most of it) and the rest, from the first argument that holds a marker."""
    k = next((i for i, a in enumerate(argv) if _MARK.search(re.escape(a))), len(argv))
    return list(argv[:k]), list(argv[k:])


def _pattern(argv: list[str] | tuple[str, ...]) -> dict[str, Any]:
    lit, rest = _split(argv)
    return {"lit": lit, "re": _rx(rest)}


def _grouped(head: list[str], groups: list[list[str]]) -> dict[str, Any]:
    """A head then any run of groups (the facts script's ``osd ID DIR PIDFILE`` ...)."""
    names = _Names()
    alts = []
    for g in groups:
        names.scope()
        alts.append(_rx(g, names))
    names.scope()
    lit, rest = _split(head)
    return {"lit": lit, "re": _rx(rest, names) + f"(?:{'|'.join(alts)})*"}


def _fill(template: str, cluster: str, conf: str) -> str:
    return template.format(id=M["id"], conf=conf, cluster=cluster, device=M["device"],
                           osd_fsid=M["osd_fsid"], fsid=M["fsid"], fs_uuid=M["fs_uuid"],
                           osd_uuid=M["osd_uuid"], pid=M["pid"], server=M["server"],
                           data_dir="\x02data_dir\x02")


# what ``access`` lets a key run: "checks" the reads alone (a bot that only checks),
# "repairs" those and every runbook but the disk replacement, "all" that too (it makes
# filesystems and OSDs on a device: mkfs.xfs, ceph-volume prepare/create)
ACCESS = ("checks", "repairs", "all")
DISK_REPLACEMENT = frozenset({"osd_stop", "osd_prepare_raw", "osd_create_lvm", "osd_mkfs_xfs",
                              "osd_mount_xfs", "osd_keyring_new", "osd_keyring_print",
                              "osd_mkfs", "osd_chown"})


def rules_for(target: ClusterTarget, host: HostTarget,
              access: str = "repairs") -> list[dict[str, Any]]:
    """Every command stordoc's checks (and runbooks, by ``access``) send to ``host``, as
    hostguard rules."""
    if access not in ACCESS:
        raise ValueError(f"access {access!r}: one of {', '.join(ACCESS)}")
    cl = target.ceph_cluster_name
    conf = target.ceph.conf if target.ceph is not None else ""
    data_dir = host.osd_data_dir.format(cluster=cl, id=M["id"], fsid=M["fsid"])
    pidf = host.osd_pid_file.format(id=M["id"], cluster=cl, fsid=M["fsid"]) \
        if host.osd_pid_file else ""
    swift_dir = host.swift_devices_dir.rstrip("/") if host.swift_devices_dir else None
    swift_mp = f"{swift_dir}/{M['name']}" if swift_dir else None
    rules: list[dict[str, Any]] = [{"name": "true", **_pattern(["true"])}]

    # the facts script: its head, then any run of the host's OSD, daemon, device groups
    head = facts_argv(host.fstab_path, [], [])
    # the probes of an OSD (its id a marker: the same call collect.plan_for makes) and of
    # each daemon the host's settings list
    probes = daemon_probes(host, cl, [(M["id"], pidf or None)],  # type: ignore[list-item]
                           M["fsid"])
    groups = [facts_argv(host.fstab_path, [], [], (), [dp])[len(head):] for dp in probes]
    groups.append(["osd", M["id"], data_dir, pidf])
    if swift_mp:
        groups.append(["swift", M["name"], swift_mp])
    groups += [["ringdir", rd] for rd in host.swift_ring_dirs]
    rules.append({"name": "facts", **_grouped(head, groups)})

    # the identity probe of unmounted devices (read-only, own mount namespace)
    ident = identity_argv([])
    rules.append({"name": "identity", **_grouped(ident, [[M["device"]]])})
    if access == "checks":
        return rules

    # each argv template of the host's settings (start, activate, stop, prepare, mkfs ...)
    for f in fields(HostTarget):
        v = getattr(host, f.name)
        if isinstance(v, tuple) and v and all(isinstance(a, str) for a in v):
            if f.name == "swift_ring_dirs" or (f.name in DISK_REPLACEMENT
                                                and access != "all"):
                continue
            argv = [_fill(a, cl, conf) for a in v]
            if any("\x02data_dir\x02" in a for a in argv):
                argv = [a.replace("\x02data_dir\x02", data_dir) for a in argv]
            rules.append({"name": f.name, **_pattern(argv)})
    for dt in host.daemons:
        if dt.start:
            rules.append({"name": f"start {dt.name}", **_pattern(list(dt.start))})

    # mount and unmount an OSD's data dir or a Swift device's mount point
    dirs = [("osd", data_dir)] + ([("swift", swift_mp)] if swift_mp else [])
    for what, mp in dirs:
        for pre in ([], ["-t", M["fstype"]], ["-o", M["opts"]],
                    ["-t", M["fstype"], "-o", M["opts"]]):
            rules.append({"name": f"mount {what}",
                          **_pattern(["mount", *pre, M["device"], mp])})
        rules.append({"name": f"umount {what}", **_pattern(["umount", mp])})
    if swift_mp:
        rules.append({"name": "umount swift lazy",
                      **_pattern(["umount", "--lazy", swift_mp])})
        rules.append({"name": "mkdir swift", **_pattern(["mkdir", "-p", swift_mp])})

    # the daemon runbooks' scripts: a pid file names a live process; the evidence saved;
    # a hung daemon killed
    pid_files = [d.pid_file for d in host.daemons if d.pid_file] + ([pidf] if pidf else [])
    for pf in pid_files:
        rules.append({"name": "alive", **_pattern(
            ["sh", "-c", ALIVE_SCRIPT, "stordoc-alive", pf])})
    logs = [d.log_file for d in host.daemons if d.log_file] + (
        [host.osd_log_file.format(id=M["id"], cluster=cl, fsid=M["fsid"])]
        if host.osd_log_file else [])
    ev = f"{host.evidence_dir.rstrip('/')}/{M['name']}"
    crash = host.ceph_crash_dir.rstrip("/") if host.ceph_crash_dir else None
    crash_dirs = [""] + ([f"{crash}/{M['crash']}", f"{crash}/posted/{M['crash']}"]
                         if crash else [])
    for log in logs + [""]:
        for cd in crash_dirs:
            for pid in ("", M["pid"]):
                rules.append({"name": "evidence", **_pattern(
                    ["sh", "-c", EVIDENCE_SCRIPT, "stordoc-evidence", ev, log, cd, pid])})
    programs = sorted(set(PROGRAM.values()) | {d.name for d in host.daemons})
    for prog in programs:
        rules.append({"name": "kill hung", **_pattern(
            ["sh", "-c", KILL_SCRIPT, "stordoc-kill", M["pid"], prog])})

    # read-only looks of the disk replacement: a process, a device's size and label
    rules += [] if access != "all" else [
        {"name": "ps", **_pattern(["ps", "-o", "pid=", "-p", M["pid"]])},
        {"name": "lsblk", **_pattern(["lsblk", "-J", "-b", "-o",
                                            "PATH,TYPE,SIZE,MOUNTPOINT", M["device"]])},
        {"name": "blkid", **_pattern(["blkid", "-p", "-o", "export", M["device"]])},
    ]
    for rd in host.swift_ring_dirs:
        rules.append({"name": "ring md5", **_pattern(
            ["md5sum", "--", f"{rd.rstrip('/')}/{M['name']}"])})
        # the ring push: a backup beside the ring, the new one copied in as a new file,
        # renamed over the ring, or removed when its md5 is wrong
        ring = f"{rd.rstrip('/')}/{M['ring']}"
        tmp, bak = f"{ring}.{M['suffix']}.tmp", f"{ring}.{M['suffix']}.bak"
        rules += [{"name": "ring backup", **_pattern(["cp", "-p", "--", ring, bak])},
                  {"name": "ring copy", **_pattern(put_argv(tmp))},
                  {"name": "ring rename", **_pattern(["mv", "-f", "--", tmp, ring])},
                  {"name": "ring copy removed", **_pattern(["rm", "-f", "--", tmp])}]
    return rules


def allowlist(target: ClusterTarget, hosts: Sequence[HostTarget],
              access: str = "repairs") -> dict[str, Any]:
    """One host's allowlist; several hosts' together for a machine that is all of them
    (containers on one machine, the lab's simulated hosts): their rules, once each."""
    rules: list[dict[str, Any]] = []
    seen: set[str] = set()
    for h in hosts:
        for r in rules_for(target, h, access):
            key = json.dumps(r, sort_keys=True)
            if key not in seen:
                seen.add(key)
                rules.append(r)
    return {"version": VERSION, "cluster": target.name, "access": access,
            "host": ",".join(h.name for h in hosts), "rules": rules}


def write_allowlist(path: str, target: ClusterTarget, hosts: Sequence[HostTarget],
                    access: str = "repairs") -> int:
    """Written whole (a temp file renamed over it): hostguard never reads half of one.
    Returns the number of rules."""
    doc = allowlist(target, hosts, access)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return len(doc["rules"])
