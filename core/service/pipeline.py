"""The path of one check, one way: collect -> what the journal knows (recon history,
recent runs, temporary changes, fill history, mutes) -> the checks (pure functions of the
snapshot: ``checks.engine.run_checks``) -> record -> correlate once -> only -> next steps
(``runbooks.nextstep``, planned on the same snapshot). ``core.service.inspect`` and
``core.service.snapshots`` are its two callers: every front end, ``watch`` and the
bot go through ``Service.check``; a saved snapshot through ``snapshots.load``.

The journal is read and written here, never by a check."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from checks.engine import CheckReport, Selection, run_checks
from checks.incidents import correlate
from checks.model import Finding, Thresholds
from checks.outcome import CheckOutcome
from checks.swift_recon import recon_samples
from runbooks.model import RunContext
from storage.collect import collect
from storage.journal import FindingDelta, Journal
from storage.model import ClusterSnapshot, RecentRun
from storage.mutes import active_mutes
from storage.swifthist import SwiftHistory
from storage.targets import ClusterTarget

__all__ = ["CheckOutcome", "record_outcome", "recent_runs", "run_check",
           "with_swift_history"]


def with_swift_history(snap: ClusterSnapshot, hist: SwiftHistory, cluster: str,
                       window_s: float) -> ClusterSnapshot:
    """The snapshot with the journal's earlier recon numbers, so growth ("quarantines +40
    since yesterday") is judged (a live check, and a saved snapshot keeps them)."""
    if snap.swift is None:
        return snap
    return replace(snap, swift=replace(
        snap.swift, history=hist.baseline(cluster, snap.swift.collected_at, window_s)))


# runs of the journal looked at for "settling after run #N" (the newest first)
RUNS_LOOKED_AT = 10


def recent_runs(journal: Journal, cluster: str, now: float, window_s: float
                ) -> tuple[RecentRun, ...]:
    """The cluster's runbook runs running now (their process alive) or finished within
    ``window_s``, with the flags each still holds: what ``checks.settle`` attributes PGs
    peering (and ``stordoc watch`` a flag) to."""
    from storage.audit import Audit

    audit = Audit(journal)
    out = []
    for r in audit.runs(limit=RUNS_LOOKED_AT, cluster=cluster):
        if r.finished_at is None:
            if not audit.alive(r):
                continue  # died mid-run: its leftovers are a finding of their own
        elif now - r.finished_at > window_s:
            continue
        made, held = audit.flags_of(r.id)
        out.append(RecentRun(r.id, r.runbook, r.target, r.started_at, r.finished_at,
                             r.outcome, made, held))
    return tuple(out)


def with_recent_runs(snap: ClusterSnapshot, journal: Journal, cluster: str,
                     window_s: float) -> ClusterSnapshot:
    """The snapshot with the journal's recent runs (``recent_runs``), judged as of when
    it was taken."""
    return replace(snap, runs=recent_runs(journal, cluster, snap.taken_at or time.time(),
                                          window_s))


def with_changes_and_fill(snap: ClusterSnapshot, journal: Journal, cluster: str
                          ) -> ClusterSnapshot:
    """The snapshot with the temporary changes stordoc holds (storage.expiring: who set
    a flag, until when) and the fill history of earlier checks (storage.fillhist)."""
    from storage import expiring, fillhist

    return replace(snap, changes=tuple(expiring.open_changes(journal, cluster)),
                   fill_history=fillhist.samples(journal, cluster,
                                                 snap.taken_at or time.time()))


def record_fill(journal: Journal, cluster: str, snap: ClusterSnapshot) -> None:
    """One fill sample of a live check (at most one per few minutes)."""
    from storage import fillhist

    st = snap.ceph
    if st is None or not st.osd_usage:
        return
    used = 1.0 - st.total_avail_bytes / st.total_bytes if st.total_bytes else 0.0
    fillhist.record(journal, cluster, snap.taken_at or time.time(),
                    max(u.utilization for u in st.osd_usage) / 100.0, used)


@dataclass(frozen=True)
class CheckRequest:
    """What one check is asked (issue 39.4: one value, not thirteen parameters).
    ``journal`` records the run; ``mutes_from`` (default: the same journal) only reads the
    mutes with expiry, so a check that is not recorded still honours them. ``snapshot``:
    judge that one instead of collecting (a saved snapshot: what stordoc did recently is
    not added, nothing of the cluster is recorded); ``mute_rules`` are mutes given
    directly (a snapshot's), ``now`` the moment the checks judge ages against (a
    snapshot's time; default: the clock). ``planning``: the context the incidents' next
    steps are planned in, once per check (none: no next steps). ``collected``: the live
    snapshot the caller read (``Env.collect``) and the seconds it took; default: collect
    here (``storage.collect``)."""

    target: ClusterTarget
    thresholds: Thresholds | None = None
    muted: Iterable[str] = ()
    journal: Journal | None = None
    only: Iterable[str] | None = None
    host_facts: bool = True
    source: str = "cli"
    snapshot: ClusterSnapshot | None = None
    mutes_from: Journal | None = None
    mute_rules: Iterable[tuple[str, str | None]] | None = None
    now: float | None = None
    planning: RunContext | None = None
    collected: tuple[ClusterSnapshot, float] | None = None


