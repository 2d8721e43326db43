"""The overview screen's facts: findings count, Ceph health, OSDs, PGs, capacity, Swift,
hosts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from checks.model import Finding, Severity
from storage.model import ClusterSnapshot
from tui.views.common import human_bytes


@dataclass(frozen=True)
class Overview:
    lines: tuple[tuple[str, str, str], ...]  # (label, value, style)


def overview(snap: ClusterSnapshot, findings: Sequence[Finding]) -> Overview:
    """Facts after the incidents: Ceph's health is one of them, not the verdict."""
    out: list[tuple[str, str, str]] = []
    ceph = snap.ceph
    counts = {s: sum(1 for f in findings if f.severity == s) for s in Severity}
    out.append(("Findings", f"{counts[Severity.CRIT]} crit, {counts[Severity.WARN]} warn, "
                f"{counts[Severity.INFO]} info",
                "bold red" if counts[Severity.CRIT] else
                "yellow" if counts[Severity.WARN] else "green"))
    if ceph is not None:
        hs = ceph.health_status
        out.append(("Ceph health", hs, {"HEALTH_OK": "green", "HEALTH_WARN": "yellow"}
                    .get(hs, "bold red")))
        out.append(("Ceph version", f"{ceph.version} ({ceph.release}), fsid {ceph.fsid}", ""))
        n = len([o for o in ceph.osds if o.exists])
        up = sum(1 for o in ceph.osds if o.up)
        inn = sum(1 for o in ceph.osds if o.in_)
        out.append(("OSDs", f"{n} total, {up} up, {inn} in",
                    "green" if up == n and inn == n else "bold red"))
        states = ", ".join(f"{c} {s}" for s, c in sorted(ceph.pgs.by_state.items(),
                                                          key=lambda x: -x[1]))
        clean = ceph.pgs.by_state.get("active+clean", 0) == ceph.pgs.num_pgs
        out.append(("PGs", f"{ceph.pgs.num_pgs}: {states or '-'}", "green" if clean
                    else "yellow"))
        if ceph.total_bytes:
            used = ceph.total_bytes - ceph.total_avail_bytes
            pct = 100.0 * used / ceph.total_bytes
            out.append(("Capacity", f"{human_bytes(used)} used of "
                        f"{human_bytes(ceph.total_bytes)} ({pct:.1f}%)",
                        "bold red" if pct >= 100 * ceph.nearfull_ratio else ""))
        out.append(("Pools", f"{len(ceph.pools)} ({sum(1 for p in ceph.pools if p.tier_of >= 0)}"
                    " cache tiers)", ""))
        if ceph.flags:
            out.append(("OSD map flags", ",".join(ceph.flags), ""))
    elif snap.ceph_error:
        out.append(("Ceph", f"unreachable: {snap.ceph_error}", "bold red"))
    sw = snap.swift
    if sw is not None:
        devs = sum(len(r.devices) for r in sw.rings)
        from checks.swift_names import device_name, host_names

        names = host_names(snap)
        # a device recon reports unmounted counts where a ring places it: servers that
        # share one devices root (the lab's) each report every device under it
        placed = {(d.device, d.ip) for r in sw.rings for d in r.devices}
        unmounted = sorted({device_name(d, h.ip, names) for h in sw.recon
                            for d in h.unmounted if not placed or (d, h.ip) in placed})
        out.append(("Swift rings", f"{len(sw.rings)} rings, {devs} ring devices", ""))
        out.append(("Swift proxy", "healthy" if sw.proxy_healthy else
                    f"unhealthy: {sw.proxy_error or 'no answer'}",
                    "green" if sw.proxy_healthy else "bold red"))
        out.append(("Swift unmounted", ", ".join(unmounted) or "none",
                    "bold red" if unmounted else "green"))
    elif snap.swift_error:
        out.append(("Swift", f"unreachable: {snap.swift_error}", "bold red"))
    if snap.hosts:
        bad = [n for n, h in sorted(snap.hosts.items()) if h.error]
        out.append(("Hosts", f"{len(snap.hosts)} ({len(bad)} unreachable"
                    + (f": {', '.join(bad)}" if bad else "") + ")",
                    "bold red" if bad else ""))
    return Overview(tuple(out))
