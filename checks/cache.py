"""Cache-tier checks (seed 004): targets, ratio order, hit sets, promote recency, size.

Ratios arrive in millionths (``cache_target_dirty_ratio_micro``). Ceph validates each
ratio only against 0..1; the tiering agent needs dirty <= dirty_high <= full < 1 and a
non-zero ``target_max_bytes`` or ``target_max_objects`` to flush or evict at all (and
Ceph's near-full warning skips a cache pool with neither). Cache tiering is deprecated
since Reef.
"""

from __future__ import annotations

from collections.abc import Iterator

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import CephState, ClusterSnapshot, PoolState

MICRO = 1_000_000
# Releases (by name) that deprecate cache tiering; later ones are added as they come.
DEPRECATING_RELEASES = frozenset({"reef", "squid", "tentacle"})
# Modes in which the agent promotes on access and therefore needs a hit set.
HIT_SET_MODES = frozenset({"writeback", "readproxy"})


def is_cache_pool(p: PoolState) -> bool:
    return p.tier_of >= 0 and p.cache_mode != "none"


def _ratio(micro: int) -> str:
    return f"{micro / MICRO:.2f}"


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


CACHE_CODES = (
    CodeInfo("CACHE_NO_TARGET", Severity.WARN,
             "A cache pool has neither target_max_bytes nor target_max_objects: the "
             "tiering agent never flushes or evicts it.", "cache-tier-tune"),
    CodeInfo("CACHE_RATIO_ORDER", Severity.WARN,
             "Cache ratios are not in the order dirty <= dirty_high <= full < 1.",
             "cache-tier-tune"),
    CodeInfo("CACHE_NO_HIT_SET", Severity.WARN,
             "A writeback/readproxy cache pool has no hit set: promotion cannot tell hot "
             "objects from cold.", "cache-tier-tune"),
    CodeInfo("CACHE_PROMOTE_RECENCY", Severity.WARN,
             "min_read/write_recency_for_promote exceeds hit_set_count: objects can never "
             "be promoted."),
    CodeInfo("CACHE_TARGET_TOO_BIG", Severity.WARN,
             "target_max_bytes is larger than the cache pool can hold: the OSDs fill up "
             "before the agent flushes."),
    CodeInfo("CACHE_NEAR_TARGET", Severity.WARN,
             "A cache pool is close to its target size: the agent is evicting under "
             "pressure."),
    CodeInfo("CACHE_TIER_DEPRECATED", Severity.INFO,
             "Cache tiering is deprecated since Reef: plan to remove the tier."),
)


