"""Inconsistent PGs, copy by copy: which copy of which object is bad and why, and whether
``ceph pg repair`` is safe (``judge_pg``: the one rule the PG_INCONSISTENT finding and the
``pg-repair`` runbook's safety gate both use).

Repair is safe only where the evidence names exactly one bad copy of each object among
good copies that agree with each other (same size and digests): Ceph's repair then copies
the good data over the bad. Otherwise it is refused with the reason: two copies bad (only
one good copy left), good copies that disagree, copies that differ with no copy marked bad
(no authoritative copy), a PG whose objects were not listed (the scrub information is gone
after an interval change: deep-scrub it first).

The bad copy's OSD is named; when one OSD holds the bad copy in more than one inconsistent
PG, or Ceph counts repairs on it (OSD_TOO_MANY_REPAIRS), its disk is the suspect
(``osd-replace-disk`` after the repair).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import CephState, ClusterSnapshot
from storage.model.scrub import InconsistentObject, PgScrub, ScrubShard

RUNBOOK = "pg-repair"
MAX_OBJECTS = 20  # objects named in a finding's evidence


@dataclass(frozen=True)
class RepairVerdict:
    """What the evidence says of one PG: whether a repair is safe, the bad copies' OSDs,
    and the reason in one line when it is not."""

    pgid: str
    repairable: bool
    reason: str  # one line: why it is refused, or what the repair will do
    bad_osds: tuple[int, ...] = ()
    good_osds: tuple[int, ...] = ()
    objects: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)


def _copy(s: ScrubShard) -> str:
    return f"osd.{s.osd}" + (f"(shard {s.shard})" if s.shard is not None else "")


def _agree(good: list[ScrubShard]) -> str | None:
    """None when the good copies agree; else which two differ and how."""
    for attr, what in (("size", "size"), ("data_digest", "data digest"),
                       ("omap_digest", "omap digest")):
        seen = {getattr(s, attr) for s in good if getattr(s, attr) is not None}
        if len(seen) > 1:
            a, b = good[0], next(s for s in good if getattr(s, attr) != getattr(good[0], attr))
            return (f"two copies disagree: {_copy(a)} and {_copy(b)} ({what} "
                    f"{getattr(a, attr)} vs {getattr(b, attr)})")
    return None


def judge_object(obj: InconsistentObject, erasure: bool = False
                 ) -> tuple[str | None, list[ScrubShard], list[ScrubShard]]:
    """(refusal or None, bad copies, good copies) of one object."""
    bad = [s for s in obj.shards if s.errors]
    good = [s for s in obj.shards if not s.errors]
    if not obj.shards:
        return "no authoritative copy: the scrub listed no copy", bad, good
    if not bad:
        return (f"no authoritative copy: the copies differ ({', '.join(obj.errors) or '?'}) "
                "and none is marked bad"), bad, good
    if not good:
        return "no authoritative copy: every copy has errors", bad, good
    if len(bad) > 1:
        return (f"{len(bad)} copies bad ({', '.join(_copy(s) for s in bad)}), only "
                f"{len(good)} good: no two agreeing good copies"
                if len(good) < 2 else
                f"{len(bad)} copies bad ({', '.join(_copy(s) for s in bad)})"), bad, good
    if not erasure and len(good) < 2:
        return f"only one good copy ({_copy(good[0])}): nothing it agrees with", bad, good
    if not erasure:
        why = _agree(good)
        if why:
            return why, bad, good
    return None, bad, good


def judge_pg(pg: PgScrub, erasure: bool = False) -> RepairVerdict:
    """The one rule: is ``ceph pg repair`` safe on this PG, and which copy is bad."""
    if pg.error:
        return RepairVerdict(pg.pgid, False, f"its objects could not be listed ({pg.error}): "
                             f"deep-scrub it first (ceph pg deep-scrub {pg.pgid})")
    if not pg.listed:
        return RepairVerdict(pg.pgid, False, "its objects were not listed (more inconsistent "
                             "PGs than a check lists, or no rados CLI): read `rados "
                             f"list-inconsistent-obj {pg.pgid}`")
    if not pg.objects:
        return RepairVerdict(pg.pgid, False, "no inconsistent object listed: the scrub "
                             f"information is stale; deep-scrub it first (ceph pg deep-scrub "
                             f"{pg.pgid})")
    bad_osds: dict[int, None] = {}
    good_osds: dict[int, None] = {}
    rows = []
    refusal = None
    for obj in pg.objects:
        why, bad, good = judge_object(obj, erasure)
        rows.append({"object": obj.label, "errors": list(obj.errors),
                     "bad": {_copy(s): list(s.errors) for s in bad},
                     "good": [_copy(s) for s in good],
                     **({"refused": why} if why else {})})
        for s in bad:
            bad_osds[s.osd] = None
        for s in good:
            good_osds[s.osd] = None
        if why and refusal is None:
            refusal = f"{obj.label}: {why}" if len(pg.objects) > 1 else why
    if refusal:
        return RepairVerdict(pg.pgid, False, refusal, tuple(bad_osds), tuple(good_osds),
                             tuple(rows[:MAX_OBJECTS]))
    good_only = [o for o in good_osds if o not in bad_osds]
    return RepairVerdict(
        pg.pgid, True,
        f"one bad copy per object on {', '.join(f'osd.{o}' for o in bad_osds)}; "
        f"the good copies on {', '.join(f'osd.{o}' for o in good_only)} agree",
        tuple(bad_osds), tuple(good_only), tuple(rows[:MAX_OBJECTS]))


def _what(obj_rows: tuple[Mapping[str, Any], ...]) -> str:
    """``stordoc-lab-scrub: osd.0 data_digest_mismatch_info``, the first objects."""
    parts = []
    for r in obj_rows[:3]:
        bad = "; ".join(f"{c} {', '.join(e)}" for c, e in r["bad"].items())
        parts.append(f"{r['object']}: {bad or ', '.join(r['errors']) or '?'}")
    more = len(obj_rows) - 3
    return "; ".join(parts) + (f" and {more} more" if more > 0 else "")


def _erasure(st: CephState, pgid: str) -> bool:
    pool = pgid.split(".", 1)[0]
    p = next((p for p in st.pools if str(p.id) == pool), None)
    return p is not None and p.type == "erasure"


def _repairs_warned(st: CephState) -> set[int]:
    """OSDs Ceph's OSD_TOO_MANY_REPAIRS names."""
    import re

    out: set[int] = set()
    for hc in st.health_checks:
        if hc.code == "OSD_TOO_MANY_REPAIRS":
            for text in (hc.summary, *hc.detail):
                out.update(int(x) for x in re.findall(r"\bosd\.(\d+)", text))
    return out


