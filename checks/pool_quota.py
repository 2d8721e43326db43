"""A pool quota as the cause (issue 38.2): ``ceph osd pool set-quota POOL max_objects|
max_bytes N`` under (or near) the pool's use stops writes to that pool while the OSDs have
room. Ceph says POOL_FULL (``pool 'x' is full (running out of quota)``, ``has N objects
(max M)``) or POOL_NEAR_FULL; stordoc names the quota, its value and the use, and the
runbook that puts the previous quota back (``quota-restore POOL``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import CephState, ClusterSnapshot

RATIO_TOL = 1e-3
# Ceph's codes a pool quota raises (POOL_FULL only with its quota wording)
QUOTA_CEPH_CODES = ("POOL_FULL", "POOL_NEAR_FULL")
_QUOTA_LINE = re.compile(r"pool '([^']+)'.*(?:\(max |running out of quota)")

QUOTA_CODES = (
    CodeInfo("POOL_QUOTA_CAUSE", Severity.WARN,
             "A pool's quota (ceph osd pool set-quota) is at or near its use: writes to "
             "the pool stop at the quota while the OSDs have room (CRIT once reached).",
             "quota-restore"),
)


def quota_pools_named(st: CephState) -> set[str]:
    """The pools Ceph's POOL_FULL / POOL_NEAR_FULL say are at or near their quota."""
    out: set[str] = set()
    for hc in st.health_checks:
        if hc.code not in QUOTA_CEPH_CODES or hc.muted:
            continue
        for line in hc.detail:
            m = _QUOTA_LINE.search(line)
            if m:
                out.add(m.group(1))
    return out


@check("ceph-pool-quota", codes=QUOTA_CODES, needs=("ceph",))
def check_pool_quota(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    nearfull = st.nearfull_ratio or ctx.thresholds.osd_nearfull_ratio_default
    named = quota_pools_named(st)
    for p in st.pools:
        limits = [(k, q, use) for k, q, use in (
            ("max_objects", p.quota_max_objects, p.objects),
            ("max_bytes", p.quota_max_bytes, p.stored_bytes)) if q > 0]
        if not limits:
            continue
        at = [(k, q, use) for k, q, use in limits if use >= q]
        near = [(k, q, use) for k, q, use in limits if use >= (nearfull - RATIO_TOL) * q]
        if not near and p.name not in named:
            continue
        shown = near or limits
        what = "; ".join(f"{k} {q} with {use} {'objects' if k == 'max_objects' else 'bytes'}"
                         f" in it ({use / q:.0%})" for k, q, use in shown)
        yield Finding(
            "POOL_QUOTA_CAUSE", Severity.CRIT if at else Severity.WARN, f"pool {p.name}",
            f"pool {p.name}'s quota is the cause: {what}: writes to it "
            + ("stop" if at else "stop at the quota")
            + " while the OSDs have room; put the previous quota back (`stordoc fix "
            f"quota-restore {p.name}`) or remove it (`ceph osd pool set-quota {p.name} "
            f"{shown[0][0]} 0`)",
            {"pool": p.name, "quota": {k: q for k, q, _ in limits},
             "use": {k: use for k, _, use in limits}, "reached": [k for k, _, _ in at],
             "ceph_says": p.name in named, "explains": "quota",
             # when quota-restore cannot tell the previous value: the exact undo by hand
             "manual": f"`ceph osd pool set-quota {p.name} {shown[0][0]} 0` removes the "
                       f"quota (or set the value the pool's owner wants)"},
            runbook="quota-restore", target=p.name)


__all__ = ["QUOTA_CEPH_CODES", "check_pool_quota", "quota_pools_named"]
