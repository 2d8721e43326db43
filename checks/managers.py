"""The manager: is one active, does it answer, and since when are the PG statistics the
monitors still serve stale.

The PG states, OSD usage and stuck PGs come from the active ceph-mgr. When it dies the
monitors keep serving its last report (``status``'s pgmap: "65 active+clean") and Ceph
says nothing for ``mon_mgr_beacon_grace`` (30 s), then drops the manager from the map, and
raises MGR_DOWN later still; meanwhile nothing manages PGs (no autoscaler, no balancer,
no progress, no crash reports) and a check that believed the last report would call the
PGs clean. Two facts tell it sooner: the manager map (``mgr dump``: no active manager
available) and this collection's own manager commands (they were not answered). The
cluster log's last ``pgmap`` line of a manager says since when the statistics are stale
(``storage.ceph.collect``: ``log last``). ``pg_stats_stale`` is the one rule; the PG
checks and Ceph's MGR_DOWN fold into the manager's incident.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.osd import cluster_entity, fmt_duration
from storage.model import CephState, ClusterSnapshot
from storage.model.mgrmon import MgrState


def fmt_stamp(t: float) -> str:
    """``2026-11-27 01:22:10 UTC``: a moment a reader can compare with logs."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


@dataclass(frozen=True)
class StaleStats:
    """Why the PG statistics as read are not the cluster's, and since when."""

    why: str  # "no active manager", "mgr.x did not answer"
    since: float | None  # the manager's last PG report, when the cluster log still has it
    before: float | None = None  # its last report is older than this (scrolled out)
    last_line: str | None = None  # that report ("pgmap v62: 65 pgs: 65 active+clean; ...")

    def since_text(self, now: float) -> str:
        if self.since is not None:
            return (f"since {fmt_stamp(self.since)} ({fmt_duration(now - self.since)} ago, "
                    "the manager's last report)")
        if self.before is not None:
            return f"since before {fmt_stamp(self.before)} (the oldest cluster log line read)"
        return "since an unknown time (the cluster log did not say)"


def manager_gone(mgr: MgrState) -> str | None:
    """None when a manager is active and answered (or was not asked); else why not."""
    if not mgr.available or not mgr.active:
        return "no active manager"
    if mgr.answered is False:
        return f"mgr.{mgr.active} did not answer"
    return None


def pg_stats_stale(st: CephState) -> StaleStats | None:
    """The one rule: the PG statistics of this snapshot are not the cluster's (no active
    manager in the map, or the active one did not answer). None: they are as read."""
    mgr = st.mgr
    if mgr is None:
        dead = next((v for k, v in st.errors.items()
                     if k == "pg stat" and "manager did not answer" in v), None)
        return StaleStats("the manager did not answer", None) if dead else None
    why = manager_gone(mgr)
    if why is None:
        return None
    before = mgr.log_oldest if mgr.last_pg_report is None else None
    return StaleStats(why, mgr.last_pg_report, before, mgr.last_pg_report_line)


def _last_said(line: str | None) -> str:
    """``pgmap v62: 65 pgs: 65 active+clean; 0 B data, ...`` -> ``65 active+clean``."""
    if not line:
        return ""
    parts = line.split(": ", 2)
    return parts[2].split(";", 1)[0].strip() if len(parts) == 3 else ""


MGR_CODES = (
    CodeInfo("MGR_NO_ACTIVE", Severity.CRIT,
             "No ceph-mgr is active: PG states, OSD and pool usage are the last report of "
             "a manager that is gone, and nothing manages PGs (autoscaler, balancer)."),
    CodeInfo("MGR_NOT_ANSWERING", Severity.CRIT,
             "The manager map names an active ceph-mgr but it did not answer: it died or "
             "hangs; Ceph drops it only after mon_mgr_beacon_grace (30 s).", "mgr-failover"),
    CodeInfo("PGS_STATS_STALE", Severity.WARN,
             "The PG states the monitors serve are the last report of a manager that is "
             "gone: not the cluster's, and never called clean."),
)


@check("ceph-managers", codes=MGR_CODES, needs=("ceph",))
def check_managers(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    now = st.collected_at or ctx.now
    stale = pg_stats_stale(st)
    mgr = st.mgr
    if mgr is not None:
        yield from _manager(snap, st, mgr, stale, now)
    if stale is not None:
        said = _last_said(stale.last_line)
        total = st.pgs.num_pgs
        yield Finding(
            "PGS_STATS_STALE", Severity.WARN, f"{cluster_entity(snap)} pgs",
            f"PG states unknown ({stale.why}): stale {stale.since_text(now)}"
            + (f"; that report said {said}" if said else "")
            + f"; not calling the {total} PGs clean until a manager reports again",
            {"why": stale.why, "since": stale.since, "before": stale.before,
             "last_report": stale.last_line, "num_pgs": total},
            since=stale.since)


def _manager(snap: ClusterSnapshot, st: CephState, mgr: MgrState,
             stale: StaleStats | None, now: float) -> Iterator[Finding]:
    standbys = list(mgr.standbys)
    ev: dict[str, object] = {
        "active": mgr.active or None, "available": mgr.available, "standbys": standbys,
        "epoch": mgr.epoch, "active_change": mgr.active_change, "answered": mgr.answered,
        "error": mgr.error,
        "stale_since": stale.since if stale else None}
    stale_txt = (f"PG states, OSD and pool usage are stale {stale.since_text(now)}"
                 if stale else "")
    sb = (f"standby {', '.join(f'mgr.{s}' for s in standbys)} did not take over"
          if standbys else "no standby manager")
    if not mgr.available or not mgr.active:
        when = (f" since {fmt_stamp(mgr.active_change)} "
                f"({fmt_duration(now - mgr.active_change)} ago)"
                if mgr.active_change is not None else "")
        yield Finding(
            "MGR_NO_ACTIVE", Severity.CRIT, f"{cluster_entity(snap)} mgr",
            f"no active ceph-mgr{when} ({sb}): {stale_txt}; nothing manages PGs "
            "(autoscaler, balancer, progress, crash reports): start ceph-mgr on a manager "
            "host (its log says why it stopped)",
            {**ev, "manual": "start ceph-mgr on a manager host (its log says why it "
                             "stopped)"}, since=mgr.active_change)
    elif mgr.answered is False:
        runbook = "mgr-failover" if standbys else None
        what = (f"fail it over to the standby (ceph mgr fail {mgr.active})" if standbys
                else f"find its host (`ceph mgr metadata {mgr.active}`: hostname) and restart "
                f"ceph-mgr {mgr.active} there (no standby to fail over to)")
        yield Finding(
            "MGR_NOT_ANSWERING", Severity.CRIT, f"mgr.{mgr.active}",
            f"mgr.{mgr.active} is the active manager in the map but did not answer this "
            f"check; Ceph drops it only after mon_mgr_beacon_grace "
            f"(30 s) and says HEALTH_OK until then: {stale_txt}; {what}",
            {**ev, "manual": what}, runbook=runbook,
            target=f"mgr.{mgr.active}" if runbook else None,
            since=stale.since if stale else None)
