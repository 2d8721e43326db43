"""Swift as its operators run it, on the real lab: a stopped storage server is a finding
(per server and port, confirmed over SSH), `stordoc fix` restarts it and verifies, and the
runbook refuses when the port is held by another process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from checks.engine import run_checks
from lab import Lab
from storage.collect import collect
from stordoc.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]


def cli(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stordoc", "--config", str(cfg), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
                          input="",
                          env={**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200"})


def swift_findings(lab: Lab) -> list[tuple[str, str]]:
    target = load_settings(lab.config_path).cluster("lab").target("lab")
    rep = run_checks(collect(target))
    return sorted((f.code, f.entity) for f in rep.findings if f.code.startswith("SWIFT_"))


def poll(fn: Callable[[], bool], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(0.5)
    return fn()


@pytest.fixture
def stopped(lab: Lab) -> Iterator[Callable[[str], str]]:
    done: list[str] = []

    def stop(server: str) -> str:
        done.append(server)
        return lab.break_("swift-server-stopped", server=server)

    yield stop
    for server in done:
        lab.heal("swift-server-stopped", server=server)


def test_healthy_lab_has_no_swift_finding_twice(lab: Lab) -> None:
    assert swift_findings(lab) == []
    assert swift_findings(lab) == []


def test_object_server_stopped_exit_2_and_fix_restarts_it(
        lab: Lab, cfg: Path, stopped: Callable[[str], str]) -> None:
    stopped("object")
    port = lab.ports.object
    r = cli(cfg, "check")
    assert r.returncode == 2, r.stdout + r.stderr
    for ip, node in (("127.0.0.2", "node1"), ("127.0.0.3", "node2"), ("127.0.0.4", "node3")):
        assert f"SWIFT_SERVER_DOWN  object server {ip}:{port}" in r.stdout
        assert f"nothing listens on port {port} on {node}" in r.stdout
    r = cli(cfg, "fix", "--finding", "SWIFT_SERVER_DOWN", "--entity",
            f"object server 127.0.0.2:{port}", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "swift-server-start object@node1" in r.stdout and "verified" in r.stdout
    # started the lab's way: its pid file is written, so `lab down` stops it
    assert lab.pid("swift-object") is not None
    assert lab.swift_server_answers("object")
    # the replicators' pass during the outage failed for real (connection refused): that
    # consequence clears with their next pass, not at once
    assert poll(lambda: swift_findings(lab) == [], 90), swift_findings(lab)


@pytest.mark.parametrize("server", ["container", "account"])
def test_start_refused_while_the_port_is_held_then_heal_clears(
        lab: Lab, cfg: Path, stopped: Callable[[str], str], server: str) -> None:
    stopped(server)
    port = getattr(lab.ports, server)
    assert (("SWIFT_SERVER_DOWN", f"{server} server 127.0.0.4:{port}")
            in swift_findings(lab))
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.9", port))
    squatter.listen(1)
    try:
        r = cli(cfg, "fix", "swift-server-start", f"{server}@node3", "--yes")
        assert r.returncode != 0
        assert f"port {port} on node3 is held by pid {os.getpid()}" in r.stdout + r.stderr
        assert lab.pid(f"swift-{server}") is None  # nothing was started
    finally:
        squatter.close()
    lab.heal("swift-server-stopped", server=server)
    assert poll(lambda: swift_findings(lab) == [], 90), swift_findings(lab)


def test_device_full_names_the_device_and_heal_clears(lab: Lab) -> None:
    lab.break_("swift-device-full", device="d2")
    try:
        got = swift_findings(lab)
        port = lab.ports.object
        assert ("SWIFT_DEVICE_FULL", f"object ring d2@127.0.0.3:{port}") in got
        assert ("SWIFT_FILL_SPREAD", "object ring") in got
        assert {c for c, _ in got} == {"SWIFT_DEVICE_FULL", "SWIFT_FILL_SPREAD"}
    finally:
        lab.heal("swift-device-full", device="d2")
    assert swift_findings(lab) == []


def test_quarantine_growth_from_history_and_heal(lab: Lab, tmp_path: Path) -> None:
    from checks.service import check_cluster
    from storage.journal import Journal

    target = load_settings(lab.config_path).cluster("lab").target("lab")
    j = Journal(tmp_path / "journal.db")

    def swift_codes() -> list[tuple[str, str]]:
        out = check_cluster(target, journal=j, host_facts=False)
        return sorted((f.code, f.entity) for f in out.report.findings
                      if f.code.startswith("SWIFT_"))

    try:
        assert swift_codes() == []  # the baseline sample
        msg = lab.break_("swift-quarantine")
        assert "the auditor quarantined 12" in msg
        got = swift_codes()
        port = lab.ports.object
        assert ("SWIFT_QUARANTINE_GROWTH", f"object server 127.0.0.2:{port}") in got
        assert {c for c, _ in got} == {"SWIFT_QUARANTINE_GROWTH"}
    finally:
        lab.heal("swift-quarantine")
    assert swift_codes() == []
    assert swift_codes() == []
    j.close()


def test_async_pending_named_and_cleared_by_heal(lab: Lab) -> None:
    try:
        msg = lab.break_("swift-async-pending")
        assert "120 async pendings" in msg
        got = swift_findings(lab)
        port = lab.ports.object
        for ip in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
            assert ("SWIFT_ASYNC_PENDING", f"object server {ip}:{port}") in got
            assert ("SWIFT_SERVER_DOWN", f"container server {ip}:{lab.ports.container}") in got
    finally:
        lab.heal("swift-async-pending")
    assert swift_findings(lab) == []
