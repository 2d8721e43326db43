"""Placement-group checks: pg_num per pool against the heuristic, power of two, pgp_num,
PGs per OSD, and PGs that are not active+clean or are stuck.

The heuristic (seed 000 and Ceph's docs): the cluster's PG budget per replica count is
``(in OSDs * pg_per_osd_target) / size`` rounded up to a power of two, shared among data
pools by their expected data: ``target_size_ratio`` when any pool sets one, else stored
bytes once the data pools hold real data, else equally. Ceph's own small pools
(device_health_metrics, .mgr) and cache-tier pools are left out.

PGs that all read active+clean right after an osdmap change may not have reported on it
yet (``checks.settle``): PGS_SETTLING says so instead of calling the cluster clean.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.osd import LAGGY_PARTS, cluster_entity, pg_state_is_clean
from checks.settle import SETTLING_CEPH_CODES, SettleCause, health_lags, judge_state, pgs_settling
from storage.ceph import SYSTEM_POOLS
from storage.model import CephState, ClusterSnapshot, PoolState

# Below this much data in all data pools, stored bytes say nothing about expected data.
MEANINGFUL_BYTES = 1 << 30
# Ceph's default pg_num for a new pool: never call a pool of this size "too many".
DEFAULT_PG_NUM = 32
# PG states that block client I/O.
BLOCKING_STATES = frozenset({"down", "incomplete", "stale", "peering", "inactive",
                             "unknown", "creating", "activating"})


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def next_pow2(x: float) -> int:
    return 1 if x <= 1 else 1 << math.ceil(math.log2(x))


def nearest_pow2(x: float) -> int:
    return 1 if x <= 1 else 1 << round(math.log2(x))


def data_pools(st: CephState) -> list[PoolState]:
    return [p for p in st.pools if p.name not in SYSTEM_POOLS and p.tier_of < 0]


def pool_shares(pools: list[PoolState]) -> tuple[dict[int, float], str]:
    """Expected share of the data of each pool, and which rule gave it."""
    if not pools:
        return {}, "none"
    ratios = {p.id: p.target_size_ratio for p in pools if p.target_size_ratio > 0}
    if ratios:
        total = sum(ratios.values())
        scale = 1.0 / total if total > 1.0 else 1.0
        rest = max(0.0, 1.0 - total * scale)
        others = [p for p in pools if p.id not in ratios]
        shares = {pid: r * scale for pid, r in ratios.items()}
        for p in others:
            shares[p.id] = rest / len(others)
        return shares, "target_size_ratio"
    stored = sum(p.stored_bytes for p in pools)
    if stored >= MEANINGFUL_BYTES:
        return {p.id: p.stored_bytes / stored for p in pools}, "stored bytes"
    return {p.id: 1.0 / len(pools) for p in pools}, "equal shares"


def ideal_pg_num(in_osds: int, size: int, share: float, per_osd: int) -> int:
    """``(OSDs * per_osd) / size`` up to a power of two, times the share, to the nearest."""
    if in_osds <= 0 or size <= 0:
        return 0
    budget = next_pow2(in_osds * per_osd / size)
    return nearest_pow2(budget * share)


def in_osd_count(st: CephState) -> int:
    return sum(1 for o in st.osds if o.exists and o.in_ and not o.destroyed)


PG_CODES = (
    CodeInfo("POOL_PG_NUM_LOW", Severity.WARN,
             "A pool has far fewer PGs than its share of (OSDs*100)/replicas: data and load "
             "concentrate on few OSDs.", "pool-pg-num"),
    CodeInfo("POOL_PG_NUM_HIGH", Severity.WARN,
             "A pool has far more PGs than its share of (OSDs*100)/replicas: memory and "
             "peering cost per OSD."),
    CodeInfo("POOL_PG_NOT_POWER_OF_TWO", Severity.WARN,
             "A pool's pg_num is not a power of two: PGs hold unequal amounts of data."),
    CodeInfo("POOL_PGP_BELOW_PG", Severity.WARN,
             "A pool's pgp_num is below pg_num: new PGs are not placed independently.",
             "pool-pg-num"),
    CodeInfo("PGS_PER_OSD_HIGH", Severity.WARN,
             "PG replicas per in OSD exceed mon_max_pg_per_osd: new pools and pg_num "
             "increases will be refused."),
    CodeInfo("PGS_NOT_ACTIVE_CLEAN", Severity.WARN,
             "Some PGs are not active+clean (degraded, undersized, peering, ...)."),
    CodeInfo("PGS_STUCK", Severity.WARN,
             "Some PGs have been stuck inactive, unclean, stale, undersized or degraded "
             "for longer than mon_pg_stuck_threshold."),
    CodeInfo("PGS_LAGGY", Severity.WARN,
             "Some PGs read active+clean but are laggy or wait (their read lease lapsed, "
             "usually because an OSD of theirs answers slowly): they do not serve I/O "
             "until it comes back; not clean."),
    CodeInfo("PGS_SETTLING", Severity.INFO,
             "PGs settle after a change: some peer, activate or recover right after a "
             "stordoc run or an OSD change (within pg_settle_window_s, every OSD up), or "
             "every PG reads active+clean but some have not reported on the current "
             "osdmap yet (the picture before the last change), or every PG reads "
             "active+clean right after a stordoc run while Ceph's health still says "
             "PG_DEGRADED / PG_AVAILABILITY (it lags the PG stats)."),
)


@check("ceph-pgs", codes=PG_CODES, needs=("ceph",))
def check_pgs(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    yield from _pool_pg_nums(snap, st, ctx)
    yield from _pgs_per_osd(snap, st, ctx)
    yield from _pg_states(snap, st, ctx)
    yield from _settling(snap, st, ctx)


def _pool_pg_nums(snap: ClusterSnapshot, st: CephState, ctx: CheckContext) -> Iterator[Finding]:
    th = ctx.thresholds
    n_in = in_osd_count(st)
    pools = data_pools(st)
    shares, rule = pool_shares(pools)
    for p in st.pools:
        ent = f"pool {p.name}"
        changing = p.pg_num != p.pg_num_target
        if not is_pow2(p.pg_num) and not (changing and is_pow2(p.pg_num_target)):
            yield Finding("POOL_PG_NOT_POWER_OF_TWO", Severity.WARN, ent,
                          f"pool {p.name} has pg_num {p.pg_num}, not a power of two: its "
                          f"PGs hold unequal amounts of data (use {nearest_pow2(p.pg_num)})",
                          {"pool": p.name, "pg_num": p.pg_num,
                           "pg_num_target": p.pg_num_target,
                           "manual": f"`ceph osd pool set {p.name} pg_num "
                                     f"{nearest_pow2(p.pg_num)}` (Ceph splits or merges "
                                     f"the PGs step by step)"})
        pgp_target = p.pgp_num_target if p.pgp_num_target is not None else p.pgp_num
        if p.pgp_num < p.pg_num and pgp_target < p.pg_num:
            yield Finding("POOL_PGP_BELOW_PG", Severity.WARN, ent,
                          f"pool {p.name} has pgp_num {p.pgp_num} below pg_num {p.pg_num}: "
                          f"the split PGs still sit on their parents' OSDs; set pgp_num to "
                          f"{p.pg_num}",
                          {"pool": p.name, "pg_num": p.pg_num, "pgp_num": p.pgp_num,
                           "pgp_num_target": pgp_target},
                          runbook="pool-pg-num", target=p.name)
        if p.id not in shares or n_in == 0:
            continue
        ideal = ideal_pg_num(n_in, p.size, shares[p.id], th.pg_per_osd_target)
        # With the autoscaler on, judge where it is heading, not where it is now.
        current = p.pg_num_target if p.pg_autoscale_mode == "on" else p.pg_num
        ev = {"pool": p.name, "pg_num": p.pg_num, "pg_num_target": p.pg_num_target,
              "ideal_pg_num": ideal, "share": round(shares[p.id], 4), "share_rule": rule,
              "in_osds": n_in, "size": p.size, "pg_per_osd_target": th.pg_per_osd_target,
              "autoscale_mode": p.pg_autoscale_mode}
        why = (f"({n_in} in OSDs x {th.pg_per_osd_target} / size {p.size}, "
               f"{shares[p.id]:.0%} share by {rule})")
        if ideal and current < ideal / th.pg_low_factor:
            fix, runbook = _autoscaler_says(p.name, p.pg_autoscale_mode, current, ideal)
            yield Finding("POOL_PG_NUM_LOW", Severity.WARN, ent,
                          f"pool {p.name} has pg_num {current}, about {ideal} expected "
                          f"{why}: too few PGs to spread its data and load evenly over the "
                          f"OSDs; {fix}",
                          ev, runbook=runbook, target=p.name)
        elif ideal and current > max(ideal, DEFAULT_PG_NUM) * th.pg_high_factor:
            yield Finding("POOL_PG_NUM_HIGH", Severity.WARN, ent,
                          f"pool {p.name} has pg_num {current}, about {ideal} expected "
                          f"{why}: too many PGs cost OSD memory and peering time",
                          {**ev, "manual": "`ceph osd pool autoscale-status` shows what "
                                           "the autoscaler would set; lower pg_num to it"})


def _autoscaler_says(pool: str, mode: str | None, current: int,
                     ideal: int) -> tuple[str, str | None]:
    """What to do about a low pg_num, given the pool's autoscaler mode (on by default from
    Quincy): whether the autoscaler will fix it (it will not: it aims at ``current``), and
    the runbook, which refuses while the autoscaler owns pg_num."""
    if mode == "on":
        return (f"the pg autoscaler is on for it but aims at {current}, not {ideal} (it "
                f"sizes by stored data: tell it the pool's expected share with `ceph osd "
                f"pool set {pool} target_size_ratio R` or mark it bulk), so it will not fix "
                f"this by itself", None)
    if mode == "warn":
        return (f"the pg autoscaler is in warn mode for it and will not change pg_num: "
                f"raise pg_num to {ideal}, or `ceph osd pool set {pool} pg_autoscale_mode "
                f"on`", "pool-pg-num")
    return (f"the pg autoscaler is off for it and will not fix this: raise pg_num to "
            f"{ideal}", "pool-pg-num")


def _pgs_per_osd(snap: ClusterSnapshot, st: CephState, ctx: CheckContext) -> Iterator[Finding]:
    n_in = in_osd_count(st)
    if n_in == 0:
        return
    try:
        limit = int(float(st.config["mon_max_pg_per_osd"]))
    except (KeyError, ValueError):
        limit = ctx.thresholds.mon_max_pg_per_osd
    replicas = sum(p.pg_num * max(1, p.size) for p in st.pools)
    avg = replicas / n_in
    per_osd = _pgs_by_osd(st)
    worst = max(per_osd.items(), key=lambda kv: kv[1]) if per_osd else None
    if avg > limit or (worst is not None and worst[1] > limit):
        top = f"; osd.{worst[0]} holds {worst[1]}" if worst else ""
        yield Finding("PGS_PER_OSD_HIGH", Severity.WARN, cluster_entity(snap),
                      f"{avg:.0f} PG replicas per in OSD on average{top}, above "
                      f"mon_max_pg_per_osd {limit}: Ceph will refuse new pools and pg_num "
                      f"increases; add OSDs or reduce pg_num",
                      {"average": round(avg, 1), "limit": limit, "in_osds": n_in,
                       "pg_replicas": replicas,
                       "max_osd": {"osd": worst[0], "pgs": worst[1]} if worst else None,
                       "manual": "`ceph osd pool autoscale-status` shows the pools that "
                                 "hold the PGs; add OSDs or lower their pg_num"})


def _pgs_by_osd(st: CephState) -> dict[int, int]:
    """Per-OSD PG counts from ``osd df`` (the ``pgs`` field), when collected."""
    return {u.id: u.pgs for u in st.osd_usage if u.pgs is not None}


def _state_parts(state: str) -> set[str]:
    return set(state.split("+"))


def _pg_states(snap: ClusterSnapshot, st: CephState, ctx: CheckContext
               ) -> Iterator[Finding]:
    cause = pgs_settling(snap, ctx.now, ctx.thresholds.pg_settle_window_s)
    bad: dict[str, int] = {}
    blocking = 0
    laggy: dict[str, int] = {}
    for state, n in st.pgs.by_state.items():
        if pg_state_is_clean(state):
            continue
        parts = _state_parts(state)
        if parts & LAGGY_PARTS and pg_state_is_clean("+".join(parts - LAGGY_PARTS)):
            laggy[state] = n  # clean but for the lease: PGS_LAGGY, not "not active+clean"
            continue
        bad[state] = n
        if "active" not in parts or parts & BLOCKING_STATES:
            blocking += n
    if bad and cause is not None:
        yield _settling_after(snap, st, cause, bad, blocking, ctx)
    elif bad:
        total = sum(bad.values())
        listing = ", ".join(f"{n} {s}" for s, n in sorted(bad.items(), key=lambda kv: -kv[1]))
        sev = Severity.CRIT if blocking else Severity.WARN
        extra = (f"; {blocking} of them block client I/O" if blocking else
                 "; data is still served, with less redundancy or out of place")
        yield Finding("PGS_NOT_ACTIVE_CLEAN", sev, f"{cluster_entity(snap)} pgs",
                      f"{total} of {st.pgs.num_pgs} PGs are not active+clean: {listing}{extra}",
                      {"by_state": dict(st.pgs.by_state), "not_clean": bad,
                       "blocking": blocking, "num_pgs": st.pgs.num_pgs})
    if laggy:
        yield _laggy(snap, st, laggy)
    if not bad and not laggy and not judge_state(st, ctx.now).settling:
        lag = health_lags(snap, ctx.now, ctx.thresholds.pg_settle_window_s)
        if lag is not None:
            yield _health_lags(snap, st, lag, ctx)
    for kind, pgids in sorted(st.pgs.stuck.items()):
        if not pgids:
            continue
        sev = Severity.CRIT if kind in ("inactive", "stale") else Severity.WARN
        shown = ", ".join(pgids[:10]) + (" ..." if len(pgids) > 10 else "")
        ev: dict[str, object] = {"kind": kind, "count": len(pgids),
                                 "pgids": list(pgids[:100])}
        msg = f"{len(pgids)} PGs stuck {kind}: {shown}"
        if cause is not None and kind != "stale":
            # stuck since before the change (an OSD was down): part of the settling
            sev, msg = Severity.INFO, f"{cause.line}: {msg}"
            ev["settling_after"] = cause.what
        yield Finding("PGS_STUCK", sev, f"{cluster_entity(snap)} pgs stuck {kind}", msg, ev)


def _laggy(snap: ClusterSnapshot, st: CephState, laggy: dict[str, int]) -> Finding:
    """PGs active+clean but laggy/wait: they hold client I/O until their read lease is
    renewed, which waits for the slowest OSD of their acting set (checks.slow_ops)."""
    total = sum(laggy.values())
    pgs = [p for p, _ in st.slow.laggy_pgs]
    named = (": " + ", ".join(pgs[:10]) + (" ..." if len(pgs) > 10 else "")) if pgs else ""
    listing = ", ".join(f"{n} {s}" for s, n in sorted(laggy.items(), key=lambda kv: -kv[1]))
    return Finding(
        "PGS_LAGGY", Severity.WARN, f"{cluster_entity(snap)} pgs laggy",
        f"{total} of {st.pgs.num_pgs} PGs are laggy or wait{named} ({listing}): they read "
        f"active+clean but hold client I/O until their read lease is renewed, which waits "
        f"for the slowest OSD of each; not clean (see OSD_SLOW_OPS / OSD_SLOW_PING)",
        {"laggy": laggy, "pgids": pgs, "num_pgs": st.pgs.num_pgs,
         "by_state": dict(st.pgs.by_state)})


def _settling_after(snap: ClusterSnapshot, st: CephState, cause: SettleCause,
                    bad: dict[str, int], blocking: int, ctx: CheckContext) -> Finding:
    """PGs not active+clean right after a change (``checks.settle.pgs_settling``): one
    INFO finding that names the change, in place of PGS_NOT_ACTIVE_CLEAN."""
    total = sum(bad.values())
    listing = ", ".join(f"{n} {s}" for s, n in sorted(bad.items(), key=lambda kv: -kv[1]))
    window = ctx.thresholds.pg_settle_window_s
    what = "not reported yet" if set(bad) <= {"unknown"} else \
        "peering" if blocking else "recovering"
    return Finding(
        "PGS_SETTLING", Severity.INFO, f"{cluster_entity(snap)} pgs",
        f"{cause.line}: {total} of {st.pgs.num_pgs} PGs {what} ({listing}); Ceph "
        f"finishes this by itself, nothing to do; CRIT if PGs are still inactive "
        f"{window:g} s after it",
        _settling_evidence(st, cause, window, bad, blocking),
        since=cause.at)


def _settling_evidence(st: CephState, cause: SettleCause, window: float,
                       bad: dict[str, int], blocking: int) -> dict[str, object]:
    """The evidence of a PGS_SETTLING finding: the change it follows and the PG picture."""
    run = cause.run
    return {"settling_after": cause.what, "run_id": run.id if run else None,
            "runbook": run.runbook if run else None, "target": run.target if run else None,
            "change_at": cause.at, "window_s": window, "by_state": dict(st.pgs.by_state),
            "not_clean": bad, "blocking": blocking, "num_pgs": st.pgs.num_pgs}


def _health_lags(snap: ClusterSnapshot, st: CephState, cause: SettleCause,
                 ctx: CheckContext) -> Finding:
    """Every PG reads active+clean right after a stordoc run while Ceph's health still says
    PG_DEGRADED / PG_AVAILABILITY / OBJECT_MISPLACED (``checks.settle.health_lags``): its
    health summary lags the PG stats. One INFO finding naming the change; Ceph's codes
    fold into it (checks.cluster), not a WARN of their own."""
    codes = sorted({hc.code for hc in st.health_checks if hc.code in SETTLING_CEPH_CODES})
    window = ctx.thresholds.pg_settle_window_s
    return Finding(
        "PGS_SETTLING", Severity.INFO, f"{cluster_entity(snap)} pgs",
        f"{cause.line}: all {st.pgs.num_pgs} PGs read active+clean; Ceph's health still "
        f"says {', '.join(codes)} (it lags the PG stats by the manager's next report); "
        f"nothing to do",
        {**_settling_evidence(st, cause, window, {}, 0), "health_lags": codes},
        since=cause.at)


def _settling(snap: ClusterSnapshot, st: CephState, ctx: CheckContext) -> Iterator[Finding]:
    """All PGs read clean but the reading does not count yet (``checks.settle``)."""
    v = judge_state(st, ctx.now)
    if not v.settling:
        return
    s = st.pg_settle
    assert s is not None  # the states count when nothing was asked
    why = v.states.why_not or "not reported yet"
    extra = f" ({v.states.fallback})" if v.states.fallback else ""
    yield Finding("PGS_SETTLING", Severity.INFO, f"{cluster_entity(snap)} pgs",
                  f"all {v.num_pgs} PGs read active+clean, but {why}: Ceph's picture is "
                  f"still the map before the last change (seconds after an OSD up/down/"
                  f"in/out); not clean yet{extra}",
                  {"method": s.method.value, "epoch": s.epoch, "num_pgs": s.num_pgs,
                   "unreported": s.unreported, "unreported_pgids": list(s.unreported_pgids),
                   "last_osd_change": s.last_change, "fallback": v.states.fallback,
                   "map_error": s.error})
