"""Which PG states count (checks.settle): the one rule of a fix's follow-up, the
benchmark gate, `stordoc check` (PGS_SETTLING) and the lab, on real captures of Pacific
and Reef right after `ceph osd in` (tests/fixtures/ceph-settle), and its stated stamp
fallback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.engine import run_checks
from checks.model import Severity, Verdict
from checks.settle import STAMP_GRACE_S, judge_pgs, pg_states_count
from storage.ceph import (
    OSDMAP_PGS,
    PGS_BRIEF,
    PgSettle,
    SettleMethod,
    build_state,
    load_raw_dir,
    parse_osdmaptool_pgs,
    parse_pgs_brief,
)
from storage.model import ClusterSnapshot
from tests.unit.settle_fixtures import SETTLE, settle_of, settle_raw

NOW = 1_795_705_900.0


@pytest.mark.parametrize("name,clean", [
    ("pacific-osd-in/stale-clean", False), ("reef-osd-in/stale-clean", False),
    ("pacific-osd-in/pg-temp", False), ("pacific-osd-in/pg-temp-removed", False),
    ("reef-osd-in/peering", False),
    ("pacific-osd-in/settled", True), ("reef-osd-in/settled", True),
])
def test_only_a_settled_capture_is_clean(name: str, clean: bool) -> None:
    s = settle_of(name)
    assert judge_pgs(s.num_pgs, s.by_state, s, NOW).clean is clean


def test_a_stale_clean_read_is_settling_with_counts_and_epoch() -> None:
    """The read the issue is about: "65 active+clean" 0.06 s after `osd in`."""
    s = settle_of("pacific-osd-in/stale-clean")
    v = judge_pgs(65, s.by_state, s, NOW)
    assert v.reads_clean and v.settling and not v.clean
    assert v.states.why_not == "54 of 65 PGs have not reported on osdmap epoch 33"
    assert v.states.method is SettleMethod.OSDMAP and v.states.fallback is None
    # the stale reports carry the old up sets: the map put osd.2 back into them
    mapped = parse_osdmaptool_pgs(
        (SETTLE / "pacific-osd-in/stale-clean/osdmaptool.txt").read_text())
    reports = {r.pgid: r for r in parse_pgs_brief(json.loads(
        (SETTLE / "pacific-osd-in/stale-clean/pg_dump_pgs_brief.json").read_text())) or ()}
    moved = [p for p in s.unreported_pgids]
    assert all(2 in mapped.pgs[p].up and 2 not in reports[p].placement.up for p in moved)


# --------------------------------------------------------------------------- the rule


def _stamp(last: float | None, error: str = "osdmaptool not found") -> PgSettle:
    return PgSettle(SettleMethod.STAMP if last is not None else SettleMethod.UNKNOWN,
                    by_state={"active+clean": 65}, last_change=last, error=error)


def test_the_stamp_fallback_is_said_and_keeps_the_old_timer() -> None:
    c = pg_states_count(_stamp(NOW - 3.2), NOW)
    assert not c.counts and c.why_not == "an OSD went up/down/in/out 3 s ago"
    assert c.fallback == "stamp rule (10 s after the last OSD change): osdmaptool not found"
    for ok in (NOW - STAMP_GRACE_S, NOW - 3600, NOW + 600):  # long ago, or a skewed clock
        c = pg_states_count(_stamp(ok), NOW)
        assert c.counts and c.fallback and c.fallback.startswith("stamp rule"), ok
    assert not pg_states_count(_stamp(NOW + 2.0), NOW).counts  # a little ahead still counts
    for junk in (float("nan"), float("inf"), float("-inf")):
        assert pg_states_count(_stamp(junk), NOW).method is SettleMethod.UNKNOWN
    c = pg_states_count(_stamp(None, "pg dump pgs_brief: EACCES"), NOW)
    assert c.counts and c.method is SettleMethod.UNKNOWN
    assert "neither the osdmap nor the monitor's stamps" in (c.fallback or "")
    # nothing asked (PGs read unclean anyway, an old capture): the states as read
    assert pg_states_count(None, NOW).counts


def test_unclean_states_say_what_they_say_whether_or_not_reported() -> None:
    s = settle_of("reef-osd-in/peering")
    v = judge_pgs(65, s.by_state, s, NOW)
    assert not v.clean and not v.settling and v.unclean == {"peering": 23}
    # scrubbing is clean; inconsistent is not
    v = judge_pgs(65, {"active+clean+scrubbing": 5, "active+clean": 60}, None, NOW)
    assert v.clean
    v = judge_pgs(65, {"active+clean+inconsistent": 1, "active+clean": 64}, None, NOW)
    assert not v.clean and v.unclean == {"active+clean+inconsistent": 1}
    assert not judge_pgs(0, {}, None, NOW).clean  # no PGs read: nothing is clean
    # acting on a pg_temp (captured after backfill: the PG re-peers onto its up set next)
    s = settle_of("pacific-osd-in/pg-temp-removed")
    v = judge_pgs(65, {"active+clean": 64, "active+clean+remapped": 1}, None, NOW)
    assert not v.clean and v.unclean == {"active+clean+remapped": 1}
    assert s.by_state["active+clean+remapped"] == 1


# --------------------------------------------------------------------------- `check`


def _snapshot(settle_capture: str | None, **raw_extra: Any) -> ClusterSnapshot:
    raw = load_raw_dir(Path(__file__).resolve().parents[1] / "fixtures/ceph-pacific/healthy")
    if settle_capture is not None:
        raw.update(settle_raw(settle_capture))
    raw.update(raw_extra)
    return ClusterSnapshot("lab", NOW, ceph=build_state(raw, collected_at=NOW))


def test_check_does_not_call_a_stale_clean_read_clean() -> None:
    rep = run_checks(_snapshot("pacific-osd-in/stale-clean"), now=NOW)
    f = [x for x in rep.findings if x.code == "PGS_SETTLING"]
    assert len(f) == 1 and f[0].severity is Severity.INFO and f[0].entity == "cluster lab pgs"
    assert "54 of 65 PGs have not reported on osdmap epoch 33" in f[0].message
    ev = f[0].evidence
    assert (ev["method"], ev["epoch"], ev["unreported"], ev["num_pgs"]) == ("osdmap", 33, 54, 65)
    assert len(ev["unreported_pgids"]) == 10 and ev["fallback"] is None
    assert rep.verdict is Verdict.OK  # info: Nagios-style exit 0, but not called clean
    assert not any(x.code == "PGS_NOT_ACTIVE_CLEAN" for x in rep.findings)


def test_check_with_settled_and_peering_captures() -> None:
    rep = run_checks(_snapshot("pacific-osd-in/settled"), now=NOW)
    assert not [x for x in rep.findings if x.code.startswith("PGS_")]
    # the dump read after `pg stat` is the newer picture: peering there is reported
    rep = run_checks(_snapshot("reef-osd-in/peering"), now=NOW)
    codes = {x.code: x for x in rep.findings}
    assert "PGS_SETTLING" not in codes and codes["PGS_NOT_ACTIVE_CLEAN"].severity is \
        Severity.CRIT
    assert codes["PGS_NOT_ACTIVE_CLEAN"].evidence["not_clean"] == {"peering": 23}
    # nothing compared (an old capture): no finding, as before
    assert not [x for x in run_checks(_snapshot(None), now=NOW).findings
                if x.code == "PGS_SETTLING"]


def test_check_says_when_it_fell_back_to_the_stamp_rule() -> None:
    raw = settle_raw("pacific-osd-in/settled")
    status = load_raw_dir(Path(__file__).resolve().parents[1] /
                          "fixtures/ceph-pacific/healthy")["status"]
    status = dict(status, osdmap=dict(status["osdmap"], osd_in_since=NOW - 4))
    snap = _snapshot(None, status=status, **{PGS_BRIEF: raw[PGS_BRIEF],
                                             "errors": {OSDMAP_PGS: "osdmaptool not found"}})
    assert snap.ceph is not None and snap.ceph.pg_settle is not None
    assert snap.ceph.pg_settle.method is SettleMethod.STAMP
    f = [x for x in run_checks(snap, now=NOW).findings if x.code == "PGS_SETTLING"]
    assert len(f) == 1 and f[0].evidence["method"] == "stamp"
    assert f[0].evidence["map_error"] == "osdmaptool not found"
    assert "stamp rule" in f[0].message and "an OSD went up/down/in/out 4 s ago" in f[0].message




@given(st.builds(PgSettle, st.sampled_from(list(SettleMethod)),
                 st.none() | st.integers(0, 10**6), st.integers(0, 10**5),
                 st.integers(0, 10**5), st.just(()),
                 st.dictionaries(st.text(max_size=20), st.integers(0, 100), max_size=4),
                 st.one_of(st.none(), st.sampled_from([float("nan"), float("inf")]),
                           st.floats(0, 4e9)),
                 st.none() | st.text(max_size=20)),
       st.floats(0, 4e9))
@settings(max_examples=300, deadline=None)
def test_the_rule_answers_anything(s: PgSettle, now: float) -> None:
    c = pg_states_count(s, now)
    assert c.counts or c.why_not
    if s.method is not SettleMethod.OSDMAP:
        assert c.fallback  # never silent about a fallback
    v = judge_pgs(sum(s.by_state.values()), s.by_state, s, now)
    assert v.clean == (v.reads_clean and c.counts)
