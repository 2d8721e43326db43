"""Run every registered check on a snapshot; one failing check never stops the others."""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from checks import planned
from checks.ceph_cli import vetted
from checks.engine_codes import ENGINE_CODES as ENGINE_CODES  # (registered on import)
from checks.model import (
    REGISTRY,
    CheckContext,
    CodeInfo,
    Finding,
    Registry,
    Severity,
    Thresholds,
    Verdict,
)
from checks.mutable import CANNOT_LOOK, mute_ignored
from storage.model import ClusterSnapshot


@dataclass(frozen=True)
class CheckReport:
    cluster: str
    findings: tuple[Finding, ...]
    started_at: float
    duration_s: float
    checks_run: tuple[str, ...]
    muted: tuple[Finding, ...] = field(default_factory=tuple)
    # findings a mute matched but may not hide (checks.mutable), each with the reason;
    # they are in ``findings`` too and count in the verdict
    mute_ignored: tuple[tuple[Finding, str], ...] = field(default_factory=tuple)
    # a partial check (``--only``): the codes asked for (``Selection.keep``); None: all
    only: tuple[str, ...] | None = None

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    @property
    def unreachable(self) -> bool:
        """The monitors did not answer; in a partial check, anything that says stordoc
        could not look at what those codes' checks read (``Selection``): it could not
        look, so it cannot say OK."""
        if self.only is not None:
            return any(f.code in CANNOT_LOOK for f in self.findings)
        return any(f.code == "CEPH_UNREACHABLE" for f in self.findings)

    @property
    def verdict(self) -> Verdict:
        """Nagios-style: OK, WARN, CRIT, or UNREACHABLE (the monitors did not answer)."""
        return Verdict.of(self.worst, self.unreachable)


def _part_findings(snap: ClusterSnapshot) -> list[Finding]:
    out: list[Finding] = []
    if snap.ceph_error:
        out.append(Finding("CEPH_UNREACHABLE", Severity.CRIT, f"cluster {snap.cluster}",
                           f"Ceph monitors unreachable: {snap.ceph_error}",
                           {"error": snap.ceph_error}))
    if snap.swift_error:
        out.append(Finding("SWIFT_UNREACHABLE", Severity.CRIT, f"swift {snap.cluster}",
                           f"Swift unreachable: {snap.swift_error}",
                           {"error": snap.swift_error}))
    for name, facts in sorted(snap.hosts.items()):
        if facts.error:
            out.append(Finding("HOST_UNREACHABLE", Severity.WARN, f"host {name}",
                               f"host {name} ({facts.address}) did not answer: {facts.error}",
                               {"address": facts.address, "error": facts.error}))
    return out


# the part of the snapshot each "cannot look" code (checks.mutable) says was not read
CANNOT_LOOK_PART = {
    "CEPH_UNREACHABLE": "ceph",
    "SWIFT_UNREACHABLE": "swift",
    "SWIFT_SERVER_TIMEOUT": "swift",
    "HOST_UNREACHABLE": "hosts",
    "PROMETHEUS_UNREACHABLE": "hosts",  # host facts from Prometheus
    "PROMETHEUS_BAD_ANSWER": "hosts",
    "HOST_FACTS_STALE": "hosts",
    "HOST_KERNEL_LOG_STALE": "hosts",
}


@dataclass(frozen=True)
class Selection:
    """A partial check (``--only CODES``): the findings of those codes, and every finding
    that says stordoc could not look at what their checks read (``RegisteredCheck.reads``:
    CEPH_UNREACHABLE for a Ceph code, SWIFT_UNREACHABLE for a Swift code,
    HOST_UNREACHABLE for a code read on the hosts, CHECK_INTERNAL_ERROR of the check
    itself), so a check that could not look never says OK (``CheckReport.unreachable``)."""

    codes: frozenset[str]
    parts: frozenset[str]
    checks: frozenset[str]  # entities "check NAME" of the checks that emit the codes

    @classmethod
    def of(cls, only: Iterable[str], registry: Registry | None = None) -> Selection:
        reg = registry or REGISTRY
        codes = frozenset(c.upper() for c in only)
        chosen = [c for c in reg.checks if any(ci.code in codes for ci in c.codes)]
        return cls(codes, frozenset(p for c in chosen for p in c.reads),
                   frozenset(f"check {c.name}" for c in chosen))

    def keeps(self, code: str, entity: str) -> bool:
        if code in self.codes:
            return True
        if code not in CANNOT_LOOK:
            return False
        if code == "CHECK_INTERNAL_ERROR":
            return entity in self.checks
        part = CANNOT_LOOK_PART.get(code)
        return part is None or part in self.parts  # a code of no known part: kept

    @property
    def keep(self) -> tuple[str, ...]:
        return tuple(sorted(self.codes))


