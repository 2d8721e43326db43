"""Start the stopped replicator of a Swift storage server on a host, with the host's
``swift_replicator_start`` template, and wait until recon reports a new pass."""

from __future__ import annotations

import time

from runbooks.base import Draft, Runbook, fill_template, host_of, register
from runbooks.model import Probe, Refused, RunbookInfo, StepEnv
from runbooks.swift.common import server_on_host
from storage.model import ClusterSnapshot


def replication_pass_probe(endpoints: list[tuple[str, int, str]], after: float,
                           timeout_s: float) -> Probe:
    """A WaitOp probe: recon of every endpoint reports a replication pass completed after
    ``after`` (the replicator runs and gets through a pass)."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        from checks.swift_recon import replication
        from storage.swift import fetch_recon

        for ip, port, server in endpoints:
            r = fetch_recon(ip, port, server, timeout_s)
            rep = replication(r) if r.error_kind is None else None
            last = rep["last"] if rep else None
            if not isinstance(last, float) or last <= after:
                return False, (f"{server} {ip}:{port}: last replication pass "
                               f"{'never' if last is None else f'at {last:.0f}'}, "
                               f"waiting for one after {after:.0f}")
        return True, f"a replication pass completed on {len(endpoints)} endpoint(s)"

    return probe


@register
class SwiftReplicatorStart(Runbook):
    info = RunbookInfo(
        "swift-replicator-start",
        "Start the stopped replicator of a Swift storage server on a host with the host's "
        "swift_replicator_start template; wait until recon reports a new pass.",
        ("SWIFT_REPLICATOR_NOT_RUNNING",), destructive=False, target_kind="swift-server",
        target_help="SERVER@HOST, e.g. object@node1")
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        from checks.swift_recon import replicator_findings

        server, swift, ht = server_on_host(d, snap, target)
        host_of(d.ctx, snap, ht.name, f"{server} replicator")
        recon = [r for r in swift.recon if r.server == server and r.ip == ht.address]
        if not recon:
            raise Refused(f"no {server} ring lists a device on {ht.name} ({ht.address})")
        now = time.time()
        stopped = [r for r in recon if replicator_findings(r, snap, now)]
        if not stopped:
            raise Refused(f"the {server} replicator on {ht.name} is not known to be stopped "
                          "(its server does not answer, or a replicator on its config "
                          "runs): nothing to start")
        argv = fill_template(ht.swift_replicator_start, {"server": server},
                             f"host {ht.name} swift_replicator_start")
        d.params.update(server=server, host=ht.name)
        d.host(f"start the {server} replicator on {ht.name}", ht.name, argv)
        endpoints = sorted({(r.ip, r.port, server) for r in stopped})
        timeout = d.ctx.target.swift.recon_timeout_s if d.ctx.target.swift else 5.0
        d.wait(f"wait until recon reports a {server} replication pass after now",
               "GET " + " ".join(f"http://{ip}:{p}/recon/replication/{server}"
                                 for ip, p, _ in endpoints),
               replication_pass_probe(endpoints, now, timeout), where="swift")
        d.verify_codes = ("SWIFT_REPLICATOR_NOT_RUNNING", "SWIFT_REPLICATION_STALE",
                          "SWIFT_REPLICATION_NEVER")
        d.verify_entities = tuple(f"{server} server {ip}:{p}" for ip, p, _ in endpoints)
        d.verify_host_facts = True
