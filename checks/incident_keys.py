"""The keys that tie findings together for incidents: the OSDs, Swift device, Swift server,
ring and pools a finding is about. Nothing is guessed from message text: entities come
from the finding's fields, Ceph's codes from their ``health detail`` lines in Ceph's own
format (``osd.1 (root=default,host=node2) is down``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from checks.model import Finding
from checks.osd import ceph_flag_name
from storage.model import ClusterSnapshot

_OSD_RE = re.compile(r"\bosd\.(\d+)\b")
_HOST_RE = re.compile(r"^host (\S+)")
_SWIFT_SERVER_RE = re.compile(r"^(?P<kind>\w+) server (?P<ip>\S+):(?P<port>\d+)$")
_POOL_NAME_RE = re.compile(r"'([^']+)'")
# Ceph's codes that name their pool without quotes: SMALLER_PGP_NUM "pool rbd pg_num 64 >
# pgp_num 32" (src/mon/PGMap.cc), the autoscaler's POOL_TOO_FEW_PGS / POOL_TOO_MANY_PGS
# "Pool rbd has 2 placement groups, should have 64" (src/pybind/mgr/pg_autoscaler)
_POOL_BARE_RE = re.compile(r"^(?:pool ([^\s']+) pg_num \d+ > pgp_num"
                           r"|Pool ([^\s']+) has \d+ placement groups)")
_MON_RE = re.compile(r"\bmon\.([A-Za-z0-9_-]+)")
_SWIFT_RING_RE = re.compile(r"^(?P<kind>object|container|account)(?:-\d+)? ring\b")
# Ceph's OSDMAP_FLAGS summary: "noout,noscrub flag(s) set"
_FLAGS_RE = re.compile(r"^([a-z_,-]+) flag\(s\) set$")
# Ceph's OSD_FLAGS detail: "osd.1 has flags noout" (an OSD or a CRUSH node)
_OSD_FLAGS_RE = re.compile(r"\bhas flags? ([a-z_,-]+)")
_SWIFT_DEV_RE = re.compile(r"^(?:\S+ )?ring (?P<ip>[0-9.:\[\]a-f]+?):(?P<port>\d+)/(?P<dev>\S+)$")


def ceph_code(f: Finding) -> str | None:
    """Ceph's own code of a CEPH_HEALTH finding."""
    if f.code != "CEPH_HEALTH":
        return None
    c = f.evidence.get("ceph_code")
    return str(c) if c else None


def fold_code(f: Finding) -> str | None:
    """The code a finding folds in as: Ceph's own, or the one its explainer says it is
    part of (``fold_as``: Ceph's PG_DAMAGED of PGs whose objects are unfound is
    OBJECT_UNFOUND's, not an inconsistent PG's)."""
    c = ceph_code(f)
    return str(f.evidence.get("fold_as") or c) if c else None


def _detail_lines(f: Finding) -> list[str]:
    d = f.evidence.get("detail") or ()
    return [str(x) for x in d] if isinstance(d, (list, tuple)) else []


def osds_named(f: Finding, snap: ClusterSnapshot | None) -> set[int]:
    """OSD ids a finding is about: its own entity, its host's OSDs, or Ceph's detail lines."""
    out: set[int] = set()
    m = re.fullmatch(r"osd\.(\d+)", f.entity)
    if m:
        out.add(int(m.group(1)))
    hosts: set[str] = set()
    hm = _HOST_RE.match(f.entity)
    if hm and f.code != "CEPH_HEALTH":
        hosts.add(hm.group(1))
    code = ceph_code(f)
    if code is not None:
        for line in [str(f.evidence.get("summary") or ""), *_detail_lines(f)]:
            out |= {int(x) for x in _OSD_RE.findall(line)}
            hl = _HOST_RE.match(line)
            if hl:
                hosts.add(hl.group(1))
    if hosts and snap is not None and snap.ceph is not None:
        for h in snap.ceph.hosts:
            if h.name in hosts:
                out |= set(h.osd_ids)
    return out


def swift_device_key(f: Finding) -> tuple[str, str] | None:
    """(ip, device) of a finding about one Swift ring device, from its entity/evidence."""
    ev = f.evidence
    if ev.get("device") and ev.get("ip"):
        return (str(ev["ip"]), str(ev["device"]))
    m = _SWIFT_DEV_RE.match(f.entity)
    if m:
        return (m.group("ip"), m.group("dev"))
    return None


def swift_server_kind(f: Finding) -> tuple[str, str] | None:
    """(server kind, port) of a finding about a Swift server process."""
    m = _SWIFT_SERVER_RE.match(f.entity)
    return (m.group("kind"), m.group("port")) if m else None


