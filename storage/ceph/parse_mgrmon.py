"""Pure parsers of the manager map (``mgr dump``), the cluster log's last manager report
(``log last``) and CRUSH placement (``osd tree`` + ``osd crush rule dump``), for every
release stordoc knows (the shapes of Pacific 16.2 and Reef 18.2 are the same here)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from storage.ceph.parse import as_int, as_list, as_map, parse_stamp
from storage.model.mgrmon import CrushPlacement, CrushRule, FailedModule, MgrState

# the manager's periodic cluster-log line: "pgmap v53: 65 pgs: 65 active+clean; ..."
_PGMAP_RE = re.compile(r"^pgmap v\d+:")


def parse_mgr_dump(d: Any, log_last: Any = None, release: str = "") -> MgrState:
    """``mgr dump`` -> MgrState (``answered``/``error`` are the collector's to fill).

    ``log_last``: ``log last N debug cluster`` when read: the newest ``pgmap vN`` line of
    a manager says when the PG statistics were last reported."""
    m = as_map(d)
    standbys = tuple(sorted(str(s.get("name")) for s in as_list(m.get("standbys"))
                            if isinstance(s, Mapping) and s.get("name")))
    enabled = {str(x) for x in as_list(m.get("modules"))}
    always = as_map(m.get("always_on_modules"))
    if release and isinstance(always.get(release), list):
        enabled |= {str(x) for x in always[release]}
    elif always:
        newest = list(always.values())[-1]
        enabled |= {str(x) for x in as_list(newest)}
    failed = tuple(
        FailedModule(str(a.get("name")), str(a.get("error_string") or ""))
        for a in as_list(m.get("available_modules"))
        if isinstance(a, Mapping) and a.get("can_run") is False and str(a.get("name")) in enabled)
    last, line, oldest = last_pg_report(log_last)
    return MgrState(
        epoch=as_int(m.get("epoch")),
        active=str(m.get("active_name") or ""),
        active_gid=as_int(m.get("active_gid")),
        available=bool(m.get("available")),
        standbys=standbys,
        active_change=parse_stamp(m.get("active_change")),
        last_pg_report=last, last_pg_report_line=line, log_oldest=oldest,
        failed_modules=failed, enabled_modules=tuple(sorted(enabled)))


def last_pg_report(log_last: Any) -> tuple[float | None, str | None, float | None]:
    """(stamp of the newest manager ``pgmap`` line, the line, stamp of the oldest entry)."""
    best: tuple[float, str] | None = None
    oldest: float | None = None
    for e in as_list(log_last):
        if not isinstance(e, Mapping):
            continue
        t = parse_stamp(e.get("stamp"))
        if t is None:
            continue
        oldest = t if oldest is None else min(oldest, t)
        msg = str(e.get("message") or "")
        if str(e.get("name") or "").startswith("mgr.") and _PGMAP_RE.match(msg):
            if best is None or t > best[0]:
                best = (t, msg)
    return (best[0] if best else None, best[1] if best else None, oldest)


def parse_crush(tree: Any, rules: Any) -> CrushPlacement:
    """Each OSD's root (``osd tree``'s parent chain), the rules' ``take`` steps, and the
    host buckets with no OSD."""
    nodes = [n for n in as_list(as_map(tree).get("nodes")) if isinstance(n, Mapping)]
    by_id = {as_int(n.get("id"), 0): n for n in nodes}
    parent: dict[int, int] = {}
    for n in nodes:
        for c in as_list(n.get("children")):
            parent[as_int(c, 0)] = as_int(n.get("id"), 0)
    roots = tuple(str(n.get("name")) for n in nodes if n.get("type") == "root")
    osd_root: dict[int, str] = {}
    for n in nodes:
        oid = as_int(n.get("id"), -1)
        if oid < 0:
            continue
        cur, seen = oid, 0
        while cur in parent and seen < 32:
            cur, seen = parent[cur], seen + 1
        top = by_id.get(cur)
        if cur != oid and top is not None and top.get("type") == "root":
            osd_root[oid] = str(top.get("name"))

    def has_osd(bid: int, depth: int = 0) -> bool:
        n = by_id.get(bid)
        if n is None or depth > 32:
            return False
        return any(as_int(c, 0) >= 0 or has_osd(as_int(c, 0), depth + 1)
                   for c in as_list(n.get("children")))

    empty = tuple(sorted(str(n.get("name")) for n in nodes
                         if n.get("type") == "host" and not has_osd(as_int(n.get("id"), 0))))
    out_rules = []
    for r in as_list(rules):
        if not isinstance(r, Mapping):
            continue
        takes = []
        for s in as_list(r.get("steps")):
            if isinstance(s, Mapping) and s.get("op") == "take":
                name = str(s.get("item_name") or "")
                root, _, cls = name.partition("~")
                takes.append((root, cls or None))
        out_rules.append(CrushRule(as_int(r.get("rule_id")), str(r.get("rule_name") or ""),
                                   tuple(takes)))
    return CrushPlacement(osd_root=osd_root, rules=tuple(out_rules), roots=roots,
                          empty_hosts=empty)


def parse_mon_data(d: Any) -> dict[str, dict[str, str]]:
    """``{"a": {"mon_data": "/var/lib/ceph/mon/ceph-a", "mon_data_avail_warn": "30",
    ...}}`` (``tell mon.X config get VAR`` of each monitor)."""
    out: dict[str, dict[str, str]] = {}
    for mon, v in as_map(d).items():
        vals = {str(k): str(x) for k, x in as_map(v).items()
                if isinstance(x, (str, int, float)) and not isinstance(x, bool)}
        if vals:
            out[str(mon)] = vals
    return out
