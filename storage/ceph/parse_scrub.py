"""Parse what Ceph says of inconsistent PGs (pure; unit-tested on captured JSON).

``pg ls inconsistent`` (a manager command) lists the PGs whose last scrub found errors,
each with its state, acting set, ``last_deep_scrub_stamp`` and ``stat_sum.num_scrub_errors``.
``rados list-inconsistent-obj PGID --format=json`` (an OSD operation the rados CLI sends
to the PG's primary: no monitor or manager command says it) gives each inconsistent
object: ``errors`` between the copies (``data_digest_mismatch``, ``size_mismatch``, ...),
``union_shard_errors``, the ``selected_object_info`` the scrub judged against, and one
``shards`` entry per copy with that copy's own ``errors`` (``data_digest_mismatch_info``,
``size_mismatch_info``, ``read_error``, ``missing``, ``stat_error``, ...), its size and
digests. Pacific and Reef print the same layout.

``raw["scrub"]`` (written by ``storage.ceph.collect``) holds ``pg ls`` under ``"pgs"`` and
each PG's list under ``"objects"[pgid]``: the JSON, or ``{"error": "..."}`` when the CLI
failed (``No scrub information available for pg 2.5`` after an interval change).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from storage.ceph.parse import as_int, as_list, as_map, parse_stamp
from storage.model.scrub import InconsistentObject, PgScrub, ScrubShard, ScrubState

SCRUB_KEY = "scrub"


def _strs(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in as_list(v) if isinstance(x, str))


def _opt_int(v: Any) -> int | None:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        return None
    try:
        return int(v)
    except ValueError:
        return None


def _opt_str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def parse_shard(s: Mapping[str, Any]) -> ScrubShard | None:
    osd = _opt_int(s.get("osd"))
    if osd is None or osd < 0:
        return None
    return ScrubShard(osd=osd, primary=bool(s.get("primary")), errors=_strs(s.get("errors")),
                      shard=_opt_int(s.get("shard")), size=_opt_int(s.get("size")),
                      data_digest=_opt_str(s.get("data_digest")),
                      omap_digest=_opt_str(s.get("omap_digest")))


def parse_inconsistent_obj(doc: Any) -> tuple[InconsistentObject, ...]:
    """``rados list-inconsistent-obj PGID --format=json`` -> one entry per object."""
    out = []
    for item in as_list(as_map(doc).get("inconsistents")):
        m = as_map(item)
        obj = as_map(m.get("object"))
        info = as_map(m.get("selected_object_info"))
        shards = tuple(s for s in (parse_shard(as_map(x)) for x in as_list(m.get("shards")))
                       if s is not None)
        out.append(InconsistentObject(
            name=str(obj.get("name", "")), nspace=str(obj.get("nspace", "") or ""),
            snap=str(obj.get("snap", "head")), version=as_int(obj.get("version")),
            errors=_strs(m.get("errors")), union_shard_errors=_strs(m.get("union_shard_errors")),
            shards=shards, info_size=_opt_int(info.get("size")),
            info_data_digest=_opt_str(info.get("data_digest"))))
    return tuple(out)


def parse_pg_ls(doc: Any) -> list[PgScrub]:
    """``pg ls inconsistent`` (``{"pg_stats": [...]}``; older releases: a bare list)."""
    d = doc.get("pg_stats") if isinstance(doc, Mapping) else doc
    out = []
    for item in as_list(d):
        p = as_map(item)
        pgid = p.get("pgid")
        if not isinstance(pgid, str):
            continue
        acting = tuple(i for i in (_opt_int(x) for x in as_list(p.get("acting")))
                       if i is not None and i >= 0)
        primary = _opt_int(p.get("acting_primary"))
        out.append(PgScrub(
            pgid=pgid, state=str(p.get("state", "")), acting=acting,
            primary=primary if primary is not None and primary >= 0 else None,
            last_deep_scrub_stamp=parse_stamp(p.get("last_deep_scrub_stamp")),
            scrub_errors=as_int(as_map(p.get("stat_sum")).get("num_scrub_errors"))))
    return out


def parse_scrub(raw: Any) -> ScrubState | None:
    """``raw["scrub"]`` -> ScrubState; None when it was not read (no scrub errors)."""
    if not isinstance(raw, Mapping):
        return None
    if raw.get("error"):
        return ScrubState(error=str(raw["error"]))
    listed = as_map(raw.get("objects"))
    pgs = []
    for pg in parse_pg_ls(raw.get("pgs")):
        got = listed.get(pg.pgid)
        if isinstance(got, Mapping) and "error" in got and "inconsistents" not in got:
            pg = replace(pg, error=str(got["error"]))
        elif got is not None:
            pg = replace(pg, objects=parse_inconsistent_obj(got), listed=True)
        pgs.append(pg)
    return ScrubState(pgs=tuple(pgs))
