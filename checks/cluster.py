"""Cluster-wide checks: Ceph's own health passed through, monitor quorum, full OSDs and
pools, clock skew.

Ceph's ``health detail`` codes are kept as ``CEPH_HEALTH`` findings (entity ``ceph CODE``)
so nothing Ceph knows is lost even when one of our checks says the same thing better.
Full ratios in the osdmap are float32 (0.949999988079071): compared with a tolerance.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from checks.ceph_codes import ceph_health_finding
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.osd import cluster_entity
from checks.settle import SETTLING_CEPH_CODES, health_lags, pgs_settling
from storage.model import ClusterSnapshot

# float32 ratios: 0.95 arrives as 0.949999988..., so "at least the ratio" allows this slack.
RATIO_TOL = 1e-6
MAX_DETAIL = 20

CLUSTER_CODES = (
    CodeInfo("CEPH_HEALTH", Severity.WARN,
             "One of Ceph's own health checks (health detail), passed through with Ceph's "
             "code and severity."),
    CodeInfo("MON_OUT_OF_QUORUM", Severity.WARN,
             "A monitor in the monmap is not in the quorum."),
    CodeInfo("OSD_NEAR_FULL", Severity.WARN,
             "An OSD is above the nearfull (or backfillfull) ratio."),
    CodeInfo("OSD_IS_FULL", Severity.CRIT,
             "An OSD is at or above the full ratio: writes to its PGs are blocked."),
    CodeInfo("POOL_NEAR_FULL", Severity.WARN,
             "A pool is close to its quota or to the space its OSDs can give it."),
    CodeInfo("MON_CLOCK_SKEW", Severity.WARN,
             "A monitor's clock is off from the leader's by more than the threshold."),
)


@check("ceph-cluster", codes=CLUSTER_CODES, needs=("ceph",))
def check_cluster(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    window = ctx.thresholds.pg_settle_window_s
    # PGs settling after a change, or all clean while Ceph's health lags their stats
    cause = pgs_settling(snap, ctx.now, window) or health_lags(snap, ctx.now, window)
    for hc in st.health_checks:
        # explained (checks/ceph_codes.py); muted in Ceph: an info finding, not dropped
        f = ceph_health_finding(hc, st, ctx, snap.cluster)
        if cause is not None and hc.code in SETTLING_CEPH_CODES and f.severity > Severity.INFO:
            # Ceph's word for the same PGs settling after a change: part of it, INFO
            f = replace(f, severity=Severity.INFO, message=f"{cause.line}: {f.message}",
                        evidence={**f.evidence, "settling_after": cause.what})
        yield f
    quorum = set(st.mon_quorum)
    if quorum:
        for mon in st.mon_names:
            if mon not in quorum:
                yield Finding("MON_OUT_OF_QUORUM", Severity.WARN, f"mon.{mon}",
                              f"mon.{mon} is not in the quorum ({len(quorum)} of "
                              f"{len(st.mon_names)} in: {', '.join(sorted(quorum))}); one "
                              f"more monitor lost may stop the cluster",
                              {"mon": mon, "quorum": sorted(quorum),
                               "mons": list(st.mon_names),
                               "manual": f"`ceph quorum_status` names the monitors in; start "
                                         f"mon.{mon} on its host, its log says why it left"})
    yield from _osd_fullness(snap, ctx)
    yield from _pool_fullness(snap, ctx)
    for mon, skew in sorted(st.mon_time_skew.items()):
        if skew > ctx.thresholds.clock_skew_max_s:
            yield Finding("MON_CLOCK_SKEW", Severity.WARN, f"mon.{mon}",
                          f"mon.{mon} clock is {skew * 1000:.0f} ms off the leader (limit "
                          f"{ctx.thresholds.clock_skew_max_s * 1000:.0f} ms): check its "
                          f"NTP/chrony",
                          {"mon": mon, "skew_s": skew,
                           "limit_s": ctx.thresholds.clock_skew_max_s,
                           "manual": f"`ceph time-sync-status` shows each monitor's offset; "
                                     f"fix NTP/chrony on mon.{mon}'s host"})


def _osd_fullness(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    nearfull = st.nearfull_ratio or ctx.thresholds.osd_nearfull_ratio_default
    full = st.full_ratio or 0.95
    backfill = st.backfillfull_ratio or 0.90
    hosts = {o.id: o.host for o in st.osds}
    for u in st.osd_usage:
        ratio = u.utilization / 100.0
        host = hosts.get(u.id)
        where = f" on host {host}" if host else ""
        ev = {"osd": u.id, "host": host, "utilization": round(ratio, 4),
              "nearfull_ratio": nearfull, "backfillfull_ratio": backfill,
              "full_ratio": full, "kb": u.kb, "kb_avail": u.kb_avail}
        if ratio >= full - RATIO_TOL:
            yield Finding("OSD_IS_FULL", Severity.CRIT, f"osd.{u.id}",
                          f"osd.{u.id}{where} is {ratio:.1%} full (full ratio {full:.2f}): "
                          f"writes to its PGs are blocked; add capacity or delete data",
                          {**ev, "manual": "`ceph osd df` shows every OSD's fill; add "
                                           "capacity or delete data (a raised full ratio "
                                           "only buys time)"})
        elif ratio >= nearfull - RATIO_TOL:
            what = "backfillfull" if ratio >= backfill - RATIO_TOL else "nearfull"
            yield Finding("OSD_NEAR_FULL", Severity.WARN, f"osd.{u.id}",
                          f"osd.{u.id}{where} is {ratio:.1%} full, above the {what} ratio "
                          f"({(backfill if what == 'backfillfull' else nearfull):.2f}); "
                          f"full at {full:.2f}",
                          ev)


def _pool_fullness(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    nearfull = st.nearfull_ratio or ctx.thresholds.osd_nearfull_ratio_default
    for p in st.pools:
        reasons = []
        ev: dict[str, object] = {"pool": p.name, "stored_bytes": p.stored_bytes,
                                 "max_avail_bytes": p.max_avail_bytes,
                                 "percent_used": p.percent_used}
        # ``percent_used`` in ``df`` is a fraction (0..1) since Nautilus.
        if p.percent_used >= nearfull - RATIO_TOL:
            reasons.append(f"{p.percent_used:.0%} of the space its OSDs can give it")
        if p.quota_max_bytes and p.stored_bytes >= nearfull * p.quota_max_bytes:
            reasons.append(f"{p.stored_bytes / p.quota_max_bytes:.0%} of its byte quota")
            ev["quota_max_bytes"] = p.quota_max_bytes
        if p.quota_max_objects and p.objects >= nearfull * p.quota_max_objects:
            reasons.append(f"{p.objects / p.quota_max_objects:.0%} of its object quota")
            ev["quota_max_objects"] = p.quota_max_objects
        if reasons and p.percent_used < nearfull - RATIO_TOL:
            # its quota only: the pool's own incident, not the cluster filling
            ev["fold_as"] = "POOL_QUOTA_NEAR_FULL"
        if reasons:
            yield Finding("POOL_NEAR_FULL", Severity.WARN, f"pool {p.name}",
                          f"pool {p.name} uses {' and '.join(reasons)}: writes stop when "
                          f"it is full", ev)


__all__ = ["SETTLING_CEPH_CODES", "check_cluster", "cluster_entity"]
