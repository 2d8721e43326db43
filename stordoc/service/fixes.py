"""Which runbook fixes a finding named by its code: the one rule every front end uses
(``stordoc fix --finding CODE [--entity E]``, the bot's ``fix CODE [TARGET]``).

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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from checks.catalog import finding_codes
from checks.incidents import correlate
from checks.model import Finding
from checks.spelling import closest

__all__ = ["Ambiguous", "FixChoice", "FixRefused", "NoRunbook", "NoSuchFinding",
           "NotReportedFor", "UnknownFindingCode", "catalogued_code", "choose_fix",
           "normalise_code"]


@dataclass(frozen=True)
class FixChoice:
    """The fix for one finding: run ``runbook`` on ``target``."""

    runbook: str
    target: str
    finding: Finding


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
    """The findings with that code (and target) have no runbook that fixes them;
    ``findings`` are those findings (their messages say what to do by hand)."""

    def __init__(self, code: str, target: str | None, findings: Iterable[Finding]) -> None:
        self.findings: tuple[Finding, ...] = tuple(findings)
        super().__init__(code, target, f"{code} has no runbook that fixes it")


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


def choose_fix(findings: Iterable[Finding], code: str,
               target: str | None = None) -> FixChoice:
    """The one fix for the current finding with ``code`` (on ``target``, if given: a
    finding's target or entity). Raises a ``FixRefused`` subclass otherwise."""
    all_findings = tuple(findings)
    code = normalise_code(code)
    same = [f for f in all_findings if _same_code(f, code)]
    if not same:
        raise NoSuchFinding(code, target, (f.code for f in all_findings))
    if target is not None:
        on_target = [f for f in same if target in (f.target, f.entity)]
        if not on_target:
            raise NotReportedFor(code, target, same)
        same = on_target
    fixable = [f for f in same if f.runbook and f.target]
    if not fixable:
        raise NoRunbook(code, target, same)
    if len(fixable) > 1:
        raise Ambiguous(code, target, fixable)
    f = fixable[0]
    assert f.runbook is not None and f.target is not None
    return FixChoice(f.runbook, f.target, f)


def first_fix(findings: Sequence[Finding]) -> Finding | None:
    """Among one thing's findings (an OSD's, a device's), the one to fix first: a root
    cause of their incident (``checks.incidents``) over its consequences, then the worst.
    The TUI's Fix key on a detail screen asks this, as the bot's buttons offer roots."""
    fixable = [f for f in findings if f.runbook and f.target]
    if not fixable:
        return None
    roots = {i.root.key for i in correlate(list(findings))}
    return min(fixable, key=lambda f: (f.key not in roots, -int(f.severity)))
