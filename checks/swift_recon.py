"""Swift storage servers as recon sees them: a server that does not answer, and the
numbers swift-recon prints (replication, async pendings, quarantines, fill, drift...)
turned into findings with thresholds.

A server that does not answer is told apart by why: connection refused (the process is
down; over SSH the host's listening sockets and Swift processes confirm it), timeout, an
HTTP error, or a server that answers but has no recon middleware. The proxy's
healthcheck stays green in all of these.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import ClusterSnapshot, HostFacts, ReconHost, SwiftState

START = "swift-server-start"
CODES = (
    CodeInfo("SWIFT_SERVER_DOWN", Severity.CRIT,
             "A Swift storage server refuses connections: its process is down.", START),
    CodeInfo("SWIFT_SERVER_TIMEOUT", Severity.CRIT,
             "A Swift storage server does not answer recon within the timeout."),
    CodeInfo("SWIFT_SERVER_HTTP_ERROR", Severity.CRIT,
             "A Swift storage server answers recon with an HTTP error."),
    CodeInfo("SWIFT_RECON_NOT_CONFIGURED", Severity.WARN,
             "A Swift storage server answers but has no recon middleware in its pipeline."),
)


def server_entity(server: str, ip: str, port: int) -> str:
    """``object server 127.0.0.2:6200``: the entity of every per-server finding."""
    return f"{server} server {ip}:{port}"


def _host_for(snap: ClusterSnapshot, ip: str) -> tuple[str | None, HostFacts | None]:
    for name, f in snap.hosts.items():
        if f.address == ip:
            return name, f
    return None, None


def ssh_confirmation(facts: HostFacts | None, server: str, port: int) -> dict[str, object]:
    """What the host says over SSH about port ``port`` and its ``server`` processes."""
    if facts is None:
        return {"ssh": "no host configured for this address"}
    if facts.error:
        return {"ssh": f"host did not answer: {facts.error}"}
    procs = [{"pid": d.pid, "conf": d.ident} for d in facts.swift_processes
             if d.kind == f"swift-{server}-server" and d.running]
    ev: dict[str, object] = {"swift_processes": procs}
    if facts.listeners is None:
        ev["ssh"] = "listening sockets unknown (no ss on the host)"
        return ev
    held = facts.listeners.get(port)
    if held is None:
        ev["ssh"] = f"nothing listens on port {port}"
        ev["port_free"] = True
    else:
        ev["ssh"] = f"port {port} is held by pid {held[0]} ({held[1] or '?'})"
        ev["port_free"] = False
        ev["port_pid"], ev["port_process"] = held
    return ev


def server_findings(r: ReconHost, snap: ClusterSnapshot) -> list[Finding]:
    """The reachability finding of one storage server (pure)."""
    if r.error is None or r.error_kind is None:
        return []
    ent = server_entity(r.server, r.ip, r.port)
    hname, facts = _host_for(snap, r.ip)
    ev: dict[str, object] = {"server": r.server, "ip": r.ip, "port": r.port,
                             "host": hname, "error_kind": r.error_kind, "error": r.error}
    where = f" on {hname}" if hname else ""
    if r.error_kind in ("refused", "unreachable"):
        conf = ssh_confirmation(facts, r.server, r.port) if snap.host_facts_collected \
            else {"ssh": "host facts not collected"}
        ev.update(conf)
        why = "refuses connections" if r.error_kind == "refused" else "is unreachable"
        extra = ""
        if conf.get("port_free") is True:
            n = len(conf.get("swift_processes") or [])  # type: ignore[arg-type]
            extra = f" (confirmed over SSH: nothing listens on port {r.port}{where}" + \
                (f"; {n} other swift-{r.server}-server process(es) run there" if n else "") + ")"
        elif conf.get("port_free") is False:
            extra = f" ({conf['ssh']}{where})"
        return [Finding("SWIFT_SERVER_DOWN", Severity.CRIT, ent,
                        f"{r.server} server {r.ip}:{r.port}{where} {why}: process down"
                        + extra, ev, runbook=START,
                        target=f"{r.server}@{hname}" if hname else None)]
    if r.error_kind == "timeout":
        return [Finding("SWIFT_SERVER_TIMEOUT", Severity.CRIT, ent,
                        f"{r.server} server {r.ip}:{r.port}{where} does not answer recon "
                        "in time", ev)]
    if r.error_kind == "no-recon":
        return [Finding("SWIFT_RECON_NOT_CONFIGURED", Severity.WARN, ent,
                        f"{r.server} server {r.ip}:{r.port}{where} answers but has no recon "
                        "middleware (add 'recon' to its pipeline): its health is invisible",
                        ev)]
    return [Finding("SWIFT_SERVER_HTTP_ERROR", Severity.CRIT, ent,
                    f"{r.server} server {r.ip}:{r.port}{where} answers recon with an error: "
                    f"{r.error}", ev)]


@check("swift-servers", codes=CODES, needs=("swift",))
def swift_servers(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    sw = snap.swift
    assert sw is not None
    out: list[Finding] = []
    for r in sw.recon:
        out.extend(server_findings(r, snap))
    return out


# --------------------------------------------------------------------------- recon numbers

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
QUARANTINE_KINDS = ("objects", "containers", "accounts")


def _num(v: object) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return None


def recon_samples(sw: SwiftState) -> list[tuple[str, str, float]]:
    """The numbers kept in the journal for history: (entity, metric, value)."""
    out: list[tuple[str, str, float]] = []
    for r in sw.recon:
        if r.error_kind is not None:
            continue
        ent = server_entity(r.server, r.ip, r.port)
        q = r.raw.get("quarantined")
        if isinstance(q, dict):
            for k in QUARANTINE_KINDS:
                v = _num(q.get(k))
                if v is not None:
                    out.append((ent, f"quarantined_{k}", v))
        a = r.raw.get("async")
        if isinstance(a, dict) and _num(a.get("async_pending")) is not None:
            out.append((ent, "async_pending", float(a["async_pending"])))
    return out


def _age_h(s: float) -> str:
    return f"{s / 3600:.1f} h"


def replication(r: ReconHost) -> dict[str, object] | None:
    """last completed (epoch), duration (s), failures of the last pass, or None."""
    rep = r.raw.get(f"replication/{r.server}")
    if not isinstance(rep, dict):
        return None
    if r.server == "object":
        last = _num(rep.get("object_replication_last")) or _num(rep.get("replication_last"))
        took = _num(rep.get("object_replication_time"))
        took = took * 60 if took is not None else None  # object replicator: minutes
    else:
        last = _num(rep.get("replication_last"))
        took = _num(rep.get("replication_time"))
    stats = rep.get("replication_stats") if isinstance(rep.get("replication_stats"), dict) \
        else {}
    fails = _num(stats.get("failure")) if isinstance(stats, dict) else None
    tried = _num(stats.get("attempted")) if isinstance(stats, dict) else None
    return {"last": last, "duration_s": took, "failures": fails, "attempted": tried}


def _sweeps(r: ReconHost) -> list[tuple[str, float]]:
    """(daemon, seconds of the last sweep/pass) that recon reports for this server."""
    out: list[tuple[str, float]] = []
    up = r.raw.get(f"updater/{r.server}")
    if isinstance(up, dict):
        v = _num(up.get(f"{r.server}_updater_sweep"))
        if v is not None:
            out.append((f"{r.server}-updater", v))
    au = r.raw.get(f"auditor/{r.server}")
    if isinstance(au, dict):
        v = _num(au.get(f"{r.server}_auditor_pass_completed"))
        if v is not None:
            out.append((f"{r.server}-auditor", v))
        for key in ("object_auditor_stats_ALL", "object_auditor_stats_ZBF"):
            st = au.get(key)
            if isinstance(st, dict) and _num(st.get("audit_time")) is not None:
                out.append((f"object-auditor ({key.rsplit('_', 1)[1]})",
                            float(st["audit_time"])))
    ex = r.raw.get("expirer/object") if r.server == "object" else None
    if isinstance(ex, dict):
        v = _num(ex.get("object_expiration_pass"))
        if v is not None:
            out.append(("object-expirer", v))
    return out


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
            {"replication": r.raw.get(f"replication/{r.server}")}))
    if rep is not None and isinstance(rep["last"], float):
        age = max(0.0, now - rep["last"])
        if age > th.swift_replication_age_warn_s:
            crit = age > th.swift_replication_age_crit_s
            out.append(Finding(
                "SWIFT_REPLICATION_STALE", Severity.CRIT if crit else Severity.WARN, ent,
                f"{r.server} replication on {ep} has not completed for {_age_h(age)} "
                f"(warn {_age_h(th.swift_replication_age_warn_s)}, "
                f"crit {_age_h(th.swift_replication_age_crit_s)})",
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
    a = r.raw.get("async")
    pend = _num(a.get("async_pending")) if isinstance(a, dict) else None
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
    q = r.raw.get("quarantined")
    past = history.get(ent, {})
    if isinstance(q, dict):
        for k in QUARANTINE_KINDS:
            v = _num(q.get(k))
            base = past.get(f"quarantined_{k}")
            if v is None or base is None:
                continue
            grew = v - base[1]
            if grew >= th.swift_quarantine_growth_warn:
                out.append(Finding(
                    "SWIFT_QUARANTINE_GROWTH", Severity.WARN, ent,
                    f"quarantined {k} on {ep} grew by {grew:.0f} since "
                    f"{_age_h(now - base[0])} ago (now {v:.0f}; warn at "
                    f"+{th.swift_quarantine_growth_warn})",
                    {"kind": k, "now": v, "before": base[1], "before_at": base[0],
                     "growth": grew, "warn": th.swift_quarantine_growth_warn}))
    load = r.raw.get("load")
    l5 = _num(load.get("5m")) if isinstance(load, dict) else None
    if l5 is not None and l5 > th.swift_load5_warn:
        out.append(Finding(
            "SWIFT_LOAD_HIGH", Severity.WARN, ent,
            f"5-minute load {l5:g} on {r.ip} (warn above {th.swift_load5_warn:g})",
            {"load": dict(load) if isinstance(load, dict) else load,
             "warn": th.swift_load5_warn}))
    remote = _num(r.raw.get("time"))
    local = _num(r.raw.get("_local_time"))
    if remote is not None and local is not None:
        rtt = _num(r.raw.get("_rtt_s")) or 0.0
        drift = abs(remote - local) - rtt / 2
        if drift > th.swift_time_drift_max_s:
            out.append(Finding(
                "SWIFT_TIME_DRIFT", Severity.WARN, ent,
                f"clock of {r.ip} differs by {remote - local:+.1f} s from this host's "
                f"(max {th.swift_time_drift_max_s:g} s)",
                {"remote": remote, "local": local, "rtt_s": rtt,
                 "max_s": th.swift_time_drift_max_s}))
    ss = r.raw.get("sockstat")
    orphan = _num(ss.get("orphan")) if isinstance(ss, dict) else None
    if orphan is not None and orphan > th.swift_sockstat_orphan_warn:
        out.append(Finding(
            "SWIFT_SOCKSTAT_ORPHANS", Severity.WARN, ent,
            f"{orphan:.0f} orphaned TCP sockets on {r.ip} (warn above "
            f"{th.swift_sockstat_orphan_warn})", {"sockstat": dict(ss) if isinstance(
                ss, dict) else ss, "warn": th.swift_sockstat_orphan_warn}))
    da = r.raw.get("driveaudit")
    errs = _num(da.get("drive_audit_errors")) if isinstance(da, dict) else None
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
    for daemon, secs in _sweeps(r):
        if secs > th.swift_sweep_warn_s:
            out.append(Finding(
                "SWIFT_SWEEP_SLOW", Severity.WARN, ent,
                f"{daemon} on {r.ip}:{r.port}: last sweep took {_age_h(secs)} (warn above "
                f"{_age_h(th.swift_sweep_warn_s)})",
                {"daemon": daemon, "seconds": secs, "warn_s": th.swift_sweep_warn_s}))
    return out


_SERVER_PREF = {"object": 0, "container": 1, "account": 2}


def fill_findings(sw: SwiftState, ctx: CheckContext) -> list[Finding]:
    """Per ring device fill from recon diskusage (the object server's report preferred),
    and the spread between the devices of each ring."""
    th = ctx.thresholds
    usage: dict[tuple[str, str], tuple[float, dict[str, object]]] = {}
    for r in sorted(sw.recon, key=lambda h: _SERVER_PREF.get(h.server, 3)):
        for du in r.diskusage:
            size, used = _num(du.get("size")), _num(du.get("used"))
            if not du.get("mounted") or not size or used is None:
                continue
            usage.setdefault((r.ip, str(du.get("device"))),
                             (used / size, {"size": size, "used": used,
                                            "avail": du.get("avail"), "via": r.server}))
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    spread_seen: set[frozenset[tuple[str, str]]] = set()
    for ring in sorted(sw.rings, key=lambda g: _SERVER_PREF.get(g.kind.split("-")[0], 3)):
        fills: list[tuple[float, str]] = []
        for d in ring.devices:
            got = usage.get((d.ip, d.device))
            if got is None:
                continue
            fill, ev = got
            ent = f"{ring.kind} ring {d.endpoint}"
            fills.append((fill, ent))
            if fill >= th.swift_fill_warn and (d.ip, d.device) not in seen:
                seen.add((d.ip, d.device))
                crit = fill >= th.swift_fill_crit
                out.append(Finding(
                    "SWIFT_DEVICE_FULL", Severity.CRIT if crit else Severity.WARN, ent,
                    f"Swift device {d.device} on {d.ip} is {fill:.0%} full (warn "
                    f"{th.swift_fill_warn:.0%}, crit {th.swift_fill_crit:.0%})",
                    dict(ev, fill=round(fill, 4), device=d.device, ip=d.ip,
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
    hname, facts = _host_for(snap, r.ip)
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
    since = f"; its last pass completed {_age_h(max(0.0, now - last))} ago" \
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
    hname, facts = _host_for(snap, r.ip)
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
    ago = f"{age:.0f} s" if age < 120 else _age_h(age)
    return [Finding(
        "SWIFT_REPLICATOR_IDLE", Severity.WARN, server_entity(r.server, r.ip, r.port),
        message=f"swift-{r.server}-replicator on {hname} ({r.ip}) attempted nothing in its "
        f"last pass ({ago} ago){data}: it does not find itself in the {r.server} ring, "
        f"where this host's devices replicate at {', '.join(repl)}, not an address of "
        f"{hname}",
        evidence={"host": hname, "ip": r.ip, "server": r.server, "last": rep["last"],
                  "attempted": 0, "partitions": parts, "replication_addresses": repl,
                  "host_addresses": list(facts.addresses),
                  "manual": f"give the {r.server} ring's devices on {hname} a replication "
                  f"address {hname} has (now {', '.join(repl)}; `ip -br addr` there): "
                  f"`swift-ring-builder {r.server}.builder set_info --replication-ip OLD "
                  "--change-replication-ip NEW`, write_ring, push the ring; or, if the "
                  "address is right, bring it up on the host"})]


@check("swift-recon", codes=RECON_CODES, needs=("swift",))
def swift_recon(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    sw = snap.swift
    assert sw is not None
    out: list[Finding] = []
    nodes: set[str] = set()
    for r in sorted(sw.recon, key=lambda h: (_SERVER_PREF.get(h.server, 3), h.ip, h.port)):
        if r.error_kind is None:
            out.extend(host_findings(r, ctx, sw.history, node_level=r.ip not in nodes))
            out.extend(replicator_findings(r, snap, ctx.now or time.time()))
            out.extend(idle_findings(r, snap, ctx))
            nodes.add(r.ip)
    out.extend(fill_findings(sw, ctx))
    return out


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class ServerSummary:
    """One storage server's state for the TUI's Swift screen and Slack's ``ring``."""

    server: str
    ip: str
    port: int
    state: str  # "ok" or the error kind (refused, timeout, http, no-recon, ...)
    replication_age_s: float | None = None
    async_pending: float | None = None
    quarantined: float | None = None
    fill_max: float | None = None  # the fullest of its mounted devices, 0..1

    @property
    def endpoint(self) -> str:
        return f"{self.ip}:{self.port}"


def server_summaries(sw: SwiftState, now: float) -> list[ServerSummary]:
    """Replication age, async pendings, quarantines and fill per storage server (pure)."""
    ring_devs: dict[tuple[str, int], set[str]] = {}
    for ring in sw.rings:
        for d in ring.devices:
            ring_devs.setdefault((d.ip, d.port), set()).add(d.device)
    out: list[ServerSummary] = []
    for r in sorted(sw.recon, key=lambda h: (_SERVER_PREF.get(h.server, 3), h.ip, h.port)):
        if r.error_kind is not None:
            out.append(ServerSummary(r.server, r.ip, r.port, r.error_kind))
            continue
        rep = replication(r)
        last = rep["last"] if rep else None
        a = r.raw.get("async")
        q = r.raw.get("quarantined")
        mine = ring_devs.get((r.ip, r.port), set())
        fills = [float(du["used"]) / float(du["size"]) for du in r.diskusage
                 if du.get("mounted") and _num(du.get("size")) and _num(du.get("used"))
                 is not None and str(du.get("device")) in mine]
        out.append(ServerSummary(
            r.server, r.ip, r.port, "ok",
            replication_age_s=max(0.0, now - last) if isinstance(last, float) else None,
            async_pending=_num(a.get("async_pending")) if isinstance(a, dict) else None,
            quarantined=sum(_num(q.get(k)) or 0.0 for k in QUARANTINE_KINDS)
            if isinstance(q, dict) else None,
            fill_max=max(fills) if fills else None))
    return out
