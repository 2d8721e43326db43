"""One next step per incident: the root cause's runbook, only if it would not refuse.

The correlation (``checks.incidents``) proposes the root finding's runbook. Here it is
planned against the same snapshot (``plan_from_snapshot``: pure, no I/O); a runbook that
refuses is never offered, and the refusal becomes the incident's manual hint instead.
Consequences carry no fix of their own: the root's fix clears them. Every front end gets
its ``next:`` line, Fix button and Fix key from here, so they cannot disagree.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from checks.ceph_cli import vetted
from checks.incidents import Incident, NextStep
from checks.model import Finding, Thresholds
from runbooks.model import Refused, RunContext
from storage.journal import Journal
from storage.model import ClusterSnapshot
from storage.targets import ClusterTarget

_mem_lock = threading.Lock()
_mem: Journal | None = None


def _scratch_journal() -> Journal:
    """Planning never writes the journal; an in-memory one satisfies RunContext."""
    global _mem
    with _mem_lock:
        if _mem is None:
            _mem = Journal(":memory:")
        return _mem


def planning_context(cluster: str, target: ClusterTarget,
                     thresholds: Thresholds | None = None, offline: bool = False
                     ) -> RunContext:
    """``offline``: the snapshot is a saved one (its paths are not this host's to read)."""
    return RunContext(cluster=cluster, target=target, journal=_scratch_journal(),
                      thresholds=thresholds or Thresholds(), offline=offline)


def check_step(ctx: RunContext, snap: ClusterSnapshot, f: Finding) -> tuple[
        NextStep | None, str | None]:
    """(the step, None) when the finding's runbook plans cleanly, else (None, why not)."""
    if not f.runbook or not f.target:
        return None, None
    # here, not at the top: a check that plans nothing never loads every runbook
    from runbooks.api import plan_from_snapshot

    try:
        plan_from_snapshot(ctx, snap, f.runbook, f.target)
    except Refused as e:
        return None, f"{f.runbook} refuses: {e}"
    except Exception as e:  # a planning bug must not hide the incident
        return None, f"{f.runbook} could not be planned: {type(e).__name__}: {e}"
    return NextStep(f.runbook, f.target), None


def with_next_steps(ctx: RunContext, snap: ClusterSnapshot,
                    incidents: tuple[Incident, ...]) -> tuple[Incident, ...]:
    """Each incident with exactly one next step that runs, or none and the reason."""
    out = []
    for inc in incidents:
        step, why = check_step(ctx, snap, inc.root)
        manual = inc.manual
        if step is None and why is None:
            # no runbook for the root: say why the consequences' runbooks are no way out
            for c in inc.consequences:
                _, why = check_step(ctx, snap, c)
                if why:
                    why = f"no runbook fixes {inc.root.code}; {why}"
                    break
        if step is None:
            hint = _manual_hint(inc)
            if not manual and why and hint:
                # the root's or a consequence's runbook is no way out (said first); the
                # root's own advice is the step
                manual = f"{why}; next: {hint}"
            manual = manual or why or hint or \
                f"no runbook fixes {inc.root.code}: {inc.root.message}"
            if snap.ceph is not None:  # a runbook's refusal may name a command too
                manual = vetted(manual, snap.ceph.release)
        out.append(replace(inc, next_step=step, manual=manual))
    return tuple(out)


def _manual_hint(inc: Incident) -> str | None:
    """What to do by hand when no runbook applies (the root's own advice)."""
    hint = inc.root.evidence.get("manual") if inc.root.evidence else None
    return str(hint) if hint else None
