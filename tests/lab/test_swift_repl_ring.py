"""Replication and ring distribution on the real lab: the replicators really move data (a
lost container DB comes back), a ring push refuses a file changed since its plan, and an
older ring.gz of a stopped server is still seen over SSH. The replicator stopped or lost
in the ring and the stale ring, each broken and repaired for real: test_scenarios.py;
their findings from snapshots (SWIFT_REPLICATION_STALE under a lower threshold among
them): tests/unit/test_replay.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.engine import run_checks
from checks.model import Thresholds
from core.settings import load_settings
from lab import Lab
from storage.collect import collect
from storage.swift import file_md5
from tests.support.poll import wait_until


def findings(lab: Lab, th: Thresholds | None = None) -> list[tuple[str, str]]:
    target = load_settings(lab.config_path).cluster("lab").target("lab")
    rep = run_checks(collect(target), thresholds=th)
    return sorted((f.code, f.entity) for f in rep.findings if f.code.startswith("SWIFT_"))


IPS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")


@pytest.mark.release
def test_healthy_lab_replicates_and_has_no_finding_twice(lab: Lab) -> None:
    for kind in ("object", "container", "account"):
        last, _ = lab.replication_last(kind)
        assert last is not None, f"{kind} replicator never completed a pass"
    assert findings(lab) == []
    assert findings(lab) == []


@pytest.mark.release
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
        wait_until(lambda: (db / f"{db.name}.db").exists(), 120,
                   f"{db} replicated back (see {lab.log_dir / 'swift-container-replicator.log'})")
    finally:
        conn.delete_container(name)
        conn.close()


@pytest.mark.on_reef
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


@pytest.mark.on_reef
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
