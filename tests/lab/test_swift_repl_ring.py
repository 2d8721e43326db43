"""Replication and ring distribution on the real lab: a stopped replicator while objects
change (SWIFT_REPLICATOR_NOT_RUNNING at once over SSH, SWIFT_REPLICATION_STALE from recon's
last-completed time), one server with an older ring.gz (SWIFT_RING_MD5_MISMATCH) fixed by
`stordoc fix` with swift-ring-push over SSH/SFTP, and a rebalance that distributes its
ring before it is called verified."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from checks.engine import run_checks
from checks.model import Thresholds
from lab import Lab
from storage.collect import collect
from storage.swift import file_md5
from stordoc.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]


def cli(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stordoc", "--config", str(cfg), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
                          input="",
                          env={**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200"})


def findings(lab: Lab, th: Thresholds | None = None) -> list[tuple[str, str]]:
    target = load_settings(lab.config_path).cluster("lab").target("lab")
    rep = run_checks(collect(target), thresholds=th)
    return sorted((f.code, f.entity) for f in rep.findings if f.code.startswith("SWIFT_"))


def poll(fn: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(1.0)
    return fn()


IPS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")


def test_healthy_lab_replicates_and_has_no_finding_twice(lab: Lab) -> None:
    for kind in ("object", "container", "account"):
        last, _ = lab.replication_last(kind)
        assert last is not None, f"{kind} replicator never completed a pass"
    assert findings(lab) == []
    assert findings(lab) == []


def test_replicators_move_data_a_lost_container_db_comes_back(lab: Lab) -> None:
    """The replicators find their devices in the ring (replication_ip) and push a whole DB
    through the lab's rsync daemon: a container DB gone from d2 is back within passes."""
    import hashlib
    import shutil

    from storage.dispersion import hash_prefix_suffix

    pre, suf = hash_prefix_suffix()
    conn = lab.swift_cluster.conn()
    name, db = "", None
    try:
        for i in range(64):  # a container of ours that has a primary copy on d2
            name = f"stordoc-lab-repl-{i}"
            conn.put_container(name)
            h = hashlib.md5(pre + f"/AUTH_test/{name}".encode() + suf,
                            usedforsecurity=False).hexdigest()
            found = list((lab.swift_node / "d2" / "containers").glob(f"*/{h[-3:]}/{h}"))
            if found:
                db = found[0]
                break
            conn.delete_container(name)
        assert db is not None, "no container of 64 placed a copy on d2"
        shutil.rmtree(db)
        assert poll(lambda: (db / f"{db.name}.db").exists(), 120), \
            f"{db} not replicated back (see {lab.log_dir / 'swift-container-replicator.log'})"
    finally:
        conn.delete_container(name)
        conn.close()


def test_replicator_that_does_not_find_itself_in_the_ring_is_named(lab: Lab) -> None:
    """The object ring's replication address moves to 127.0.0.99: the replicator keeps
    completing passes (recon looks fine, no failures) that attempt nothing, while SSH finds
    partitions on every host: SWIFT_REPLICATOR_IDLE on each object server; healed, gone."""
    port = lab.ports.object
    conn = lab.swift_cluster.conn()
    conn.put_container("stordoc-lab-idle")
    try:
        for i in range(16):  # partitions on every host's devices, whatever ran before
            conn.put_object("stordoc-lab-idle", f"obj-{i}", contents=b"idle")
        msg = lab.break_("swift-replication-lost", server="object")
        assert "127.0.0.99" in msg
        idle = [("SWIFT_REPLICATOR_IDLE", f"object server {ip}:{port}") for ip in IPS]
        assert poll(lambda: findings(lab) == idle, 150), findings(lab)
    finally:
        lab.heal("swift-replication-lost")
        for i in range(16):
            conn.delete_object("stordoc-lab-idle", f"obj-{i}")
        conn.delete_container("stordoc-lab-idle")
        conn.close()
    assert poll(lambda: findings(lab) == [], 60), findings(lab)


def test_replication_stalled_is_named_and_heal_clears(lab: Lab) -> None:
    port = lab.ports.object
    try:
        msg = lab.break_("swift-replication-stalled", server="object")
        assert "swift-object-replicator stopped" in msg
        got = findings(lab)
        assert got == [("SWIFT_REPLICATOR_NOT_RUNNING", f"object server {ip}:{port}")
                       for ip in IPS]
        # recon's last completed pass no longer moves: with a threshold above the lab's
        # replication interval (10 s) its age crosses it while the others keep passing
        th = Thresholds(swift_replication_age_warn_s=30.0)
        stale = [("SWIFT_REPLICATION_STALE", f"object server {ip}:{port}") for ip in IPS]
        assert poll(lambda: set(stale) <= set(findings(lab, th)), 150)
        last, _ = lab.replication_last("object")
        assert last is not None and time.time() - last > 30
    finally:
        lab.heal("swift-replication-stalled", server="object")
    assert findings(lab) == []
    assert findings(lab, Thresholds(swift_replication_age_warn_s=60.0)) == []


