"""Fail the active manager over to a standby (``ceph mgr fail NAME``): a manager that
hangs or whose modules failed is replaced by a standby at once, instead of after the
beacon grace; the failed one restarts as a standby. Refused without a standby (failing
the only manager leaves the cluster with none until it restarts). Verified by the map: a
standby became active."""

from __future__ import annotations

from checks.spelling import closest
from runbooks.base import Draft, Runbook, need_ceph, register
from runbooks.model import InvalidRequest, Probe, Refused, RunbookInfo, StepEnv
from storage.model import ClusterSnapshot
from storage.model.mgrmon import MgrState


def _mgr_map(snap: ClusterSnapshot) -> MgrState:
    ceph = need_ceph(snap)
    if ceph.mgr is None:
        err = ceph.errors.get("mgr dump")
        raise Refused("the manager map could not be read" + (f": {err}" if err else ""))
    return ceph.mgr


def took_over_probe(failed: str, standbys: tuple[str, ...]) -> Probe:
    """A WaitOp probe: is one of ``standbys`` the active, available manager now?"""

    def probe(env: StepEnv) -> tuple[bool, str]:
        s = env.ceph.mon("mgr stat") or {}
        active = str(s.get("active_name") or "")
        ok = bool(s.get("available")) and active != failed and active in standbys
        return ok, (f"active mgr.{active}" if active else "no active manager") + \
            f", available={bool(s.get('available'))}"

    return probe


@register
class MgrFailover(Runbook):
    info = RunbookInfo(
        "mgr-failover",
        "Fail the active manager over to a standby (ceph mgr fail NAME); refused without a "
        "standby.",
        ("MGR_NOT_ANSWERING",), destructive=False, target_kind="mgr", target_help="mgr.NAME")

    def lock_keys(self, target: str) -> list[str]:
        return ["mgr"]  # one failover at a time, whichever manager is named

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        mgr = _mgr_map(snap)
        name = target.removeprefix("mgr.")
        known = ([mgr.active] if mgr.active else []) + list(mgr.standbys)
        if name not in known:
            near = closest(name, known) if known else None
            raise InvalidRequest(
                f"mgr.{name} is not a manager of this cluster (active: "
                f"{'mgr.' + mgr.active if mgr.active else 'none'}; standbys: "
                f"{', '.join('mgr.' + s for s in mgr.standbys) or 'none'})"
                + (f": did you mean mgr.{near}?" if near else ""))
        if name != mgr.active:
            raise Refused(f"mgr.{name} is a standby; only the active manager "
                          f"(mgr.{mgr.active}) is failed over")
        if not mgr.standbys:
            raise Refused(f"no standby manager to take over from mgr.{name}: failing it would "
                          "leave the cluster with no manager; restart it on its host instead")
        d.params.update(active=f"mgr.{name}", standbys=[f"mgr.{s}" for s in mgr.standbys])
        d.mon(f"fail mgr.{name} over to a standby", "mgr fail", {"who": name})
        d.wait("wait until a standby is the active manager",
               f"ceph mgr stat: wait until one of {', '.join(mgr.standbys)} is active",
               took_over_probe(name, mgr.standbys), interval_s=0.5)
        d.verify_codes = ("MGR_NOT_ANSWERING", "MGR_NO_ACTIVE", "PGS_STATS_STALE")
        d.verify_entities = (f"mgr.{name}", f"cluster {d.ctx.cluster} mgr",
                             f"cluster {d.ctx.cluster} pgs")
