"""Recon numbers judged with thresholds, on the lab's captured recon JSON (and that JSON
changed the way a sick cluster reports it), plus history through a real SQLite journal."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from checks.engine import run_checks
from checks.model import CheckContext, Thresholds
from checks.swift_recon import fill_findings, host_findings, recon_samples
from storage.journal import Journal
from storage.model import ClusterSnapshot, RingDevice, RingState, SwiftState
from storage.swift import recon_from_raw
from storage.swifthist import SwiftHistory

FIX = Path(__file__).parents[1] / "fixtures" / "swift"
# the lab with its replicators running (a pass every 10 s); the older capture is of a
# lab whose replicators never ran (null replication stats)
RAW = json.loads((FIX / "recon-lab-replicating.json").read_text())
NEVER = json.loads((FIX / "recon-lab-healthy.json").read_text())
NOW = RAW["object"]["replication/object"]["object_replication_last"] + 60.0
T = Thresholds()


def raw(server: str, **changes: Any) -> dict[str, Any]:
    r = copy.deepcopy(RAW[server])
    r.update(changes)
    return r


def host(server: str, port: int = 6200, ip: str = "127.0.0.3", **changes: Any):
    return recon_from_raw(ip, port, server, raw(server, **changes))


def codes(fs: list) -> list[tuple[str, str, str]]:
    return sorted((f.code, f.severity.label, f.entity) for f in fs)


def test_healthy_lab_recon_gives_nothing() -> None:
    ctx = CheckContext(T, NOW)
    for server in ("object", "container", "account"):
        assert host_findings(host(server), ctx, {}) == []


def test_replication_age_warn_then_crit_and_failures() -> None:
    ctx = CheckContext(T, NOW)
    rep = {"object_replication_last": NOW - 4 * 3600, "object_replication_time": 3.0,
           "replication_stats": {"failure": 25, "success": 100}}
    fs = host_findings(host("object", **{"replication/object": rep}), ctx, {})
    assert codes(fs) == [("SWIFT_REPLICATION_FAILURES", "warn", "object server 127.0.0.3:6200"),
                         ("SWIFT_REPLICATION_STALE", "warn", "object server 127.0.0.3:6200")]
    stale = next(f for f in fs if f.code == "SWIFT_REPLICATION_STALE")
    assert "has not completed for 4.0 h" in stale.message
    assert stale.evidence["duration_s"] == 180.0  # object replicator reports minutes
    rep2 = {"replication_last": NOW - 13 * 3600, "replication_time": 5.0,
            "replication_stats": {"failure": 0}}
    fs = host_findings(host("container", **{"replication/container": rep2}), ctx, {})
    assert codes(fs) == [("SWIFT_REPLICATION_STALE", "crit", "container server 127.0.0.3:6200")]
    assert host_findings(host("account"), ctx, {}) == []


def test_null_replication_is_judged_never() -> None:
    """A replicator that never completed a pass (recon's replication stats all null) is
    a finding of its own, per server; a server that did not answer that request is not."""
    ctx = CheckContext(T, NOW)
    for server in ("object", "container", "account"):
        h = recon_from_raw("127.0.0.3", 6200, server, copy.deepcopy(NEVER[server]))
        fs = host_findings(h, ctx, {})
        assert codes(fs) == [("SWIFT_REPLICATION_NEVER", "warn",
                              f"{server} server 127.0.0.3:6200")]
        assert "never completed a pass" in fs[0].message
        gone = {k: v for k, v in NEVER[server].items() if not k.startswith("replication/")}
        assert host_findings(recon_from_raw("127.0.0.3", 6200, server, gone), ctx, {}) == []


def test_async_pending_thresholds() -> None:
    ctx = CheckContext(Thresholds(swift_async_pending_warn=5, swift_async_pending_crit=50), NOW)
    assert host_findings(host("object", **{"async": {"async_pending": 4}}), ctx, {}) == []
    fs = host_findings(host("object", **{"async": {"async_pending": 7}}), ctx, {})
    assert codes(fs) == [("SWIFT_ASYNC_PENDING", "warn", "object server 127.0.0.3:6200")]
    fs = host_findings(host("object", **{"async": {"async_pending": 50}}), ctx, {})
    assert fs[0].severity.label == "crit"


def test_time_load_sockstat_driveaudit_sweeps() -> None:
    ctx = CheckContext(T, NOW)
    h = host("object", time=NOW + 30, load={"1m": 80, "5m": 70.5, "15m": 60},
             sockstat={"orphan": 9000}, driveaudit={"drive_audit_errors": 2},
             _local_time=NOW, _rtt_s=0.01,
             **{"updater/object": {"object_updater_sweep": 7 * 3600.0},
                "expirer/object": {"object_expiration_pass": 10.0}})
    got = {f.code for f in host_findings(h, ctx, {})}
    assert got == {"SWIFT_TIME_DRIFT", "SWIFT_LOAD_HIGH", "SWIFT_SOCKSTAT_ORPHANS",
                   "SWIFT_DRIVE_AUDIT_ERRORS", "SWIFT_SWEEP_SLOW"}


def _rings(ip_dev: list[tuple[str, str]]) -> tuple[RingState, ...]:
    devs = tuple(RingDevice(i, 1, i, ip, 6200, d, 100.0, 128)
                 for i, (ip, d) in enumerate(ip_dev))
    return (RingState("object", "/x/object.ring.gz", "/x/object.builder", 9, 3.0, 1, devs),)


def test_device_fill_names_the_ring_device_and_spread() -> None:
    rings = _rings([("127.0.0.2", "d1"), ("127.0.0.3", "d2")])
    usage = ({"device": "d1", "mounted": True, "size": 100, "used": 10, "avail": 90},
             {"device": "d2", "mounted": True, "size": 100, "used": 93, "avail": 7})
    # every host reports every directory under devices (the lab's hosts share one):
    # only the ring's (ip, device) pairs count
    recon = tuple(recon_from_raw(ip, 6200, "object", {"diskusage": list(usage)})
                  for ip in ("127.0.0.2", "127.0.0.3"))
    sw = SwiftState(rings, recon, collected_at=NOW)
    fs = fill_findings(sw, CheckContext(T, NOW))
    assert codes(fs) == [("SWIFT_DEVICE_FULL", "crit", "d2@127.0.0.3"),
                         ("SWIFT_FILL_SPREAD", "warn", "object ring")]
    assert "93% full" in fs[0].message


def test_quarantine_growth_from_the_journal(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    hist = SwiftHistory(j)
    day = 86400.0

    def sw_with(q: int, at: float) -> SwiftState:
        h = host("object", quarantined={"objects": q, "containers": 0, "accounts": 0,
                                        "policies": {}})
        return SwiftState((), (h,), collected_at=at)

    for at, q in ((NOW - 2 * day, 1), (NOW - 1.1 * day, 5), (NOW - 3600, 30)):
        hist.record("lab", at, recon_samples(sw_with(q, at)), day)
    base = hist.baseline("lab", NOW, day)
    ent = "object server 127.0.0.3:6200"
    # the newest sample at least a day old: 5 objects 1.1 days ago
    assert base[ent]["quarantined_objects"] == (NOW - 1.1 * day, 5.0)
    sw = SwiftState((), sw_with(45, NOW).recon, collected_at=NOW, history=base)
    rep = run_checks(ClusterSnapshot("lab", NOW, swift=sw), T, now=NOW)
    (f,) = [f for f in rep.findings if f.code == "SWIFT_QUARANTINE_GROWTH"]
    assert f.entity == ent and f.evidence["growth"] == 40.0
    assert "grew by 40 since 26.4 h ago" in f.message
    # below the threshold: nothing
    sw2 = SwiftState((), sw_with(14, NOW).recon, collected_at=NOW, history=base)
    assert not [f for f in run_checks(ClusterSnapshot("lab", NOW, swift=sw2), T,
                                      now=NOW).findings if f.code == "SWIFT_QUARANTINE_GROWTH"]
    j.close()


@pytest.mark.parametrize("key", ["swift_fill_warn", "swift_async_pending_warn"])
def test_thresholds_come_from_the_settings(key: str) -> None:
    from core.settings import ThresholdSettings

    th = ThresholdSettings(**{key: 0.5 if "fill" in key else 3}).apply(Thresholds())
    assert getattr(th, key) == (0.5 if "fill" in key else 3)


def test_server_summary_in_tui_rows_and_slack_ring() -> None:
    from bot.render import ring_reply
    from checks.swift_recon import server_summaries
    from tui.views import server_rows

    rings = _rings([("127.0.0.3", "d2")])
    rep = {"object_replication_last": NOW - 7200}
    ok = host("object", **{"replication/object": rep, "async": {"async_pending": 7},
                            "quarantined": {"objects": 3, "containers": 1, "accounts": 0}})
    down = recon_from_raw("127.0.0.4", 6200, "object", {}, "refused", "refused")
    sw = SwiftState(rings, (ok, down), collected_at=NOW)
    s = server_summaries(sw, NOW)
    assert [(x.endpoint, x.state) for x in s] == [("127.0.0.3:6200", "ok"),
                                                  ("127.0.0.4:6200", "refused")]
    assert s[0].replication_age_s == 7200 and s[0].async_pending == 7
    assert s[0].quarantined == 4 and s[0].fill_max is not None
    rows = server_rows(sw, NOW)
    assert rows[0].cells[3:6] == ("2h00m ago", "7", "4")
    assert rows[1].cells[2] == "REFUSED"
    text = json.dumps([m.__dict__ for m in ring_reply("lab", sw, "object").messages], default=str)
    assert "replicated 2h00m ago, async 7, quarantined 4, fill 7%" in text
    assert "`127.0.0.4:6200` refused" in text


def test_server_missing_a_ring_file_is_a_md5_mismatch() -> None:
    from checks.engine import run_checks as rc

    h = recon_from_raw("127.0.0.3", 6200, "object",
                       {"ringmd5": {"/etc/swift/account.ring.gz": "a" * 32}})
    sw = SwiftState((), (h,), collected_at=NOW,
                    local_ring_md5={"/x/account.ring.gz": "a" * 32,
                                    "/x/object.ring.gz": "b" * 32})
    got = [(f.code, f.entity) for f in rc(ClusterSnapshot("lab", NOW, swift=sw), T,
                                          now=NOW).findings if f.code.startswith("SWIFT_RING")]
    assert got == [("SWIFT_RING_MD5_MISMATCH", "object ring 127.0.0.3:6200")]
