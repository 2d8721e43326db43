"""The one fix policy: which finding gets a Fix, which runbook, on which target, for
every front end (the bot's Fix buttons, ``stordoc fix --finding CODE``, the bot's
``fix CODE [TARGET]``, the TUI's ``x`` key, its incident screens and command palette).
Front ends only word the result.

The rule: an incident's fix is its one next step (``runbooks.nextstep``: the root's
runbook, planned against the snapshot, never one that would refuse). Only an incident's
root carries a Fix button; a consequence asked for by its code gets its root's fix, said
so (``FixChoice.root``). Findings read back from the journal have no snapshot to plan on:
``proposed`` gives their incidents the root's runbook, which the plan still guards.

``choose_fix(findings, code, target)`` looks at the current findings only (the caller runs
the check) and returns a ``FixChoice`` or raises one of the ``FixRefused`` errors below;
each front end only turns those into its own words.

- The code is normalised (``strip``, upper case), so ``osd_down_out`` names
  ``OSD_DOWN_OUT``. Only ASCII is a code: a look-alike such as a Cyrillic ``О`` or a long
  ``ſ`` (which ``str.upper`` would turn into ``S``) names nothing.
- A target matches a finding's ``target`` or its ``entity``, exactly.
- Order of refusals: no finding with that code (``NoSuchFinding``), none for that target
  (``NotReportedFor``), none with a runbook (``NoRunbook``), several fixable ones
  (``Ambiguous``).
- ``catalogued_code(code)``, asked before any check runs, tells a typo from a code that
  has no finding right now: a code no check reports is ``UnknownFindingCode``, with the
  closest catalogued code as a suggestion (``OSD_DATA_UNMOUNT`` ->
  ``OSD_DATA_UNMOUNTED``). "No such finding" about a misspelt code read like all clear.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from checks.catalog import finding_codes
from checks.incidents import Incident, NextStep, correlate
from checks.model import Finding
from checks.spelling import closest
from runbooks.nextline import incident_step, last_line  # the one "next:" line of a report
from storage.model import CephState

__all__ = ["Ambiguous", "FixChoice", "FixRefused", "NoRunbook",
           "NoSuchFinding", "NotReportedFor", "UnknownFindingCode", "catalogued_code",
           "choose_fix", "fix_for_finding", "fix_for_findings", "incident_fix",
           "incident_fixes", "incident_in_area", "incident_step", "last_line",
           "maintenance_runbook", "normalise_code", "proposed", "recorded_incidents"]


@dataclass(frozen=True)
class FixChoice:
    """The fix for one finding: run ``runbook`` on ``target``."""

    runbook: str
    target: str
    finding: Finding
    root: Finding | None = None  # set when ``finding`` is a consequence: the fix is its root's

    @property
    def command(self) -> str:
        return f"stordoc fix {self.runbook} {self.target}"


class FixRefused(Exception):
    """No single fix for that code (and target); ``code`` is the normalised code."""

    def __init__(self, code: str, target: str | None, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.target = target


class NoSuchFinding(FixRefused):
    """No current finding has that code; ``current`` are the codes there are (sorted),
    for a did-you-mean."""

    def __init__(self, code: str, target: str | None, current: Iterable[str]) -> None:
        self.current: tuple[str, ...] = tuple(sorted(set(current)))
        super().__init__(code, target, f"no current finding {code} (current: "
                                       f"{', '.join(self.current) or 'none'})")


class UnknownFindingCode(FixRefused):
    """No check reports that code at all (a typo, or one of Ceph's own codes, which are
    ``CEPH_HEALTH`` findings on ``ceph CODE``); ``suggestion`` is the closest code of
    the catalogue (``known``), or None."""

    def __init__(self, code: str, known: Iterable[str]) -> None:
        self.known: tuple[str, ...] = tuple(known)
        self.suggestion = closest(code, self.known)
        super().__init__(code, None, f"unknown finding code {code}" + (
            f": did you mean {self.suggestion}?" if self.suggestion else ""))


class NotReportedFor(FixRefused):
    """The code is reported, but not for that target; ``reported`` are the findings
    with that code (for other targets)."""

    def __init__(self, code: str, target: str, reported: Iterable[Finding]) -> None:
        self.reported: tuple[Finding, ...] = tuple(reported)
        super().__init__(code, target, f"{code} is not reported for {target}")


class NoRunbook(FixRefused):
    """The findings with that code (and target) have no runbook that runs now;
    ``findings`` are those findings (their messages say what to do by hand), ``manual``
    their incident's word on why (its runbook refuses now: a port held, a disk busy), or
    None when no runbook fixes that code at all."""

    def __init__(self, code: str, target: str | None, findings: Iterable[Finding],
                 manual: str | None = None) -> None:
        self.findings: tuple[Finding, ...] = tuple(findings)
        self.manual = manual
        super().__init__(code, target, f"{code} has no runbook that fixes it" if manual is None
                         else f"{code}: no runbook runs now: {manual}")


class Ambiguous(FixRefused):
    """Several findings with that code can be fixed: the caller must name a target.
    ``candidates`` are those findings, ``targets`` their targets (same order)."""

    def __init__(self, code: str, target: str | None, candidates: Iterable[Finding]) -> None:
        self.candidates: tuple[Finding, ...] = tuple(candidates)
        super().__init__(code, target, f"{code} is reported for several targets: "
                                       f"{', '.join(self.targets)}")

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(str(f.target) for f in self.candidates)


def normalise_code(code: str) -> str:
    """``" osd_down_out "`` -> ``"OSD_DOWN_OUT"``; non-ASCII text is kept as it is (it
    is never a code, and upper-casing it could turn a look-alike into one)."""
    code = code.strip()
    return code.upper() if code.isascii() else code


def catalogued_code(code: str) -> str:
    """``code`` normalised, if some check (or the engine) can report it; else
    ``UnknownFindingCode``. ASCII only, as everywhere a code is typed."""
    c = normalise_code(code)
    known = finding_codes()
    if not c.isascii() or c not in known:
        raise UnknownFindingCode(c, known)
    return c


def _same_code(finding: Finding, code: str) -> bool:
    return code.isascii() and finding.code.isascii() and finding.code.upper() == code


def proposed(incidents: Iterable[Incident]) -> tuple[Incident, ...]:
    """Incidents not planned on a snapshot (findings read back from the journal) with
    their root's runbook as the next step; pressing it plans it, and the plan refuses
    what would not run."""
    out = []
    for inc in incidents:
        r = inc.root
        step = NextStep(r.runbook, r.target) if r.runbook and r.target else None
        out.append(dataclasses.replace(inc, next_step=inc.next_step or step))
    return tuple(out)


def recorded_incidents(findings: Iterable[Finding]) -> tuple[Incident, ...]:
    """Findings read back from the journal as incidents, each with its root's runbook
    proposed (``proposed``: no snapshot to plan on; the plan still guards it)."""
    return proposed(correlate(list(findings)))


def incident_fix(inc: Incident) -> FixChoice | None:
    """An incident's fix: its next step, on its root; None when it is fixed by hand."""
    step = inc.next_step
    return FixChoice(step.runbook, step.target, inc.root) if step is not None else None