def flags_named(f: Finding) -> set[str]:
    """The osdmap flags a finding is about: stordoc's OSDMAP_FLAGS (its ``flag``), Ceph's
    OSDMAP_FLAGS (the flags its summary lists, in Ceph's own format)."""
    if f.code == "OSDMAP_FLAGS" and f.evidence.get("flag"):
        return {ceph_flag_name(str(f.evidence["flag"]))}
    if ceph_code(f) == "OSDMAP_FLAGS":  # "pauserd,pausewr flag(s) set" is one flag, pause
        m = _FLAGS_RE.match(str(f.evidence.get("summary") or "").strip())
        if m:
            return {ceph_flag_name(x) for x in m.group(1).split(",") if x}
    if ceph_code(f) == "OSD_FLAGS":  # per-OSD flags (set-group): "osd.1 has flags noout"
        return {x for line in _detail_lines(f) for m in _OSD_FLAGS_RE.finditer(line)
                for x in m.group(1).split(",") if x}
    return set()


def pools_named(f: Finding) -> set[str]:
    """The pool of a ``pool X`` finding, or the pools a Ceph code's detail names."""
    if f.entity.startswith("pool "):
        return {f.entity[5:]}
    if ceph_code(f):
        return {m for line in _detail_lines(f)
                for m in [*_POOL_NAME_RE.findall(line),
                          *(x for t in _POOL_BARE_RE.findall(line) for x in t if x)]}
    return set()


def mons_named(f: Finding) -> set[str]:
    """The monitors a finding is about: its entity (``mon.b``), or those Ceph's code names
    (``mon.b (rank 1) addr [..] is down (out of quorum)``, ``mon.b clock skew 0.08s > max
    0.05s``)."""
    m = re.fullmatch(r"mon\.(\S+)", f.entity)
    if m:
        return {m.group(1)}
    if ceph_code(f):
        return {x for line in [str(f.evidence.get("summary") or ""), *_detail_lines(f)]
                for x in _MON_RE.findall(line)}
    return set()


def disks_by_member(todo: Sequence[Finding]) -> dict[object, set[str]]:
    """OSD id / (ip, Swift device) -> the physical devices (``host:/dev/sdb``) that
    ``checks.disks`` findings put them on."""
    out: dict[object, set[str]] = {}
    for f in todo:
        key = f.evidence.get("disk_key")
        if not key:
            continue
        for o in f.evidence.get("osds") or ():
            out.setdefault(int(o), set()).add(str(key))
        for ip, dev in f.evidence.get("swift_keys") or ():
            out.setdefault((str(ip), str(dev)), set()).add(str(key))
    return out


def disk_keys(f: Finding, osds: frozenset[Key], dev: tuple[str, str] | None,
              on_disk: dict[object, set[str]]) -> frozenset[Key]:
    """The physical devices a finding is about: its own (a ``checks.disks`` finding), or
    those under the OSDs and the Swift device it names."""
    out: set[Key] = set()
    if f.evidence.get("disk_key"):
        out.add(str(f.evidence["disk_key"]))
    for o in osds:
        out |= on_disk.get(o, set())
    if dev is not None:
        out |= on_disk.get(dev, set())
    return frozenset(out)


# a key of one scope: an OSD id, a ring kind, (ip, device), (server kind, port), a pool,
# an entity
Key = int | str | tuple[str, str]


class FindingIndex:
    """Each finding's keys per scope, computed once, and findings by key: correlating
    thousands of findings (a rack down) stays linear, not one scan per root."""

    def __init__(self, todo: Sequence[Finding], snap: ClusterSnapshot | None) -> None:
        self.keys: list[dict[str, frozenset[Key]]] = []
        self.by: dict[tuple[str, Key], list[int]] = {}
        self.by_code: dict[str, list[int]] = {}
        on_disk = disks_by_member(todo)
        for i, f in enumerate(todo):
            dev = swift_device_key(f)
            kind = swift_server_kind(f)
            ring = _SWIFT_RING_RE.match(f.entity)
            k: dict[str, frozenset[Key]] = {
                "osd": frozenset(osds_named(f, snap)),
                "swift-ring": frozenset([ring.group("kind")] if ring else []),
                "swift-device": frozenset([dev] if dev else []),
                "swift-server": frozenset([kind] if kind else []),
                "pool": frozenset(pools_named(f)),
                "mon": frozenset(mons_named(f)),
                "osdmap-flag": frozenset(flags_named(f)),
                "entity": frozenset([f.entity])}
            k["disk"] = disk_keys(f, k["osd"], dev, on_disk)
            self.keys.append(k)
            for scope, vals in k.items():
                for v in vals:
                    self.by.setdefault((scope, v), []).append(i)
            self.by_code.setdefault(f.code, []).append(i)
            for cc in {ceph_code(f), fold_code(f)} - {None}:
                self.by_code.setdefault(str(cc), []).append(i)

    def related(self, scope: str, root: int) -> list[int]:
        """Findings sharing a key of ``scope`` with the root, in their original order."""
        out: set[int] = set()
        for v in self.keys[root][scope]:
            out.update(self.by.get((scope, v), ()))
        return sorted(out)
