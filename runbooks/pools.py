"""Pool runbooks: tune a cache tier (seed 004), raise pg_num in power-of-two steps.

Values are computed from the snapshot (what the pool can hold, the PG heuristic), shown as
before/after in the plan, and sent as typed monitor commands (``osd pool set``).
"""

from __future__ import annotations

import math
import re

from checks.pgs import data_pools, ideal_pg_num, in_osd_count, pool_shares
from runbooks.base import Draft, Runbook, need_ceph, need_pool, register
from runbooks.model import Probe, Refused, RunbookInfo, StepEnv
from storage.model import CephState, ClusterSnapshot, PoolState

DEFAULT_RATIOS = (0.4, 0.6, 0.8)  # Ceph's documented defaults: dirty, dirty_high, full
DEFAULT_HEADROOM = 0.8
_ROUND = 64 * 1024**2  # target_max_bytes granularity
DEFAULT_HIT_SET_PERIOD = 3600


def _float_opt(d: Draft, key: str, default: float, lo: float, hi: float) -> float:
    raw = d.options.get(key)
    if raw is None:
        return default
    try:
        v = float(raw)
    except (TypeError, ValueError):
        raise Refused(f"option {key} must be a number, not {raw!r}") from None
    if not lo <= v <= hi or math.isnan(v):
        raise Refused(f"option {key} must be between {lo} and {hi}, not {v}")
    return v


def _set(d: Draft, pool: str, var: str, val: int | float | str) -> None:
    d.mon(f"set {var} of {pool} to {val}", "osd pool set",
          {"pool": pool, "var": var, "val": str(val)})


def human_bytes(n: int) -> str:
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(v) < 1024 or unit == "PiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{n} B"


