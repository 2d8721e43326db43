"""``quota-restore POOL`` (issue 38.2): a pool quota set under (or near) the pool's use
(``ceph osd pool set-quota POOL max_objects|max_bytes N``) put back to its previous value,
read from the monitor's osdmap history (``osd dump EPOCH``, newest first, at most
``LOOKBACK`` epochs back; by the check that took the snapshot, storage.ceph.quota_history,
else asked here): the value the pool's quota had in the last epoch it
differed, 0 (no quota) only when that epoch shows none. No runbook of stordoc sets a
quota, so stordoc's journal holds none to read. Refused when the history does not tell
(trimmed, or the pool carried this quota since it was created), or when the previous
value is itself under the pool's use. Verified: the osdmap carries the value and Ceph's
POOL_FULL / POOL_NEAR_FULL no longer name the pool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from runbooks.base import Draft, Runbook, need_ceph, need_pool, register
from runbooks.model import Refused, RunbookInfo, StepEnv
from storage.ceph.quota_history import (
    FIELDS,
    LOOKBACK,
    parse_quota_history,
    pool_quotas,
    read_quota_history,
)
from storage.model import CephState, ClusterSnapshot, PoolState, QuotaPrevious


def osdmap_previous(d: Draft, ceph: CephState, pool: str, field: str, cur: int
                    ) -> QuotaPrevious | None:
    """The quota ``field`` of ``pool`` had before ``cur`` (storage.ceph.quota_history,
    asked of the monitor now); None offline."""
    from storage.ceph import CephClient, CephError

    if d.ctx.offline or d.ctx.target.ceph is None:
        return None
    client = CephClient(d.ctx.target.ceph)

    def ask(epoch: int) -> tuple[bool, Any]:
        try:
            return True, client.mon("osd dump", epoch=epoch)
        except CephError:  # trimmed: the history stops here
            return False, None

    try:
        client.connect()
        got = read_quota_history(ceph.fsid, ceph.epoch, {pool: {field: cur}}, ask)
    except CephError as e:
        return QuotaPrevious(None, None, f"the monitor did not answer: {e}")
    finally:
        client.close()
    return parse_quota_history(got).get(pool, {}).get(field)


def _use(p: PoolState, field: str) -> int:
    return p.objects if field == "max_objects" else p.stored_bytes


def _quota_back(pool: str, want: Mapping[str, int]) -> Any:
    """The verify probe: the osdmap carries ``want`` and Ceph's quota codes do not name
    the pool."""
    line = re.compile(rf"pool '{re.escape(pool)}'")

    def probe(env: StepEnv) -> tuple[bool, str]:
        got = pool_quotas(env.ceph.mon("osd dump") or {}).get(pool) or {}
        off = {f: got.get(f) for f, v in want.items() if got.get(f) != v}
        if off:
            return False, "osd dump: " + ", ".join(f"{f} {v}" for f, v in off.items())
        health = env.ceph.mon("health", detail="detail") or {}
        checks = health.get("checks") if isinstance(health, Mapping) else None
        left = sorted(c for c in ("POOL_FULL", "POOL_NEAR_FULL")
                      if isinstance(checks, Mapping) and c in checks
                      and any(line.search(str(x.get("message", "")))
                              for x in (checks[c].get("detail") or [])
                              if isinstance(x, Mapping)))
        if left:
            return False, f"Ceph still says {', '.join(left)} of pool {pool}"
        return True, (f"osd dump: pool {pool} "
                      + ", ".join(f"quota {f} {v}" for f, v in want.items())
                      + "; Ceph no longer says POOL_FULL / POOL_NEAR_FULL of it")

    return probe


@register
class QuotaRestore(Runbook):
    info = RunbookInfo(
        "quota-restore",
        "Put a pool quota set under (or near) the pool's use back to its previous value, "
        "from the monitor's osdmap history (0, no quota, only when the history shows "
        "none before); refused when the history cannot tell.",
        ("POOL_QUOTA_CAUSE",), destructive=False, target_kind="pool",
        target_help="pool name")

    def lock_keys(self, target: str) -> list[str]:
        return [f"pool {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        from checks.pool_quota import quota_pools_named

        ceph = need_ceph(snap)
        p = need_pool(ceph, target)
        cur = {"max_objects": p.quota_max_objects, "max_bytes": p.quota_max_bytes}
        nearfull = ceph.nearfull_ratio or 0.85
        named = p.name in quota_pools_named(ceph)
        todo = [f for f in FIELDS if cur[f] > 0 and (named or _use(p, f) >= nearfull * cur[f])]
        if not todo:
            raise Refused(f"pool {p.name}'s quota (max_objects {cur['max_objects']}, "
                          f"max_bytes {cur['max_bytes']}) is not at or near its use "
                          f"({p.objects} objects, {p.stored_bytes} bytes): nothing to put "
                          "back")
        want: dict[str, int] = {}
        for f in todo:
            # the snapshot's reading of the history (storage.ceph.quota_history), else ask
            known = ceph.quota_history.get(p.name, {}).get(f) or \
                osdmap_previous(d, ceph, p.name, f, cur[f])
            if known is None or known.value is None:
                why = known.why if known is not None and known.why else (
                    f"the osdmap history of the last {LOOKBACK} epochs does not "
                    "show one: trimmed, or the pool has had it since it was created")
                raise Refused(
                    f"the previous {f} quota of pool {p.name} is unknown ({why}); set it "
                    f"by hand: `ceph osd pool set-quota {p.name} {f} 0` removes it")
            prev, epoch = known.value, known.epoch
            if prev and _use(p, f) >= nearfull * prev:
                raise Refused(
                    f"the previous {f} quota of pool {p.name}, {prev} (osdmap epoch "
                    f"{epoch}), is itself at or near its use ({_use(p, f)}): set a larger "
                    "one by hand or delete data from the pool")
            want[f] = prev
            d.before_after[f"pool {p.name} quota {f}"] = (cur[f], prev)
            d.params.setdefault("sources", {})[f] = f"osdmap epoch {epoch}"
            d.mon(f"pool {p.name} quota {f} {cur[f]} -> {prev} (previous value, osdmap "
                  f"epoch {epoch}{', no quota' if prev == 0 else ''})",
                  "osd pool set-quota", {"pool": p.name, "field": f, "val": str(prev)})
        d.params.update(pool=p.name, objects=p.objects, stored_bytes=p.stored_bytes)
        d.wait("wait until osd dump has it and Ceph's quota warnings are gone",
               "ceph osd dump; ceph health detail", _quota_back(p.name, want),
               timeout_s=120, interval_s=2.0)
        d.verify_codes = ("POOL_QUOTA_CAUSE",)
        d.verify_entities = (f"pool {p.name}",)


__all__ = ["QuotaRestore", "osdmap_previous"]
