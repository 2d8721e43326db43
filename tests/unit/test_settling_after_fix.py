"""Issue 27 items 2 and 3 on the replay snapshots: PGs peering right after a change stordoc
made (a run in the journal) or any OSD change within the settle window are one INFO
"settling after ..." incident (checks.settle.pgs_settling), not a CRIT incident no runbook
fixes; one osdmap flag is one incident; `stordoc watch` says what a run did in one RUN
line, never a NEW line for its own flag or the PGs settling after it."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from checks.engine import run_checks
from checks.incidents import run_of
from checks.model import Severity, Thresholds, Verdict
from checks.outcome import CheckOutcome
from core.service.pipeline import CheckRequest, recent_runs, run_check
from core.service.snapshots import Replay
from core.service.watch import Seen, changes
from storage.audit import Audit
from storage.journal import Journal
from storage.model import ClusterSnapshot, HealthCheck, PgSummary, RecentRun
from tests.support.fixture_snapshots import replayed
from tests.unit.settle_fixtures import settle_of

WINDOW = Thresholds().pg_settle_window_s
NOOUT = HealthCheck("OSDMAP_FLAGS", "HEALTH_WARN", "noout flag(s) set")


def _replay(name: str) -> Replay:
    return replayed("reef", name)  # one replay per session (tests/support)


def peering(name: str = "healthy", *, up_ago: float = 3600.0, flags: tuple[str, ...] = (),
            runs: tuple[RecentRun, ...] = ()) -> ClusterSnapshot:
    """A replayed snapshot with the PG states of the captured peering right after an
    OSD came back (tests/fixtures/ceph-settle/reef-osd-in/peering), Ceph's own word on
    them, ``flags`` set, the monitor's last OSD change ``up_ago`` s before the read."""
    snap = _replay(name).outcome.snapshot
    st = snap.ceph
    assert st is not None
    s = settle_of("reef-osd-in/peering")
    blocking = sum(n for k, n in s.by_state.items() if "peering" in k or "activating" in k)
    assert blocking, s.by_state  # the capture does have PGs peering
    health = [*st.health_checks,
              HealthCheck("PG_AVAILABILITY", "HEALTH_WARN",
                          f"Reduced data availability: {blocking} pgs peering")]
    if "noout" in flags:
        health.append(NOOUT)
    st = replace(st, pgs=PgSummary(sum(s.by_state.values()), dict(s.by_state)),
                 pg_settle=None, health_checks=tuple(health), flags=(*st.flags, *flags),
                 osd_up_since=st.collected_at - up_ago, osd_in_since=st.collected_at - up_ago)
    return replace(snap, ceph=st, runs=runs)


def fix_run(snap: ClusterSnapshot, *, finished_ago: float | None = 5.0,
            held: tuple[str, ...] = ()) -> RecentRun:
    t = snap.taken_at
    return RecentRun(6, "osd-remount", "osd.2", t - 40,
                     None if finished_ago is None else t - finished_ago,
                     "running" if finished_ago is None else "success", ("noout",), held)


def outcome(snap: ClusterSnapshot) -> CheckOutcome:
    rp = _replay("healthy")
    return run_check(CheckRequest(rp.target, rp.thresholds, snapshot=snap,
                         now=snap.ceph.collected_at if snap.ceph else None))


def codes(snap: ClusterSnapshot) -> dict[str, Severity]:
    st = snap.ceph
    assert st is not None
    rep = run_checks(snap, now=st.collected_at)
    return {f"{f.code} {f.entity}": f.severity for f in rep.findings}


def test_peering_after_a_stordoc_run_is_one_info_incident_naming_the_run() -> None:
    base = peering()
    snap = replace(base, runs=(fix_run(base),))
    out = outcome(snap)
    f = [x for x in out.report.findings if x.code.startswith("PGS_")]
    assert [x.code for x in f if x.severity > Severity.INFO] == []
    assert not any(x.code == "PGS_NOT_ACTIVE_CLEAN" for x in f)
    (inc,) = out.incidents
    assert inc.root.code == "PGS_SETTLING" and inc.severity is Severity.INFO
    assert inc.impact.startswith("settling after run #6 osd-remount osd.2: ")
    assert "PGs peering" in inc.impact
    # Ceph's word on the same PGs is part of it, not an incident of its own
    assert [c.entity for c in inc.consequences] == ["ceph PG_AVAILABILITY"]
    assert inc.manual is not None and "nothing to do" in inc.manual
    assert out.report.verdict is Verdict.OK  # settling is no alarm: exit status 0


