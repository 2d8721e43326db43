"""Archive a reviewed crash report (``ceph crash archive ID``): it clears RECENT_CRASH for
that crash and keeps the report (``ceph crash info ID`` still shows it). Only a crash that
``crash ls-new`` lists now can be archived; the plan shows what crashed and where."""

from __future__ import annotations

from runbooks.base import Draft, Runbook, need_ceph, register
from runbooks.model import Refused, RunbookInfo
from storage.model import ClusterSnapshot, CrashReport


def new_crashes(snap: ClusterSnapshot) -> tuple[CrashReport, ...]:
    ceph = need_ceph(snap)
    if ceph.crashes is None:
        err = ceph.errors.get("crash ls-new")
        raise Refused("the crash list could not be read" + (f": {err}" if err else ""))
    return ceph.crashes


@register
class CrashArchive(Runbook):
    info = RunbookInfo(
        "crash-archive",
        "Archive a crash report you have read (ceph crash archive ID): clears RECENT_CRASH "
        "for it, keeps the report.",
        (), destructive=False, target_kind="crash", target_help="CRASH_ID")  # Ceph RECENT_CRASH

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        crashes = new_crashes(snap)
        crash = next((c for c in crashes if c.crash_id == target), None)
        if crash is None:
            known = ", ".join(c.crash_id for c in crashes[-5:]) or "none"
            raise Refused(f"{target!r} is not a new crash report (new: {known})")
        who = crash.entity or "?"
        d.params.update(crash_id=target, daemon=who, when=crash.timestamp)
        d.warnings.append(f"read it first: ceph crash info {target} ({who})")
        d.mon(f"archive crash {target} of {who}", "crash archive", {"id": target})
        d.verify_codes = ("CEPH_HEALTH",)
        d.verify_entities = ()