def maintenance_runbook(ceph: CephState, host: str) -> str:
    """The maintenance runbook a host gets: ``maintenance-end`` when one of its OSDs
    carries noout already (a window is on), else ``maintenance-start`` (the TUI's ``m``;
    the core decides, the front end opens the plan)."""
    crush = next((h for h in ceph.hosts if h.name == host), None)
    flagged = crush is not None and any(
        (x := ceph.osd(i)) is not None and "noout" in x.state for i in crush.osd_ids)
    return "maintenance-end" if flagged else "maintenance-start"


def incident_fixes(incidents: Iterable[Incident]) -> tuple[FixChoice, ...]:
    """Every fix on offer, worst incident first, each runbook and target once (the TUI's
    command palette)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for inc in incidents:
        fx = incident_fix(inc)
        if fx is not None and (fx.runbook, fx.target) not in seen:
            seen.add((fx.runbook, fx.target))
            out.append(fx)
    return tuple(out)


def _incident_of(incidents: Iterable[Incident], f: Finding) -> Incident | None:
    return next((i for i in incidents if f.key in {x.key for x in i.findings}), None)


def fix_for_finding(incidents: Iterable[Incident], f: Finding) -> FixChoice | None:
    """The Fix a finding carries: its incident's, if it is that incident's root; a
    consequence carries none (the button sits on its root)."""
    inc = _incident_of(incidents, f)
    return incident_fix(inc) if inc is not None and inc.root.key == f.key else None


def fix_for_findings(incidents: Sequence[Incident], findings: Iterable[Finding]
                     ) -> FixChoice | None:
    """Among one thing's findings (an OSD's, a device's: the TUI's ``x`` on it), the fix
    of the worst incident they belong to, root or consequence: the OSD down because its
    data dir is unmounted is fixed by the remount."""
    keys = {f.key for f in findings}
    for inc in incidents:  # worst first (checks.incidents)
        if keys & {x.key for x in inc.findings}:
            fx = incident_fix(inc)
            if fx is not None:
                return fx
    return None


def incident_in_area(incidents: Iterable[Incident], codes: Iterable[str]
                     ) -> Incident | None:
    """The worst incident that holds a finding with one of ``codes`` (a screen's area,
    ``checks.catalog.area_codes``): what that screen's ``x`` fixes."""
    want = set(codes)
    return next((i for i in incidents if any(f.code in want for f in i.findings)), None)


def choose_fix(findings: Iterable[Finding], code: str, target: str | None = None,
               incidents: Sequence[Incident] | None = None) -> FixChoice:
    """The one fix for the current finding with ``code`` (on ``target``, if given: a
    finding's target or entity), by the rule above: ``incidents`` are the check's (with
    their next steps); without them the findings are correlated here and ``proposed``.
    Raises a ``FixRefused`` subclass otherwise."""
    all_findings = tuple(findings)
    incs = tuple(incidents) if incidents is not None else proposed(correlate(list(all_findings)))
    code = normalise_code(code)
    same = [f for f in all_findings if _same_code(f, code)]
    if not same:
        raise NoSuchFinding(code, target, (f.code for f in all_findings))
    if target is not None:
        on_target = [f for f in same if target in (f.target, f.entity)]
        if not on_target:
            raise NotReportedFor(code, target, same)
        same = on_target
    fixes: dict[tuple[str, str], FixChoice] = {}
    for f in same:
        inc = _incident_of(incs, f)
        fx = incident_fix(inc) if inc is not None else None
        if fx is not None:  # a consequence: its incident's fix, said as the root's
            fixes.setdefault((fx.runbook, fx.target), dataclasses.replace(
                fx, finding=f, root=None if inc is None or inc.root.key == f.key
                else inc.root))
    if not fixes:
        refused = [i.manual for f in same if (i := _incident_of(incs, f)) is not None
                   and i.manual and f.runbook]  # its runbook exists, and refuses now
        raise NoRunbook(code, target, same, refused[0] if refused else None)
    if len(fixes) > 1:
        raise Ambiguous(code, target, [c.finding for c in fixes.values()])
    return next(iter(fixes.values()))