@check("ceph-cache-tiers", codes=CACHE_CODES, needs=("ceph",))
def check_cache_tiers(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    by_id = {p.id: p for p in st.pools}
    for p in st.pools:
        if not is_cache_pool(p):
            continue
        base = by_id.get(p.tier_of)
        yield from _one(p, base.name if base else f"#{p.tier_of}", st, ctx)


def _one(p: PoolState, base: str, st: CephState, ctx: CheckContext) -> Iterator[Finding]:
    ent = f"pool {p.name}"
    ev_base = {"pool": p.name, "base_pool": base, "cache_mode": p.cache_mode}
    if p.target_max_bytes == 0 and p.target_max_objects == 0:
        yield Finding("CACHE_NO_TARGET", Severity.WARN, ent,
                      f"cache pool {p.name} (over {base}, {p.cache_mode}) has neither "
                      f"target_max_bytes nor target_max_objects: the agent never flushes or "
                      f"evicts, it fills until the OSDs are full (and Ceph's near-full "
                      f"warning skips it); set target_max_bytes",
                      {**ev_base, "target_max_bytes": 0, "target_max_objects": 0},
                      runbook="cache-tier-tune", target=p.name)
    d, dh, f = (p.cache_target_dirty_ratio_micro, p.cache_target_dirty_high_ratio_micro,
                p.cache_target_full_ratio_micro)
    if not (d <= dh <= f < MICRO):
        wrong, effects = [], []
        if d > dh:
            wrong.append(f"dirty {_ratio(d)} > dirty_high {_ratio(dh)}")
            effects.append("high-speed flushing starts before normal flushing")
        if dh > f:
            wrong.append(f"dirty_high {_ratio(dh)} > full {_ratio(f)}")
        if d > f:
            wrong.append(f"dirty {_ratio(d)} > full {_ratio(f)}")
        if dh > f or d > f:
            effects.append("the agent evicts clean objects before it flushes dirty ones")
        if f >= MICRO:
            wrong.append(f"full {_ratio(f)} >= 1")
            effects.append("the agent never evicts before the pool is full")
        yield Finding("CACHE_RATIO_ORDER", Severity.WARN, ent,
                      f"cache pool {p.name} ratios out of order ({', '.join(wrong)}): "
                      f"{'; '.join(effects)}; want dirty <= dirty_high <= full < 1 "
                      f"(e.g. 0.4/0.6/0.8)",
                      {**ev_base, "dirty_ratio": d / MICRO, "dirty_high_ratio": dh / MICRO,
                       "full_ratio": f / MICRO},
                      runbook="cache-tier-tune", target=p.name)
    if p.cache_mode in HIT_SET_MODES and (p.hit_set_type == "none" or p.hit_set_count == 0
                                          or p.hit_set_period == 0):
        yield Finding("CACHE_NO_HIT_SET", Severity.WARN, ent,
                      f"{p.cache_mode} cache pool {p.name} has no hit set (type "
                      f"{p.hit_set_type}, count {p.hit_set_count}, period "
                      f"{p.hit_set_period} s): every access promotes; set hit_set_type "
                      f"bloom with a count and period",
                      {**ev_base, "hit_set_type": p.hit_set_type,
                       "hit_set_count": p.hit_set_count, "hit_set_period": p.hit_set_period},
                      runbook="cache-tier-tune", target=p.name)
    rec = max(p.min_read_recency_for_promote, p.min_write_recency_for_promote)
    if rec > p.hit_set_count:
        yield Finding("CACHE_PROMOTE_RECENCY", Severity.WARN, ent,
                      f"cache pool {p.name} wants an object in {rec} hit sets before "
                      f"promoting but keeps only {p.hit_set_count}: nothing is ever "
                      f"promoted; lower the recency or raise hit_set_count",
                      {**ev_base, "min_read_recency_for_promote":
                       p.min_read_recency_for_promote,
                       "min_write_recency_for_promote": p.min_write_recency_for_promote,
                       "hit_set_count": p.hit_set_count})
    capacity = p.stored_bytes + p.max_avail_bytes
    if p.target_max_bytes and p.max_avail_bytes and p.target_max_bytes > capacity:
        yield Finding("CACHE_TARGET_TOO_BIG", Severity.WARN, ent,
                      f"cache pool {p.name} target_max_bytes {_gib(p.target_max_bytes)} is "
                      f"more than it can hold ({_gib(capacity)} stored + available): the "
                      f"OSDs fill before the agent flushes; lower target_max_bytes",
                      {**ev_base, "target_max_bytes": p.target_max_bytes,
                       "stored_bytes": p.stored_bytes, "max_avail_bytes": p.max_avail_bytes})
    near = ctx.thresholds.cache_near_target_ratio
    fill = []
    if p.target_max_bytes:
        fill.append(("bytes", p.stored_bytes / p.target_max_bytes))
    if p.target_max_objects:
        fill.append(("objects", p.objects / p.target_max_objects))
    worst = max(fill, key=lambda kv: kv[1], default=None)
    if worst and worst[1] >= near:
        yield Finding("CACHE_NEAR_TARGET", Severity.WARN, ent,
                      f"cache pool {p.name} is at {worst[1]:.0%} of its target "
                      f"({worst[0]}): the agent is evicting under pressure; flush, raise the "
                      f"target or check the base pool",
                      {**ev_base, "fill": round(worst[1], 4), "by": worst[0],
                       "stored_bytes": p.stored_bytes, "objects": p.objects,
                       "target_max_bytes": p.target_max_bytes,
                       "target_max_objects": p.target_max_objects})
    rel = (st.release or "").lower()
    if rel in DEPRECATING_RELEASES:
        msg = (f"cache tier {p.name} over {base}: cache tiering is deprecated in {rel} "
               f"(since Reef); plan to remove it")
    else:
        msg = (f"cache tier {p.name} over {base}: this cluster runs "
               f"{rel or 'an unknown release'}, but cache tiering is deprecated since Reef; "
               f"plan to remove it before upgrading")
    yield Finding("CACHE_TIER_DEPRECATED", Severity.INFO, ent, msg,
                  {**ev_base, "release": st.release, "version": st.version})
