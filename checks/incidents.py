"""Incidents: findings grouped by the cause they share, so one problem is one incident.

A pure step after the checks. The rules are an explicit table (``RULES``, in
``checks.incident_rules``, importable from here too): a root cause code, the scope it
lives in (an OSD, a Swift device, a Swift server, a pool) and the codes that are its
consequences on the *same* entity of that scope. What a finding is about (its OSDs, Swift
device or server, pools) comes from its fields and Ceph's ``health detail`` lines, never
from message text (``checks.incident_keys``).

An incident's severity is its impact (PGs that block client I/O make it critical, whatever
the root's own severity). Findings stay the unit of the JSON, the journal and mutes;
incidents are added beside them. To add a rule for a new cause, add one line to ``RULES``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from checks.incident_keys import FindingIndex, ceph_code, fold_code, swift_server_kind
from checks.incident_rules import MGR_FOLD, Rule
from checks.incident_rules import RULES as RULES
from checks.model import Finding, Severity, Verdict
from storage.model import ClusterSnapshot, RecentRun


@dataclass(frozen=True)
class NextStep:
    """The one runbook to run first, and what to pass it (decided by the runbooks layer)."""

    runbook: str
    target: str

    @property
    def command(self) -> str:
        return f"stordoc fix {self.runbook} {self.target}"


@dataclass(frozen=True)
class Incident:
    id: str  # stable across runs: "ROOT_CODE entity"
    root: Finding
    consequences: tuple[Finding, ...]
    severity: Severity
    impact: str  # one line: what the problem does to clients/data
    next_step: NextStep | None = None
    manual: str | None = None  # when no runbook is safe: what to do by hand
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return (self.root, *self.consequences)

    @property
    def escalated(self) -> bool:
        """Its impact is worse than its root finding's severity (PGs blocking client I/O
        under a warn root). The root keeps its own severity wherever it is shown; front
        ends put the incident's on its impact, so one finding never reads as two."""
        return self.severity > self.root.severity

    @property
    def headline(self) -> str:
        """The first line a tired reader sees: cause, where, and what it does."""
        if self.root.code == "CEPH_HEALTH":  # "ceph SLOW_OPS: ...", not the code twice
            code = self.root.entity.removeprefix("ceph ")
            return f"{self.root.entity}: {self.impact.removeprefix(f'Ceph {code}: ')}"
        return f"{self.root.code} {self.root.entity}: {self.impact}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "severity": self.severity.label,
            "root": {"code": self.root.code, "entity": self.root.entity,
                     "message": self.root.message},
            "consequences": [{"code": f.code, "entity": f.entity}
                             for f in self.consequences],
            "impact": self.impact,
            "next_step": ({"runbook": self.next_step.runbook,
                           "target": self.next_step.target,
                           "command": self.next_step.command}
                          if self.next_step else None),
            "manual": self.manual,
            "since": self.root.since,
        }



def pg_impact(findings: Iterable[Finding]) -> tuple[int, int]:
    """(PGs blocking client I/O, PGs not active+clean) from the PG finding, if any."""
    for f in findings:
        if f.code == "PGS_NOT_ACTIVE_CLEAN":
            ev = f.evidence
            total = sum(int(n) for n in (ev.get("not_clean") or {}).values())
            return int(ev.get("blocking") or 0), total
    return 0, 0


def settling(f: Finding) -> bool:
    """A finding about PGs settling after a change (``checks.settle.pgs_settling``)."""
    return bool(f.evidence.get("settling_after"))


def _settling_impact(root: Finding, cons: Sequence[Finding]) -> tuple[Severity, str]:
    sev = max([root.severity, *(c.severity for c in cons)])
    ev = root.evidence
    blocking = int(ev.get("blocking") or 0)
    unclean = sum(int(n) for n in (ev.get("not_clean") or {}).values())
    lags = ev.get("health_lags")
    what = (f"{blocking} PGs peering, client I/O to them resumes by itself" if blocking
            else f"{unclean} PGs recovering (I/O served)" if unclean or not lags
            else f"all PGs active+clean, Ceph's health still says "
                 f"{', '.join(str(c) for c in lags)} (it lags the PG stats)")
    return sev, f"settling after {ev.get('settling_after')}: {what}"


def _scrub_impact(root: Finding) -> str:
    """An inconsistent PG serves I/O; what is at stake is the bad copy (checks/scrub.py)."""
    ev = root.evidence
    n = len(ev.get("objects") or ())
    bad = [int(o) for o in ev.get("bad_osds") or ()]
    if ev.get("primary") in bad:
        return f"clients read the bad copy: it is on the primary osd.{ev.get('primary')}"
    return (f"{n} object(s) one copy short (bad on "
            f"{', '.join(f'osd.{o}' for o in bad) or 'an unnamed OSD'}); I/O served")


