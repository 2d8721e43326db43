"""Swift rings, computed offline from ring.gz and builder, plus what recon says about them.

Replicas against devices and zones, the partition-power rule (at least ~100 partitions per
drive at the ring's device count), balance and dispersion from the builder, weighted
devices that hold nothing, builder-versus-ring drift, md5 of rings and swift.conf across
servers, min_part_hours, and the proxy's health.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.swift_names import device_name, host_names
from storage.model import ClusterSnapshot, RingState

RB = "swift-ring-rebalance"
CODES = (
    CodeInfo("SWIFT_REPLICAS_EXCEED_DEVICES", Severity.CRIT,
             "A ring has more replicas than weighted devices: some replicas share a drive."),
    CodeInfo("SWIFT_REPLICAS_EXCEED_ZONES", Severity.WARN,
             "A ring has more replicas than zones: a zone failure can lose several replicas."),
    CodeInfo("SWIFT_PART_POWER_LOW", Severity.WARN,
             "Fewer than ~100 partitions per drive: data cannot be spread evenly."),
    CodeInfo("SWIFT_PART_POWER_HIGH", Severity.WARN,
             "Far too many partition replicas per drive: replication and memory overhead."),
    CodeInfo("SWIFT_RING_UNBALANCED", Severity.WARN,
             "The builder's balance is above the threshold.", RB),
    CodeInfo("SWIFT_DISPERSION_HIGH", Severity.WARN,
             "Too many partitions have replicas that are not spread across failure domains.",
             RB),
    CodeInfo("SWIFT_DEVICE_ZERO_WEIGHT", Severity.INFO,
             "A device with weight 0 is still in the ring (draining, or to be removed)."),
    CodeInfo("SWIFT_DEVICE_NO_PARTITIONS", Severity.WARN,
             "A weighted device holds no partitions: the ring needs a rebalance.", RB),
    CodeInfo("SWIFT_BUILDER_NEWER_THAN_RING", Severity.WARN,
             "The builder was changed after the ring was written: the change is not live.", RB),
    CodeInfo("SWIFT_BUILDER_RING_MISMATCH", Severity.WARN,
             "ring.gz and its builder disagree (or one is missing/unreadable)."),
    CodeInfo("SWIFT_RING_MD5_MISMATCH", Severity.CRIT,
             "A storage server serves a ring that differs from the local one.",
             "swift-ring-push"),
    CodeInfo("SWIFT_CONF_MD5_MISMATCH", Severity.CRIT,
             "swift.conf differs between servers (hash prefix/suffix must be identical)."),
    CodeInfo("SWIFT_MIN_PART_HOURS", Severity.INFO,
             "A rebalance is wanted but min_part_hours blocks moving partitions until later."),
    CodeInfo("SWIFT_PROXY_UNHEALTHY", Severity.CRIT,
             "The proxy's /healthcheck does not answer OK."),
)


def _entity(ring: RingState) -> str:
    return f"{ring.kind} ring"


def ring_findings(ring: RingState, ctx: CheckContext,
                  names: Mapping[str, str] | None = None) -> list[Finding]:
    """Offline findings of one ring (pure; also used by the TUI's ring screen). ``names``:
    address -> configured host name, so a device reads ``d2@node2``."""
    th = ctx.thresholds
    ent = _entity(ring)
    out: list[Finding] = []
    if ring.error or ring.ring_path is None or ring.builder_path is None:
        missing = "ring.gz" if ring.ring_path is None else \
            "builder" if ring.builder_path is None else None
        out.append(Finding(
            "SWIFT_BUILDER_RING_MISMATCH", Severity.WARN, ent,
            f"{ring.kind}: " + (ring.error or f"{missing} missing"),
            {"ring": ring.ring_path, "builder": ring.builder_path, "error": ring.error}))
        if not ring.devices:
            return out
    weighted = [d for d in ring.devices if d.weight > 0]
    zones = {(d.region, d.zone) for d in weighted}
    ev_shape = {"replicas": ring.replicas, "weighted_devices": len(weighted),
                "zones": len(zones), "part_power": ring.part_power}
    # the live ring's replicas, or the builder's when it plans more (not yet written)
    replicas, where = ring.replicas, f"{ring.kind} ring has"
    if ring.builder_replicas is not None and ring.builder_replicas > ring.replicas + 1e-9:
        replicas, where = ring.builder_replicas, f"{ring.kind}.builder plans"
        ev_shape = dict(ev_shape, builder_replicas=ring.builder_replicas)
    if weighted and replicas > len(weighted) + 1e-9:
        out.append(Finding(
            "SWIFT_REPLICAS_EXCEED_DEVICES", Severity.CRIT, ent,
            f"{where} {replicas:g} replicas but only {len(weighted)} weighted devices",
            dict(ev_shape, manual=_replicas_manual(ring, len(weighted)))))
    if weighted and replicas > len(zones) + 1e-9:
        out.append(Finding(
            "SWIFT_REPLICAS_EXCEED_ZONES", Severity.WARN, ent,
            f"{where} {replicas:g} replicas but only {len(zones)} zones", ev_shape))
    if weighted and ring.part_power > 0:
        parts = 2 ** ring.part_power
        per_dev = parts / len(weighted)
        replicas_per_dev = parts * ring.replicas / len(weighted)
        ev = dict(ev_shape, partitions=parts, partitions_per_device=round(per_dev, 1),
                  min_per_device=th.swift_min_parts_per_device)
        if per_dev < th.swift_min_parts_per_device:
            out.append(Finding(
                "SWIFT_PART_POWER_LOW", Severity.WARN, ent,
                f"{ring.kind} ring: part power {ring.part_power} gives {per_dev:.0f} "
                f"partitions per drive over {len(weighted)} drives "
                f"(want >= {th.swift_min_parts_per_device})", ev))
        if replicas_per_dev > th.swift_max_parts_per_device:
            out.append(Finding(
                "SWIFT_PART_POWER_HIGH", Severity.WARN, ent,
                f"{ring.kind} ring: {replicas_per_dev:.0f} partition replicas per drive "
                f"(limit {th.swift_max_parts_per_device})",
                dict(ev, replicas_per_device=round(replicas_per_dev),
                     max_per_device=th.swift_max_parts_per_device)))
    wants_rebalance = False
    if ring.balance is not None and ring.balance > th.swift_balance_max:
        wants_rebalance = True
        out.append(Finding(
            "SWIFT_RING_UNBALANCED", Severity.WARN, ent,
            f"{ring.kind} ring balance {ring.balance:.2f}% (max {th.swift_balance_max:g}%)",
            {"balance": round(ring.balance, 2), "max": th.swift_balance_max}, runbook=RB,
            target=ring.kind))
    if ring.dispersion is not None and ring.dispersion > th.swift_dispersion_max:
        wants_rebalance = True
        out.append(Finding(
            "SWIFT_DISPERSION_HIGH", Severity.WARN, ent,
            f"{ring.kind} ring dispersion {ring.dispersion:.2f}% "
            f"(max {th.swift_dispersion_max:g}%)",
            {"dispersion": round(ring.dispersion, 2), "max": th.swift_dispersion_max},
            runbook=RB, target=ring.kind))
    for d in ring.devices:
        name = device_name(d.device, d.ip, names)
        dent = f"{ring.kind} ring {name}"
        dev_ev = {"id": d.id, "zone": d.zone, "region": d.region, "weight": d.weight,
                  "parts": d.parts, "ring_entry": d.endpoint}
        if d.weight <= 0:
            out.append(Finding(
                "SWIFT_DEVICE_ZERO_WEIGHT", Severity.INFO, dent,
                f"{name} has weight 0 in the {ring.kind} ring"
                + (f" and still holds {d.parts} partitions (draining)" if d.parts
                   else " and holds nothing: it can be removed"), dev_ev))
        elif d.parts == 0 and ring.ring_path is not None:
            wants_rebalance = True
            out.append(Finding(
                "SWIFT_DEVICE_NO_PARTITIONS", Severity.WARN, dent,
                f"{name} has weight {d.weight:g} but no partitions in the {ring.kind} "
                "ring", dev_ev, runbook=RB, target=ring.kind))
    if ring.ring_path and ring.builder_path and ring.builder_matches_ring is False:
        wants_rebalance = True
        newer = (ring.builder_mtime or 0) > (ring.ring_mtime or 0)
        ev = {"ring": ring.ring_path, "builder": ring.builder_path,
              "ring_mtime": ring.ring_mtime, "builder_mtime": ring.builder_mtime}
        if newer:
            out.append(Finding(
                "SWIFT_BUILDER_NEWER_THAN_RING", Severity.WARN, ent,
                f"{ring.kind}.builder was changed after {ring.kind}.ring.gz was written: "
                "rebalance/write_ring to make it live", ev, runbook=RB, target=ring.kind))
        else:
            out.append(Finding(
                "SWIFT_BUILDER_RING_MISMATCH", Severity.WARN, ent,
                f"{ring.kind}.ring.gz does not match {ring.kind}.builder (and the builder "
                "is not newer): which one is deployed?", ev))
    if wants_rebalance and ring.last_rebalance_hours_ago is not None and ring.min_part_hours:
        left_h = ring.min_part_hours - ring.last_rebalance_hours_ago
        if left_h > 0:
            until = (ctx.now or time.time()) + left_h * 3600
            out.append(Finding(
                "SWIFT_MIN_PART_HOURS", Severity.INFO, ent,
                f"{ring.kind} ring: min_part_hours {ring.min_part_hours} blocks moving "
                f"partitions for another {left_h:.1f} h",
                {"min_part_hours": ring.min_part_hours,
                 "hours_since_rebalance": round(ring.last_rebalance_hours_ago, 2),
                 "blocked_until": until}))
    return out


def ssh_ring_findings(snap: ClusterSnapshot, local: dict[str, str],
                      matches: dict[str, bool | None]) -> list[Finding]:
    """Ring files a host holds (md5sum over SSH in its ``swift_ring_dirs``) that differ
    from the local ring and that no answering server's recon already reported: e.g. the
    rings of a server that is down, which would start with the wrong ring."""
    sw = snap.swift
    assert sw is not None
    seen = {(r.ip, p) for r in sw.recon if r.error_kind is None for p in r.ringmd5}
    out: list[Finding] = []
    for hname, facts in sorted(snap.hosts.items()):
        if facts.error:
            continue
        for path, md5 in sorted(facts.ring_md5.items()):
            name = os.path.basename(path)
            want = local.get(name)
            if not want or md5 == want or (facts.address, path) in seen:
                continue
            kind = name.split(".ring.gz")[0]
            m = matches.get(name)
            built = " (the builder's)" if m is True else \
                " (which differs from the builder)" if m is False else ""
            out.append(Finding(
                "SWIFT_RING_MD5_MISMATCH", Severity.CRIT, f"{kind} ring {hname}:{path}",
                f"{path} on {hname} has md5 {md5}, not the local {want}{built} (seen over "
                "SSH; no answering server reports it: a server started there would use it)",
                {"host": hname, "file": path, "md5": md5, "local_md5": want, "via": "ssh"},
                runbook="swift-ring-push", target=kind))
    return out


@check("swift-rings", codes=CODES, needs=("swift",), reads=("hosts",))
def swift_rings(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    sw = snap.swift
    assert sw is not None
    out: list[Finding] = []
    names = host_names(snap)
    for ring in sw.rings:
        out.extend(ring_findings(ring, ctx, names))
    local = {os.path.basename(p): m for p, m in sw.local_ring_md5.items()}
    matches = {f"{r.kind}.ring.gz": r.builder_matches_ring for r in sw.rings}
    confs: dict[str, list[str]] = {}
    for r in sw.recon:
        ep = f"{r.ip}:{r.port}"
        for path, md5 in sorted(r.ringmd5.items()):
            name = os.path.basename(path)
            want = local.get(name)
            if want and md5 and md5 != want:
                kind = name.split('.ring.gz')[0]
                m = matches.get(name)
                built = " (the builder's)" if m is True else \
                    " (which differs from the builder)" if m is False else ""
                out.append(Finding(
                    "SWIFT_RING_MD5_MISMATCH", Severity.CRIT, f"{kind} ring {ep}",
                    f"{r.server} server {ep} reads {path} with md5 {md5}, not the local "
                    f"{want}{built}: it serves an older or other ring",
                    {"server": ep, "file": path, "md5": md5, "local_md5": want,
                     "local_matches_builder": matches.get(name)},
                    runbook="swift-ring-push", target=kind))
        if r.ringmd5 and r.error_kind is None:
            have = {os.path.basename(p) for p in r.ringmd5}
            for name, want in sorted(local.items()):
                if name not in have:
                    out.append(Finding(
                        "SWIFT_RING_MD5_MISMATCH", Severity.CRIT,
                        f"{name.split('.ring.gz')[0]} ring {ep}",
                        f"{r.server} server {ep} has no {name} (local md5 {want})",
                        {"server": ep, "file": name, "md5": None, "local_md5": want}))
        if r.swiftconfmd5:
            confs.setdefault(r.swiftconfmd5, []).append(ep)
    out.extend(ssh_ring_findings(snap, local, matches))
    if len(confs) > 1 or (confs and sw.local_swiftconf_md5
                          and set(confs) != {sw.local_swiftconf_md5}):
        ref = sw.local_swiftconf_md5 or max(confs, key=lambda k: len(confs[k]))
        for md5, eps in sorted(confs.items()):
            if md5 == ref:
                continue
            for ep in eps:
                out.append(Finding(
                    "SWIFT_CONF_MD5_MISMATCH", Severity.CRIT, f"swift server {ep}",
                    f"swift.conf on {ep} differs (md5 {md5}, expected {ref})",
                    {"server": ep, "md5": md5, "expected": ref}))
    if sw.proxy_url and sw.proxy_healthy is False:
        out.append(Finding(
            "SWIFT_PROXY_UNHEALTHY", Severity.CRIT, f"swift proxy {sw.proxy_url}",
            proxy_words(sw.proxy_url, sw.proxy_error),
            {"url": sw.proxy_url, "error": sw.proxy_error}))
    return out


def proxy_words(url: str, error: str | None) -> str:
    """What a failed ``/healthcheck`` says, in words: ``proxy 127.0.0.1:8080 refuses
    connections`` (nothing listens: its process is down), ``... does not answer in time``,
    else the answer it gave."""
    from urllib.parse import urlsplit

    u = urlsplit(url)
    where = u.netloc or url
    err = (error or "").strip()
    if err in ("connection refused", "cannot connect"):
        return (f"proxy {where} refuses connections: nothing listens there (GET "
                f"{url.rstrip('/')}/healthcheck)")
    if "timed out" in err:
        return f"proxy {where} does not answer /healthcheck in time ({err})"
    return f"proxy {where} /healthcheck failed: {err or 'no answer'}"


def _replicas_manual(ring: RingState, weighted: int) -> str:
    """Replicas back to what the devices can hold: the live ring's count when only the
    builder plans more, else one per weighted device; then the rebalance."""
    n = ring.replicas if (ring.builder_replicas or 0) > ring.replicas + 1e-9 \
        and ring.replicas <= weighted else float(weighted)
    builder = ring.builder_path or f"{ring.kind}.builder"
    return (f"set the replicas to {n:g}: `swift-ring-builder {builder} set_replicas {n:g}`; "
            f"then rebalance and write the ring (`stordoc plan {RB} {ring.kind}`)")
