"""A filling cluster: the fill per OSD and its spread (max - min, standard deviation),
and the days until the fullest OSD reaches the full ratio, fitted on the journal's
history of checks (``storage.fillhist``, put in the snapshot by ``core.service.pipeline``).

The first OSD to reach the full ratio stops the writes to its PGs, so the fullest OSD
is what is projected, not the cluster's average; an uneven spread is fixed by
``osd-reweight-by-utilization`` or the balancer in upmap mode, a cluster that is simply
filling needs capacity (or, for hours, ``full-ratio-raise``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence

from checks.ceph_config import DEFAULT_RATIOS, ratio_causes
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import ClusterSnapshot

SPREAD_WARN = 0.20  # max - min fill of the in OSDs
SPREAD_NEARFULL_WARN = 0.05  # ... once an OSD is nearfull: reweighting buys room
DAYS_WARN, DAYS_CRIT = 30.0, 7.0
MIN_SAMPLES, MIN_SPAN_S = 3, 3600.0  # fewer/shorter: "not enough history"
RATIO_TOL = 1e-3

FILL_CODES = (
    CodeInfo("OSD_FILL_SPREAD", Severity.WARN,
             "The OSDs fill unevenly: the fullest reaches the full ratio (and stops "
             "writes) long before the cluster is full.", "osd-reweight-by-utilization"),
    CodeInfo("CLUSTER_DAYS_TO_FULL", Severity.WARN,
             "At the fill rate of the journal's history, the fullest OSD reaches the "
             "full ratio soon (or an OSD is nearfull already)."),
)


def days_to_full(history: Sequence[tuple[float, float]], now: float, fill: float,
                 full: float) -> tuple[float | None, str]:
    """(days until ``fill`` reaches ``full`` on a linear fit of the history plus now, or
    None; why: "not enough history", "not filling", "N days at +x%/day")."""
    pts = [*history, (now, fill)]
    if len(pts) < MIN_SAMPLES or pts[-1][0] - pts[0][0] < MIN_SPAN_S:
        return None, (f"not enough history ({len(pts)} sample{'s' if len(pts) != 1 else ''}"
                      f" over {(pts[-1][0] - pts[0][0]) / 60:.0f} min; needs "
                      f"{MIN_SAMPLES} over {MIN_SPAN_S / 3600:g} h)")
    xs = [t / 86400.0 for t, _ in pts]
    ys = [f for _, f in pts]
    if len(set(ys)) == 1:
        return None, "not filling (flat)"
    slope, _ = statistics.linear_regression(xs, ys)
    if slope <= 0:
        return None, f"not filling ({slope * 100:+.2f} %/day)"
    days = max(0.0, (full - fill) / slope)
    return days, f"{days:.1f} days at {slope * 100:+.2f} %/day"


@check("ceph-fill", codes=FILL_CODES, needs=("ceph",))
def check_fill(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    in_osds = {o.id for o in st.osds if o.in_ and o.up}
    usage = sorted((u for u in st.osd_usage if u.id in in_osds and u.kb > 0),
                   key=lambda u: -u.utilization)
    if not usage:
        return
    fills = {f"osd.{u.id}": round(u.utilization / 100.0, 4) for u in usage}
    hi, lo = usage[0], usage[-1]
    top, bottom = hi.utilization / 100.0, lo.utilization / 100.0
    spread = top - bottom
    stddev = statistics.pstdev(fills.values()) if len(fills) > 1 else 0.0
    nearfull = st.nearfull_ratio or ctx.thresholds.osd_nearfull_ratio_default
    full = st.full_ratio or 0.95
    ev = {"fill": fills, "max": round(top, 4), "min": round(bottom, 4),
          "spread": round(spread, 4), "stddev": round(stddev, 4),
          "fullest": f"osd.{hi.id}", "emptiest": f"osd.{lo.id}",
          "nearfull_ratio": nearfull, "full_ratio": full}
    entity = f"cluster {snap.cluster}"
    # a nearfull ratio lowered under the fill is the cause (FULL_RATIO_LOWERED), not a
    # filling cluster
    is_nearfull = top >= nearfull - RATIO_TOL and \
        not ratio_causes(nearfull, DEFAULT_RATIOS["nearfull"], top)
    if len(usage) > 1 and (spread >= SPREAD_WARN
                           or (is_nearfull and spread >= SPREAD_NEARFULL_WARN)):
        yield Finding("OSD_FILL_SPREAD", Severity.WARN, entity,
                      f"OSDs fill unevenly: osd.{hi.id} {top:.1%}, osd.{lo.id} "
                      f"{bottom:.1%} (spread {spread:.1%}, stddev {stddev:.1%}); even "
                      f"them out (reweight-by-utilization, or the balancer in upmap mode)",
                      ev, runbook="osd-reweight-by-utilization", target=entity)
    days, why = days_to_full(snap.fill_history, snap.taken_at or ctx.now, top, full)
    ev2 = {**ev, "days_to_full": None if days is None else round(days, 2), "fit": why,
           "samples": len(snap.fill_history) + 1}
    if days is not None and days < DAYS_WARN:
        sev = Severity.CRIT if days < DAYS_CRIT else Severity.WARN
        yield Finding("CLUSTER_DAYS_TO_FULL", sev, entity,
                      f"osd.{hi.id} ({top:.1%}) reaches the full ratio {full:.2f} in "
                      f"{why}: add capacity or delete data", ev2)
    elif is_nearfull:
        yield Finding("CLUSTER_DAYS_TO_FULL", Severity.WARN, entity,
                      f"osd.{hi.id} is {top:.1%} full, past nearfull {nearfull:.2f} "
                      f"(full at {full:.2f}); days to full: {why}", ev2)