def _unfound_impact(cons: Sequence[Finding]) -> str:
    """``8 objects unfound in pg 5.0 (reads of them wait); `` when Ceph's OBJECT_UNFOUND
    folded in: data is at stake, not only redundancy."""
    for c in cons:
        if ceph_code(c) == "OBJECT_UNFOUND":
            pgs = [p for p in c.evidence.get("unfound_pgs") or () if isinstance(p, dict)]
            n = sum(int(p.get("num_unfound") or 0) for p in pgs)
            if n:
                where = ", ".join(f"pg {p.get('pgid')}" for p in pgs[:3])
                return f"{n} objects unfound in {where} (reads of them wait); "
    return ""


def _impact(root: Finding, cons: Sequence[Finding]) -> tuple[Severity, str]:
    if root.code == "PGS_SETTLING" and settling(root):
        return _settling_impact(root, cons)
    sev = max([root.severity, *(c.severity for c in cons)])
    if root.code == "PG_INCONSISTENT":
        return sev, _scrub_impact(root)
    blocking, unclean = pg_impact([root, *cons])
    lost = _unfound_impact(cons)
    if blocking:
        return Severity.CRIT, f"{lost}{blocking} PGs inactive: client I/O blocked"
    if unclean:
        return sev, f"{lost}{unclean} PGs short of copies or moving (I/O still served)"
    codes = {root.code: root, **{c.code: c for c in cons}}
    kind = swift_server_kind(root)
    if kind is not None:
        n = 1 + sum(1 for c in cons if c.code == root.code)
        what = {"SWIFT_SERVER_DOWN": "down", "SWIFT_SERVER_TIMEOUT": "not answering"}.get(
            root.code)
        if what:
            pend = sum(float(c.evidence.get("async_pending") or 0) for c in cons
                       if c.code == "SWIFT_ASYNC_PENDING")
            return sev, (f"{kind[0]} server {what} on {n} node(s)"
                         + (f"; {pend:.0f} container updates queued" if pend else ""))
        if root.code == "SWIFT_REPLICATOR_IDLE":
            return sev, (f"{kind[0]} replication does nothing on {n} node(s): handoffs stay "
                         "where they are and lost copies are not rebuilt")
        if n > 1:
            return sev, f"on {n} {kind[0]} servers: {root.message}"
    if "OSD_DOWN_IN" in codes:
        return sev, f"{codes['OSD_DOWN_IN'].entity} down but still in: its PGs are degraded"
    if "OSD_DOWN_OUT" in codes:
        return sev, f"{codes['OSD_DOWN_OUT'].entity} down and out: one disk fewer"
    worse = [c for c in cons if c.severity > root.severity]
    if root.code.startswith("DAEMON_") and worse:
        # a stopped daemon (warn) is why its service is down (crit): say what is down
        return sev, max(worse, key=lambda c: c.severity).message
    alike = 1 + sum(1 for c in cons if c.code == root.code)
    if alike > 1:
        return sev, f"on {alike} servers alike: {root.message}"
    return sev, root.message



def _as(f: Finding) -> str:
    """The code a finding folds in as: Ceph's (or what its explainer says it is part of),
    or stordoc's own code unless its evidence says otherwise (``fold_as``: a pool near its
    quota is POOL_QUOTA_NEAR_FULL, not the cluster filling)."""
    return fold_code(f) or str(f.evidence.get("fold_as") or f.code)


def _folds(rule: Rule, f: Finding) -> bool:
    return _as(f) in rule.fold_any