def disk_suspects(st: CephState, verdicts: Iterable[RepairVerdict]) -> dict[int, list[str]]:
    """osd id -> why its disk is suspect: the bad copy in more than one inconsistent PG,
    or Ceph's OSD_TOO_MANY_REPAIRS on it while it holds a bad copy."""
    pgs_of: dict[int, list[str]] = {}
    for v in verdicts:
        for o in v.bad_osds:
            pgs_of.setdefault(o, []).append(v.pgid)
    warned = _repairs_warned(st)
    out: dict[int, list[str]] = {}
    for o, pgs in pgs_of.items():
        why = []
        if len(pgs) > 1:
            why.append(f"the bad copy in {len(pgs)} inconsistent PGs ({', '.join(pgs[:5])})")
        if o in warned:
            why.append("Ceph counts repairs of its reads (OSD_TOO_MANY_REPAIRS)")
        if why:
            out[o] = why
    return out


SCRUB_CODES = (
    CodeInfo("PG_INCONSISTENT", Severity.CRIT,
             "A deep scrub found copies of an object that differ: which copy is bad (its OSD) "
             "and why (data digest, size, read error, missing), from `rados "
             "list-inconsistent-obj`; repaired only when one bad copy faces agreeing good "
             "ones.", RUNBOOK),
)


@check("ceph-scrub", codes=SCRUB_CODES, needs=("ceph",))
def check_scrub(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    """One finding per inconsistent PG: the bad copy's OSD and why, and the repair when
    the evidence makes it safe."""
    st = snap.ceph
    if st is None or st.scrub is None:
        return []
    hosts = {o.id: o.host for o in st.osds}
    verdicts = [judge_pg(pg, _erasure(st, pg.pgid)) for pg in st.scrub.pgs]
    suspects = disk_suspects(st, verdicts)
    out = []
    for pg, v in zip(st.scrub.pgs, verdicts, strict=True):
        bad = ", ".join(f"osd.{o}" + (f" ({hosts[o]})" if hosts.get(o) else "")
                        for o in v.bad_osds)
        head = (f"pg {pg.pgid} inconsistent ({pg.scrub_errors} scrub error(s), acting "
                f"{list(pg.acting)})")
        if v.objects:
            head += f": bad copy on {bad or 'no copy named'}; {_what(v.objects)}"
        if v.repairable:
            msg = f"{head}; the other copies agree: repair it (stordoc fix {RUNBOOK} {pg.pgid})"
        else:
            msg = f"{head}; not repaired automatically: {v.reason}"
        disk = {o: suspects[o] for o in v.bad_osds if o in suspects}
        for o, why in disk.items():
            host = hosts.get(o)
            msg += (f"; osd.{o} is {' and '.join(why)}: suspect its disk (SMART, kernel log"
                    f"{' on ' + host if host else ''}; osd-replace-disk)")
        out.append(Finding(
            "PG_INCONSISTENT", Severity.CRIT, f"pg {pg.pgid}", msg,
            {"pgid": pg.pgid, "state": pg.state, "acting": list(pg.acting),
             "primary": pg.primary, "scrub_errors": pg.scrub_errors,
             "bad_osds": list(v.bad_osds), "good_osds": list(v.good_osds),
             "repairable": v.repairable, "reason": v.reason, "objects": list(v.objects),
             "disk_suspect": {f"osd.{o}": why for o, why in disk.items()},
             "last_deep_scrub": pg.last_deep_scrub_stamp, "list_error": pg.error},
            runbook=RUNBOOK if v.repairable else None,
            target=pg.pgid if v.repairable else None,
            since=pg.last_deep_scrub_stamp))
    return out
