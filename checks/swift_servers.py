"""Swift storage servers that do not answer recon, told apart by why: connection refused
(the process is down; over SSH the host's listening sockets and Swift processes confirm
it), timeout, an HTTP error, or a server that answers but has no recon middleware. The
proxy's healthcheck stays green in all of these.
"""

from __future__ import annotations

from collections.abc import Iterable

from checks.daemons import status_on
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import ClusterSnapshot, DaemonLife, HostFacts, ReconHost

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


def host_for(snap: ClusterSnapshot, ip: str) -> tuple[str | None, HostFacts | None]:
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
    hname, facts = host_for(snap, r.ip)
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
            procs = conf.get("swift_processes")
            n = len(procs) if isinstance(procs, list) else 0
            extra = f" (confirmed over SSH: nothing listens on port {r.port}{where}" + \
                (f"; {n} other swift-{r.server}-server process(es) run there" if n else "") + ")"
        elif conf.get("port_free") is False:
            extra = f" ({conf['ssh']}{where})"
        life = status_on(facts, f"swift-{r.server}-server") if facts is not None else None
        if life is not None and life.life is not DaemonLife.RUNNING:
            ev["daemon"] = {"name": life.name, "life": life.life.value, "summary": life.summary}
            extra += f"; its daemon {life.summary}"
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


@check("swift-servers", codes=CODES, needs=("swift",), reads=("hosts",))
def swift_servers(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    sw = snap.swift
    assert sw is not None
    out: list[Finding] = []
    for r in sw.recon:
        out.extend(server_findings(r, snap))
    return out
