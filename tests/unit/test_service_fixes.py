"""core.service.fixes alone: which runbook fixes the current finding with a code, and
each typed refusal, on Finding objects built here (no cluster, no front end)."""

from __future__ import annotations

import dataclasses

import pytest

from checks.model import Finding, Severity
from core.service.fixes import (
    Ambiguous,
    FixChoice,
    FixRefused,
    NoRunbook,
    NoSuchFinding,
    NotReportedFor,
    choose_fix,
    normalise_code,
)


def _down_out(i: int, runbook: str | None = "osd-start") -> Finding:
    return Finding("OSD_DOWN_OUT", Severity.WARN, f"osd.{i}", f"osd.{i} is down and out",
                   {"host": "node1"}, runbook, f"osd.{i}" if runbook else None)


UNMOUNTED = Finding("OSD_DATA_UNMOUNTED", Severity.CRIT, "osd.1", "osd.1 data dir not mounted",
                    {"host": "node1"}, "osd-remount", "osd.1")
RING = Finding("SWIFT_RING_MD5_MISMATCH", Severity.CRIT, "object ring d2@127.0.0.1:6210",
               "object ring differs on 127.0.0.1", {}, "swift-ring-push", "object")
PG_MANUAL = Finding("PGS_STUCK", Severity.WARN, "pg 1.0", "pg 1.0 stuck peering")


def test_one_fixable_finding_is_chosen() -> None:
    got = choose_fix([UNMOUNTED, _down_out(2)], "OSD_DATA_UNMOUNTED")
    assert got == FixChoice("osd-remount", "osd.1", UNMOUNTED)
    assert got.runbook == "osd-remount" and got.target == "osd.1" and got.finding is UNMOUNTED


def test_the_choice_is_frozen() -> None:
    got = choose_fix([UNMOUNTED], "OSD_DATA_UNMOUNTED")
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.target = "osd.2"  # type: ignore[misc]


@pytest.mark.parametrize("code", ["osd_data_unmounted", "Osd_Data_Unmounted",
                                  "  OSD_DATA_UNMOUNTED\n", "\tosd_data_unmounted "])
def test_code_is_case_insensitive_and_stripped(code: str) -> None:
    assert choose_fix([UNMOUNTED], code).finding is UNMOUNTED


def test_a_findings_code_in_lower_case_still_matches() -> None:
    odd = dataclasses.replace(UNMOUNTED, code="osd_data_unmounted")
    assert choose_fix([odd], "OSD_DATA_UNMOUNTED").finding is odd


def test_normalise_code() -> None:
    assert normalise_code(" osd_down_out\n") == "OSD_DOWN_OUT"
    assert normalise_code("OSD_DOWN_OUT") == "OSD_DOWN_OUT"


def test_no_such_finding_carries_the_current_codes() -> None:
    with pytest.raises(NoSuchFinding) as ei:
        choose_fix([_down_out(2), _down_out(3), UNMOUNTED, PG_MANUAL], "osd_down_in")
    e = ei.value
    assert e.code == "OSD_DOWN_IN" and e.target is None
    assert e.current == ("OSD_DATA_UNMOUNTED", "OSD_DOWN_OUT", "PGS_STUCK")  # sorted, once
    assert isinstance(e, FixRefused)


def test_no_findings_at_all() -> None:
    with pytest.raises(NoSuchFinding) as ei:
        choose_fix([], "OSD_DOWN_OUT", "osd.1")
    assert ei.value.current == () and ei.value.target == "osd.1"
    assert "none" in str(ei.value)


@pytest.mark.parametrize("code", [
    "\u041eSD_DOWN_OUT",  # Cyrillic capital O
    "OSD_D\u041eWN_\u041eUT",  # Cyrillic capital O twice
    "\u043esd_down_out",  # Cyrillic small o: upper() makes it Cyrillic O, still not Latin
    "o\u017fd_down_out",  # long s: str.upper() turns it into a Latin S
    "OSD_DOWN_OUT\u200b",  # zero-width space (not stripped: not whitespace)
    "\uff2fSD_DOWN_OUT",  # fullwidth O
])
def test_a_unicode_look_alike_is_no_such_finding(code: str) -> None:
    with pytest.raises(NoSuchFinding) as ei:
        choose_fix([_down_out(2)], code)
    assert ei.value.current == ("OSD_DOWN_OUT",)


