"""Pools and PG states (with the suggested pg_num of ``checks.pgs``) and cache tiers."""

from __future__ import annotations

from storage.model import CephState
from tui.views.common import Row, _row, human_bytes, ratio_micro

POOL_COLUMNS = ("pool", "id", "type", "size", "pg_num", "pgp_num", "suggested", "autoscale",
                "stored", "objects", "%used", "application")


def suggested_pg_nums(ceph: CephState, per_osd: int = 100) -> dict[str, int]:
    """The seed heuristic as ``checks.pgs`` computes it (one rule for checks, runbooks and
    this screen): (in OSDs * per_osd) / replicas up to a power of two, times the pool's
    expected share of the data. System and cache pools get no suggestion."""
    from checks.pgs import data_pools, ideal_pg_num, in_osd_count, pool_shares

    pools = data_pools(ceph)
    shares, _rule = pool_shares(pools)
    n_in = in_osd_count(ceph)
    return {p.name: ideal_pg_num(n_in, p.size, shares.get(p.id, 0.0), per_osd)
            for p in pools}


def pool_rows(ceph: CephState | None, per_osd: int = 100, low_factor: float = 4.0,
              high_factor: float = 4.0, needle: str = "") -> list[Row]:
    if ceph is None:
        return []
    sugg = suggested_pg_nums(ceph, per_osd)
    rows = []
    for p in sorted(ceph.pools, key=lambda p: p.id):
        s = sugg.get(p.name)
        low = bool(s) and p.pg_num < (s or 0) / low_factor  # the rule of checks.pgs
        high = bool(s) and p.pg_num > max(s or 0, 32) * high_factor
        pow2 = p.pg_num & (p.pg_num - 1) == 0
        cells = [p.name, str(p.id), p.type + (" (cache)" if p.tier_of >= 0 else ""),
                 f"{p.size}/{p.min_size}", str(p.pg_num), str(p.pgp_num), "-" if s is None else str(s),
                 p.pg_autoscale_mode, human_bytes(p.stored_bytes), str(p.objects),
                 f"{p.percent_used * (100 if p.percent_used <= 1 else 1):.1f}",
                 ",".join(p.application) or "-"]
        styles = ["bold", "", "", "", "bold red" if low or high or not pow2 else "green",
                  "bold red" if p.pgp_num < p.pg_num else "", "", "", "", "", "", ""]
        r = _row(f"pool:{p.name}", "pool", cells, styles, p.name)
        if r.matches(needle):
            rows.append(r)
    return rows


def pg_state_rows(ceph: CephState | None) -> list[Row]:
    if ceph is None:
        return []
    rows = [_row(f"pg:{s}", "pgstate", [s, str(c)],
                 ["green" if s == "active+clean" else "yellow", ""])
            for s, c in sorted(ceph.pgs.by_state.items(), key=lambda x: -x[1])]
    for kind, pgids in sorted(ceph.pgs.stuck.items()):
        rows.append(_row(f"stuck:{kind}", "stuck", [f"stuck {kind}", str(len(pgids))],
                         ["bold red", ""]))
    return rows


# --------------------------------------------------------------------------- cache tiers

CACHE_COLUMNS = ("cache pool", "base pool", "mode", "target bytes", "target objects",
                 "dirty", "dirty high", "full", "hit set", "promote recency", "fill")


def cache_rows(ceph: CephState | None, needle: str = "") -> list[Row]:
    if ceph is None:
        return []
    by_id = {p.id: p for p in ceph.pools}
    rows = []
    for p in ceph.pools:
        if p.tier_of < 0:
            continue
        base = by_id.get(p.tier_of)
        d, dh, full = (p.cache_target_dirty_ratio_micro, p.cache_target_dirty_high_ratio_micro,
                       p.cache_target_full_ratio_micro)
        order_ok = d <= dh <= full
        no_target = p.target_max_bytes == 0 and p.target_max_objects == 0
        fill = "-"
        if p.target_max_bytes:
            fill = f"{100.0 * p.stored_bytes / p.target_max_bytes:.0f}%"
        elif p.target_max_objects:
            fill = f"{100.0 * p.objects / p.target_max_objects:.0f}%"
        hs = (f"{p.hit_set_type} x{p.hit_set_count} / {p.hit_set_period}s"
              if p.hit_set_type != "none" else "none")
        cells = [p.name, base.name if base else str(p.tier_of), p.cache_mode,
                 human_bytes(p.target_max_bytes) if p.target_max_bytes else "0",
                 str(p.target_max_objects), ratio_micro(d), ratio_micro(dh), ratio_micro(full),
                 hs, f"r{p.min_read_recency_for_promote}/w{p.min_write_recency_for_promote}",
                 fill]
        bad_order = "" if order_ok else "bold red"
        styles = ["bold", "", "", "bold red" if no_target else "",
                  "bold red" if no_target else "", bad_order, bad_order, bad_order,
                  "bold red" if hs == "none" and p.cache_mode == "writeback" else "", "", ""]
        r = _row(f"cache:{p.name}", "cache", cells, styles, p.name)
        if r.matches(needle):
            rows.append(r)
    return rows
