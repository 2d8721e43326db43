"""OSD flaps from the cluster log (``ceph log last N info cluster``): an OSD marked down
while it ran (the monitor's ``osd.N failed (...)`` on its peers' reports, ``marked down
after no beacon``, or the OSD's own "Monitor daemon marked osd.N down, but it is still
running") and then booted again is one flap. A clean stop ("marked itself down") and
start is a restart, not a flap, and it starts the count again (the restart on-call does
once the cause is fixed: older flaps are then history). Real on Pacific and Reef alike; bounded by N lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from storage.ceph.parse import as_int, as_list, as_map, parse_stamp
from storage.model.pgquery import LargeOmapObject, OsdFlaps

LOG_LINES = 500
LOG_FLAPS = "log last flaps"  # its raw key (file log_last_flaps.json)
MAP_FLAPS = "osdmap flaps"  # OSD id -> its boots walked back (file osdmap_flaps.json)
_FAILED_RE = re.compile(r"^osd\.(\d+) failed \(")
_NO_BEACON_RE = re.compile(r"^osd\.(\d+) marked down after no beacon")
_WRONGLY_RE = re.compile(r"^Monitor daemon marked osd\.(\d+) down, but it is still running")
_SELF_DOWN_RE = re.compile(r"^osd\.(\d+) marked itself down")
_BOOT_RE = re.compile(r"^osd\.(\d+) \S+ boot$")


def parse_flaps(log: Any, now: float) -> tuple[OsdFlaps, ...]:
    """Flaps per OSD in the log's entries (any order), those with at least one flap. A
    flap: the OSD said it was marked down while running, then booted again; a daemon
    that died (killed, crashed) and was restarted is reported failed but never protests,
    so it is not counted (that is a crash, not a flap)."""
    entries = []
    for e in as_list(log):
        if not isinstance(e, Mapping):
            continue
        t = parse_stamp(e.get("stamp"))
        if t is not None:
            entries.append((t, str(e.get("message") or "")))
    entries.sort()
    if not entries:
        return ()
    window = max(0.0, now - entries[0][0])
    episode: dict[int, dict[str, Any]] = {}  # OSD -> the down it has not booted from yet
    boots: dict[int, list[tuple[float, bool, bool]]] = {}  # (stamp, wrongly, failed)
    for t, msg in entries:
        for rx, how in ((_FAILED_RE, "failed"), (_NO_BEACON_RE, "failed"),
                        (_WRONGLY_RE, "wrongly")):
            m = rx.match(msg)
            if m:
                ep = episode.setdefault(int(m.group(1)), {"at": t})
                ep[how] = True
        m = _SELF_DOWN_RE.match(msg)
        if m:  # a clean stop: the flaps before it are history
            osd = int(m.group(1))
            if osd in boots:
                del boots[osd]
            if osd in episode:
                del episode[osd]
        b = _BOOT_RE.match(msg)
        if b:
            osd = int(b.group(1))
            gone = episode.pop(osd, None)
            if gone is not None and gone.get("wrongly"):
                boots.setdefault(osd, []).append((t, True, bool(gone.get("failed"))))
    out = []
    for osd, bs in sorted(boots.items()):
        out.append(OsdFlaps(osd, flaps=len(bs), wrongly_marked=len(bs),
                            failed_reports=sum(1 for _, _, f in bs if f),
                            first=bs[0][0], last=bs[-1][0], window_s=window,
                            stamps=tuple(b[0] for b in bs)))
    return tuple(out)


# ------------------------------------------------------------------ the osdmap's history
# Ceph's own flap memory is in the osdmap: an OSD that boots after being marked down while
# it ran gets a higher ``osd_xinfo`` laggy_probability; one that boots after a clean stop a
# lower one (seen on Pacific and Reef). Walking the OSD's boots back through old osdmaps
# (``osd dump EPOCH``: its ``up_from`` before each boot) counts its flaps where the cluster
# log does not reach (Pacific's ``log last`` holds only the newest 50 entries of a channel).
MAX_FLAP_OSDS = 4
MAX_MAP_LOOKUPS = 16


def osd_brief(dump: Mapping[str, Any]) -> dict[str, Any]:
    """What the flap walk needs of one ``osd dump``: its stamp, and per OSD up, up_from
    and laggy_probability."""
    lp = {as_int(x.get("osd"), -1): float(x.get("laggy_probability") or 0.0)
          for x in as_list(dump.get("osd_xinfo")) if isinstance(x, Mapping)}
    osds = {}
    for o in as_list(dump.get("osds")):
        if isinstance(o, Mapping):
            i = as_int(o.get("osd"), -1)
            osds[str(i)] = {"up": as_int(o.get("up")), "up_from": as_int(o.get("up_from")),
                            "lp": lp.get(i, 0.0)}
    return {"modified": str(dump.get("modified") or ""), "osds": osds}


def flap_suspects(dump: Mapping[str, Any], now: float, window_s: float = 3600.0,
                  limit: int = MAX_FLAP_OSDS) -> list[int]:
    """OSDs whose laggy_probability is above 0 (marked down while running at least once)
    and that were last marked down within ``window_s`` (``osd_xinfo`` down_stamp): only
    they are walked back (an ``osd dump`` of a big cluster is megabytes), most laggy
    first."""
    got = []
    for x in as_list(dump.get("osd_xinfo")):
        if not isinstance(x, Mapping):
            continue
        lp = float(x.get("laggy_probability") or 0.0)
        down = parse_stamp(x.get("down_stamp"))
        if lp > 0 and down is not None and now - down <= window_s:
            got.append((lp, as_int(x.get("osd"), -1)))
    return [i for lp, i in sorted(got, reverse=True)[:limit] if i >= 0]


def walk_boots(osd: int, up_from: int, fetch: Any, budget: int) -> list[dict[str, Any]]:
    """The OSD's boots, newest first, back to its last clean restart: each
    ``{"epoch": U, "modified": stamp, "flap": bool}``. ``fetch(epoch)`` gives
    :func:`osd_brief` of that map or None (trimmed, failed); at most ``budget`` fetches."""
    out: list[dict[str, Any]] = []
    u = up_from
    used = 0
    while u > 1 and used + 2 <= budget:
        at, before = fetch(u), fetch(u - 1)
        used += 2
        if at is None or before is None:
            break
        a = at["osds"].get(str(osd))
        b = before["osds"].get(str(osd))
        if a is None or b is None:
            break
        flap = a["lp"] > b["lp"]
        out.append({"epoch": u, "modified": at["modified"], "flap": flap})
        if not flap:  # a clean restart: the flaps before it are history
            break
        u = int(b["up_from"])
    return out


def parse_map_flaps(boots: Any, now: float) -> tuple[OsdFlaps, ...]:
    """``raw["osdmap flaps"]`` (OSD id -> :func:`walk_boots`) -> flaps per OSD."""
    out = []
    for k, lst in (boots.items() if isinstance(boots, Mapping) else ()):
        stamps = sorted(t for t in (parse_stamp(as_map(b).get("modified")) for b in as_list(lst)
                                    if as_map(b).get("flap")) if t is not None)
        if stamps and str(k).isdigit():
            out.append(OsdFlaps(int(k), flaps=len(stamps), wrongly_marked=len(stamps),
                                failed_reports=0, first=stamps[0], last=stamps[-1],
                                window_s=max(0.0, now - stamps[0]), stamps=tuple(stamps)))
    return tuple(sorted(out, key=lambda f: f.osd))


# ``Large omap object found. Object: 2:5a3f0d67:::big-omap:head PG: 2.e6b0fc5a (2.1a)
# Key count: 200001 Size (bytes): 3600018`` (an OSD's deep scrub, Pacific and Reef); the
# object is an hobject ``POOL:HASH:NAMESPACE:KEY:NAME:SNAP`` (``:::`` without namespace
# and key)
_OMAP_RE = re.compile(r"Large omap object found\. Object: (-?\d+):[0-9a-f]*:([^:]*):[^:]*:"
                      r"(.+):[^:]+ PG: \S+ \((\d+\.[0-9a-f]+)\)"
                      r"(?: Key count: (\d+))?(?: Size \(bytes\): (\d+))?")


def parse_large_omap(log: Any) -> tuple[LargeOmapObject, ...]:
    """The objects the cluster log names as large omap objects, once each, oldest first."""
    if not isinstance(log, list):
        return ()
    seen: dict[tuple[int, str, str], LargeOmapObject] = {}
    for e in log:
        msg = e.get("message") if isinstance(e, Mapping) else None
        m = _OMAP_RE.search(msg) if isinstance(msg, str) else None
        if m is None:
            continue
        o = LargeOmapObject(int(m.group(1)), m.group(3), m.group(4),
                            int(m.group(5)) if m.group(5) else None,
                            int(m.group(6)) if m.group(6) else None, m.group(2))
        seen.pop((o.pool_id, o.namespace, o.name), None)
        seen[(o.pool_id, o.namespace, o.name)] = o
    return tuple(seen.values())