@register
class CacheTierTune(Runbook):
    option_keys = ("headroom", "dirty_ratio", "dirty_high_ratio", "full_ratio")
    info = RunbookInfo(
        "cache-tier-tune",
        "Give a cache tier a target size, ratios in order (dirty <= dirty_high <= full) "
        "and a bloom hit set.",
        ("CACHE_NO_TARGET", "CACHE_RATIO_ORDER", "CACHE_NO_HIT_SET", "CACHE_PROMOTE_RECENCY",
         "CACHE_TARGET_TOO_BIG"),
        destructive=True, target_kind="cache-pool", target_help="cache pool name")

    def lock_keys(self, target: str) -> list[str]:
        return [f"pool {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        p = need_pool(ceph, target)
        if p.tier_of < 0 or p.cache_mode in ("none", ""):
            raise Refused(f"pool {p.name} is not a cache tier (cache_mode {p.cache_mode})")
        base = next((x.name for x in ceph.pools if x.id == p.tier_of), str(p.tier_of))
        d.params.update(pool=p.name, base_pool=base, cache_mode=p.cache_mode)
        headroom = _float_opt(d, "headroom", DEFAULT_HEADROOM, 0.1, 0.95)
        capacity = p.stored_bytes + p.max_avail_bytes
        # rounded down to 64 MiB: MAX AVAIL moves with every write, and a plan must come
        # out the same when it is rebuilt under the lock a moment later
        want = max(_ROUND, int(capacity * headroom) // _ROUND * _ROUND)
        if p.target_max_bytes == 0 and p.target_max_objects == 0 or \
                p.target_max_bytes > capacity > 0:
            if capacity <= 0:
                raise Refused(f"cannot tell what pool {p.name} can hold (ceph df gives no "
                              "MAX AVAIL); set target_max_bytes by hand")
            d.params.update(capacity_bytes=capacity, headroom=headroom)
            d.before_after["target_max_bytes"] = (p.target_max_bytes, want)
            _set(d, p.name, "target_max_bytes", want)
            d.warnings.append(f"target_max_bytes {human_bytes(want)} = {headroom:.0%} of what "
                              f"{p.name} can hold ({human_bytes(capacity)})")
        cur = (p.cache_target_dirty_ratio_micro / 1e6,
               p.cache_target_dirty_high_ratio_micro / 1e6,
               p.cache_target_full_ratio_micro / 1e6)
        if not (0 < cur[0] <= cur[1] <= cur[2] <= 1):
            new = (_float_opt(d, "dirty_ratio", DEFAULT_RATIOS[0], 0.01, 1.0),
                   _float_opt(d, "dirty_high_ratio", DEFAULT_RATIOS[1], 0.01, 1.0),
                   _float_opt(d, "full_ratio", DEFAULT_RATIOS[2], 0.01, 1.0))
            if not new[0] <= new[1] <= new[2]:
                raise Refused(f"configured ratios {new} are not in order "
                              "dirty <= dirty_high <= full")
            for var, b, a in zip(("cache_target_dirty_ratio", "cache_target_dirty_high_ratio",
                                  "cache_target_full_ratio"), cur, new):
                if abs(a - b) > 1e-6:
                    d.before_after[var] = (b, a)
                    _set(d, p.name, var, a)
        recency = max(p.min_read_recency_for_promote, p.min_write_recency_for_promote)
        if p.hit_set_type in ("none", ""):
            count = max(1, p.hit_set_count, recency)
            period = p.hit_set_period or DEFAULT_HIT_SET_PERIOD
            d.before_after["hit_set_type"] = (p.hit_set_type, "bloom")
            _set(d, p.name, "hit_set_type", "bloom")
            if count != p.hit_set_count:
                d.before_after["hit_set_count"] = (p.hit_set_count, count)
                _set(d, p.name, "hit_set_count", count)
            if period != p.hit_set_period:
                d.before_after["hit_set_period"] = (p.hit_set_period, period)
                _set(d, p.name, "hit_set_period", period)
        elif p.hit_set_count < recency:
            d.before_after["hit_set_count"] = (p.hit_set_count, recency)
            _set(d, p.name, "hit_set_count", recency)
        if not d.steps:
            raise Refused(f"cache pool {p.name} needs no tuning: it has a target, ordered "
                          "ratios and a hit set")
        if ceph.release and ceph.release not in ("luminous", "mimic", "nautilus", "octopus",
                                                 "pacific", "quincy"):
            d.warnings.append("cache tiering is deprecated since Reef")
        d.verify_entities = (f"pool {p.name}",)


def next_pow2(n: float) -> int:
    return 1 if n <= 1 else 1 << math.ceil(math.log2(n))


def pg_target(ceph: CephState, pool: PoolState, per_osd: int) -> int:
    """The same heuristic the POOL_PG_NUM_LOW check uses (checks.pgs): (in OSDs * per_osd)
    / size up to a power of two, times the pool's share of the expected data."""
    shares, _ = pool_shares(data_pools(ceph))
    share = shares.get(pool.id)
    if share is None:
        raise Refused(f"pool {pool.name} is not a data pool (system pool or cache tier): "
                      "no pg_num target for it")
    return ideal_pg_num(in_osd_count(ceph), pool.size, share, per_osd)


_TOO_FEW_RE = re.compile(r"\bPool (\S+) has \d+ placement groups, should have (\d+)")
_MANY_RE = re.compile(r"\bpool (\S+) objects per pg \(")


def ceph_wants(ceph: CephState, pool: str, start: int) -> int | None:
    """The pg_num Ceph's health asks of ``pool``: POOL_TOO_FEW_PGS's number, or the next
    power of two above ``start`` when MANY_OBJECTS_PER_PG names it; None when neither."""
    for hc in ceph.health_checks:
        for line in hc.detail:
            m = _TOO_FEW_RE.search(line) if hc.code == "POOL_TOO_FEW_PGS" else None
            if m and m.group(1) == pool:
                return next_pow2(int(m.group(2)))
            m = _MANY_RE.search(line) if hc.code == "MANY_OBJECTS_PER_PG" else None
            if m and m.group(1) == pool:
                return next_pow2(start + 1)
    return None


def said_why(ceph: CephState, pool: str) -> str:
    codes = [hc.code for hc in ceph.health_checks
             if hc.code in ("POOL_TOO_FEW_PGS", "MANY_OBJECTS_PER_PG")
             and any(pool in line for line in hc.detail)]
    return f"Ceph's {'/'.join(codes)} on pool {pool}"


def _clean(ceph: CephState) -> tuple[bool, str]:
    bad = {s: n for s, n in ceph.pgs.by_state.items() if s != "active+clean" and n}
    return not bad, ", ".join(f"{n} {s}" for s, n in sorted(bad.items()))


def pool_clean_probe(pool: str, pg_num: int) -> Probe:
    """A WaitOp probe: the pool reached pg_num/pgp_num and every PG is active+clean."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        pools = env.ceph.mon("osd pool ls", detail="detail") or []
        cur = next((p for p in pools if p.get("pool_name") == pool), None)
        if cur is None:
            return False, f"pool {pool} is gone"
        st = env.ceph.mon("status") or {}
        pgmap = st.get("pgmap", {})
        states = {s.get("state_name"): s.get("count", 0)
                  for s in pgmap.get("pgs_by_state", [])}
        total = int(pgmap.get("num_pgs", 0))
        clean = states.get("active+clean", 0)
        # ``osd pool ls detail`` names pgp_num "pg_placement_num"
        pgp = int(cur.get("pg_placement_num", cur.get("pgp_num", 0)) or 0)
        pgn = int(cur.get("pg_num", 0) or 0)
        # the manager's PG stats lag the osdmap: until they count every pool's pg_num,
        # "all clean" describes the PGs before the change
        expected = sum(int(x.get("pg_num", 0) or 0) for x in pools)
        msg = (f"pool {pool} pg_num {pgn} pgp_num {pgp}; {clean}/{total} PGs active+clean"
               + (f" (stats still count {total} of {expected} PGs)" if total != expected
                  else ""))
        done = (pgn == pg_num and pgp == pg_num and total == expected and total > 0
                and clean == total)
        return done, msg

    return probe


@register
class PoolPgNum(Runbook):
    option_keys = ("pg_num",)
    info = RunbookInfo(
        "pool-pg-num",
        "Raise a pool's pg_num and pgp_num toward the heuristic in power-of-two steps, "
        "waiting for active+clean between steps.",
        ("POOL_PG_NUM_LOW", "POOL_PGP_BELOW_PG"), destructive=True, target_kind="pool",
        target_help="pool name")

    def lock_keys(self, target: str) -> list[str]:
        return [f"pool {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        p = need_pool(ceph, target)
        ok, why = _clean(ceph)
        if not ok:
            raise Refused(f"not all PGs are active+clean ({why}): wait for the cluster to "
                          "settle before changing pg_num")
        if p.pg_autoscale_mode == "on":
            raise Refused(f"pool {p.name} has pg_autoscale_mode on: the autoscaler owns "
                          "pg_num (set it to warn or off first)")
        per_osd = d.ctx.thresholds.pg_per_osd_target
        want = pg_target(ceph, p, per_osd)
        raw = d.options.get("pg_num")
        if raw is not None:
            try:
                want = int(raw)
            except (TypeError, ValueError):
                raise Refused(f"option pg_num must be an integer, not {raw!r}") from None
            if want < 1 or want & (want - 1):
                raise Refused(f"option pg_num must be a power of two, not {want}")
        start = max(p.pg_num, p.pg_num_target or 0)
        said = ceph_wants(ceph, p.name, start) if raw is None else None
        if said is not None and said > want:
            # Ceph's own word on this pool (MANY_OBJECTS_PER_PG: one doubling;
            # POOL_TOO_FEW_PGS: its number) where the heuristic has no more to give
            d.warnings.append(f"pg_num {said}: {said_why(ceph, p.name)}")
            want = said
        osds = sum(1 for o in ceph.osds if o.exists and o.in_) or 1
        limit = int(ceph.config.get("mon_max_pg_per_osd") or
                    d.ctx.thresholds.mon_max_pg_per_osd)
        other = sum(x.pg_num * x.size for x in ceph.pools if x.name != p.name)
        while want > start and (other + want * p.size) / osds > limit:
            want //= 2
        d.params.update(pool=p.name, pg_num=p.pg_num, pgp_num=p.pgp_num, target=want,
                        osds=osds, size=p.size)
        if want <= start and p.pgp_num >= p.pg_num:
            raise Refused(f"pool {p.name} already has pg_num {p.pg_num} (heuristic target "
                          f"{want}): nothing to raise")
        steps: list[int] = []
        nxt = next_pow2(start + 1) if start & (start - 1) else start * 2
        while nxt <= want:
            steps.append(nxt)
            nxt *= 2
        if p.pgp_num < start and not steps:
            d.mon(f"set pgp_num of {p.name} to {start}", "osd pool set",
                  {"pool": p.name, "var": "pgp_num", "val": str(start)})
            d.wait(f"wait until {p.name} is active+clean at {start}",
                   f"ceph osd pool ls detail + ceph status: wait for pg_num=pgp_num={start} "
                   "and all PGs active+clean", pool_clean_probe(p.name, start),
                   timeout_s=max(d.ctx.step_timeout_s, 300))
        for n in steps:
            _set(d, p.name, "pg_num", n)
            _set(d, p.name, "pgp_num", n)
            d.wait(f"wait until {p.name} is active+clean at {n}",
                   f"ceph osd pool ls detail + ceph status: wait for pg_num=pgp_num={n} "
                   "and all PGs active+clean", pool_clean_probe(p.name, n),
                   timeout_s=max(d.ctx.step_timeout_s, 300))
        d.before_after["pg_num"] = (p.pg_num, steps[-1] if steps else p.pg_num)
        d.before_after["pgp_num"] = (p.pgp_num, steps[-1] if steps else start)
        d.verify_entities = (f"pool {p.name}",)
