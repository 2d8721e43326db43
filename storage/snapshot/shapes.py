"""The JSON shape of each Ceph answer a snapshot may hold (docs/snapshots.md), checked as
a file is read: the live parsers take junk *inside* an answer as "not known" (a field a
release does not have), so an answer of the wrong shape as a whole (``osd dump`` as
``[]``, ``null`` or ``"x"``) would replay as a cluster without OSDs. It is refused, one
line naming the file and what is wrong.

The shapes are those Ceph's ``-f json`` gives on every release stordoc reads (Octopus,
Pacific, Reef: ``tests/fixtures/ceph-*``, ``tests/fixtures/snapshots/*``); a command not
listed here (a newer collector's) is taken as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.snapshot.files import SnapshotError

OBJECT, LIST, NULL = "an object", "a list", "null"

# every answer stordoc collects: an object or a list (``pg dump_stuck``: a bare list on
# older releases, nothing at all when no PG is stuck)
CEPH_SHAPES: Mapping[str, tuple[str, ...]] = {
    "osd dump": (OBJECT,), "osd tree": (OBJECT,), "osd pool ls detail": (LIST,),
    "df": (OBJECT,), "health detail": (OBJECT,), "status": (OBJECT,),
    "quorum_status": (OBJECT,), "versions": (OBJECT,), "time-sync-status": (OBJECT,),
    "config dump": (LIST,), "pg stat": (OBJECT,), "pg dump_stuck": (OBJECT, LIST, NULL),
    "osd df": (OBJECT,), "crash ls-new": (LIST,), "osd pool autoscale-status": (LIST,),
    "device ls": (LIST,), "mgr dump": (OBJECT,), "osd crush rule dump": (LIST,),
    "log last": (LIST,), "log last flaps": (LIST,), "osdmap_stamps": (OBJECT,),
    "osdmap flaps": (OBJECT,), "osdmap pgs": (OBJECT,), "pg dump pgs_brief": (OBJECT,),
    "pg query": (OBJECT,), "scrub": (OBJECT,), "osd perf": (OBJECT,),
    "osd slow ops": (OBJECT,), "mon data": (OBJECT,), "config show": (OBJECT,),
    "config": (OBJECT,), "errors": (OBJECT,),
    "osd metadata": (LIST,), "mon metadata": (LIST,), "mgr metadata": (LIST,),
    "quota history": (OBJECT,),
}
MAX_OSD_ID = 2**31 - 1


def _shape(v: Any) -> str:
    if v is None:
        return NULL
    if isinstance(v, Mapping):
        return OBJECT
    if isinstance(v, list):
        return LIST
    if isinstance(v, bool):
        return "true or false"
    if isinstance(v, (int, float)):
        return "a number"
    return "text"


def _int(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def check_ceph_answer(rel: str, key: str, value: Any) -> None:
    """SnapshotError (one line naming ``rel``) when ``value`` is not the shape of the
    answer to ``key``."""
    want = CEPH_SHAPES.get(key)
    if want is not None and _shape(value) not in want:
        raise SnapshotError(f"{rel}: the answer to '{key}' is {_shape(value)}, not "
                            f"{' or '.join(want)}")
    if key == "osd dump":
        _osd_dump(rel, value)
    elif key == "osd tree":
        nodes = value.get("nodes")
        if not isinstance(nodes, list) or not all(isinstance(n, Mapping) for n in nodes):
            raise SnapshotError(f"{rel}: 'nodes' is not a list of objects")


def _osd_dump(rel: str, d: Mapping[str, Any]) -> None:
    """The OSD map's own facts a check trusts: the epoch, and each OSD's id, up and in."""
    if not _int(d.get("epoch"), 0, MAX_OSD_ID):
        raise SnapshotError(f"{rel}: 'epoch' is not a whole number >= 0")
    osds = d.get("osds")
    if not isinstance(osds, list):
        raise SnapshotError(f"{rel}: 'osds' is not a list")
    for i, o in enumerate(osds):
        if not isinstance(o, Mapping) or not _int(o.get("osd"), 0, MAX_OSD_ID):
            raise SnapshotError(f"{rel}: osds[{i}] names no OSD id (a whole number >= 0)")
        for k in ("up", "in"):
            if k in o and not _int(o[k], 0, 1):
                raise SnapshotError(f"{rel}: osds[{i}] (osd.{o['osd']}): '{k}' is not 0 or 1")


def check_ceph_answers(raw: Mapping[str, Any], where: str) -> None:
    """What one answer says about another: every OSD ``osd tree`` places must be in ``osd
    dump``'s OSD map (Ceph builds both from one map). A snapshot whose OSD map lost its
    OSDs (``"osds": []``) read as a cluster with nothing to check: "OK, no incidents"
    (hostile run); it is refused instead."""
    dump, tree = raw.get("osd dump"), raw.get("osd tree")
    if not isinstance(dump, Mapping) or not isinstance(tree, Mapping):
        return
    in_map = {o.get("osd") for o in dump.get("osds") or () if isinstance(o, Mapping)}
    placed = sorted(int(n["id"]) for n in tree.get("nodes") or ()
                    if isinstance(n, Mapping) and n.get("type") == "osd"
                    and _int(n.get("id"), 0, MAX_OSD_ID))
    missing = [i for i in placed if i not in in_map]
    if missing:
        names = ", ".join(f"osd.{i}" for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise SnapshotError(f"{where}: 'osd tree' places {names} but 'osd dump' has no such "
                            f"OSD: the two answers disagree")
