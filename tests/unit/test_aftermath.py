"""runbooks.aftermath: what the cluster still does after a fix, from PG states and Ceph's
progress events (the shape `ceph progress json` returns on Pacific), and the follow loop."""

from __future__ import annotations

import threading
from typing import Any

from runbooks.aftermath import Aftermath, aftermath_of, follow, worth_following

NOW = 1_795_000_000.0
PROGRESS = {"events": [{"message": "Global Recovery Event", "id": "3e1c",
                        "progress": 0.25, "started_at": "2026-11-17T04:26:00.000000Z",
                        "refs": []}], "completed": []}


def test_peering_pgs_are_not_serving_and_said_so() -> None:
    am = aftermath_of({"peering": 19, "activating": 14}, 33, None, NOW)
    assert not am.clean and am.unclean == 33 and am.inactive == 33
    assert am.line.startswith("peering: 33 of 33 PGs not active+clean (19 peering, ")
    assert "33 not serving I/O yet" in am.line


def test_recovery_with_cephs_progress_event_and_eta() -> None:
    start = NOW - 30.0
    import datetime as dt
    ev = dict(PROGRESS["events"][0], started_at=dt.datetime.fromtimestamp(
        start, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    am = aftermath_of({"active+clean": 21, "active+recovering+degraded": 12}, 33,
                      {"events": [ev]}, NOW)
    assert am.inactive == 0 and am.unclean == 12
    assert am.eta_s is not None and abs(am.eta_s - 90.0) < 1.0  # 30 s for 25 %
    assert "Ceph: Global Recovery Event 25%" in am.line and "ETA 90 s" in am.line


def test_clean_and_follow_stops_at_clean() -> None:
    states = iter([aftermath_of({"peering": 3, "active+clean": 30}, 33, None, NOW),
                   aftermath_of({"peering": 3, "active+clean": 30}, 33, None, NOW),
                   aftermath_of({"active+clean": 33}, 33, None, NOW)])
    seen: list[str] = []

    def reader(ctx: Any) -> Aftermath:
        return next(states)

    am = follow(None, lambda a: seen.append(a.line), timeout_s=60, interval_s=0.0,  # type: ignore[arg-type]
                reader=reader)
    assert am.clean and seen == [seen[0], "clean: all 33 PGs active+clean"]  # no repeats


def test_follow_stops_at_cancel_and_only_pg_runbooks_are_followed() -> None:
    cancel = threading.Event()
    cancel.set()
    am = follow(None, lambda a: None, timeout_s=60, interval_s=0.0, cancel=cancel,  # type: ignore[arg-type]
                reader=lambda c: aftermath_of({"peering": 1}, 1, None, NOW))
    assert not am.clean
    assert worth_following("osd-remount") and worth_following("pool-pg-num")
    assert not worth_following("swift-server-start") and not worth_following("crash-archive")