def run_check(req: CheckRequest) -> CheckOutcome:
    """One check, in order: collect (or the given snapshot), what stordoc did recently and
    the journal's mutes, the checks, the record, the incidents, their next steps."""
    target, thresholds, muted, journal = req.target, req.thresholds, req.muted, req.journal
    only, host_facts, source, snapshot = req.only, req.host_facts, req.source, req.snapshot
    mutes_from, mute_rules, now = req.mutes_from, req.mute_rules, req.now
    planning, collected = req.planning, req.collected
    t0 = time.monotonic()
    live = snapshot is None
    if snapshot is not None:
        snap = snapshot
    elif collected is not None:
        snap, took = collected
        t0 -= took
    else:
        snap = collect(target, host_facts=host_facts)
    t1 = time.monotonic()
    th = thresholds or Thresholds()
    hist = None
    if journal is not None and snap.swift is not None:
        hist = SwiftHistory(journal)
        snap = with_swift_history(snap, hist, target.name, th.swift_history_window_s)
    rules: list[tuple[str, str | None]] = list(mute_rules or ())
    mj = mutes_from or journal
    if mj is not None and live:  # a live check: what stordoc just changed
        snap = with_recent_runs(snap, mj, target.name, th.pg_settle_window_s)
        snap = with_changes_and_fill(snap, mj, target.name)
    if mj is not None:  # mutes with expiry (storage/mutes.py): an expired one no longer matches
        rules += [(m.code, m.entity) for m in active_mutes(mj, target.name)]
    # the journal gets every finding even with --only, so "new"/"resolved" stay true
    report = run_checks(snap, thresholds, muted=muted, mute_rules=rules, now=now)
    t2 = time.monotonic()
    run_id = delta = None
    if journal is not None:
        if hist is not None and snap.swift is not None:
            hist.record(target.name, snap.swift.collected_at, recon_samples(snap.swift),
                        th.swift_history_window_s)
        if live:
            record_fill(journal, target.name, snap)
        run_id = _record(journal, target.name, report, t1 - t0, snap.host_facts_collected,
                         source)
        delta = journal.delta(target.name, run_id)
        report = replace(report, findings=_with_since(journal, target.name, report.findings))
    incidents = correlate(report.findings, snap)  # once, on the findings as shown
    if only:
        # those codes, and whatever says stordoc could not look at what their checks read:
        # a partial check that could not look is unreachable, never OK (Selection)
        sel = Selection.of(only)
        report = replace(report, findings=tuple(f for f in report.findings
                                                if sel.keeps(f.code, f.entity)),
                         only=sel.keep)
        incidents = tuple(i for i in incidents
                          if any(sel.keeps(f.code, f.entity) for f in i.findings))
        if delta is not None:
            def kept(ks: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
                return tuple(k for k in ks if sel.keeps(*k))

            delta = FindingDelta(kept(delta.new), kept(delta.still), kept(delta.resolved),
                                 delta.previous_run_id)
    if planning is not None and incidents:  # a healthy check never loads the runbooks
        from runbooks.nextstep import with_next_steps

        incidents = with_next_steps(planning, snap, incidents)
    return CheckOutcome(snap, report, run_id, delta, t1 - t0, t2 - t1, incidents)


def _record(journal: Journal, cluster: str, report: CheckReport, collect_s: float,
            host_facts: bool, source: str) -> int:
    return journal.record_check_run(
        cluster, report.started_at, report.duration_s + collect_s, report.verdict,
        report.worst.label if report.worst is not None else None,
        (f.to_dict() for f in report.findings), source=source, host_facts=host_facts)


def record_outcome(journal: Journal, cluster: str, out: CheckOutcome, source: str
                   ) -> CheckOutcome:
    """Record a run that was made without a journal (a refresh whose findings changed):
    the outcome with its run id and what is new/resolved against the run before."""
    run_id = _record(journal, cluster, out.report, out.collect_s,
                     out.snapshot.host_facts_collected, source)
    return replace(out, run_id=run_id, delta=journal.delta(cluster, run_id))


MAX_SINCE_LOOKUPS = 50


def _with_since(journal: Journal, cluster: str, findings: tuple[Finding, ...]
                ) -> tuple[Finding, ...]:
    """"for N s" on every finding: a check that knows no start (Swift, cache tiers, pools)
    gets the start of its unbroken streak in the journal, whoever ran those checks."""
    out = []
    n = 0
    for f in findings:
        if f.since is None and n < MAX_SINCE_LOOKUPS:
            n += 1
            first = journal.first_seen(cluster, f.code, f.entity)
            if first is not None:
                f = replace(f, since=first)
        out.append(f)
    return tuple(out)