def test_several_targets_are_ambiguous_and_name_them() -> None:
    fs = [_down_out(2), _down_out(3), _down_out(5)]
    with pytest.raises(Ambiguous) as ei:
        choose_fix(fs, "OSD_DOWN_OUT")
    assert ei.value.targets == ("osd.2", "osd.3", "osd.5")
    assert ei.value.candidates == tuple(fs)
    assert ei.value.code == "OSD_DOWN_OUT"


def test_a_target_picks_one_of_several() -> None:
    fs = [_down_out(2), _down_out(3)]
    assert choose_fix(fs, "OSD_DOWN_OUT", "osd.3") == FixChoice("osd-start", "osd.3", fs[1])


def test_a_target_is_matched_by_entity_too() -> None:
    other = dataclasses.replace(RING, entity="object ring d3@127.0.0.2:6210")
    got = choose_fix([RING, other], "SWIFT_RING_MD5_MISMATCH", "object ring d3@127.0.0.2:6210")
    assert got.finding is other and got.target == "object" and got.runbook == "swift-ring-push"


def test_findings_of_one_incident_have_one_fix_not_a_choice() -> None:
    """Two rings' mismatches are one incident (one push fixes both): asked by the shared
    target, the one fix, on the root, not "pick one of two identical plans"."""
    other = dataclasses.replace(RING, entity="object ring d3@127.0.0.2:6210")
    got = choose_fix([RING, other], "SWIFT_RING_MD5_MISMATCH", "object")
    assert (got.runbook, got.target, got.finding, got.root) == (
        "swift-ring-push", "object", RING, None)
    by_consequence = choose_fix([RING, other], "SWIFT_RING_MD5_MISMATCH", other.entity)
    assert by_consequence.finding is other and by_consequence.root is RING


@pytest.mark.parametrize("target", ["osd.7", "OSD.2", "osd.2 ", "osd", "osd.02"])
def test_target_must_match_exactly(target: str) -> None:
    with pytest.raises(NotReportedFor) as ei:
        choose_fix([_down_out(2), _down_out(3)], "OSD_DOWN_OUT", target)
    assert ei.value.target == target
    assert [f.entity for f in ei.value.reported] == ["osd.2", "osd.3"]


def test_code_of_another_finding_on_that_target_is_not_reported_for() -> None:
    with pytest.raises(NotReportedFor):
        choose_fix([UNMOUNTED, _down_out(2)], "OSD_DOWN_OUT", "osd.1")


def test_no_runbook_carries_the_findings() -> None:
    with pytest.raises(NoRunbook) as ei:
        choose_fix([PG_MANUAL], "PGS_STUCK")
    assert ei.value.findings == (PG_MANUAL,)
    assert ei.value.findings[0].message == "pg 1.0 stuck peering"


def test_a_consequence_asked_by_code_gets_its_roots_fix_and_says_so() -> None:
    """PGs stuck because osd.1's data dir is unmounted: the remount, named as the root's
    fix (the bot's Fix button sits on the root; typed, the same fix)."""
    got = choose_fix([PG_MANUAL, UNMOUNTED], "PGS_STUCK")
    assert (got.runbook, got.target) == ("osd-remount", "osd.1")
    assert got.finding is PG_MANUAL and got.root is UNMOUNTED


def test_a_runbook_without_a_target_is_not_fixable() -> None:
    half = Finding("OSD_DOWN_OUT", Severity.WARN, "osd.4", "osd.4 is down and out", {},
                   "osd-start", None)
    with pytest.raises(NoRunbook):
        choose_fix([half], "OSD_DOWN_OUT")