def test_the_same_peering_without_a_recent_change_stays_crit() -> None:
    out = outcome(peering())  # no run, the last OSD change an hour ago
    assert codes(peering())["PGS_NOT_ACTIVE_CLEAN cluster lab pgs"] is Severity.CRIT
    assert out.report.verdict is Verdict.CRIT
    assert out.incidents[0].root.code == "PGS_NOT_ACTIVE_CLEAN"
    assert "client I/O blocked" in out.incidents[0].impact


def test_a_run_finished_past_the_window_no_longer_explains_peering() -> None:
    base = peering()
    late = replace(base, runs=(fix_run(base, finished_ago=WINDOW + 1),))
    assert codes(late)["PGS_NOT_ACTIVE_CLEAN cluster lab pgs"] is Severity.CRIT
    just = replace(base, runs=(fix_run(base, finished_ago=WINDOW - 1),))
    assert "PGS_NOT_ACTIVE_CLEAN cluster lab pgs" not in codes(just)


def test_peering_after_an_osd_came_up_names_the_osd() -> None:
    snap = peering(up_ago=12)
    out = outcome(snap)
    (inc,) = out.incidents
    assert inc.severity is Severity.INFO
    # the OSD that came up last: the highest up_from of the snapshot's OSDs
    st = snap.ceph
    assert st is not None
    last = max((o for o in st.osds if o.up), key=lambda o: o.up_from)
    assert inc.impact.startswith(f"settling after {last.name} came up 12 s ago: ")


def test_with_an_osd_down_peering_is_crit_even_right_after_a_run() -> None:
    base = peering("osd-unmounted-in", up_ago=5)
    snap = replace(base, runs=(fix_run(base, finished_ago=None),))
    c = codes(snap)
    assert c["PGS_NOT_ACTIVE_CLEAN cluster lab pgs"] is Severity.CRIT
    assert not any(k.startswith("PGS_SETTLING") for k in c)
    out = outcome(snap)
    assert out.report.verdict is Verdict.CRIT
    assert out.incidents[0].root.code == "OSD_DATA_UNMOUNTED"


def test_down_or_stale_pgs_are_never_settling() -> None:
    base = peering(up_ago=5)
    st = base.ceph
    assert st is not None
    snap = replace(base, ceph=replace(st, pgs=PgSummary(65, {"down": 3, "active+clean": 62})))
    assert codes(snap)["PGS_NOT_ACTIVE_CLEAN cluster lab pgs"] is Severity.CRIT


def test_one_flag_is_one_incident() -> None:
    """stordoc's OSDMAP_FLAGS finding explains Ceph's OSDMAP_FLAGS: one incident."""
    snap = peering(flags=("noout",))
    st = snap.ceph
    assert st is not None
    snap = replace(snap, ceph=replace(st, pgs=PgSummary(65, {"active+clean": 65})))
    out = outcome(snap)
    flag = [i for i in out.incidents if "noout" in i.id or "OSDMAP_FLAGS" in i.id]
    assert [i.id for i in flag] == ["OSDMAP_FLAGS cluster lab flag noout"]
    assert [c.entity for c in flag[0].consequences] == ["ceph OSDMAP_FLAGS"]


def test_run_of_a_flag_a_running_run_holds_and_not_a_leftover() -> None:
    base = peering(flags=("noout",))
    running = fix_run(base, finished_ago=None, held=("noout",))
    out = outcome(replace(base, runs=(running,)))
    flag = next(i for i in out.incidents if i.root.code == "OSDMAP_FLAGS")
    assert run_of(flag, (running,)) == (running, "set noout, will unset")
    # a run that ended and still holds its flag left it behind: that is a real incident
    left = replace(running, finished_at=base.taken_at - 1, outcome="interrupted")
    assert run_of(flag, (left,)) is None
    # unset after the snapshot read it: still the run's
    unset = replace(running, finished_at=base.taken_at, flags_held=())
    assert run_of(flag, (unset,)) == (unset, "set noout and unset it")


