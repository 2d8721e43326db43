"""The numbers swift-recon prints (replication, async pendings, quarantines, fill, drift,
...) turned into findings with thresholds, and the replicators seen over SSH beside them.
Recon's answers are parsed once into ``ReconHost``'s typed fields
(``storage.swift_recon_parse``); what they say before judgement is in
``checks.swift_recon_values``, servers that do not answer in ``checks.swift_servers``;
names used elsewhere stay importable from here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.swift_names import device_name, host_names
from checks.swift_recon_values import (
    SERVER_PREF,
    age_h,
    sweeps,
)
from checks.swift_recon_values import ServerSummary as ServerSummary
from checks.swift_recon_values import recon_samples as recon_samples
from checks.swift_recon_values import replication as replication
from checks.swift_recon_values import server_summaries as server_summaries
from checks.swift_servers import host_for, server_entity
from checks.swift_servers import server_findings as server_findings
from storage.model import ClusterSnapshot, ReconHost, SwiftState

RECON_CODES = (
    CodeInfo("SWIFT_REPLICATION_STALE", Severity.WARN,
             "A server's replicator has not completed a pass for longer than the threshold "
             "(crit above the second threshold)."),
    CodeInfo("SWIFT_REPLICATION_NEVER", Severity.WARN,
             "A server's recon reports no completed replication pass at all (null stats: "
             "the replicator never ran, or writes another recon cache)."),
    CodeInfo("SWIFT_REPLICATOR_NOT_RUNNING", Severity.WARN,
             "Over SSH, a host runs a storage server but not its replicator: replication "
             "has stopped there (its age only grows from now on).", "swift-replicator-start"),
    CodeInfo("SWIFT_REPLICATION_FAILURES", Severity.WARN,
             "The last replication pass of a server counted failures above the threshold."),
    CodeInfo("SWIFT_REPLICATOR_IDLE", Severity.WARN,
             "A replicator's last pass attempted nothing and the ring's replication address "
             "of its host's devices is not an address of that host (over SSH): it does not "
             "find itself in the ring, so nothing on this host is replicated."),
    CodeInfo("SWIFT_ASYNC_PENDING", Severity.WARN,
             "An object server holds async pendings (container updates not yet done)."),
    CodeInfo("SWIFT_QUARANTINE_GROWTH", Severity.WARN,
             "Quarantined objects/containers/accounts on a server grew within the window."),
    CodeInfo("SWIFT_DEVICE_FULL", Severity.WARN,
             "A Swift device is filled above the warn (crit) threshold."),
    CodeInfo("SWIFT_FILL_SPREAD", Severity.WARN,
             "Fill differs too much between the devices of a ring."),
    CodeInfo("SWIFT_LOAD_HIGH", Severity.WARN, "A storage node's 5-minute load is high."),
    CodeInfo("SWIFT_TIME_DRIFT", Severity.WARN,
             "A storage server's clock differs from the checking host's."),
    CodeInfo("SWIFT_SOCKSTAT_ORPHANS", Severity.WARN,
             "Many orphaned TCP sockets on a storage node."),
    CodeInfo("SWIFT_DRIVE_AUDIT_ERRORS", Severity.WARN,
             "swift-drive-audit found drive errors on a storage node."),
    CodeInfo("SWIFT_SWEEP_SLOW", Severity.WARN,
             "An updater/auditor/expirer sweep took longer than the threshold."),
)


def host_findings(r: ReconHost, ctx: CheckContext, history: Mapping[str, Mapping[str, tuple[
        float, float]]], node_level: bool = True) -> list[Finding]:
    """Judgement of one answering server's recon numbers (pure). ``node_level``: also
    judge what belongs to the node rather than the server (quarantines, load, clock,
    sockets, drive audit), which every server of one node reports alike."""
    th = ctx.thresholds
    now = ctx.now or time.time()
    ent = server_entity(r.server, r.ip, r.port)
    ep = f"{r.ip}:{r.port}"
    out: list[Finding] = []
    rep = replication(r)
    if rep is not None and rep["last"] is None:
        out.append(Finding(
            "SWIFT_REPLICATION_NEVER", Severity.WARN, ent,
            f"{r.server} replication on {ep} has never completed a pass (recon's "
            f"replication/{r.server} is null: is swift-{r.server}-replicator running, and "
            "with this server's recon_cache_path?)",
            {"replication": r.replication_reported}))
    if rep is not None and isinstance(rep["last"], float):
        age = max(0.0, now - rep["last"])
        if age > th.swift_replication_age_warn_s:
            crit = age > th.swift_replication_age_crit_s
            out.append(Finding(
                "SWIFT_REPLICATION_STALE", Severity.CRIT if crit else Severity.WARN, ent,
                f"{r.server} replication on {ep} has not completed for {age_h(age)} "
                f"(warn {age_h(th.swift_replication_age_warn_s)}, "
                f"crit {age_h(th.swift_replication_age_crit_s)})",
                {"last": rep["last"], "age_s": round(age), "duration_s": rep["duration_s"],
                 "warn_s": th.swift_replication_age_warn_s,
                 "crit_s": th.swift_replication_age_crit_s}, since=rep["last"]))
    if rep is not None and isinstance(rep["failures"], float) \
            and rep["failures"] > th.swift_replication_failures_warn:
        out.append(Finding(
            "SWIFT_REPLICATION_FAILURES", Severity.WARN, ent,
            f"{r.server} replication on {ep}: {rep['failures']:.0f} failures in the last "
            f"pass (warn above {th.swift_replication_failures_warn})",
            {"failures": rep["failures"], "warn": th.swift_replication_failures_warn}))
    pend = r.async_pending
    if pend is not None and pend >= th.swift_async_pending_warn:
        crit = pend >= th.swift_async_pending_crit
        out.append(Finding(
            "SWIFT_ASYNC_PENDING", Severity.CRIT if crit else Severity.WARN, ent,
            f"object server {ep} holds {pend:.0f} async pendings (warn "
            f"{th.swift_async_pending_warn}, crit {th.swift_async_pending_crit}): container "
            "updates are waiting (container servers down or slow? object-updater running?)",
            {"async_pending": pend, "warn": th.swift_async_pending_warn,
             "crit": th.swift_async_pending_crit}))
    out.extend(_sweep_findings(r, ctx))
    if not node_level:
        return out
    past = history.get(ent, {})
    if r.quarantined is not None:
        for k, v in r.quarantined.by_kind():
            base = past.get(f"quarantined_{k}")
            if v is None or base is None:
                continue
            grew = v - base[1]
            if grew >= th.swift_quarantine_growth_warn:
                out.append(Finding(
                    "SWIFT_QUARANTINE_GROWTH", Severity.WARN, ent,
                    f"quarantined {k} on {ep} grew by {grew:.0f} since "
                    f"{age_h(now - base[0])} ago (now {v:.0f}; warn at "
                    f"+{th.swift_quarantine_growth_warn})",
                    {"kind": k, "now": v, "before": base[1], "before_at": base[0],
                     "growth": grew, "warn": th.swift_quarantine_growth_warn,
                     # the server's recon, as swift-recon reads it: by device and policy
                     "manual": f"see where they are: `curl -s http://{ep}/recon/"
                     f"quarantined`; the {r.server} server's log names why each was "
                     "quarantined"}))
    load = r.load
    l5 = load.avg_5m if load is not None else None
    if load is not None and l5 is not None and l5 > th.swift_load5_warn:
        out.append(Finding(
            "SWIFT_LOAD_HIGH", Severity.WARN, ent,
            f"5-minute load {l5:g} on {r.ip} (warn above {th.swift_load5_warn:g})",
            {"load": dict(load.reported), "warn": th.swift_load5_warn}))
    remote = r.remote_time
    local = r.local_time
    if remote is not None and local is not None:
        rtt = r.rtt_s or 0.0
        drift = abs(remote - local) - rtt / 2
        if drift > th.swift_time_drift_max_s:
            out.append(Finding(
                "SWIFT_TIME_DRIFT", Severity.WARN, ent,
                f"clock of {r.ip} differs by {remote - local:+.1f} s from this host's "
                f"(max {th.swift_time_drift_max_s:g} s)",
                {"remote": remote, "local": local, "rtt_s": rtt,
                 "max_s": th.swift_time_drift_max_s}))
    ss = r.sockstat
    orphan = ss.orphan if ss is not None else None
    if ss is not None and orphan is not None and orphan > th.swift_sockstat_orphan_warn:
        out.append(Finding(
            "SWIFT_SOCKSTAT_ORPHANS", Severity.WARN, ent,
            f"{orphan:.0f} orphaned TCP sockets on {r.ip} (warn above "
            f"{th.swift_sockstat_orphan_warn})", {"sockstat": dict(ss.reported),
                                                   "warn": th.swift_sockstat_orphan_warn}))
    errs = r.drive_audit_errors
    if errs is not None and errs > th.swift_driveaudit_errors_max:
        out.append(Finding(
            "SWIFT_DRIVE_AUDIT_ERRORS", Severity.WARN, ent,
            f"swift-drive-audit counted {errs:.0f} drive errors on {r.ip}",
            {"drive_audit_errors": errs, "max": th.swift_driveaudit_errors_max}))
    return out


def _sweep_findings(r: ReconHost, ctx: CheckContext) -> list[Finding]:
    th = ctx.thresholds
    ent = server_entity(r.server, r.ip, r.port)
    out: list[Finding] = []
    for daemon, secs in sweeps(r):
        if secs > th.swift_sweep_warn_s:
            out.append(Finding(
                "SWIFT_SWEEP_SLOW", Severity.WARN, ent,
                f"{daemon} on {r.ip}:{r.port}: last sweep took {age_h(secs)} (warn above "
                f"{age_h(th.swift_sweep_warn_s)})",
                {"daemon": daemon, "seconds": secs, "warn_s": th.swift_sweep_warn_s}))
    return out


def fill_findings(sw: SwiftState, ctx: CheckContext,
                  names: Mapping[str, str] | None = None) -> list[Finding]:
    """Per ring device fill from recon diskusage (the object server's report preferred),
    and the spread between the devices of each ring. ``names``: address -> configured
    host name (a device reads ``d2@node2``)."""
    th = ctx.thresholds
    usage: dict[tuple[str, str], tuple[float, dict[str, object]]] = {}
    for r in sorted(sw.recon, key=lambda h: SERVER_PREF.get(h.server, 3)):
        for du in r.diskusage:
            if (fill := du.fill) is None:
                continue
            usage.setdefault((r.ip, du.device),
                             (fill, {"size": du.size, "used": du.used,
                                     "avail": du.avail, "via": r.server}))
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    spread_seen: set[frozenset[tuple[str, str]]] = set()
    for ring in sorted(sw.rings, key=lambda g: SERVER_PREF.get(g.kind.split("-")[0], 3)):
        fills: list[tuple[float, str]] = []
        for d in ring.devices:
            got = usage.get((d.ip, d.device))
            if got is None:
                continue
            fill, ev = got
            ent = device_name(d.device, d.ip, names)
            fills.append((fill, ent))
            if fill >= th.swift_fill_warn and (d.ip, d.device) not in seen:
                seen.add((d.ip, d.device))
                crit = fill >= th.swift_fill_crit
                out.append(Finding(
                    "SWIFT_DEVICE_FULL", Severity.CRIT if crit else Severity.WARN, ent,
                    f"Swift device {ent} is {fill:.0%} full (warn "
                    f"{th.swift_fill_warn:.0%}, crit {th.swift_fill_crit:.0%})",
                    dict(ev, fill=round(fill, 4), device=d.device, ip=d.ip,
                         ring_entry=d.endpoint,
                         warn=th.swift_fill_warn, crit=th.swift_fill_crit)))
        devset = frozenset((d.ip, d.device) for d in ring.devices)
        if len(fills) >= 2 and devset not in spread_seen:
            spread_seen.add(devset)  # rings on the same drives: said once (object first)
            lo, hi = min(fills), max(fills)
            if hi[0] - lo[0] > th.swift_fill_spread_warn:
                out.append(Finding(
                    "SWIFT_FILL_SPREAD", Severity.WARN, f"{ring.kind} ring",
                    f"{ring.kind} ring fill ranges from {lo[0]:.0%} ({lo[1]}) to {hi[0]:.0%} "
                    f"({hi[1]}): more than {th.swift_fill_spread_warn:.0%} apart",
                    {"min": round(lo[0], 4), "min_device": lo[1], "max": round(hi[0], 4),
                     "max_device": hi[1], "warn": th.swift_fill_spread_warn}))
    return out


def replicator_findings(r: ReconHost, snap: ClusterSnapshot, now: float) -> list[Finding]:
    """SWIFT_REPLICATOR_NOT_RUNNING for one answering server (pure): its host, seen over
    SSH, runs this ``swift-<server>-server`` (the process holding its port, when the
    listening sockets are known) but no ``swift-<server>-replicator`` on the same config
    file."""
    if r.error_kind is not None or not snap.host_facts_collected:
        return []
    hname, facts = host_for(snap, r.ip)
    if facts is None or facts.error:
        return []
    servers = [d for d in facts.swift_processes
               if d.running and d.kind == f"swift-{r.server}-server"]
    held = facts.listeners.get(r.port) if facts.listeners else None
    if held is not None and held[0] is not None:
        # the server answering on this port (its workers may be children: match by pid,
        # else by the parent's config when the pid is a worker of it)
        mine = [d for d in servers if d.pid == held[0]]
        servers = mine or servers
    if not servers:
        return []
    confs = {d.ident for d in servers}
    repl = [d for d in facts.swift_processes
            if d.running and d.kind == f"swift-{r.server}-replicator"]
    if any(d.ident in confs for d in repl):
        return []
    rep = replication(r)
    last = rep["last"] if rep else None
    since = f"; its last pass completed {age_h(max(0.0, now - last))} ago" \
        if isinstance(last, float) else "; no pass has ever completed"
    return [Finding(
        "SWIFT_REPLICATOR_NOT_RUNNING", Severity.WARN, server_entity(r.server, r.ip, r.port),
        message=f"swift-{r.server}-replicator is not running on {hname} ({r.ip}) beside "
        f"its {r.server} server{since}: replication has stopped there",
        evidence={"host": hname, "ip": r.ip, "server": r.server, "last": last,
                  "server_conf": sorted(confs),
                  "replicators": [{"pid": d.pid, "conf": d.ident} for d in repl]},
        runbook="swift-replicator-start", target=f"{r.server}@{hname}")]


def idle_findings(r: ReconHost, snap: ClusterSnapshot, ctx: CheckContext) -> list[Finding]:
    """SWIFT_REPLICATOR_IDLE for one answering server (pure): its last pass is recent and
    attempted 0, and no replication address of this host's devices in its ring is one of
    the host's addresses (SSH). Swift's replicator then logs "Can't find itself ... not
    replicating" and recon alone looks healthy (passes complete, no failures). Both are
    needed: a pass can attempt nothing for a moment (seen under load), and an address list
    seen from SSH alone may miss a replicator's ring_ip."""
    if r.error_kind is not None or not snap.host_facts_collected or snap.swift is None:
        return []
    rep = replication(r)
    if rep is None or rep["attempted"] != 0.0 or not isinstance(rep["last"], float):
        return []
    now = ctx.now or time.time()
    if now - rep["last"] > ctx.thresholds.swift_replication_age_warn_s:
        return []  # SWIFT_REPLICATION_STALE speaks for an old pass
    hname, facts = host_for(snap, r.ip)
    ring = snap.swift.ring(r.server)
    if facts is None or facts.error or ring is None:
        return []
    devs = [d for d in ring.devices if d.ip == r.ip and d.port == r.port]
    if not devs or not facts.addresses:
        return []
    if {d.replication_ip or d.ip for d in devs} & set(facts.addresses):
        return []  # it finds itself: an empty pass is a moment (or an empty cluster)
    parts = {d.device: facts.swift_parts.get(d.device, {}).get(r.server, 0) for d in devs}
    repl = sorted({f"{d.replication_ip or d.ip}:{d.replication_port or d.port}"
                   for d in devs})
    held = sorted(dev for dev, n in parts.items() if n)
    data = (f" while {', '.join(held)} hold {sum(parts.values())} {r.server} partitions"
            if held else "")
    age = max(0.0, now - rep["last"])
    ago = f"{age:.0f} s" if age < 120 else age_h(age)
    return [Finding(
        "SWIFT_REPLICATOR_IDLE", Severity.WARN, server_entity(r.server, r.ip, r.port),
        message=f"swift-{r.server}-replicator on {hname} ({r.ip}) attempted nothing in its "
        f"last pass ({ago} ago){data}: it does not find itself in the {r.server} ring, "
        f"where this host's devices replicate at {', '.join(repl)}, not an address of "
        f"{hname}",
        evidence={"host": hname, "ip": r.ip, "server": r.server, "last": rep["last"],
                  "attempted": 0, "partitions": parts, "replication_addresses": repl,
                  "host_addresses": list(facts.addresses),
                  "manual": _idle_manual(r, snap, hname, devs, repl)})]


def _idle_manual(r: ReconHost, snap: ClusterSnapshot, hname: str | None, devs: list[Any],
                 repl: list[str]) -> str:
    """Give the devices their own address back: the exact ``set_info`` on the builder
    stordoc reads (each wrong replication address changed to the device's own), when the
    builder's path is known; else the command with its values to fill in."""
    ring = snap.swift.ring(r.server) if snap.swift is not None else None
    builder = ring.builder_path if ring is not None and ring.builder_path else None
    wrong = sorted({d.replication_ip for d in devs if d.replication_ip
                    and d.replication_ip != d.ip})
    if builder and len(wrong) == 1:
        setinfo = (f"`swift-ring-builder {builder} set_info --replication-ip {wrong[0]} "
                   f"--change-replication-ip {r.ip} --yes`")
    else:
        setinfo = (f"`swift-ring-builder {r.server}.builder set_info --replication-ip OLD "
                   "--change-replication-ip NEW`")
    return (f"give the {r.server} ring's devices on {hname} a replication address "
            f"{hname} has (now {', '.join(repl)}): {setinfo}, write_ring, push the ring; "
            f"or, if the address is right, bring it up on {hname} (`ip -br addr` there)")


@check("swift-recon", codes=RECON_CODES, needs=("swift",), reads=("hosts",))
def swift_recon(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    sw = snap.swift
    assert sw is not None
    out: list[Finding] = []
    nodes: set[str] = set()
    for r in sorted(sw.recon, key=lambda h: (SERVER_PREF.get(h.server, 3), h.ip, h.port)):
        if r.error_kind is None:
            out.extend(host_findings(r, ctx, sw.history, node_level=r.ip not in nodes))
            out.extend(replicator_findings(r, snap, ctx.now or time.time()))
            out.extend(idle_findings(r, snap, ctx))
            nodes.add(r.ip)
    out.extend(with_fill_step(f, snap) for f in fill_findings(sw, ctx, host_names(snap)))
    return out


def with_fill_step(f: Finding, snap: ClusterSnapshot) -> Finding:
    """A full device's first step by hand, an exact command: what fills it, read on its
    host (``du`` over its mount, one level: objects, tmp, quarantined, async_pending)."""
    if f.code != "SWIFT_DEVICE_FULL" or not f.evidence:
        return f
    hname, facts = host_for(snap, str(f.evidence.get("ip")))
    path = facts.swift_dirs.get(str(f.evidence.get("device"))) if facts is not None else None
    if hname is None or not path:
        return f
    return replace(f, evidence=dict(
        f.evidence, host=hname,
        manual=f"see what fills it: `du -xh --max-depth=1 {path}` on {hname}; then add "
        "capacity or lower its weight in the ring (`swift-ring-builder`, rebalance)"))