def test_the_one_fixable_finding_among_manual_ones_is_chosen() -> None:
    manual = _down_out(2, runbook=None)
    fixable = _down_out(3)
    assert choose_fix([manual, fixable], "OSD_DOWN_OUT").finding is fixable


def test_target_filter_comes_before_no_runbook() -> None:
    manual = _down_out(2, runbook=None)
    with pytest.raises(NoRunbook) as ei:
        choose_fix([manual, _down_out(3)], "OSD_DOWN_OUT", "osd.2")
    assert ei.value.findings == (manual,) and ei.value.target == "osd.2"


def test_any_iterable_of_findings() -> None:
    got = choose_fix((f for f in [_down_out(2), UNMOUNTED]), "osd_data_unmounted")
    assert got.finding is UNMOUNTED


def test_an_osds_findings_get_their_incidents_fix() -> None:
    """The TUI's x on an OSD: the fix of the worst incident its findings belong to, root
    or consequence; a finding's own Fix (the bot's button) only on a root."""
    from checks.incidents import correlate
    from core.service.fixes import fix_for_finding, fix_for_findings, incident_fixes, proposed

    # the lab's osd.1 with its data dir unmounted: the down+out finding is a consequence
    down_out = Finding("OSD_DOWN_OUT", Severity.CRIT, "osd.1", "osd.1 is down and out", {},
                       "osd-start", "osd.1")
    unmounted = Finding("OSD_DATA_UNMOUNTED", Severity.CRIT, "osd.1", "not mounted",
                        {"host": "node2"}, "osd-remount", "osd.1")
    ceph_down = Finding("OSD_DOWN", Severity.WARN, "osd.1", "Ceph: 1 osds down")
    incs = proposed(correlate([down_out, ceph_down, unmounted]))
    for among in ([down_out, ceph_down, unmounted], [down_out], [ceph_down, down_out]):
        fx = fix_for_findings(incs, among)
        assert fx is not None and (fx.runbook, fx.target) == ("osd-remount", "osd.1")
    assert fix_for_finding(incs, down_out) is None  # a consequence carries no button
    root = fix_for_finding(incs, unmounted)
    assert root is not None and root.finding is unmounted
    assert [(f.runbook, f.target) for f in incident_fixes(incs)] == [("osd-remount", "osd.1")]
    alone = proposed(correlate([down_out, ceph_down]))
    fx = fix_for_findings(alone, [ceph_down, down_out])
    assert fx is not None and (fx.runbook, fx.target) == ("osd-start", "osd.1")
    assert fix_for_findings(incs, [ceph_down]) is None  # its own incident: no runbook
    assert fix_for_findings(incs, []) is None


def test_a_runbook_that_refuses_now_is_said_with_its_reason() -> None:
    """The check planned the root's runbook and it refused (a port held): no fix runs now,
    and the refusal is the answer, not "no runbook fixes it"."""
    from checks.incidents import correlate

    down = Finding("SWIFT_SERVER_DOWN", Severity.CRIT, "container server 127.0.0.4:6201",
                   "not answering", {}, "swift-server-start", "container@node3")
    why = "swift-server-start refuses: port 6201 on node3 is held by pid 42"
    incs = tuple(dataclasses.replace(i, next_step=None, manual=why) for i in correlate([down]))
    with pytest.raises(NoRunbook) as ei:
        choose_fix([down], "SWIFT_SERVER_DOWN", down.entity, incs)
    assert ei.value.manual == why and "held by pid 42" in str(ei.value)
    with pytest.raises(NoRunbook) as ei:  # no runbook at all: no reason to give
        choose_fix([PG_MANUAL], "PGS_STUCK", None, proposed_of([PG_MANUAL]))
    assert ei.value.manual is None


def proposed_of(fs: list[Finding]):  # type: ignore[no-untyped-def]
    from checks.incidents import correlate
    from core.service.fixes import proposed

    return proposed(correlate(fs))
