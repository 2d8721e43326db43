"""Placement: an OSD that is up and in yet holds nothing, or less than its share, and why
(CRUSH weight 0, a reweight override, a root or device class no pool's rule takes), and
CRUSH host buckets with no OSD.

Ceph raises nothing for these: an OSD with CRUSH weight 0 is up, in and HEALTH_OK while
its disk sits idle and the other OSDs fill. The PG counts come from ``osd df`` (the
manager's); with the manager gone they are stale (``checks.managers``) and only the
CRUSH facts (the monitors') are judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from checks.managers import pg_stats_stale
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.osd import pg_state_is_clean
from storage.model import CephState, ClusterSnapshot, OsdState
from storage.model.mgrmon import CrushPlacement

# an OSD holding less than this fraction of the PGs its CRUSH weight asks for, with a
# reweight override below 1, is "below its share"
SHARE_FLOOR = 0.5
TIB = 1024**4

PLACEMENT_CODES = (
    CodeInfo("OSD_NO_DATA", Severity.WARN,
             "An OSD is up and in but CRUSH places no data on it: CRUSH weight 0, a root "
             "or device class no pool's rule takes, or no PGs at all."),
    CodeInfo("OSD_BELOW_SHARE", Severity.WARN,
             "An OSD holds well under the PGs its CRUSH weight asks for because of a "
             "reweight override (ceph osd reweight) below 1."),
    CodeInfo("CRUSH_HOST_EMPTY", Severity.INFO,
             "A CRUSH host bucket has no OSD under it (a host removed, its bucket left)."),
)


def _size_tib(st: CephState, osd_id: int) -> float | None:
    u = next((x for x in st.osd_usage if x.id == osd_id), None)
    return u.kb * 1024 / TIB if u is not None and u.kb > 0 else None


def _rule_roots(st: CephState, crush: CrushPlacement) -> set[tuple[str, str | None]]:
    """(root, class or None) every pool's rule takes."""
    used_rules = {p.crush_rule for p in st.pools}
    return {t for r in crush.rules if r.id in used_rules for t in r.takes}


def _unused_root(o: OsdState, crush: CrushPlacement,
                 takes: set[tuple[str, str | None]]) -> str | None:
    """Why no pool's rule reaches this OSD's root/class, or None when one does."""
    root = crush.osd_root.get(o.id)
    if root is None or not takes:
        return None
    if any(r == root and (c is None or c == o.device_class) for r, c in takes):
        return None
    taken = ", ".join(sorted(r + (f"~{c}" if c else "") for r, c in takes))
    if any(r == root for r, _ in takes):
        return (f"its device class {o.device_class or 'none'} under root {root} is taken by "
                f"no pool's rule (the rules take {taken})")
    return f"its root {root} is taken by no pool's rule (the rules take {taken})"


@check("ceph-placement", codes=PLACEMENT_CODES, needs=("ceph",))
def check_placement(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    crush = st.crush
    takes = _rule_roots(st, crush) if crush is not None else set()
    counts = {u.id: u.pgs for u in st.osd_usage if u.pgs is not None}
    if pg_stats_stale(st) is not None:
        counts = {}
    live = [o for o in st.osds if o.exists and o.up and o.in_ and not o.destroyed]
    weights = [o.crush_weight for o in live if o.crush_weight > 0]
    for o in live:
        where = f" on host {o.host}" if o.host else ""
        ev: dict[str, object] = {"osd": o.id, "host": o.host, "crush_weight": o.crush_weight,
                                 "reweight": o.reweight, "device_class": o.device_class,
                                 "root": crush.osd_root.get(o.id) if crush else None,
                                 "pgs": counts.get(o.id)}
        pgs = f" ({counts[o.id]} PGs)" if o.id in counts else ""
        if o.host is None and crush is not None and o.id not in crush.osd_root:
            cmd = f"ceph osd crush add osd.{o.id} WEIGHT host=HOST"
            yield Finding("OSD_NO_DATA", Severity.WARN, o.name,
                          f"{o.name} is up and in but not in the CRUSH map{pgs}: nothing is "
                          f"placed on it; add it: `{cmd}`", {**ev, "manual": cmd})
            continue
        if o.crush_weight <= 0:
            size = _size_tib(st, o.id)
            w = f"{size:.4f}" if size else (f"{max(weights):.4f}" if weights else "SIZE_TIB")
            cmd = f"ceph osd crush reweight {o.name} {w}"
            yield Finding(
                "OSD_NO_DATA", Severity.WARN, o.name,
                f"{o.name}{where} is up and in but its CRUSH weight is 0{pgs}: CRUSH places "
                f"no data on it while the other OSDs fill; give it its size in TiB: "
                f"`{cmd}`" + (" (its size)" if size else ""),
                {**ev, "size_tib": size, "manual": cmd})
            continue
        why = _unused_root(o, crush, takes) if crush is not None else None
        if why is not None:
            yield Finding("OSD_NO_DATA", Severity.WARN, o.name,
                          f"{o.name}{where} is up and in but {why}{pgs}: nothing is placed "
                          f"on it; move it (`ceph osd crush move`) or give a pool a rule "
                          f"that takes it", {**ev, "manual": "ceph osd crush move / a rule"})
            continue
        # an OSD back a moment ago holds no PGs in ``osd df`` until they peer: only a
        # settled cluster (every PG clean) says it holds none
        settled = not any(n and not pg_state_is_clean(s) for s, n in st.pgs.by_state.items())
        if counts.get(o.id) == 0 and settled:
            yield Finding("OSD_NO_DATA", Severity.WARN, o.name,
                          f"{o.name}{where} is up and in with CRUSH weight "
                          f"{o.crush_weight:g} but holds no PGs: read `ceph osd df tree` "
                          f"and `ceph pg ls-by-osd {o.name}`", ev)
            continue
        yield from _below_share(snap, st, o, counts, where, ev)
    if crush is not None:
        for h in crush.empty_hosts:
            yield Finding("CRUSH_HOST_EMPTY", Severity.INFO, f"host {h}",
                          f"CRUSH host bucket {h} has no OSD: if the host is gone, remove "
                          f"it (`ceph osd crush rm {h}`)", {"host": h})


def _below_share(snap: ClusterSnapshot, st: CephState, o: OsdState, counts: dict[int, int],
                 where: str, ev: dict[str, object]) -> Iterator[Finding]:
    """A reweight override below 1 that leaves the OSD under half its weight's share."""
    if o.reweight >= 1.0 or o.id not in counts:
        return
    peers = [p for p in st.osds if p.exists and p.up and p.in_ and p.crush_weight > 0
             and p.id in counts and (st.crush is None or st.crush.osd_root.get(p.id)
                                     == st.crush.osd_root.get(o.id))]
    total_w = sum(p.crush_weight for p in peers)
    total_pgs = sum(counts[p.id] for p in peers)
    if total_w <= 0 or total_pgs <= 0:
        return
    share = total_pgs * o.crush_weight / total_w
    have = counts[o.id]
    if have >= SHARE_FLOOR * share:
        return
    yield Finding(
        "OSD_BELOW_SHARE", Severity.WARN, o.name,
        f"{o.name}{where} holds {have} PGs, its CRUSH weight asks for about {share:.0f}: a "
        f"reweight override of {o.reweight:.2f} keeps data off it; unless it is being "
        f"drained on purpose, `ceph osd reweight {o.name.split('.')[1]} 1` (the balancer's "
        f"upmap mode evens out without overrides)",
        {**ev, "share_pgs": round(share, 1), "manual": f"ceph osd reweight {o.id} 1"})
