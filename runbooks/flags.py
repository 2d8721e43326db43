"""Unset a cluster-wide osdmap flag (``ceph osd unset FLAG``) by the name Ceph takes.

``osd dump`` spells ``pause`` as ``pauserd,pausewr``; Ceph refuses ``ceph osd unset
pauserd``: the target is normalised to ``pause`` (``runbooks.targets.canonical_flag``).
A flag that is not set is refused, so is one a stordoc run or maintenance window holds:
``noout`` on a host's OSDs is ended by ``maintenance-end``, a running fix unsets its own.
"""

from __future__ import annotations

import time

from checks.osd import FLAG_EFFECTS, ceph_flag_name, set_by
from runbooks.base import Draft, Runbook, need_ceph, register
from runbooks.model import Refused, RunbookInfo
from storage import expiring
from storage.model import CephState, ClusterSnapshot, HeldChange

FEATURE_BITS = frozenset({"pglog_hardlimit"})  # Ceph takes them, but they are no problem


def _window_hosts(ceph: CephState, changes: list[HeldChange], flag: str) -> list[str]:
    """The hosts whose stordoc maintenance window holds ``flag`` (their OSDs')."""
    hosts: list[str] = []
    for c in changes:
        if c.kind != "osd-flag" or c.key != flag or c.state not in ("pending", "held"):
            continue
        for e in c.entities:
            o = ceph.osd(int(e.removeprefix("osd."))) if e.startswith("osd.") and \
                e[4:].isdigit() else None
            h = o.host if o is not None and o.host else None
            if h and h not in hosts:
                hosts.append(h)
        if not c.entities and "(no host)" not in hosts:
            hosts.append("(no host)")
    return hosts


@register
class FlagUnset(Runbook):
    info = RunbookInfo(
        "flag-unset",
        "Unset a cluster-wide osdmap flag (ceph osd unset FLAG: pause, noout, norecover, "
        "...) that holds client I/O, recovery, backfill or scrub back.",
        ("OSDMAP_FLAGS",), destructive=False, target_kind="osd-flag",
        target_help="a flag name ceph osd unset takes (pause, noout, norecover, ...)")

    def lock_keys(self, target: str) -> list[str]:
        return [f"flag {target}"]  # the lock a runbook holding noout takes

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        flag = ceph_flag_name(target)
        if flag in FEATURE_BITS:
            raise Refused(f"{flag} is a feature bit of the osdmap, not a problem: stordoc "
                          "does not unset it")
        spelt = [f for f in ceph.flags if ceph_flag_name(f) == flag]
        if not spelt:
            on = [o.name for o in ceph.osds if flag in o.state]
            if on:
                raise Refused(
                    f"{flag} is not set on cluster {d.ctx.cluster}, only on "
                    f"{', '.join(on[:8])}{' ...' if len(on) > 8 else ''} (set-group): "
                    + ("a host's maintenance window ends with stordoc fix maintenance-end "
                       "HOST, else " if flag == "noout" else "")
                    + f"ceph osd unset-group {flag} {' '.join(on[:8])}")
            shown = ",".join(ceph.flags) or "none"
            raise Refused(f"{flag} is not set on cluster {d.ctx.cluster} (osdmap flags: "
                          f"{shown}): nothing to unset")
        for r in snap.runs:
            if r.finished_at is None and flag in r.flags_held:
                raise Refused(f"{flag} is held by stordoc {r.name}, still running: it "
                              "unsets it itself when it ends")
        if flag == "noout":
            changes = list(snap.changes) + [
                c for c in expiring.open_changes(d.ctx.journal, d.ctx.cluster)
                if all(c.id != x.id for x in snap.changes)]
            hosts = _window_hosts(ceph, changes, flag)
            if hosts:
                raise Refused(
                    f"noout is held by stordoc's maintenance window on {', '.join(hosts)}: "
                    "end it first with "
                    + ", ".join(f"stordoc fix maintenance-end {h}" for h in hosts)
                    + " (it unsets the window's noout and ends the window)")
        who = set_by(snap, flag)
        after = [f for f in ceph.flags if f not in spelt]
        d.params.update(flag=flag, osdmap_flags=spelt, set_by=who,
                        at=time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(snap.taken_at)))
        d.before_after["osdmap flags"] = (",".join(ceph.flags), ",".join(after))
        effect = FLAG_EFFECTS.get(flag if len(spelt) != 1 else spelt[0])
        if effect:
            d.warnings.append(f"{flag} ({who}) ends: no longer \"{effect}\"")
        d.mon(f"unset {flag} on cluster {d.ctx.cluster}", "osd unset", {"key": flag})
        d.verify_codes = ("OSDMAP_FLAGS",)
        d.verify_entities = (f"cluster {d.ctx.cluster} flag {flag}",)
