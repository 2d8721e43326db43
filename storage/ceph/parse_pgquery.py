"""``ceph pg P query`` summarised to what blocks the PG, and which stuck PGs to ask.

A query is one PG's view from its primary: ``recovery_state`` is a stack of state-machine
states (innermost first: ``Started/Primary/Peering/Down`` ...), and the peering state
says what it waits for (``blocked``, ``down_osds_we_would_probe``, ``peering_blocked_by``);
an active PG with unfound objects lists where they might be (``might_have_unfound``, each
with a status: "already probed", "querying", "osd is down", "not queried"). The PG stats
(``pg dump_stuck``) add ``blocked_by`` and ``stat_sum.num_objects_unfound``. Pure: the
unit tests feed it JSON captured from the lab (``tests/fixtures/ceph-pgquery``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from storage.ceph.parse import as_int, as_list, as_map
from storage.model.pgquery import PeeringBlock, PgBlock, UnfoundPeer

# at most this many stuck PGs are queried per collection (one round trip each)
MAX_PG_QUERIES = 3
PGID_RE = re.compile(r"^(\d+)\.([0-9a-f]+)$")
# PG states worth a query: it serves no I/O, or has objects nowhere to be found
_BLOCKED_PARTS = frozenset({"down", "incomplete", "stale", "peering", "unknown",
                            "recovery_unfound", "backfill_unfound"})


def valid_pgid(text: str) -> bool:
    """``2.5``, ``11.1f``: pool id, a dot, the PG's hex seed."""
    return bool(PGID_RE.match(text))


def _ints(v: Any) -> tuple[int, ...]:
    out = []
    for x in as_list(v):
        i = as_int(x, -1)
        if i >= 0:
            out.append(i)
    return tuple(out)


def _stuck_entries(dump_stuck: Any) -> list[Mapping[str, Any]]:
    if not dump_stuck:
        return []
    entries = as_list(dump_stuck.get("stuck_pg_stats")) if isinstance(dump_stuck, Mapping) \
        else as_list(dump_stuck)
    return [e for e in entries if isinstance(e, Mapping)]


def _unfound(e: Mapping[str, Any]) -> int:
    return as_int(as_map(e.get("stat_sum")).get("num_objects_unfound"))


def blocked_candidates(dump_stuck: Any, limit: int = MAX_PG_QUERIES) -> list[str]:
    """The stuck PGs worth a ``pg query``: inactive, down, incomplete, stale or with
    unfound objects; unfound and down first, at most ``limit``."""
    scored = []
    for e in _stuck_entries(dump_stuck):
        parts = set(str(e.get("state", "")).split("+"))
        unfound = _unfound(e)
        if not (unfound or "active" not in parts or parts & _BLOCKED_PARTS):
            continue
        rank = 0 if unfound else 1 if parts & {"down", "incomplete"} else 2
        scored.append((rank, str(e.get("pgid", ""))))
    return [pgid for _, pgid in sorted(scored) if valid_pgid(pgid)][:limit]


def from_stuck(e: Mapping[str, Any], error: str = "") -> PgBlock:
    """A PG as ``pg dump_stuck`` has it (when its query did not answer)."""
    return PgBlock(pgid=str(e.get("pgid", "")), state=str(e.get("state", "")),
                   up=_ints(e.get("up")), acting=_ints(e.get("acting")),
                   blocked_by=_ints(e.get("blocked_by")), num_unfound=_unfound(e),
                   error=error)


def parse_pg_query(pgid: str, q: Any, stuck: Mapping[str, Any] | None = None) -> PgBlock:
    """One ``pg query`` answer -> :class:`PgBlock`; ``stuck`` (its ``pg dump_stuck``
    entry) adds ``blocked_by`` and the unfound count when the query lacks them."""
    base = from_stuck(stuck) if stuck else PgBlock(pgid=pgid, state="")
    if not isinstance(q, Mapping):
        return base
    info = as_map(q.get("info"))
    stats = as_map(info.get("stats"))
    names: list[str] = []
    blocked = ""
    probe: tuple[int, ...] = ()
    peering: list[PeeringBlock] = []
    might: list[UnfoundPeer] = []
    for s in as_list(q.get("recovery_state")):
        s = as_map(s)
        if s.get("name"):
            names.append(str(s["name"]))
        if s.get("blocked") and not blocked:
            blocked = str(s["blocked"])
        probe = probe or _ints(s.get("down_osds_we_would_probe"))
        for b in as_list(s.get("peering_blocked_by")):
            b = as_map(b)
            o = as_int(b.get("osd"), -1)
            if o >= 0:
                peering.append(PeeringBlock(o, str(b.get("comment") or "")))
        for m in as_list(s.get("might_have_unfound")):
            m = as_map(m)
            o = as_int(m.get("osd"), -1)
            if o >= 0:
                might.append(UnfoundPeer(o, str(m.get("status") or "")))
    unfound = as_int(as_map(stats.get("stat_sum")).get("num_objects_unfound"))
    return PgBlock(
        pgid=str(info.get("pgid") or pgid), state=str(q.get("state") or base.state),
        up=_ints(q.get("up")) or base.up, acting=_ints(q.get("acting")) or base.acting,
        recovery_states=tuple(names), blocked=blocked,
        blocked_by=_ints(stats.get("blocked_by")) or base.blocked_by,
        down_osds_we_would_probe=probe, peering_blocked_by=tuple(peering),
        might_have_unfound=tuple(might), num_unfound=max(unfound, base.num_unfound),
        queried=True)


def parse_pg_blocks(queries: Any, dump_stuck: Any) -> tuple[PgBlock, ...]:
    """``raw["pg query"]`` (pgid -> query JSON, or ``{"error": ...}``) with the PGs'
    ``pg dump_stuck`` entries -> one :class:`PgBlock` per queried PG, in query order."""
    by_id = {str(e.get("pgid")): e for e in _stuck_entries(dump_stuck)}
    out = []
    for pgid, q in as_map(queries).items():
        pgid = str(pgid)
        q = as_map(q)
        if "error" in q and "recovery_state" not in q:
            e = by_id.get(pgid)
            out.append(from_stuck(e, str(q["error"])) if e is not None
                       else PgBlock(pgid=pgid, state="", error=str(q["error"])))
            continue
        out.append(parse_pg_query(pgid, q, by_id.get(pgid)))
    return tuple(out)
