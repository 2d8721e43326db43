"""What one check gives every front end: the snapshot, the report, the incidents (worst
first, each with its one next step once planned), and where it was recorded."""

from __future__ import annotations

from dataclasses import dataclass

from checks.engine import CheckReport
from checks.incidents import Incident
from storage.journal import FindingDelta
from storage.model import ClusterSnapshot


@dataclass(frozen=True)
class CheckOutcome:
    snapshot: ClusterSnapshot
    report: CheckReport
    run_id: int | None
    delta: FindingDelta | None
    collect_s: float
    check_s: float
    # grouped by cause (checks.incidents), worst first; next steps set by the runbooks layer
    incidents: tuple[Incident, ...] = ()
