"""A maintenance window on one host: ``noout`` on that host's OSDs only
(``ceph osd set-group noout osd.N ...``), so its OSDs going down do not make Ceph
re-replicate their data elsewhere, for a limited time: stordoc unsets it at the deadline
(``runbooks.expiry``), or ``maintenance-end`` does earlier. The plan says what will not
heal meanwhile: the PG copies on those OSDs.
"""

from __future__ import annotations

import time

from runbooks.base import Draft, Runbook, need_ceph, register
from runbooks.expiry import end_flag_now, parse_window, temporary_op
from runbooks.model import MonOp, PyOp, Refused, RunbookInfo
from storage import expiring
from storage.model import CephState, ClusterSnapshot

FLAG = "noout"
DEFAULT_WINDOW = "2h"


def host_osds(ceph: CephState, host: str) -> list[int]:
    """The existing OSDs CRUSH places under ``host``, or Refused."""
    crush = next((h for h in ceph.hosts if h.name == host), None)
    ids = [i for i in (crush.osd_ids if crush else ())
           if (o := ceph.osd(i)) is not None and o.exists and not o.destroyed]
    if not ids:
        known = ", ".join(h.name for h in ceph.hosts if h.osd_ids) or "none"
        raise Refused(f"host {host} has no OSDs in the CRUSH map (hosts with OSDs: {known})")
    return sorted(ids)


def not_healing(ceph: CephState, ids: list[int]) -> tuple[int, list[str]]:
    """PG copies on these OSDs (``osd df``'s pgs): what stays degraded, not re-replicated,
    while they are down under noout."""
    per = {u.id: u.pgs for u in ceph.osd_usage}
    total = sum(per.get(i) or 0 for i in ids)
    return total, [f"osd.{i} {per.get(i) if per.get(i) is not None else '?'} PGs"
                   for i in ids]


@register
class MaintenanceStart(Runbook):
    option_keys = ("for",)
    info = RunbookInfo(
        "maintenance-start",
        "Start a maintenance window on a host: noout on its OSDs only, until a deadline "
        "at which stordoc unsets it (or maintenance-end).",
        (), destructive=False, target_kind="host", target_help="a configured host name")

    def lock_keys(self, target: str) -> list[str]:
        return [f"maintenance {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        window = parse_window(d.options.get("for", DEFAULT_WINDOW))
        ids = host_osds(ceph, target)
        have = [i for i in ids if FLAG in (ceph.osd(i).state if ceph.osd(i) else ())]  # type: ignore[union-attr]
        todo = [f"osd.{i}" for i in ids if i not in have]
        if have:
            d.warnings.append(f"{', '.join(f'osd.{i}' for i in have)} carry {FLAG} already "
                              "(not set by this window): left as they are")
        if not todo:
            raise Refused(f"every OSD of host {target} carries {FLAG} already: no window "
                          "to open")
        pgs, per = not_healing(ceph, ids)
        d.params.update(host=target, osds=todo, window_s=int(window),
                        not_healing=f"{pgs} PG copies ({'; '.join(per)})")
        d.warnings.append(
            f"while {target}'s OSDs are down, {pgs} PG copies on {', '.join(todo)} stay "
            f"degraded: Ceph does not re-replicate them elsewhere (noout), so one more "
            f"failure in those PGs may lose access to data")
        if FLAG in ceph.flags:
            d.warnings.append(f"the cluster-wide {FLAG} flag is set too (not by this "
                              "window): every OSD is noout")
        mon = MonOp("osd set-group", {"flags": FLAG, "who": todo})
        op = PyOp(f"{mon.command()}  (unset by stordoc after {window:.0f} s)",
                  temporary_op("osd-flag", FLAG, window, mon, todo,
                               reason=f"maintenance of host {target}"))
        d._add(f"noout on {target}'s OSDs for {window:.0f} s", "ceph", op, None, None)
        d.verify_codes = ()


@register
class MaintenanceEnd(Runbook):
    info = RunbookInfo(
        "maintenance-end",
        "End a host's maintenance window now: unset noout on its OSDs.",
        ("OSDMAP_FLAGS",), destructive=False, target_kind="host",
        target_help="a configured host name")

    def lock_keys(self, target: str) -> list[str]:
        return [f"maintenance {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        ids = host_osds(ceph, target)
        flagged = [f"osd.{i}" for i in ids
                   if FLAG in (ceph.osd(i).state if ceph.osd(i) else ())]  # type: ignore[union-attr]
        if not flagged:
            raise Refused(f"no OSD of host {target} carries {FLAG}: no maintenance window "
                          "is open there")
        ours = [c for c in expiring.open_changes(d.ctx.journal, d.ctx.cluster)
                if c.kind == "osd-flag" and set(c.entities) & set(flagged)]
        d.params.update(host=target, osds=flagged,
                        opened_by=", ".join(f"{c.by} at {time.strftime('%H:%M', time.gmtime(c.created_at))}"
                                            for c in ours) or "not set by stordoc")
        mon = MonOp("osd unset-group", {"flags": FLAG, "who": flagged})
        d._add(f"unset noout on {target}'s OSDs", "ceph",
               PyOp(mon.command(), end_flag_now(FLAG, flagged)), None, None)
        d.verify_codes = ("OSDMAP_FLAGS",)
        d.verify_entities = tuple(f"{o} flag {FLAG}" for o in flagged)
