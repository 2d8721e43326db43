"""Have the manager's PG states been reported on the current osdmap?

After an osdmap change (an OSD up/down/in/out, a pg_temp, a pool's pg_num) the manager
keeps each PG's state as its primary last reported it, on the map before the change,
until the OSDs' next report (``mgr_stats_period``, 5 s): "65 active+clean" read 0.3 s
after an ``osd in`` is the picture before it (peering starts a second later).
``reported_epoch`` does not tell: a PG the change did not move goes on reporting the
epoch it last peered in. The map does: ``osdmaptool --test-map-pgs-dump-all`` computes
every PG's up and acting set (pg_temp, upmaps and primary affinity applied) on the current
map in milliseconds, and a PG whose reported up/acting set differs has not reported on
the map that moved it.

This module is the pure part: ``parse_osdmaptool_pgs`` (the tool's text),
``parse_pgs_brief`` (``pg dump pgs_brief``, every shape met), ``compare`` and
``settle_from_raw`` (the raw answers -> ``PgSettle``), ``settle_to_json``/``from_json``.
Getting the answers (the monitor's map through osdmaptool) is ``storage.ceph.settle``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from storage.ceph.parse import as_map, last_osd_change
from storage.model.ceph import PgSettle, SettleMethod

# the keys of ``raw`` (what snapshots save and replay)
PGS_BRIEF = "pg dump pgs_brief"
OSDMAP_PGS = "osdmap pgs"
# PGs named in ``PgSettle.unreported_pgids``
SAMPLE = 10


@dataclass(frozen=True)
class Placement:
    """Where a PG is: up and acting sets (order matters: erasure-coded shards, the
    primary first) and their primaries (None: the report does not say)."""

    up: tuple[int, ...]
    up_primary: int | None
    acting: tuple[int, ...]
    acting_primary: int | None

    def agrees(self, other: Placement) -> bool:
        """Same sets, and the same primaries where both say."""
        return (self.up == other.up and self.acting == other.acting
                and _same(self.up_primary, other.up_primary)
                and _same(self.acting_primary, other.acting_primary))


def _same(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


@dataclass(frozen=True)
class PgReport:
    """One PG as the manager last heard of it (``pg dump pgs_brief``)."""

    pgid: str
    state: str
    placement: Placement


@dataclass(frozen=True)
class OsdmapPgs:
    """Every PG of one osdmap as osdmaptool computed it."""

    epoch: int | None
    pgs: Mapping[str, Placement]
    pools: Mapping[int, int]  # pool id -> pg_num, as the tool printed it

    def incomplete(self) -> str | None:
        """Why this is not every PG of the map, None when it is (each pool's pg_num
        lines, no PG of a pool the tool did not announce)."""
        per_pool: dict[int, int] = {}
        for pgid in self.pgs:
            pool = int(pgid.split(".", 1)[0])
            per_pool[pool] = per_pool.get(pool, 0) + 1
        stray = sorted(set(per_pool) - set(self.pools))
        if stray:
            return f"osdmaptool printed PGs of pool(s) {stray} without their pool line"
        short = {p: (per_pool.get(p, 0), n) for p, n in self.pools.items()
                 if per_pool.get(p, 0) != n}
        if short:
            p, (got, want) = sorted(short.items())[0]
            return f"osdmaptool printed {got} of pool {p}'s {want} PGs"
        return None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for ``raw`` (PG -> [up, up_primary, acting, acting_primary])."""
        return {"epoch": self.epoch,
                "pools": {str(p): n for p, n in sorted(self.pools.items())},
                "pgs": {pgid: [list(pl.up), pl.up_primary, list(pl.acting),
                               pl.acting_primary] for pgid, pl in self.pgs.items()}}


# --------------------------------------------------------------------------- parsers

_PGID = re.compile(r"^(\d+)\.([0-9a-fA-F]+)$")
_LIST = r"\[(-?\d+(?:,-?\d+)*)?\]"
_PG_LINE = re.compile(
    rf"^(\S+) raw \({_LIST}, p(-?\d+)\) up \({_LIST}, p(-?\d+)\) "
    rf"acting \({_LIST}, p(-?\d+)\)$")
_POOL_LINE = re.compile(r"^pool (\d+) pg_num (\d+)$")
EPOCH = re.compile(r"\bepoch (\d+)\b")
# a PG id or an OSD id this long is junk, not a cluster
_MAX_DIGITS = 12


def canonical_pgid(v: Any) -> str | None:
    """``"2.3f"`` as Ceph prints a pg_t (pool, ``.``, hex seed without leading zeros);
    None for anything else."""
    if not isinstance(v, str):
        return None
    m = _PGID.match(v.strip())
    if m is None or len(m.group(1)) > _MAX_DIGITS or len(m.group(2)) > _MAX_DIGITS:
        return None
    return f"{int(m.group(1))}.{int(m.group(2), 16):x}"