def test_watch_across_a_fix_says_the_fault_once_the_run_once_and_the_resolution() -> None:
    """The sequence a watch sees on the seed fault and its fix: the fault, the run with
    noout set, the fault changing under it (mounted, not started), PGs peering, PGs
    still settling after it, clean."""
    fault = _replay("osd-unmounted-in").outcome.snapshot
    base = peering(flags=("noout",))
    t = base.taken_at
    run = RecentRun(6, "osd-remount", "osd.2", t - 10, None, "running", ("noout",), ("noout",))
    mid = replace(base, runs=(run,))
    after = replace(peering(), runs=(replace(run, finished_at=t, outcome="success",
                                             flags_held=()),))
    clean = _replay("healthy").outcome.snapshot
    # mounted, the daemon not started yet: the fault changes under the running run
    stopped = replace(_replay("osd-killed").outcome.snapshot, runs=(run,))
    seen = Seen()
    lines: list[str] = []
    for snap in (clean, fault, mid, stopped, mid, after, after, clean):
        lines += changes(seen, outcome(snap))
    body = [ln.split(" ", 2)[2] for ln in lines]
    new = [b for b in body if b.startswith("NEW ")]
    assert len(new) == 1 and "OSD_DATA_UNMOUNTED osd.2" in new[0], body
    # what the run did, as the first check that saw it saw it: one line
    assert [b for b in body if b.startswith("RUN ")] == [
        "RUN run #6 osd-remount osd.2 set noout, will unset; PGs settling after it: "
        "23 PGs peering, client I/O to them resumes by itself"], body
    resolved = [b for b in body if b.startswith("RESOLVED ")]
    assert resolved == ["RESOLVED OSD_DATA_UNMOUNTED osd.2"], body
    assert not any("noout" in b or "OSDMAP_FLAGS" in b or "PGS_NOT_ACTIVE_CLEAN" in b
                   for b in body if not b.startswith("RUN ")), body