def test_ring_stale_found_and_pushed_by_fix(lab: Lab, cfg: Path) -> None:
    port = lab.ports.object
    stale = lab.ring_dir("object") / "object.ring.gz"
    try:
        msg = lab.break_("swift-ring-stale", server="object")
        assert "every server but the object server" in msg
        new = file_md5(str(lab.swift_etc / "object.ring.gz"))
        old = file_md5(str(stale))
        assert new and old and new != old
        got = findings(lab)
        assert got == [("SWIFT_RING_MD5_MISMATCH", f"object ring {ip}:{port}") for ip in IPS]
        r = cli(cfg, "check")
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"with md5 {old}, not the local {new}" in " ".join(r.stdout.split())
        r = cli(cfg, "fix", "--finding", "SWIFT_RING_MD5_MISMATCH", "--entity",
                f"object ring 127.0.0.2:{port}", "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        out = " ".join(r.stdout.split())
        assert "swift-ring-push object" in out and "verified" in out
        assert f"{old} -> {new}" in out
        assert file_md5(str(stale)) == new
        baks = sorted(lab.ring_dir("object").glob("object.ring.gz.stordoc-*.bak"))
        assert len(baks) == 1 and file_md5(str(baks[0])) == old  # the backup it made
        # the untouched servers' copies were not rewritten (no backup beside them)
        for kind in ("container", "account"):
            assert not list(lab.ring_dir(kind).glob("*.stordoc-*"))
        assert findings(lab) == []
    finally:
        lab.heal("swift-ring-stale")
    assert findings(lab) == []


def test_push_refuses_a_file_changed_since_the_plan(lab: Lab, tmp_path: Path) -> None:
    from runbooks.api import RunContext, execute, plan_from_snapshot
    from storage.journal import Journal

    target = load_settings(lab.config_path).cluster("lab").target("lab")
    stale = lab.ring_dir("object") / "object.ring.gz"
    try:
        lab.break_("swift-ring-stale", server="object")
        ctx = RunContext("lab", target, Journal(tmp_path / "j.db"), user="tester",
                         verify_timeout_s=20)
        plan = plan_from_snapshot(ctx, collect(target), "swift-ring-push", "object")
        stale.write_bytes(stale.read_bytes() + b"\0")  # someone else changed it
        changed = file_md5(str(stale))
        res = execute(ctx, plan, confirmed_by="tester")
        assert res.outcome == "failed"
        text = " ".join(s.stderr for s in res.steps if s.stderr)
        assert "not replacing a file stordoc did not plan to replace" in text
        assert file_md5(str(stale)) == changed
        assert not list(lab.ring_dir("object").glob("*.stordoc-*"))
    finally:
        lab.heal("swift-ring-stale")
    assert findings(lab) == []


def test_stale_ring_of_a_stopped_server_is_seen_over_ssh(lab: Lab) -> None:
    """The object server is down (recon cannot tell its ring): the md5sum of each host's
    swift_ring_dirs over SSH still finds the older object.ring.gz it would start with."""
    stale = lab.ring_dir("object") / "object.ring.gz"
    try:
        lab.break_("swift-ring-stale", server="object")
        lab.break_("swift-server-stopped", server="object")
        got = findings(lab)
        for node in ("node1", "node2", "node3"):
            assert ("SWIFT_RING_MD5_MISMATCH", f"object ring {node}:{stale}") in got
        # what the other servers read is current: nothing said about their copies
        assert not [e for c, e in got if c == "SWIFT_RING_MD5_MISMATCH"
                    and ("/srv/container/" in e or "/srv/account/" in e)]
    finally:
        lab.heal("swift-server-stopped", server="object")
        lab.heal("swift-ring-stale")
    assert findings(lab) == []


def test_stopped_replicator_fixed_by_fix_and_verified(lab: Lab, cfg: Path) -> None:
    port = lab.ports.object
    try:
        lab.break_("swift-replication-stalled", server="object")
        r = cli(cfg, "fix", "--finding", "SWIFT_REPLICATOR_NOT_RUNNING", "--entity",
                f"object server 127.0.0.2:{port}", "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        out = " ".join(r.stdout.split())
        assert "swift-replicator-start object@node1" in out and "verified" in out
        assert "a replication pass completed on 1 endpoint(s)" in out
        # started the lab's way: its pid file is written, so `lab down` stops it
        assert lab.pid("swift-object-replicator") is not None
        r = cli(cfg, "fix", "swift-replicator-start", "object@node1", "--yes")
        assert r.returncode == 4 and "nothing to start" in r.stderr  # refused
    finally:
        lab.heal("swift-replication-stalled", server="object")
    assert findings(lab) == []