def _ints(text: str | None) -> tuple[int, ...] | None:
    parts = [x for x in (text or "").split(",") if x]
    if any(len(x.lstrip("-")) > _MAX_DIGITS for x in parts):
        return None
    return tuple(int(x) for x in parts)


def parse_osdmaptool_pgs(text: str, epoch: int | None = None) -> OsdmapPgs:
    """``osdmaptool MAP --test-map-pgs-dump-all``: ``pool N pg_num M`` before each pool's
    lines ``PGID raw ([..], pN) up ([..], pN) acting ([..], pN)``; everything else (the
    per-OSD table after them, messages) is ignored, and so is a line that is not exactly
    that shape. ``--test-map-pgs-dump`` (without -all) prints only the acting set: not
    read here."""
    pgs: dict[str, Placement] = {}
    pools: dict[int, int] = {}
    for line in text.splitlines():
        line = line.strip()
        pm = _POOL_LINE.match(line)
        if pm is not None and len(pm.group(1)) <= _MAX_DIGITS \
                and len(pm.group(2)) <= _MAX_DIGITS:
            pools[int(pm.group(1))] = int(pm.group(2))
            continue
        m = _PG_LINE.match(line)
        if m is None:
            continue
        pgid = canonical_pgid(m.group(1))
        up, acting = _ints(m.group(4)), _ints(m.group(6))
        if pgid is None or up is None or acting is None or any(
                len(m.group(i).lstrip("-")) > _MAX_DIGITS for i in (5, 7)):
            continue
        pgs[pgid] = Placement(up, int(m.group(5)), acting, int(m.group(7)))
    return OsdmapPgs(epoch, pgs, pools)


