"""A pool quota's previous value, from the monitor's osdmap history (issue 38.2).

Read only for a pool whose quota (``quota_max_objects`` / ``quota_max_bytes`` in ``osd
dump``) is at or near its use (``df``): ``osd dump EPOCH``, newest first, at most
``LOOKBACK`` epochs back, until the epoch where the quota differed (its value then is the
previous one; 0: no quota), the first epoch the monitor trimmed, or one without the pool
(it had this quota since it was created). An old epoch never changes: each is asked once
per process. Saved in a snapshot as ``quota_history`` (raw key ``quota history``), so a
replay knows it as the live check did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from storage.ceph.parse import as_int, as_list, as_map
from storage.model import QuotaPrevious

QUOTA_HISTORY = "quota history"
LOOKBACK = 64
NEAR = 0.5  # a quota the pool uses this share of (or more) has its history read
FIELDS = ("max_objects", "max_bytes")

_EPOCHS: dict[tuple[str, int], dict[str, dict[str, int]] | None] = {}
_LOCK = threading.Lock()


def pool_quotas(dump: Any) -> dict[str, dict[str, int]]:
    """pool name -> {max_objects, max_bytes} of one ``osd dump``."""
    out: dict[str, dict[str, int]] = {}
    for p in as_list(as_map(dump).get("pools")):
        m = as_map(p)
        if m.get("pool_name"):
            out[str(m["pool_name"])] = {f: as_int(m.get(f"quota_{f}")) for f in FIELDS}
    return out


def near_quota(dump: Any, df: Any) -> dict[str, dict[str, int]]:
    """The pools with a quota at or near (NEAR) their use: name -> the quotas set."""
    use: dict[int, Mapping[str, Any]] = {}
    for p in as_list(as_map(df).get("pools")):
        m = as_map(p)
        use[as_int(m.get("id"))] = as_map(m.get("stats"))
    out: dict[str, dict[str, int]] = {}
    for p in as_list(as_map(dump).get("pools")):
        m = as_map(p)
        stats = use.get(as_int(m.get("pool")), {})
        have = {"max_objects": as_int(stats.get("objects")),
                "max_bytes": as_int(stats.get("stored"))}
        q = {f: as_int(m.get(f"quota_{f}")) for f in FIELDS}
        if any(q[f] > 0 and have[f] >= NEAR * q[f] for f in FIELDS):
            out[str(m.get("pool_name"))] = q
    return out


def read_quota_history(fsid: str, epoch: int, pools: Mapping[str, Mapping[str, int]],
                       ask: Callable[[int], tuple[bool, Any]]) -> dict[str, Any]:
    """{pool: {field: {"value": N, "epoch": E} | {"why": ...}}} for each quota set of
    ``pools``; ``ask(epoch)`` -> (answered, ``osd dump EPOCH``)."""
    todo = {(p, f): cur for p, q in pools.items() for f, cur in q.items() if cur > 0}
    out: dict[str, dict[str, Any]] = {p: {} for p in pools}
    for ep in range(epoch - 1, max(0, epoch - LOOKBACK), -1):
        if not todo:
            break
        with _LOCK:
            known = (fsid, ep) in _EPOCHS
            quotas = _EPOCHS.get((fsid, ep))
        if not known:
            ok, dump = ask(ep)
            quotas = pool_quotas(dump) if ok and isinstance(dump, Mapping) else None
            with _LOCK:
                if len(_EPOCHS) >= 4096:
                    _EPOCHS.clear()
                _EPOCHS[fsid, ep] = quotas
        if quotas is None:
            for (p, f) in todo:
                out[p][f] = {"why": f"the osdmap history stops at epoch {ep + 1} (trimmed)"}
            return out
        for (p, f), cur in list(todo.items()):
            then = quotas.get(p)
            if then is None:
                out[p][f] = {"why": f"pool {p} has had it since it was created (epoch "
                                    f"{ep + 1})"}
            elif then[f] != cur:
                out[p][f] = {"value": then[f], "epoch": ep}
            else:
                continue
            del todo[p, f]
    for (p, f) in todo:
        out[p][f] = {"why": f"the same in the last {LOOKBACK} epochs of the osdmap history"}
    return out


def parse_quota_history(value: Any) -> dict[str, dict[str, QuotaPrevious]]:
    out: dict[str, dict[str, QuotaPrevious]] = {}
    for pool, fields in as_map(value).items():
        for f, v in as_map(fields).items():
            m = as_map(v)
            prev = QuotaPrevious(as_int(m["value"]), as_int(m.get("epoch"))) \
                if "value" in m else QuotaPrevious(None, None, str(m.get("why") or ""))
            out.setdefault(str(pool), {})[str(f)] = prev
    return out


__all__ = ["LOOKBACK", "QUOTA_HISTORY", "near_quota", "parse_quota_history",
           "pool_quotas", "read_quota_history"]
