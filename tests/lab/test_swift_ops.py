"""A stopped Swift storage server fixed by finding (`stordoc fix --finding CODE --entity`),
on the real lab: refused while another process holds its port (nothing started), then
started the lab's way and verified once the port is free. The server stopped, device full,
quarantine and async pending scenarios: test_scenarios.py (live, both releases) and
tests/unit/test_replay.py (their snapshots)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from checks.engine import run_checks
from core.settings import load_settings
from lab import Lab
from storage.collect import collect
from tests.support.cli import cli
from tests.support.poll import wait_until


def swift_findings(lab: Lab) -> list[tuple[str, str]]:
    target = load_settings(lab.config_path).cluster("lab").target("lab")
    rep = run_checks(collect(target))
    return sorted((f.code, f.entity) for f in rep.findings if f.code.startswith("SWIFT_"))


@pytest.mark.on_reef
def test_fix_by_finding_refused_while_the_port_is_held_then_runs(lab: Lab, cfg: Path) -> None:
    server = "container"
    port = lab.ports.container
    entity = f"{server} server 127.0.0.4:{port}"
    lab.break_("swift-server-stopped", server=server)
    try:
        assert ("SWIFT_SERVER_DOWN", entity) in swift_findings(lab)
        squatter = socket.socket()
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.9", port))
        squatter.listen(1)
        try:
            # the lab's one container server serves every node: one incident, rooted on
            # node1, whose fix (the start there) refuses while the port is held: said so
            r = cli(cfg, "fix", "--finding", "SWIFT_SERVER_DOWN", "--entity", entity, "--yes")
            assert r.returncode == 4, r.stdout + r.stderr
            assert "no runbook runs now" in r.stderr and \
                f"port {port} on node1 is held by pid {os.getpid()}" in r.stderr, r.stderr
            assert lab.pid(f"swift-{server}") is None  # nothing was started
        finally:
            squatter.close()
        r = cli(cfg, "fix", "--finding", "SWIFT_SERVER_DOWN", "--entity", entity, "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"swift-server-start {server}@node1" in r.stdout and "verified" in r.stdout
        assert "a consequence of SWIFT_SERVER_DOWN" in r.stdout, r.stdout  # node3's: the root's
        # started the lab's way: its pid file is written, so `lab down` stops it
        assert lab.pid(f"swift-{server}") is not None
        assert lab.swift_server_answers(server)
    finally:
        lab.heal("swift-server-stopped", server=server)
    # the replicators' passes during the outage failed for real: that consequence clears
    # with their next pass, not at once
    wait_until(lambda: swift_findings(lab) == [], 90, "no Swift finding", 1.0)