def _int(v: Any) -> int | None:
    """A JSON integer (not a bool, not a float); None otherwise."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _osd_list(v: Any) -> tuple[int, ...] | None:
    if not isinstance(v, list):
        return None
    out = tuple(_int(x) for x in v)
    return None if any(x is None for x in out) else tuple(x for x in out if x is not None)


def osdmap_pgs_from_json(d: Any) -> OsdmapPgs | None:
    """``OsdmapPgs.to_json`` read back (a replayed snapshot); None when it is not that
    shape. An entry that is not well-formed is left out (``incomplete`` then says so)."""
    m = as_map(d)
    if not isinstance(m.get("pgs"), Mapping) or not isinstance(m.get("pools"), Mapping):
        return None
    pools: dict[int, int] = {}
    for k, n in m["pools"].items():
        if str(k).isdigit() and len(str(k)) <= _MAX_DIGITS and _int(n) is not None:
            pools[int(k)] = int(n)
    pgs: dict[str, Placement] = {}
    for k, v in m["pgs"].items():
        pgid = canonical_pgid(k)
        if pgid is None or not isinstance(v, list) or len(v) != 4:
            continue
        up, acting = _osd_list(v[0]), _osd_list(v[2])
        if up is None or acting is None:
            continue
        pgs[pgid] = Placement(up, _int(v[1]), acting, _int(v[3]))
    return OsdmapPgs(_int(m.get("epoch")), pgs, pools)


def _brief_entries(d: Any) -> list[Any] | None:
    """The entries of every shape ``pg dump pgs_brief`` was met in: a bare list (Nautilus
    and older), ``{"pg_ready": true, "pg_stats": [...]}`` (Octopus to Reef), a full
    ``pg dump``'s ``{"pg_map": {"pg_stats": [...]}}``. None: not known (``pg_ready``
    false, a manager that has just started and reports every PG unknown; junk)."""
    if isinstance(d, list):
        return d
    m = as_map(d)
    if m.get("pg_ready") is False:
        return None
    for node in (m, as_map(m.get("pg_map"))):
        for key in ("pg_stats", "pg_stats_brief"):
            if isinstance(node.get(key), list):
                return list(node[key])
    return None


def parse_pgs_brief(d: Any) -> tuple[PgReport, ...] | None:
    """``pg dump pgs_brief`` -> one report per PG (None: the states are not known). An
    entry without a PG id or with sets that are not lists of integers is left out: that
    PG then counts as not reported."""
    entries = _brief_entries(d)
    if entries is None:
        return None
    out = []
    for e in entries:
        if not isinstance(e, Mapping):
            continue
        pgid = canonical_pgid(e.get("pgid"))
        up, acting = _osd_list(e.get("up")), _osd_list(e.get("acting"))
        if pgid is None or up is None or acting is None:
            continue
        state = e.get("state")
        out.append(PgReport(pgid, state if isinstance(state, str) and state else "unknown",
                            Placement(up, _int(e.get("up_primary")), acting,
                                      _int(e.get("acting_primary")))))
    return tuple(out)


def _pg_order(pgid: str) -> tuple[int, int]:
    pool, seed = pgid.split(".", 1)
    return int(pool), int(seed, 16)


def compare(mapped: OsdmapPgs, reports: Iterable[PgReport]) -> tuple[int, tuple[str, ...]]:
    """(PGs compared, the PGs that have not reported on this map, in PG order): a PG of
    the map whose reported placement differs or that the manager does not list (a new
    PG), and a PG the manager lists that the map does not have (a deleted pool)."""
    by_id = {r.pgid: r for r in reports}
    bad = [pgid for pgid, pl in mapped.pgs.items()
           if pgid not in by_id or not by_id[pgid].placement.agrees(pl)]
    bad += [pgid for pgid in by_id if pgid not in mapped.pgs]
    return len(set(mapped.pgs) | set(by_id)), tuple(sorted(bad, key=_pg_order))


def settle_from_raw(raw: Mapping[str, Any]) -> PgSettle | None:
    """The raw answers (``PGS_BRIEF``, ``OSDMAP_PGS``, their ``errors``, and ``osd stat``
    or ``status`` for the stamps) -> ``PgSettle``; None when none of it was read."""
    errors = as_map(raw.get("errors"))
    keys = (PGS_BRIEF, OSDMAP_PGS)
    if not any(k in raw or k in errors for k in keys):
        return None
    stamp = last_osd_change(raw.get("osd stat")) or last_osd_change(raw.get("status"))
    reports = parse_pgs_brief(raw.get(PGS_BRIEF)) if PGS_BRIEF in raw else None
    by_state: dict[str, int] = {}
    for r in reports or ():
        by_state[r.state] = by_state.get(r.state, 0) + 1
    why: str | None = None
    mapped = osdmap_pgs_from_json(raw.get(OSDMAP_PGS))
    if reports is None:
        if PGS_BRIEF not in raw:
            why = str(errors.get(PGS_BRIEF) or errors.get(OSDMAP_PGS)
                      or "pg dump pgs_brief not read")
        elif as_map(raw[PGS_BRIEF]).get("pg_ready") is False:
            why = "the manager's PG states are not ready (pg_ready false)"
        else:
            why = "pg dump pgs_brief: an answer of a shape not known"
    elif OSDMAP_PGS in errors:
        why = str(errors[OSDMAP_PGS])
    elif mapped is None:
        why = "no mapping computed from the osdmap"
    else:
        why = mapped.incomplete()
    if why is not None or mapped is None or reports is None:
        return PgSettle(SettleMethod.STAMP if stamp is not None else SettleMethod.UNKNOWN,
                        by_state=by_state, last_change=stamp,
                        error=why or "no mapping computed from the osdmap")
    total, bad = compare(mapped, reports)
    return PgSettle(SettleMethod.OSDMAP, epoch=mapped.epoch, num_pgs=total,
                    unreported=len(bad), unreported_pgids=bad[:SAMPLE], by_state=by_state,
                    last_change=stamp)


def worth_comparing(by_state: Mapping[str, int]) -> bool:
    """Whether comparing the PGs with the map can change what their states say: only when
    every PG reads active+clean (a cheap ``pg stat`` tells). Otherwise the states already
    say "not clean", stale or not, and the dump and the map are not worth reading. Looser
    than ``checks.osd.pg_state_is_clean`` on purpose: it only saves work."""
    return bool(by_state) and all({"active", "clean"} <= set(str(st).split("+"))
                                  for st, n in by_state.items() if n)



def settle_to_json(s: PgSettle) -> dict[str, Any]:
    """``PgSettle`` as plain JSON (a benchmark result's stored cluster state)."""
    return {"method": s.method.value, "epoch": s.epoch, "num_pgs": s.num_pgs,
            "unreported": s.unreported, "unreported_pgids": list(s.unreported_pgids),
            "by_state": dict(s.by_state), "last_change": s.last_change, "error": s.error}


def settle_from_json(d: Any) -> PgSettle | None:
    """``settle_to_json`` read back; None when it is not that (a result stored before
    there was one, junk)."""
    m = as_map(d)
    try:
        method = SettleMethod(str(m.get("method")))
    except ValueError:
        return None
    lc = m.get("last_change")
    last = float(lc) if isinstance(lc, (int, float)) and not isinstance(lc, bool) \
        and math.isfinite(lc) else None
    pgids = m.get("unreported_pgids")
    by_state = {str(k): v for k, v in as_map(m.get("by_state")).items()
                if _int(v) is not None and v >= 0}
    err = m.get("error")
    return PgSettle(method, epoch=_int(m.get("epoch")), num_pgs=max(0, _int(m.get("num_pgs")) or 0),
                    unreported=max(0, _int(m.get("unreported")) or 0),
                    unreported_pgids=tuple(str(x) for x in pgids)
                    if isinstance(pgids, list) else (),
                    by_state=by_state, last_change=last,
                    error=str(err) if err is not None else None)
