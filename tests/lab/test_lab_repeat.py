"""Issue 10.8: `lab break cache-tier-misconfigured` is repeatable, also after a partial
attempt (it failed with EINVAL "application must be enabled on base tier")."""

from __future__ import annotations

from lab import CACHE_BASE_POOL, CACHE_POOL, Lab


def _tier_of(lab: Lab) -> dict[str, object]:
    pools = {p["pool_name"]: p for p in lab.ceph("osd", "pool", "ls", "detail")}
    return pools.get(CACHE_POOL, {})


def test_cache_tier_break_twice_and_after_a_partial_attempt(lab: Lab) -> None:
    """One heal for all of it (each break and heal makes or drops pools and waits for the
    PGs): a partial attempt first, the break completes it, a second break on top of it."""
    try:
        # a partial attempt: the pools and the tier relation, no overlay, no mode
        for pool in (CACHE_BASE_POOL, CACHE_POOL):
            lab.ceph("osd", "pool", "create", pool, "8", "8", "replicated")
        lab.ceph("osd", "pool", "application", "enable", CACHE_BASE_POOL, "rbd")
        lab.ceph("osd", "tier", "add", CACHE_BASE_POOL, CACHE_POOL)
        lab.break_("cache-tier-misconfigured")
        t = _tier_of(lab)
        assert t.get("cache_mode") == "writeback" and t.get("cache_target_full_ratio_micro") \
            == 500000
        lab.break_("cache-tier-misconfigured")  # again, on top of the first
        assert _tier_of(lab).get("cache_mode") == "writeback"
    finally:
        lab.heal("cache-tier-misconfigured")
    assert CACHE_POOL not in {p["pool_name"] for p in lab.ceph("osd", "pool", "ls", "detail")}