def test_recent_runs_from_the_journal(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    try:
        a = Audit(j)
        rid = a.start_run("lab", "osd-remount", "osd.2", "me", "cli", {})
        a.own(rid, "lab", 1, "set noout for the duration", "osd unset", {"key": "noout"},
              "ceph osd unset noout")
        now = time.time()
        (r,) = recent_runs(j, "lab", now, WINDOW)
        assert (r.id, r.name, r.finished_at, r.flags, r.flags_held) == (
            rid, f"run #{rid} osd-remount osd.2", None, ("noout",), ("noout",))
        a.set_owned(rid, 1, "undone")
        a.finish_run(rid, "success", "ok")
        (r,) = recent_runs(j, "lab", now, WINDOW)
        assert r.outcome == "success" and r.flags == ("noout",) and r.flags_held == ()
        assert recent_runs(j, "lab", now + WINDOW + 5, WINDOW) == ()
        assert recent_runs(j, "other", now, WINDOW) == ()
    finally:
        j.close()


@pytest.mark.parametrize("name", ["healthy", "osd-unmounted-in", "osd-killed", "pool-few-pgs"])
def test_replays_without_runs_judge_as_before(name: str) -> None:
    """No run, no recent OSD change in a steady capture: nothing settles."""
    out = _replay(name).outcome
    assert not any(f.code == "PGS_SETTLING" and f.evidence.get("settling_after")
                   for f in out.report.findings)


def test_what_stays_wrong_after_a_run_ended_is_new() -> None:
    """A run that ended (failed) explains nothing of its target any more."""
    snap = _replay("osd-killed").outcome.snapshot
    run = RecentRun(7, "osd-remount", "osd.2", snap.taken_at - 30, snap.taken_at - 2,
                    "failed")
    out = outcome(replace(snap, runs=(run,)))
    assert [run_of(i, out.snapshot.runs) for i in out.incidents] == [None]
    seen = Seen(first=False)
    assert [ln.split(" ", 2)[2].split(":")[0] for ln in changes(seen, out)] == [
        "NEW crit OSD_DAEMON_CRASHED osd.2"]


def test_a_fault_whose_cause_changes_is_one_changed_line_not_new_and_resolved() -> None:
    """An OSD killed, then found unmounted: a watch in between sees osd.2 crashed
    (killed), then unmounted: one thing, one CHANGED line."""
    seen = Seen()
    lines: list[str] = []
    for name in ("healthy", "osd-killed", "osd-unmounted-in", "healthy"):
        lines += changes(seen, outcome(_replay(name).outcome.snapshot))
    body = [ln.split(" ", 2)[2].split(":")[0] for ln in lines]
    assert body == ["watching, 0 incidents open", "NEW crit OSD_DAEMON_CRASHED osd.2",
                    "CHANGED OSD_DAEMON_CRASHED -> crit OSD_DATA_UNMOUNTED osd.2",
                    "RESOLVED OSD_DATA_UNMOUNTED osd.2"]


# Ceph's health as a Reef lab said it seconds after osd-remount osd.1 finished, while the
# PG stats already read every PG active+clean (CI log of the watch_fix lab test): the
# monitor's health summary lags the PG stats by the manager's next report
LAGGING = HealthCheck("PG_DEGRADED", "HEALTH_WARN",
                      "Degraded data redundancy: 40 pgs undersized")


def lagging(runs_of: bool = True, finished_ago: float = 5.0) -> ClusterSnapshot:
    """The captured healthy snapshot (every PG active+clean, its PG dump reported on the
    current map) with Ceph's lagging PG_DEGRADED, the monitor's last OSD change an hour
    before, and a run finished ``finished_ago``."""
    snap = _replay("healthy").outcome.snapshot
    st = snap.ceph
    assert st is not None and set(st.pgs.by_state) == {"active+clean"}, st.pgs.by_state
    snap = replace(snap, ceph=replace(st, health_checks=(*st.health_checks, LAGGING),
                                      osd_up_since=st.collected_at - 3600,
                                      osd_in_since=st.collected_at - 3600))
    return replace(snap, runs=(fix_run(snap, finished_ago=finished_ago),) if runs_of else ())


def test_ceph_health_lagging_clean_pgs_right_after_a_run_is_the_runs_settling() -> None:
    """The Reef flake of test_watch_fix: after the fix, all PGs active+clean but Ceph's
    health still says PG_DEGRADED. That is the run's settling (INFO, folded), not a bare
    WARN CEPH_HEALTH incident that watch calls NEW."""
    out = outcome(lagging())
    assert [f"{f.code} {f.entity}" for f in out.report.findings
            if f.severity > Severity.INFO] == []
    (inc,) = out.incidents
    assert inc.root.code == "PGS_SETTLING" and inc.severity is Severity.INFO
    assert inc.impact == ("settling after run #6 osd-remount osd.2: all PGs active+clean, "
                          "Ceph's health still says PG_DEGRADED (it lags the PG stats)")
    assert [c.entity for c in inc.consequences] == ["ceph PG_DEGRADED"]
    assert out.report.verdict is Verdict.OK
    # watch: the run's doing (one RUN line, none if it was said already), never NEW
    seen = Seen(first=False)
    assert [ln.split(" ", 2)[2] for ln in changes(seen, out)] == [
        "RUN run #6 osd-remount osd.2 PGs settling after it: all PGs active+clean, Ceph's "
        "health still says PG_DEGRADED (it lags the PG stats)"]
    assert changes(seen, out) == []


@pytest.mark.parametrize("runs_of,finished_ago", [(False, 5.0), (True, WINDOW + 1)])
def test_ceph_pg_degraded_with_clean_pgs_and_no_recent_change_stays_a_warning(
        runs_of: bool, finished_ago: float) -> None:
    """No run (or one past the window) and no recent OSD change: Ceph's word is its own
    WARN as before, never hidden as settling."""
    out = outcome(lagging(runs_of, finished_ago))
    c = codes(lagging(runs_of, finished_ago))
    assert c["CEPH_HEALTH ceph PG_DEGRADED"] is Severity.WARN
    assert not any(k.startswith("PGS_SETTLING") for k in c)
    assert [i.id for i in out.incidents] == ["CEPH_HEALTH ceph PG_DEGRADED"]


def test_ceph_pg_degraded_with_an_osd_down_is_never_settling() -> None:
    """An OSD down: its PGs may stay degraded for good, so Ceph's word stays a warning."""
    base = _replay("osd-killed").outcome.snapshot
    st = base.ceph
    assert st is not None
    snap = replace(base, ceph=replace(st, pgs=PgSummary(st.pgs.num_pgs,
                                                        {"active+clean": st.pgs.num_pgs}),
                                      health_checks=(*st.health_checks, LAGGING)))
    snap = replace(snap, runs=(fix_run(snap),))
    assert codes(snap)["CEPH_HEALTH ceph PG_DEGRADED"] is Severity.WARN


def test_ceph_pg_degraded_with_clean_pgs_after_an_osd_change_alone_stays_a_warning() -> None:
    """Only a stordoc run's settling takes Ceph's lagging word in: an OSD that came up
    12 s ago (a cluster just started) leaves it Ceph's own warning."""
    snap = lagging(runs_of=False)
    st = snap.ceph
    assert st is not None
    snap = replace(snap, ceph=replace(st, osd_up_since=st.collected_at - 12))
    assert codes(snap)["CEPH_HEALTH ceph PG_DEGRADED"] is Severity.WARN
