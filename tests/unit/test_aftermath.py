"""runbooks.aftermath: what the cluster still does after a fix, from PG states and Ceph's
progress events (the shape `ceph progress json` returns on Pacific), and the follow loop."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from checks.osd import PG_REPORT_GRACE_S
from runbooks.aftermath import Aftermath, aftermath_of, follow, worth_following
from storage.ceph import last_osd_change

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


# --------------------------------------------------------------- a read too soon after a map change
def test_clean_pgs_read_right_after_an_osd_change_are_settling_not_clean() -> None:
    """Right after ``ceph osd in`` the manager still holds the PG states of the map before
    it (measured on the lab: "65 active+clean" 0.3 s after, "16 peering" 1.6 s after)."""
    am = aftermath_of({"active+clean": 65}, 65, None, NOW, last_change=NOW - 3.2)
    assert not am.clean and am.unclean == 0 and am.unreported_s == pytest.approx(3.2)
    assert am.line.startswith("settling: all 65 PGs read active+clean, but an OSD went "
                              "up/down/in/out 3 s ago")
    for old in (NOW - PG_REPORT_GRACE_S, NOW - 3600.0, None):
        am = aftermath_of({"active+clean": 65}, 65, None, NOW, last_change=old)
        assert am.clean and am.unreported_s is None, old
    # unclean states say what they say, whenever the map changed
    am = aftermath_of({"peering": 16, "active+clean": 49}, 65, None, NOW, last_change=NOW)
    assert not am.clean and am.unreported_s is None and am.line.startswith("peering:")


def test_follow_does_not_stop_at_a_clean_read_from_before_the_change() -> None:
    """The stale "clean" first, then the peering it hid, then clean for real: follow ends
    at the last (before, it returned the first and the fix said "clean" while PGs peered)."""
    t = NOW
    states = iter([aftermath_of({"active+clean": 65}, 65, None, t, last_change=t - 0.3),
                   aftermath_of({"peering": 16, "active+clean": 49}, 65, None, t,
                                last_change=t - 1.6),
                   aftermath_of({"active+clean": 65}, 65, None, t + 12, last_change=t)])
    seen: list[Aftermath] = []
    am = follow(None, seen.append, timeout_s=60, interval_s=0.0,  # type: ignore[arg-type]
                reader=lambda c: next(states))
    assert am.clean and [a.line.split(":")[0] for a in seen] == ["settling", "peering",
                                                                 "clean"]


def test_follow_takes_clean_after_the_grace_by_its_own_clock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A monitor whose clock runs ahead keeps every read "just changed": after the grace on
    this host's clock the clean states count, and the ticking seconds are one message."""
    import runbooks.aftermath as mod

    monkeypatch.setattr(mod, "PG_REPORT_GRACE_S", 0.2)
    seen: list[Aftermath] = []
    n = [0]

    def reader(ctx: Any) -> Aftermath:
        n[0] += 1
        return aftermath_of({"active+clean": 65}, 65, None, NOW, last_change=NOW + 60 + n[0])

    am = follow(None, seen.append, timeout_s=30, interval_s=0.02,  # type: ignore[arg-type]
                reader=reader)
    assert am.clean and am.unreported_s is None and n[0] >= 3
    assert [a.line.split(":")[0] for a in seen] == ["settling", "clean"]


@pytest.mark.parametrize("doc,want", [
    ({"epoch": 49, "num_osds": 4, "num_up_osds": 4, "osd_up_since": 1795683329,
      "num_in_osds": 4, "osd_in_since": 1795683393, "num_remapped_pgs": 0}, 1795683393.0),
    ({"osdmap": {"epoch": 7, "osd_up_since": 1700000100, "osd_in_since": 1700000000}},
     1700000100.0),
    ({"osdmap": {"osdmap": {"osd_up_since": 5, "osd_in_since": 0}}}, 5.0),  # pre-Octopus
    ({"osd_up_since": 0, "osd_in_since": 0}, None),
    ({"osd_up_since": "junk", "osd_in_since": float("nan")}, None),
    ({"osd_up_since": float("inf")}, None),
    ({}, None), ([], None), (None, None), ("HEALTH_OK", None),
])
def test_last_osd_change_reads_every_shape(doc: Any, want: float | None) -> None:
    assert last_osd_change(doc) == want


def test_last_osd_change_in_captured_status() -> None:
    """Reef's ``status`` (captured from the lab) carries the stamps under ``osdmap``."""
    import json
    from pathlib import Path

    p = Path(__file__).resolve().parents[1] / "fixtures/ceph-reef/healthy/status.json"
    st = json.loads(p.read_text())
    got = last_osd_change(st)
    assert got is not None and got == max(st["osdmap"]["osd_up_since"],
                                          st["osdmap"]["osd_in_since"])
