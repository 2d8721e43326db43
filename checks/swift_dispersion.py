"""Dispersion findings: copies of stordoc's dispersion objects and containers that the
ring says should exist on a device and do not (a direct HEAD answered 404).

The percentage is that of swift-dispersion-report (copies found among the copies asked
that answered); a copy that could not be asked (server down, timeout) is not counted as
missing: the server's own finding says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.swift_names import device_name, host_names
from storage.model import ClusterSnapshot, DispersionPart, SwiftState

CODES = (
    CodeInfo("SWIFT_DISPERSION_OBJECT_COPIES", Severity.WARN,
             "Sampled dispersion objects lack copies on a device (crit below the crit "
             "percentage, or when an object has no copy left)."),
    CodeInfo("SWIFT_DISPERSION_CONTAINER_COPIES", Severity.WARN,
             "Sampled dispersion containers lack copies on a device (crit below the crit "
             "percentage, or when a container has no copy left)."),
)
_CODE = {"object": "SWIFT_DISPERSION_OBJECT_COPIES",
         "container": "SWIFT_DISPERSION_CONTAINER_COPIES"}


def part_findings(part: DispersionPart, ctx: CheckContext,
                  names: Mapping[str, str] | None = None) -> list[Finding]:
    """One finding per device that lacks copies (pure). ``names``: address -> configured
    host name (a device reads ``d2@node2``)."""
    th = ctx.thresholds
    pct = part.pct_found
    if pct is None or part.missing == 0:
        return []
    lost = part.lost()
    crit = pct < th.swift_dispersion_copies_crit_pct or bool(lost)
    if pct >= th.swift_dispersion_copies_warn_pct and not crit:
        return []
    sev = Severity.CRIT if crit else Severity.WARN
    head = (f"{part.kind} dispersion {pct:.1f}% of copies found ({part.found} of "
            f"{part.found + part.missing} over {part.sampled} sampled {part.kind}s; warn "
            f"below {th.swift_dispersion_copies_warn_pct:g}%, crit below "
            f"{th.swift_dispersion_copies_crit_pct:g}%)")
    out: list[Finding] = []
    for (ip, port, device), n in sorted(part.missing_by_device().items()):
        objs = sorted({c.name for c in part.copies
                        if c.missing and (c.ip, c.port, c.device) == (ip, port, device)})
        dev = device_name(device, ip, names)
        out.append(Finding(
            _CODE[part.kind], sev, f"{part.kind} ring {dev}",
            f"{head}: {dev} lacks {n} cop{'y' if n == 1 else 'ies'}"
            + (f"; {len(lost)} {part.kind}(s) have no copy left" if lost else ""),
            {"pct_found": round(pct, 2), "found": part.found, "missing": part.missing,
             "errors": part.errors, "sampled": part.sampled, "device_missing": n,
             "names": objs[:20], "lost": lost[:20],
             "ring_entry": f"{device}@{ip}:{port}",
             "warn_pct": th.swift_dispersion_copies_warn_pct,
             "crit_pct": th.swift_dispersion_copies_crit_pct}))
    return out


@check("swift-dispersion", codes=CODES, needs=("swift",))
def swift_dispersion(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    sw = snap.swift
    assert sw is not None
    d = sw.dispersion
    if d is None or not d.populated:
        return []
    out: list[Finding] = []
    for part in (d.objects, d.containers):
        if part is not None:
            ring = sw.ring(part.kind)
            out.extend(with_locate_step(f, ring.ring_path if ring is not None else None,
                                        d.account)
                       for f in part_findings(part, ctx, host_names(snap)))
    return out


def with_locate_step(f: Finding, ring_path: str | None, account: str | None) -> Finding:
    """A missing copy's first step by hand, an exact command: where the ring puts each
    copy of the first missing name, with a ``curl`` per copy (``swift-get-nodes``, which
    reads the ring file only)."""
    names = (f.evidence or {}).get("names") or []
    if not ring_path or not account or not names:
        return f
    name = str(names[0])
    if any(c.isspace() or c in "`'\"$" for c in name + account + ring_path):
        return f  # said as one command only when every word is plain
    return replace(f, evidence=dict(
        f.evidence, manual=f"see where each copy of {name} belongs and ask each: "
        f"`swift-get-nodes -a {ring_path} {account} {name.replace('/', ' ', 1)}`; a copy "
        "missing from a primary is rebuilt by the replicator's next pass"))


@dataclass(frozen=True)
class DispersionSummary:
    """One line per kind for the CLI, the TUI's Swift screen and Slack's ``ring``."""

    state: str  # "ok", "missing copies", "not populated", "not sampled", "error: ..."
    object_pct: float | None = None
    container_pct: float | None = None
    objects: int = 0
    containers: int = 0
    missing: int = 0
    errors: int = 0

    def line(self) -> str:
        if self.object_pct is None and self.container_pct is None:
            return f"dispersion: {self.state}"
        parts = []
        if self.object_pct is not None:
            parts.append(f"objects {self.object_pct:.1f}% of copies ({self.objects} sampled)")
        if self.container_pct is not None:
            parts.append(f"containers {self.container_pct:.1f}% ({self.containers} sampled)")
        extra = f", {self.missing} missing" if self.missing else ""
        extra += f", {self.errors} not asked (server down?)" if self.errors else ""
        return f"dispersion: {'; '.join(parts)}{extra}"


def dispersion_summary(sw: SwiftState) -> DispersionSummary:
    """The dispersion figures of a snapshot (pure)."""
    d = sw.dispersion
    if d is None:
        return DispersionSummary("not sampled (no Swift auth configured)")
    if d.error:
        return DispersionSummary(f"error: {d.error}")
    if not d.populated:
        return DispersionSummary("not populated (stordoc swift dispersion populate)")
    o, c = d.objects, d.containers
    missing = (o.missing if o else 0) + (c.missing if c else 0)
    errors = (o.errors if o else 0) + (c.errors if c else 0)
    return DispersionSummary(
        "missing copies" if missing else "ok",
        object_pct=o.pct_found if o else None, container_pct=c.pct_found if c else None,
        objects=o.sampled if o else 0, containers=c.sampled if c else 0,
        missing=missing, errors=errors)
