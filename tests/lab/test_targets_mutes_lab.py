"""Issue #26.3 and #26.4 on the real lab: a lock on ``d1@node1`` refuses the same device
named by address or another spelling (the issue's reproduction: ``d1@127.0.0.2 --yes``
used to mount d1 beside the held run); and a real dead monitor under an older version's
mute of CEPH_UNREACHABLE is exit 3, never "OK ... muted"; nor is a partial check
(``--only OSD_DOWN_OUT``, issue #37.3) "OK ... no incidents".

The canonicaliser, every host-qualified runbook's plan, the bot and the engine's mute
rules: tests/unit/test_host_targets.py and tests/unit/test_mute_cannot_look.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from lab import Lab
from storage.audit import Audit
from storage.journal import Journal
from storage.mutes import add_mute
from tests.support.cli import cli


@pytest.mark.on_reef
def test_a_lock_on_d1_at_node1_refuses_every_other_spelling(lab: Lab, cfg: Path,
                                                             tmp_path: Path) -> None:
    mp = lab.swift_node / "d1"
    lab.break_("swift-device-unmounted", device="d1")
    journal = Journal(str(tmp_path / "journal.db"))
    try:
        audit = Audit(journal)
        # the first run's lock, held by a live process (this one), as `fix` takes it
        lid = audit.acquire("lab", "d1@node1", "alice", "swift-device-remount d1@node1")
        for spelt in ("d1@127.0.0.2", "d1@NODE1."):
            r = cli(cfg, "fix", "swift-device-remount", spelt, "--yes")
            assert r.returncode != 0, (spelt, r.stdout, r.stderr)
            assert "locked by alice" in r.stdout + r.stderr, (spelt, r.stdout, r.stderr)
            assert not os.path.ismount(mp)  # nothing mounted beside the held run
        r = cli(cfg, "fix", "swift-device-remount", "d1@n\u043ede1", "--yes")
        assert r.returncode == 64 and "did you mean node1?" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not os.path.ismount(mp)
        audit.release(lid)
        # free again: the address spelling runs, planned, locked and audited as node1
        r = cli(cfg, "fix", "swift-device-remount", "d1@127.0.0.2", "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "d1@node1" in r.stdout and "d1@127.0.0.2" not in r.stdout
        assert os.path.ismount(mp)
        ran = [(a.runbook, a.target) for a in audit.runs(cluster="lab")]
        assert ran and set(ran) == {("swift-device-remount", "d1@node1")}, ran
        assert audit.locks("lab") == []
    finally:
        journal.close()
        if not os.path.ismount(mp):
            lab.heal("swift-device-unmounted", device="d1")
        else:  # remounted by the fix: only the replication passes that failed remain
            lab.swift_cluster.settle_replication("after test_targets_mutes_lab")


@pytest.mark.on_reef
def test_a_dead_monitor_under_a_mute_is_unreachable(lab: Lab, cfg: Path,
                                                    tmp_path: Path) -> None:
    """The lab's one monitor stopped for real (the honest outage; it costs one check's
    Ceph timeout and a monitor start)."""
    r = cli(cfg, "mute", "CEPH_UNREACHABLE", "--for", "1m", "--reason", "mon swap")
    assert r.returncode == 64 and "cannot be muted" in r.stderr, r.stderr
    journal = Journal(str(tmp_path / "journal.db"))
    # what an older version let through (from Slack, for 30 days)
    add_mute(journal, "lab", "CEPH_UNREACHABLE", None, time.time() + 30 * 86400,
             "slack:UOLD", "mon swap")
    journal.close()
    # the Ceph timeout cut to 3 s (the hosts' stays): the outage costs less CI time
    text = cfg.read_text()
    cut = text.replace('client = "client.admin"\ntimeout = 10', 'client = "client.admin"\ntimeout = 3')
    assert cut != text
    cfg.write_text(cut)
    assert lab.stop("mon.a")
    try:
        r = cli(cfg, "check", "--json")
        assert r.returncode == 3, r.stdout + r.stderr
        doc = json.loads(r.stdout)
        assert doc["status"] == "unreachable"
        assert [f["code"] for f in doc["findings"]][:1] == ["CEPH_UNREACHABLE"]
        assert doc["mute_ignored"] == [{"code": "CEPH_UNREACHABLE", "entity": "cluster lab",
                                        "why": "cannot see the cluster"}]
        assert doc["headline"].startswith("UNREACHABLE lab")  # the text: unit-tested
        # issue #37.3: a partial check that could not look is unreachable, never "OK lab:
        # no incidents" (the Swift and host cases: tests/unit/test_partial_unseen.py)
        r = cli(cfg, "check", "--only", "OSD_DOWN_OUT")
        assert r.returncode == 3, r.stdout + r.stderr
        # the unreachable cluster's incident is led by its cause, the stopped monitor
        # (issue 38.4: a stopped mon takes CEPH_UNREACHABLE into its incident), and the
        # last line starts it
        head = r.stdout.splitlines()[0]
        assert head.startswith("UNREACHABLE lab: DAEMON_STOPPED mon.a") and \
            "Ceph monitors unreachable" in head, r.stdout
        assert r.stdout.rstrip().endswith("next: stordoc fix daemon-start mon.a"), r.stdout
        assert "no incidents" not in r.stdout
    finally:
        lab.start_mon()
