"""Start a stopped Swift storage server (account, container or object) on a host, with
the host's ``swift_server_start`` template; refused when its port is held by another
process."""

from __future__ import annotations

from runbooks.base import Draft, Runbook, fill_template, host_of, register
from runbooks.model import Probe, Refused, RunbookInfo, StepEnv
from runbooks.swift.common import server_on_host
from storage.model import ClusterSnapshot


def recon_answers_probe(endpoints: list[tuple[str, int, str]], timeout_s: float) -> Probe:
    """A WaitOp probe: every one of these storage servers answers recon again."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        from storage.swift import fetch_recon

        for ip, port, server in endpoints:
            r = fetch_recon(ip, port, server, timeout_s, full=False)
            if r.error_kind is not None:
                return False, f"{server} server {ip}:{port}: {r.error_kind}: {r.error}"
        return True, f"recon answers on {len(endpoints)} endpoint(s)"

    return probe


@register
class SwiftServerStart(Runbook):
    info = RunbookInfo(
        "swift-server-start",
        "Start a stopped Swift storage server (account/container/object) on a host with the "
        "host's swift_server_start template; refused when its port is held by another "
        "process.",
        ("SWIFT_SERVER_DOWN",), destructive=False, target_kind="swift-server",
        target_help="SERVER@HOST, e.g. object@node1")
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        server, swift, ht = server_on_host(d, snap, target)
        recon = [r for r in swift.recon if r.server == server and r.ip == ht.address]
        if not recon:
            raise Refused(f"no {server} ring lists a device on {ht.name} ({ht.address})")
        down = [r for r in recon if r.error_kind in ("refused", "unreachable")]
        if not down:
            kinds = ", ".join(sorted({r.error_kind or "answers" for r in recon}))
            raise Refused(f"the {server} server on {ht.name} is not down ({kinds}): nothing "
                          "to start")
        _, facts = host_of(d.ctx, snap, ht.name, f"{server} server")
        ports = sorted({r.port for r in down})
        if facts.listeners is None:
            raise Refused(f"cannot see the listening sockets on {ht.name} (no ss): refusing to "
                          "start a server whose port may be in use")
        for port in ports:
            held = facts.listeners.get(port)
            if held is not None:
                raise Refused(f"port {port} on {ht.name} is held by pid {held[0]} "
                              f"({held[1] or '?'}): not starting a second {server} server")
        argv = fill_template(ht.swift_server_start, {"server": server},
                             f"host {ht.name} swift_server_start")
        d.params.update(server=server, host=ht.name, ports=ports)
        d.host(f"start the {server} server on {ht.name}", ht.name, argv)
        endpoints = sorted({(r.ip, r.port, server) for r in down})
        timeout = d.ctx.target.swift.recon_timeout_s if d.ctx.target.swift else 5.0
        d.wait(f"wait until the {server} server answers recon",
               "GET " + " ".join(f"http://{ip}:{p}/recon/unmounted" for ip, p, _ in endpoints),
               recon_answers_probe(endpoints, timeout), where="swift")
        d.verify_codes = ("SWIFT_SERVER_DOWN", "SWIFT_SERVER_TIMEOUT")
        d.verify_entities = tuple(f"{server} server {ip}:{p}" for ip, p, _ in endpoints)
        d.verify_host_facts = True
