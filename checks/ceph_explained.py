"""What Ceph's health codes are explained with, shared by every explainer module
(``checks.ceph_codes``, ``mgrmon_codes``, ``ceph_codes_rest``, ``pgblocks``): the
``Explained`` value, the daemons and hosts a check names, and the two explainers the
rest-of-the-list module delegates to. Its own module so those modules import it, never
``checks.ceph_codes`` back (issue 39.6: no circle)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checks.model import CheckContext
from storage.model import CephState, HealthCheck

# an explainer's target that is the cluster itself (a cluster-wide runbook): the
# cluster's name, filled in by ``ceph_health_finding``
CLUSTER = "(cluster)"
_DAEMON_RE = re.compile(r"\b((?:osd|mon|mgr|mds)\.[A-Za-z0-9_-]+)")


@dataclass(frozen=True)
class Explained:
    """What an explainer adds to one of Ceph's codes."""

    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    runbook: str | None = None
    target: str | None = None
    since: float | None = None


def daemons_named(hc: HealthCheck) -> list[str]:
    """Daemons (``osd.1``, ``mon.a``) named in the summary and detail lines, in order."""
    out: dict[str, None] = {}
    for text in (hc.summary, *hc.detail):
        for d in _DAEMON_RE.findall(text):
            out[d] = None
    return list(out)


def _osd_hosts(st: CephState, daemons: list[str]) -> dict[str, str | None]:
    hosts = {f"osd.{o.id}": o.host for o in st.osds}
    return {d: hosts.get(d) for d in daemons if d.startswith("osd.")}


def _where(st: CephState, daemons: list[str]) -> str:
    """``osd.2 (node3), osd.3 (node1)``: the hosts Ceph does not name."""
    hosts = _osd_hosts(st, daemons)
    parts = [f"{d} ({hosts[d]})" if hosts.get(d) else d for d in daemons]
    return ", ".join(parts[:8]) + (f" and {len(parts) - 8} more" if len(parts) > 8 else "")


def _large_omap(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """LARGE_OMAP_OBJECTS: which pools; the objects are named only in the cluster log."""
    pools = sorted({p for line in hc.detail for p in re.findall(r"pool '([^']+)'", line)})
    index = [p for p in pools if p.endswith(".index") or "buckets.index" in p]
    todo = ("find the objects: `ceph log last 10000 cluster | grep 'Large omap object "
            "found'` (the OSD logs of the PGs' primaries keep them too)")
    if index:
        todo += ("; RGW bucket index: `radosgw-admin bucket limit check`, then reshard the "
                 "full buckets (`radosgw-admin bucket reshard --bucket B --num-shards N`)")
    else:
        todo += ("; shrink or split them in the application that writes them, or raise "
                 "osd_deep_scrub_large_omap_object_key_threshold (200000 keys) knowingly")
    todo += "; the warning clears at the next deep scrub of the PGs that hold them"
    return Explained(f"{hc.summary}" + (f" in pool(s) {', '.join(pools)}" if pools else "")
                     + f": {todo}", {"pools": pools, "manual": todo})


def _old_version(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = daemons_named(hc)
    running = [f"ceph version {c.version}" for c in st.versions.all()]
    return Explained(
        f"{_where(st, ds) or 'some daemons'} run an older Ceph than the rest "
        f"({'; '.join(running) or 'versions unknown'}): finish the "
        "upgrade (restart them on the new packages)",
        {"daemons": ds, "hosts": _osd_hosts(st, ds), "running": running})
