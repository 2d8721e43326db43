"""Planning: which runbooks exist, which one fixes a code, and ``plan``.

``plan`` reads a fresh snapshot, validates the typed target against it and returns the
exact steps without touching anything; ``plan_from_snapshot`` does the same on a snapshot
the caller already has (no I/O at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checks.spelling import closest
from runbooks.base import Draft, Runbook
from runbooks.catalog import registry  # registers the runbooks, in the importing thread
from runbooks.model import InvalidRequest, Plan, Refused, RunbookInfo, RunContext
from runbooks.targets import canonical_target_on
from storage.model import ClusterSnapshot


def list_runbooks() -> list[RunbookInfo]:
    return [rb.info for rb in registry().values()]


def runbook_for_code(code: str) -> str | None:
    """The runbook that fixes a finding code (the first that declares it), else None."""
    code = code.strip().upper()
    for rb in registry().values():
        if code in rb.info.fixes:
            return rb.info.name
    return None


def runbook_named(name: str) -> Runbook:
    """The registered runbook of that name, or InvalidRequest with the closest name
    (``unknown runbook osd-remout: did you mean osd-remount?``), naming them all only
    when none is close."""
    reg = registry()
    rb = reg.get(name.strip())
    if rb is None:
        near = closest(name, reg)
        raise InvalidRequest(f"unknown runbook {name.strip()}: did you mean {near}?" if near
                             else f"unknown runbook {name.strip()}; the runbooks: "
                             f"{', '.join(sorted(reg))}")
    return rb


def collect_snapshot(ctx: RunContext, host_facts: bool) -> ClusterSnapshot:
    """A runbook plans (and verifies) on SSH's deep facts of the hosts, never on
    Prometheus's (no device labels or fstab there, and a scrape lags a repair)."""
    from dataclasses import replace

    from storage.collect import collect

    return collect(replace(ctx.target, prometheus=None), host_facts=host_facts)


def plan(ctx: RunContext, runbook: str, target: str,
         options: Mapping[str, Any] | None = None) -> Plan:
    """Plan on a fresh snapshot. Read-only: collecting is the only thing it does."""
    rb = runbook_named(runbook)
    if (target or "").strip():  # a misspelt or look-alike host: refused before any I/O
        canonical_target_on(rb.info.target_kind, target, ctx.target)
    snap = collect_snapshot(ctx, rb.needs_host_facts)
    return plan_from_snapshot(ctx, snap, runbook, target, options)


def plan_from_snapshot(ctx: RunContext, snap: ClusterSnapshot, runbook: str, target: str,
                       options: Mapping[str, Any] | None = None) -> Plan:
    """Validate ``target`` against ``snap`` and build the steps (no I/O at all)."""
    rb = runbook_named(runbook)
    if not (target or "").strip():
        raise InvalidRequest(f"{runbook}: a target is required ({rb.info.target_help})")
    # one spelling per target before anything is locked, planned or audited: the host
    # of DEVICE@HOST / SERVER@HOST as configured (an address, case or trailing dot are it)
    target = canonical_target_on(rb.info.target_kind, target, ctx.target)
    unknown = sorted(set(options or {}) - set(rb.option_keys) - set(ctx.options))
    if unknown:
        takes = ", ".join(rb.option_keys) or "no options"
        raise InvalidRequest(f"{rb.info.name}: unknown option(s) {', '.join(map(repr, unknown))} "
                      f"(it takes {takes})")
    opts = {**dict(ctx.options), **dict(options or {})}
    draft = Draft(ctx, options=opts)
    rb.build(draft, snap, target)
    if not draft.steps:
        raise Refused(f"{runbook} {target}: nothing to do")
    locks = list(dict.fromkeys(rb.lock_keys(target) + draft.locks))
    return Plan(
        runbook=rb.info.name, cluster=ctx.cluster, target=target, params=dict(draft.params),
        steps=tuple(draft.steps), verify_codes=draft.verify_codes or rb.info.fixes,
        before_after=dict(draft.before_after), warnings=tuple(draft.warnings),
        summary=rb.info.summary, destructive=rb.info.destructive,
        needs_second_person=rb.info.needs_second_person, locks=tuple(locks),
        verify_entities=draft.verify_entities, verify_host_facts=draft.verify_host_facts,
        options=opts)