def apply_mutes(findings: Iterable[Finding], codes: Mapping[str, CodeInfo],
                muted: Iterable[str] = (), mute_rules: Iterable[tuple[str, str | None]] = ()
                ) -> tuple[tuple[Finding, ...], tuple[Finding, ...],
                           tuple[tuple[Finding, str], ...]]:
    """The one mute rule: (shown, most severe first; hidden by a mute; shown although a
    mute matches, and why). ``muted`` are the config's static codes, ``mute_rules`` the
    mutes with expiry (code, entity or None for all). A mute never hides that stordoc
    cannot look, nor an escalation (checks.mutable)."""
    findings = list(findings)
    muted_set = {c.upper() for c in muted}
    rules = [(c.upper(), e) for c, e in mute_rules]

    def matched(f: Finding) -> bool:
        return f.code in muted_set or any(
            c == f.code and (e is None or e == f.entity) for c, e in rules)

    ignored = {id(f): why for f in findings if matched(f)
               for why in [mute_ignored(f, codes)] if why is not None}

    def is_muted(f: Finding) -> bool:
        return matched(f) and id(f) not in ignored

    shown = tuple(sorted((f for f in findings if not is_muted(f)),
                         key=lambda f: (-f.severity, f.code, f.entity)))
    hidden = tuple(f for f in findings if is_muted(f))
    overridden = tuple((f, ignored[id(f)]) for f in shown if id(f) in ignored)
    return shown, hidden, overridden


def _vetted(f: Finding, release: str) -> Finding:
    """``f`` without a ``ceph ...`` command its cluster's release would refuse, in its
    cause or its step by hand (``checks.ceph_cli.vetted``): what is printed runs."""
    if not release:
        return f
    message = vetted(f.message, release)
    manual = f.evidence.get("manual") if f.evidence else None
    if isinstance(manual, str) and (new := vetted(manual, release)) != manual:
        return replace(f, message=message, evidence={**f.evidence, "manual": new})
    return f if message == f.message else replace(f, message=message)


def run_checks(
    snap: ClusterSnapshot,
    thresholds: Thresholds | None = None,
    only: Iterable[str] | None = None,
    muted: Iterable[str] = (),
    registry: Registry | None = None,
    now: float | None = None,
    mute_rules: Iterable[tuple[str, str | None]] = (),
) -> CheckReport:
    """Run all checks whose inputs exist. ``only`` keeps just those codes (after running)
    and what says they could not be looked at (``Selection``)."""
    import checks.catalog  # noqa: F401  (explicit list of check modules registers them)

    reg = registry or REGISTRY
    ctx = CheckContext(thresholds=thresholds or Thresholds(), now=now or time.time())
    t0 = time.monotonic()
    started = time.time()
    findings: list[Finding] = _part_findings(snap)
    release = snap.ceph.release if snap.ceph is not None else ""
    ran: list[str] = []
    have = {
        "ceph": snap.ceph is not None,
        "swift": snap.swift is not None,
        "hosts": snap.host_facts_collected,
        "prometheus": snap.prometheus is not None,
    }
    for chk in reg.checks:
        if not all(have.get(n, False) for n in chk.needs):
            continue
        ran.append(chk.name)
        try:
            findings.extend(_vetted(f, release) for f in chk.fn(snap, ctx))
        except Exception as e:  # a broken check becomes a finding, the rest still run
            findings.append(Finding(
                "CHECK_INTERNAL_ERROR", Severity.WARN, f"check {chk.name}",
                f"check {chk.name} failed: {type(e).__name__}: {e}",
                {"traceback": traceback.format_exc(limit=5)}))
    # what stordoc changed on purpose, within its deadline, is planned (INFO), not a problem
    findings = planned.apply(findings, snap, ctx.now)
    sel = Selection.of(only, reg) if only else None
    kept = [f for f in findings if sel is None or sel.keeps(f.code, f.entity)]
    shown, hidden, overridden = apply_mutes(kept, reg.codes, muted, mute_rules)
    return CheckReport(snap.cluster, shown, started, time.monotonic() - t0, tuple(ran), hidden,
                       overridden, sel.keep if sel is not None else None)
