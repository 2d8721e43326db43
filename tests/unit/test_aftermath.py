"""runbooks.aftermath: what the cluster still does after a fix, from PG states (judged by
whether they were reported on the current osdmap: checks.settle, on captures of the real
labs right after `ceph osd in`) and Ceph's progress events (the shape `ceph progress json`
returns on Pacific), and the follow loop."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import runbooks.aftermath as aftermath_mod
from runbooks.aftermath import Aftermath, aftermath_of, follow, worth_following
from storage.ceph import PgSettle, SettleMethod, last_osd_change, settle_from_raw
from tests.unit.settle_fixtures import settle_raw

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
def captured(name: str) -> Aftermath:
    """The follow-up's reading of one captured moment (its states are the dump's)."""
    settle = settle_from_raw(settle_raw(name))
    return aftermath_of({"active+clean": 1}, 1, None, NOW, settle)


def test_clean_pgs_read_right_after_osd_in_are_settling_not_clean() -> None:
    """0.06 s after ``ceph osd in`` the manager still holds the PG states of the map
    before it: all 65 read active+clean, 54 report the up set of the old map."""
    for name, epoch in (("pacific-osd-in/stale-clean", 33), ("reef-osd-in/stale-clean", 36)):
        am = captured(name)
        assert not am.clean and am.unclean == 0 and am.num_pgs == 65, name
        assert am.line == (f"settling: 54 of 65 PGs have not reported on osdmap epoch "
                           f"{epoch}; all 65 PGs read active+clean"), am.line
    # every PG reported and clean: clean at once, no timer
    for name in ("pacific-osd-in/settled", "reef-osd-in/settled"):
        am = captured(name)
        assert am.clean and am.settling is None and am.note is None
        assert am.line == "clean: all 65 PGs active+clean"
    # unclean states say what they say, reported or not
    am = captured("reef-osd-in/peering")
    assert not am.clean and am.settling is None and am.line.startswith(
        "peering: 23 of 65 PGs not active+clean (23 peering); 23 not serving I/O yet")


def test_follow_ends_clean_as_soon_as_the_map_says_so() -> None:
    """The stale "clean" first, then the peering it hid, then clean for real (the Reef
    lab's own sequence): follow ends at the last, without waiting for any timer."""
    states = iter([captured("reef-osd-in/stale-clean"), captured("reef-osd-in/stale-clean"),
                   captured("reef-osd-in/peering"), captured("reef-osd-in/settled")])
    seen: list[Aftermath] = []
    am = follow(None, seen.append, timeout_s=60, interval_s=0.0,  # type: ignore[arg-type]
                reader=lambda c: next(states))
    assert am.clean and [a.line.split(":")[0] for a in seen] == ["settling", "peering",
                                                                 "clean"]


class Waits:
    """``cancel`` for follow: records how long each poll would wait, never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0.0))
        return False

    def is_set(self) -> bool:
        return False


def test_follow_reads_often_for_what_ends_in_seconds_and_at_its_interval_otherwise() -> None:
    """Settling (the next report) and peering end within seconds; recovery takes minutes."""
    recovering = aftermath_of({"active+recovering+degraded": 5, "active+clean": 60}, 65,
                              None, NOW)
    states = iter([captured("pacific-osd-in/stale-clean"), captured("pacific-osd-in/pg-temp"),
                   recovering, captured("pacific-osd-in/settled")])
    w = Waits()
    am = follow(None, lambda a: None, timeout_s=600, interval_s=5.0,  # type: ignore[arg-type]
                cancel=w, reader=lambda c: next(states))  # type: ignore[arg-type]
    quick = aftermath_mod.QUICK_POLL_S
    assert am.clean and w.waits == [quick, quick, 5.0]
    # recovering, and Ceph's progress event expects it to end within the interval: read
    # again at its ETA (not sooner than QUICK_POLL_S), not a whole interval later
    import datetime as dt

    def eta(seconds_left: float) -> Aftermath:
        start = NOW - 10.0  # 10 s for p: seconds_left = 10 * (1 - p) / p
        p = 10.0 / (10.0 + seconds_left)
        ev = dict(PROGRESS["events"][0], progress=p, started_at=dt.datetime.fromtimestamp(
            start, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        return aftermath_of({"active+recovering": 5, "active+clean": 60}, 65,
                            {"events": [ev]}, NOW)

    states = iter([eta(2.0), eta(0.1), eta(60.0), captured("reef-osd-in/settled")])
    w = Waits()
    follow(None, lambda a: None, interval_s=5.0, cancel=w,  # type: ignore[arg-type]
           reader=lambda c: next(states))
    assert [round(x, 2) for x in w.waits] == [2.0, quick, 5.0]
    # a caller's shorter interval stays
    w = Waits()
    states = iter([captured("reef-osd-in/stale-clean"), captured("reef-osd-in/settled")])
    follow(None, lambda a: None, interval_s=0.1, cancel=w,  # type: ignore[arg-type]
           reader=lambda c: next(states))
    assert w.waits == [0.1]


def test_the_stamp_fallback_is_said_on_every_line() -> None:
    """No usable osdmaptool: the old 10 s rule decides, and the line says so."""
    s = PgSettle(SettleMethod.STAMP, by_state={"active+clean": 65}, last_change=NOW - 3.2,
                 error="osdmaptool not found (Debian/Ubuntu package ceph-base)")
    am = aftermath_of({}, 0, None, NOW, s)
    assert not am.clean and am.settling == "an OSD went up/down/in/out 3 s ago"
    assert am.line == ("settling: an OSD went up/down/in/out 3 s ago; all 65 PGs read "
                       "active+clean (stamp rule (10 s after the last OSD change): "
                       "osdmaptool not found (Debian/Ubuntu package ceph-base))")
    am = aftermath_of({}, 0, None, NOW + 10, s)
    assert am.clean and am.line.startswith("clean: all 65 PGs active+clean (stamp rule")
    # a monitor clock minutes ahead says nothing of when the change happened
    ahead = PgSettle(SettleMethod.STAMP, by_state={"active+clean": 65},
                     last_change=NOW + 600, error="x")
    assert aftermath_of({}, 0, None, NOW, ahead).clean


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