def correlate(findings: Sequence[Finding], snap: ClusterSnapshot | None = None) -> \
        tuple[Incident, ...]:
    """Group findings into incidents, worst impact first. INFO findings stay out, but for
    PGs settling after a change (``checks.settle``): one INFO incident, "settling after
    run #6 osd-remount osd.1", with Ceph's word on those PGs in it."""
    todo = [f for f in findings if f.severity > Severity.INFO or settling(f)]
    idx = FindingIndex(todo, snap)
    used: set[int] = set()
    incidents: list[Incident] = []
    folded: set[str] = set()  # fold_any codes already taken by an earlier incident
    for rule in RULES:
        for i in list(idx.by_code.get(rule.cause, ())):
            root = todo[i]
            if i in used or root.code != rule.cause:
                continue
            if rule.when is not None and \
                    str(root.evidence.get(rule.when[0])) != rule.when[1]:
                continue
            used.add(i)
            take: set[int] = set()
            for j in idx.related(rule.scope, i):
                if j in used:
                    continue
                f = todo[j]
                same = f.code in rule.consequences or f.code == rule.cause
                # Ceph's own codes naming the same OSD / pool fold into it
                if same or ceph_code(f) in rule.ceph:
                    take.add(j)
            for code in rule.fold_any:
                if code in folded or (rule.named_only and
                                      code not in (root.evidence.get("folds") or ())):
                    continue
                for j in idx.by_code.get(code, ()):
                    if j not in used and _folds(rule, todo[j]):
                        take.add(j)
            cons = [todo[j] for j in sorted(take)]
            used |= take
            folded |= {_as(f) for f in cons if _folds(rule, f)}
            incidents.append(_make(root, cons))
    # what no rule claims: one incident per entity (a pool's settings, a ring), worst
    # first; one code on every server of a Swift kind (quarantines grew on each) is one
    by_entity: dict[str, list[Finding]] = {}
    for i, f in enumerate(todo):
        if i not in used:
            kind = swift_server_kind(f)
            group = f"{f.code} {kind[0]} servers" if kind else f.entity
            by_entity.setdefault(group, []).append(f)
    for fs in by_entity.values():
        fs.sort(key=lambda f: (-f.severity, f.runbook is None, f.code))
        incidents.append(_make(fs[0], fs[1:]))
    incidents.sort(key=lambda x: (-x.severity, _rank(x.root.code), x.root.code,
                                  x.root.entity))
    return tuple(incidents)


def _rank(code: str) -> int:
    """Root causes before symptoms when severities tie."""
    for n, r in enumerate(RULES):
        if r.cause == code:
            return n
    return len(RULES)


def _make(root: Finding, cons: Sequence[Finding]) -> Incident:
    sev, impact = _impact(root, cons)
    cand = (NextStep(root.runbook, root.target)
            if root.runbook and root.target else None)
    manual = None
    if root.code == "PGS_SETTLING" and settling(root):
        manual = (f"nothing to do: Ceph settles this by itself; if PGs are still inactive "
                  f"{float(root.evidence.get('window_s') or 0):g} s after the change, "
                  f"stordoc check says CRIT")
    return Incident(f"{root.code} {root.entity}", root, tuple(cons), sev, impact, cand,
                    manual)


def run_of(inc: Incident, runs: Sequence[RecentRun]) -> tuple[RecentRun, str] | None:
    """The stordoc run an incident is the doing of, and what it did, or None: PGs
    settling after a run (``checks.settle``), an incident on the target a running run
    works on (osd.1 unmounted, then stopped, while osd-remount osd.1 runs), an osdmap
    flag a running run set (and will unset), or one a run unset after the snapshot read
    it. A flag a finished run still holds is a leftover, and what stays wrong after a run
    ended is the run's failure: their own incidents, not the run's doing."""
    root = inc.root
    if root.code == "PGS_SETTLING" and settling(root):
        for r in runs:
            if r.id == root.evidence.get("run_id"):
                what = inc.impact.split(": ", 1)[-1]
                return r, f"PGs settling after it: {what}"
        return None
    for r in runs:  # the fault the running run works on, as it changes under it
        if r.finished_at is None and r.target in (root.entity, root.target):
            return r, f"working on {r.target} ({root.code})"
        # a manager being started or restarted: no manager answers meanwhile
        if r.finished_at is None and r.target.startswith("mgr.") and root.code in MGR_FOLD:
            return r, f"working on {r.target} ({root.code})"
    if root.code != "OSDMAP_FLAGS" or not root.evidence.get("flag"):
        return None
    flag = str(root.evidence["flag"])
    for r in sorted(runs, key=lambda x: (-x.started_at, -x.id)):
        if flag not in r.flags:
            continue
        if flag not in r.flags_held:
            return r, f"set {flag} and unset it"
        if r.finished_at is None:
            return r, f"set {flag}, will unset"
    return None


def headline(cluster: str, verdict_: Verdict, incidents: Sequence[Incident],
             n_findings: int) -> str:
    """The first line of every front end: stordoc's verdict, then the top incident's
    cause and impact; Ceph's own health comes after it, as one fact among others."""
    verdict = verdict_.name
    if not incidents:
        tail = "no incidents" if not n_findings else f"{n_findings} info finding(s)"
        return f"{verdict} {cluster}: {tail}"
    more = (f" (+{len(incidents) - 1} more incident{'s' if len(incidents) > 2 else ''})"
            if len(incidents) > 1 else "")
    return f"{verdict} {cluster}: {incidents[0].headline}{more}"


def alarming(inc: Incident, runs: Sequence[RecentRun] = ()) -> bool:
    """Whether an incident is an alarm for people (watch's OPEN line, the bot's thread):
    above INFO and not the doing of a stordoc run (``run_of``)."""
    return inc.severity > Severity.INFO and run_of(inc, runs) is None
