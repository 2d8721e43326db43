"""Pure parsers of the cluster maps: ``osd dump``, ``osd tree``, ``osd pool ls detail``,
``osd pool autoscale-status``, ``df``, ``osd df``, ``pg stat``, ``pg dump_stuck``
(``storage.ceph.parse_daemons``: health, monitors, versions, crashes; ``parse_config``:
settings).

One parser per command, for every release stordoc knows (Octopus 15.2, Pacific 16.2,
Reef 18.2; the captures in ``tests/fixtures/ceph-*``): where the shapes differ, each
parser accepts every shape by looking at the JSON, never at a version number. A field a
release does not have keeps its default. Non-numeric junk where a number belongs counts
as missing rather than raising.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storage.model import (
    CrushHost,
    OsdState,
    OsdUsage,
    PoolAutoscale,
    PoolState,
)

# --------------------------------------------------------------------------- helpers


def as_int(v: Any, default: int = 0) -> int:
    """A JSON number (or numeric string) as an int; ``default`` for anything else."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return int(f) if math.isfinite(f) else default


def as_float(v: Any, default: float = 0.0) -> float:
    if isinstance(v, bool):
        return float(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return f if math.isfinite(f) else default


def as_map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else []


def parse_stamp(value: Any) -> float | None:
    """Ceph stamps: ISO with ``+0000`` (Octopus+) or ``Z``, ``"0.000000"`` meaning never,
    or epoch seconds as a string (older releases)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        f = float(value)
        return f if f and math.isfinite(f) else None
    s = str(value).strip()
    if not s or s.startswith("0.0"):
        return None
    try:
        return datetime.fromisoformat(s).timestamp()
    except ValueError:
        pass
    try:
        f = float(s)  # "1644484759.134352"
    except ValueError:
        return None
    return f if f and math.isfinite(f) else None


def _flags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(f for f in value.split(",") if f)
    if isinstance(value, list):
        return tuple(str(f) for f in value)
    return ()


# --------------------------------------------------------------------------- osdmap


def parse_pool(d: Mapping[str, Any]) -> PoolState:
    """One pool of ``osd pool ls detail`` (``pool_id``) or ``osd dump`` (``pool``)."""
    pid = d.get("pool_id", d.get("pool"))
    opts = as_map(d.get("options"))
    ptype = d.get("type")
    if isinstance(ptype, int):
        type_name = {1: "replicated", 3: "erasure"}.get(ptype, str(ptype))
    else:
        type_name = str(ptype or "replicated")
    hsp = as_map(d.get("hit_set_params"))
    pg_num = as_int(d.get("pg_num"))
    pgp_target = d.get("pg_placement_num_target")
    return PoolState(
        id=as_int(pid, -1),
        name=str(d.get("pool_name", "")),
        size=as_int(d.get("size")),
        min_size=as_int(d.get("min_size")),
        pg_num=pg_num,
        pgp_num=as_int(d.get("pg_placement_num", d.get("pgp_num"))),
        pg_num_target=as_int(d.get("pg_num_target"), pg_num),
        crush_rule=as_int(d.get("crush_rule")),
        type=type_name,
        application=tuple(sorted(as_map(d.get("application_metadata")).keys())),
        pg_autoscale_mode=str(d.get("pg_autoscale_mode", "off")),
        pgp_num_target=as_int(pgp_target) if pgp_target is not None else None,
        target_size_ratio=as_float(opts.get("target_size_ratio")),
        target_size_bytes=as_int(opts.get("target_size_bytes")),
        tier_of=as_int(d.get("tier_of"), -1),
        tiers=tuple(as_int(x) for x in as_list(d.get("tiers"))),
        read_tier=as_int(d.get("read_tier"), -1),
        write_tier=as_int(d.get("write_tier"), -1),
        cache_mode=str(d.get("cache_mode", "none")),
        target_max_bytes=as_int(d.get("target_max_bytes")),
        target_max_objects=as_int(d.get("target_max_objects")),
        cache_target_dirty_ratio_micro=as_int(d.get("cache_target_dirty_ratio_micro"), 400000),
        cache_target_dirty_high_ratio_micro=as_int(
            d.get("cache_target_dirty_high_ratio_micro"), 600000),
        cache_target_full_ratio_micro=as_int(d.get("cache_target_full_ratio_micro"), 800000),
        hit_set_type=str(hsp.get("type", "none")),
        hit_set_count=as_int(d.get("hit_set_count")),
        hit_set_period=as_int(d.get("hit_set_period")),
        min_read_recency_for_promote=as_int(d.get("min_read_recency_for_promote")),
        min_write_recency_for_promote=as_int(d.get("min_write_recency_for_promote")),
        quota_max_bytes=as_int(d.get("quota_max_bytes")),
        quota_max_objects=as_int(d.get("quota_max_objects")),
    )


def parse_pool_ls_detail(data: Iterable[Mapping[str, Any]]) -> tuple[PoolState, ...]:
    return tuple(parse_pool(p) for p in data if isinstance(p, Mapping))


@dataclass(frozen=True)
class OsdMap:
    """``osd dump``: the osdmap without CRUSH facts (``build_state`` joins ``osd tree``)."""

    fsid: str
    epoch: int
    flags: tuple[str, ...]
    full_ratio: float
    backfillfull_ratio: float
    nearfull_ratio: float
    osds: tuple[OsdState, ...]
    pools: tuple[PoolState, ...]
    require_osd_release: str
    last_up_change: float | None = None
    last_in_change: float | None = None


def parse_osd_dump(d: Mapping[str, Any]) -> OsdMap:
    xinfo = {as_int(x.get("osd"), -1): x for x in as_list(d.get("osd_xinfo"))
             if isinstance(x, Mapping)}
    osds: list[OsdState] = []
    for o in as_list(d.get("osds")):
        if not isinstance(o, Mapping) or "osd" not in o:
            continue
        oid = as_int(o["osd"], -1)
        state = tuple(str(s) for s in as_list(o.get("state")))
        up = bool(as_int(o.get("up")))
        down_since = None
        if not up:
            down_since = parse_stamp(as_map(xinfo.get(oid)).get("down_stamp"))
        osds.append(OsdState(
            id=oid,
            uuid=str(o.get("uuid", "")),
            up=up,
            in_=bool(as_int(o.get("in"))),
            exists="exists" in state or not state,
            host=None,
            crush_weight=0.0,
            reweight=as_float(o.get("weight")),
            state=state,
            up_from=as_int(o.get("up_from")),
            up_thru=as_int(o.get("up_thru")),
            down_at=as_int(o.get("down_at")), lost_at=as_int(o.get("lost_at")),
            down_since=down_since,
            public_addr=o.get("public_addr") if isinstance(o.get("public_addr"), str) else None,
            destroyed="destroyed" in state,
            new="new" in state or (as_int(o.get("up_from")) == 0 and not up),
        ))
    return OsdMap(
        fsid=str(d.get("fsid", "")),
        epoch=as_int(d.get("epoch")),
        flags=_flags(d.get("flags_set", d.get("flags", ""))),
        full_ratio=as_float(d.get("full_ratio"), 0.95),
        backfillfull_ratio=as_float(d.get("backfillfull_ratio"), 0.90),
        nearfull_ratio=as_float(d.get("nearfull_ratio"), 0.85),
        osds=tuple(osds),
        pools=tuple(parse_pool(p) for p in as_list(d.get("pools")) if isinstance(p, Mapping)),
        require_osd_release=str(d.get("require_osd_release") or ""),
        last_up_change=parse_stamp(d.get("last_up_change")),
        last_in_change=parse_stamp(d.get("last_in_change")),
    )


def down_epochs(dump: Mapping[str, Any], limit: int) -> list[int]:
    """The ``down_at`` epochs of down OSDs whose ``down_stamp`` is unset, newest first.

    Pacific leaves ``down_stamp`` at 0 when an OSD shuts down cleanly or is marked down
    by hand; the osdmap of its ``down_at`` epoch still says when that happened.
    """
    xinfo = {as_int(x.get("osd"), -1): x for x in as_list(dump.get("osd_xinfo"))
             if isinstance(x, Mapping)}
    epochs = {as_int(o.get("down_at")) for o in as_list(dump.get("osds"))
              if isinstance(o, Mapping) and not as_int(o.get("up"))
              and as_int(o.get("down_at")) > 0
              and parse_stamp(as_map(xinfo.get(as_int(o.get("osd"), -1))).get("down_stamp"))
              is None}
    return sorted(epochs, reverse=True)[:limit]


@dataclass(frozen=True)
class CrushOsd:
    host: str | None
    device_class: str | None
    crush_weight: float
    reweight: float
    status: str | None


@dataclass(frozen=True)
class CrushTree:
    hosts: tuple[CrushHost, ...] = ()
    osds: Mapping[int, CrushOsd] = field(default_factory=dict)


def parse_osd_tree(d: Mapping[str, Any]) -> CrushTree:
    """CRUSH hosts and per-OSD CRUSH facts: host, device class, crush weight, reweight.

    Works on ``osd tree`` and ``osd df tree`` alike (same node layout).
    """
    nodes = [n for n in as_list(d.get("nodes")) if isinstance(n, Mapping)]
    hosts: list[CrushHost] = []
    osd_host: dict[int, str] = {}
    for n in nodes:
        if n.get("type") == "host":
            ids = tuple(sorted(i for i in (as_int(c, -1) for c in as_list(n.get("children")))
                               if i >= 0))
            hosts.append(CrushHost(str(n.get("name", "")), ids))
            for i in ids:
                osd_host[i] = str(n.get("name", ""))
    info: dict[int, CrushOsd] = {}
    strays = [n for n in as_list(d.get("stray")) if isinstance(n, Mapping)]
    for n in nodes + strays:
        oid = as_int(n.get("id"), -1)
        if oid < 0:
            continue
        dc = n.get("device_class")
        st = n.get("status")
        info[oid] = CrushOsd(host=osd_host.get(oid),
                             device_class=str(dc) if dc else None,
                             crush_weight=as_float(n.get("crush_weight")),
                             reweight=as_float(n.get("reweight")),
                             status=str(st) if st is not None else None)
    return CrushTree(tuple(hosts), info)


def parse_autoscale_status(d: Any) -> dict[int, PoolAutoscale]:
    """``osd pool autoscale-status``: pool id -> what the pg autoscaler would do."""
    out: dict[int, PoolAutoscale] = {}
    for e in as_list(d):
        if not isinstance(e, Mapping) or "pool_id" not in e:
            continue
        out[as_int(e["pool_id"], -1)] = PoolAutoscale(
            pg_num_final=as_int(e.get("pg_num_final")),
            would_adjust=bool(e.get("would_adjust", False)),
            mode=str(e.get("pg_autoscale_mode", "")),
            pg_num_ideal=as_int(e.get("pg_num_ideal")),
            target_ratio=as_float(e.get("target_ratio")),
            effective_target_ratio=as_float(e.get("effective_target_ratio")),
            capacity_ratio=as_float(e.get("capacity_ratio")),
            bias=as_float(e.get("bias"), 1.0),
            bulk=bool(e.get("bulk", False)))
    return out


# --------------------------------------------------------------------------- usage


@dataclass(frozen=True)
class PoolUsage:
    stored_bytes: int
    objects: int
    max_avail_bytes: int
    percent_used: float


@dataclass(frozen=True)
class DfTotals:
    total_bytes: int = 0
    total_avail_bytes: int = 0
    pools: Mapping[int, PoolUsage] = field(default_factory=dict)


def parse_df(d: Mapping[str, Any]) -> DfTotals:
    """Cluster totals and per-pool usage by pool id (``stored`` since Nautilus, else
    ``bytes_used``)."""
    stats = as_map(d.get("stats"))
    pools: dict[int, PoolUsage] = {}
    for p in as_list(d.get("pools")):
        if not isinstance(p, Mapping) or "id" not in p:
            continue
        s = as_map(p.get("stats"))
        pools[as_int(p["id"], -1)] = PoolUsage(
            stored_bytes=as_int(s.get("stored", s.get("bytes_used"))),
            objects=as_int(s.get("objects")),
            max_avail_bytes=as_int(s.get("max_avail")),
            percent_used=as_float(s.get("percent_used")))
    return DfTotals(as_int(stats.get("total_bytes")), as_int(stats.get("total_avail_bytes")),
                    pools)


def parse_osd_df(d: Mapping[str, Any]) -> tuple[OsdUsage, ...]:
    """``osd df`` or ``osd df tree``: per-OSD utilization (percent), sizes, PG count."""
    out = []
    for n in as_list(d.get("nodes")):
        if not isinstance(n, Mapping) or as_int(n.get("id"), -1) < 0 \
                or n.get("type", "osd") != "osd":
            continue
        out.append(OsdUsage(id=as_int(n["id"]), utilization=as_float(n.get("utilization")),
                            kb=as_int(n.get("kb")), kb_avail=as_int(n.get("kb_avail")),
                            pgs=as_int(n["pgs"]) if "pgs" in n else None))
    return tuple(out)


# --------------------------------------------------------------------------- PGs


def parse_pg_stat(d: Any) -> tuple[int, dict[str, int]]:
    """``pg stat``: Octopus and later nest it under ``pg_summary``; older ones do not.

    ``pg_ready: false`` (a manager that has just started) reports every PG as
    ``unknown``; that says nothing about the PGs, so the states are dropped.
    """
    m = as_map(d)
    s = as_map(m.get("pg_summary", m))
    by_state = {str(e.get("name")): as_int(e.get("num"))
                for e in as_list(s.get("num_pg_by_state")) if isinstance(e, Mapping)}
    num = as_int(s.get("num_pgs"), sum(by_state.values()))
    if m.get("pg_ready") is False:
        return num, {}
    return num, by_state


def last_osd_change(d: Any) -> float | None:
    """When an OSD last came up, went down, in or out (``osd stat``, or ``status``'s
    ``osdmap``: ``osd_up_since``/``osd_in_since``, the monitor's clock), None when unknown.

    Such a change starts peering, which the manager only hears of with the OSDs' next PG
    report: until then its PG states still describe the map before the change."""
    m = as_map(d)
    m = as_map(m.get("osdmap", m))
    m = as_map(m.get("osdmap", m))  # pre-Octopus ``status`` nests it twice
    stamps = [as_float(m.get(k)) for k in ("osd_up_since", "osd_in_since")]
    good = [t for t in stamps if math.isfinite(t) and t > 0]
    return max(good) if good else None


# States ``pg dump_stuck`` can report; one call fetches all, the state names sort them.
STUCK_OPS = ("inactive", "unclean", "stale", "undersized", "degraded")


def parse_pg_dump_stuck(d: Any) -> dict[str, tuple[str, ...]]:
    """``pg dump_stuck`` for all STUCK_OPS at once, sorted into kinds by each PG's state.

    Pacific and later answer ``{"stuck_pg_stats": [...]}``, older releases a bare list,
    and an empty answer (nothing stuck) is None.
    """
    if not d:
        return {}
    entries = as_list(d.get("stuck_pg_stats")) if isinstance(d, Mapping) else as_list(d)
    out: dict[str, list[str]] = {}
    for e in entries:
        if not isinstance(e, Mapping):
            continue
        parts = set(str(e.get("state", "")).split("+"))
        pgid = str(e.get("pgid", "?"))
        kinds = []
        if "stale" in parts:
            kinds.append("stale")
        if "active" not in parts:
            kinds.append("inactive")
        if "undersized" in parts:
            kinds.append("undersized")
        if "degraded" in parts:
            kinds.append("degraded")
        if "clean" not in parts:
            kinds.append("unclean")
        for k in kinds:
            out.setdefault(k, []).append(pgid)
    return {k: tuple(sorted(v)) for k, v in out.items()}
