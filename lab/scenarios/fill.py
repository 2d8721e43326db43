"""A filling cluster and a maintenance flag left behind, made the way they happen:

- ``cluster-nearfull``: the OSDs fill past the nearfull ratio. The lab's OSDs hold a few
  percent, so the nearfull ratio is lowered below their fill instead of writing
  gigabytes (``ceph osd set-nearfull-ratio``, the command an operator or a config
  management run uses); Ceph raises OSD_NEARFULL exactly as for data written.
- ``maintenance-left``: noout set by hand on one host's OSDs for a maintenance
  (``ceph osd set-group noout osd.N``) and never unset: the host's OSDs would never be
  marked out, their data never re-replicated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab.procs import LabError, wait
from lab.scenarios.base import OSD_ANY, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

LAB_NEARFULL = 0.85


def _below_fill(lab: Lab) -> str:
    """A nearfull ratio below every OSD's fill (a fresh lab holds about 3% on Pacific,
    0.3% on Reef): half the emptiest OSD's."""
    df = lab.ceph("osd", "df", timeout=10, check=False)
    fills = [float(n.get("utilization", 0.0)) / 100.0
             for n in (df.get("nodes") or [] if isinstance(df, dict) else [])]
    low = min((f for f in fills if f > 0), default=0.002)
    return f"{max(low / 2, 0.0001):.4f}"


def _ratio(lab: Lab, key: str) -> float | None:
    dump = lab.ceph("osd", "dump", timeout=10, check=False)
    v = dump.get(key) if isinstance(dump, dict) else None
    return float(v) if isinstance(v, (int, float)) else None


class ClusterNearfull(Scenario):
    name = "cluster-nearfull"
    summary = ("the OSDs past the nearfull ratio (ceph osd set-nearfull-ratio below their "
               "fill): OSD_NEARFULL")

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = f"break {self.name}"
        before = _ratio(lab, "nearfull_ratio")
        if before is None:
            raise LabError(step, "no nearfull_ratio in the osd dump")
        low = _below_fill(lab)
        if before > 0.5:  # the lab's own value, not one a break left
            lab.write_state(nearfull_ratio=before)
        lab.ceph("osd", "set-nearfull-ratio", low, step=step)
        wait(lambda: "OSD_NEARFULL" in lab.health_checks(), 90, step, "OSD_NEARFULL")
        return f"nearfull ratio {before:g} -> {low}: every OSD is past it"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = f"heal {self.name}"
        back = float(lab.read_state().get("nearfull_ratio") or LAB_NEARFULL)
        lab.ceph("osd", "set-nearfull-ratio", f"{back:.4f}", step=step)
        wait(lambda: "OSD_NEARFULL" not in lab.health_checks(), 90, step,
             "OSD_NEARFULL cleared")
        return f"nearfull ratio back to {back:g}"


class MaintenanceLeft(Scenario):
    name = "maintenance-left"
    summary = ("noout left on one host's OSDs after a maintenance (ceph osd set-group "
               "noout osd.N, set by hand, never unset)")
    options = (OSD_ANY,)
    heal_options = (OSD_ANY,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = f"break {self.name} osd.{args.osd}"
        lab.ceph("osd", "set-group", "noout", f"osd.{args.osd}", step=step)
        wait(lambda: "OSD_FLAGS" in lab.health_checks(), 90, step, "OSD_FLAGS")
        return f"noout set by hand on osd.{args.osd} (and left)"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = f"heal {self.name} osd.{args.osd}"
        lab.ceph("osd", "unset-group", "noout", f"osd.{args.osd}", step=step)
        wait(lambda: "OSD_FLAGS" not in lab.health_checks(), 90, step, "OSD_FLAGS cleared")
        return f"noout unset on osd.{args.osd}"
