"""Repair an inconsistent PG (``ceph pg repair PGID``) where the evidence makes it safe,
and prove it with a deep scrub.

The gate is ``checks.scrub.judge_pg``, the rule the PG_INCONSISTENT finding uses: every
inconsistent object has exactly one bad copy and good copies that agree with each other
(``rados list-inconsistent-obj``). Refused otherwise, with the reason in one line (two
copies bad, good copies that disagree, no authoritative copy, objects not listed). A PG
that is not inconsistent, a PG that does not exist and a malformed id are bad input.

Steps (manager commands): ``pg repair``, wait until the repair's scrub has run
(``last_deep_scrub_stamp`` moved, no ``repair``/``scrubbing`` state), ``pg deep-scrub``,
wait until that deep scrub has run and the PG reads active+clean with no scrub error.
Verify: no PG_INCONSISTENT on the PG. A repair does not make a failing disk good: when the
bad copy's OSD keeps showing up (``checks.scrub.disk_suspects``) the plan says so.
"""

from __future__ import annotations

from typing import Any

from checks.scrub import disk_suspects, judge_pg
from runbooks.base import Draft, Runbook, need_ceph, register
from runbooks.model import InvalidRequest, Probe, PyOp, Refused, RunbookInfo, StepEnv
from storage.ceph.parse import parse_stamp
from storage.model import CephState, ClusterSnapshot

NAME = "pg-repair"
SCRUB_WAIT_S = 300.0  # a deep scrub of a big PG on a busy cluster (osd_max_scrubs 1)


def _pg_stats(env: StepEnv, pgid: str) -> dict[str, Any] | None:
    """The manager's stats of one PG (``pg ls POOL``), None when it does not list it."""
    pool = int(pgid.split(".", 1)[0])
    res = env.ceph.mgr("pg ls", pool=pool)
    rows = res.get("pg_stats", []) if isinstance(res, dict) else res
    for p in rows if isinstance(rows, list) else []:
        if isinstance(p, dict) and p.get("pgid") == pgid:
            return p
    return None


def _stamp(p: dict[str, Any] | None) -> float:
    return (parse_stamp(p.get("last_deep_scrub_stamp")) or 0.0) if p else 0.0


def _errors(p: dict[str, Any]) -> int:
    v = (p.get("stat_sum") or {}).get("num_scrub_errors", 0)
    return int(v) if isinstance(v, int) else 0


class _Scrubbed:
    """Issue a repair or deep scrub (a manager command), remembering the PG's
    ``last_deep_scrub_stamp`` just before, and wait for the scrub that follows."""

    def __init__(self, pgid: str, prefix: str) -> None:
        self.pgid, self.prefix = pgid, prefix
        self.before: float | None = None

    def issue(self, env: StepEnv) -> tuple[bool, str]:
        p = _pg_stats(env, self.pgid)
        if p is None:
            return False, f"pg {self.pgid} is not listed by the manager"
        self.before = _stamp(p)
        env.ceph.mgr(self.prefix, pgid=self.pgid)
        return True, (f"{self.prefix} {self.pgid} sent (last deep scrub "
                      f"{p.get('last_deep_scrub_stamp')})")

    def waiter(self, clean: bool) -> Probe:
        def probe(env: StepEnv) -> tuple[bool, str]:
            p = _pg_stats(env, self.pgid)
            if p is None:
                return False, f"pg {self.pgid} not listed"
            state = str(p.get("state", ""))
            moved = self.before is not None and _stamp(p) > self.before
            busy = "scrubbing" in state or "repair" in state
            ok = moved and not busy
            if clean:
                ok = ok and state == "active+clean" and _errors(p) == 0
            return ok, (f"pg {self.pgid} {state}, last deep scrub "
                        f"{p.get('last_deep_scrub_stamp')}, {_errors(p)} scrub error(s)")

        return probe


def _exists(st: CephState, pgid: str) -> None:
    pool_id, ps = pgid.split(".", 1)
    pool = next((p for p in st.pools if str(p.id) == pool_id), None)
    if pool is None:
        known = ", ".join(f"{p.name} ({p.id})" for p in st.pools) or "none"
        raise InvalidRequest(f"pg {pgid} not found: no pool {pool_id} (pools: {known})")
    if int(ps, 16) >= max(pool.pg_num, 1):
        raise InvalidRequest(f"pg {pgid} not found: pool {pool.name} ({pool.id}) has "
                             f"{pool.pg_num} PGs ({pool.id}.0-{pool.id}.{pool.pg_num - 1:x})")


@register
class PgRepair(Runbook):
    info = RunbookInfo(
        NAME,
        "Repair an inconsistent PG from its agreeing good copies (ceph pg repair), then "
        "deep-scrub it; refused unless exactly one copy is bad.",
        ("PG_INCONSISTENT",), destructive=False, target_kind="pg", target_help="PGID",
        touches_data=True)

    def lock_keys(self, target: str) -> list[str]:
        return [f"pg {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        st = need_ceph(snap)
        pgid = target
        _exists(st, pgid)
        if st.scrub is not None and st.scrub.error:
            raise Refused(f"the inconsistent PGs could not be listed: {st.scrub.error}")
        pg = st.scrub.pg(pgid) if st.scrub is not None else None
        if pg is None:
            raise InvalidRequest(f"pg {pgid} is consistent: Ceph reports no scrub error on it;"
                                 " nothing to repair")
        pool = next((p for p in st.pools if str(p.id) == pgid.split(".", 1)[0]), None)
        v = judge_pg(pg, pool is not None and pool.type == "erasure")
        if not v.repairable:
            raise Refused(f"pg {pgid} not repaired: {v.reason}")
        d.params.update(pgid=pgid, acting=list(pg.acting), bad_osds=list(v.bad_osds),
                        good_osds=list(v.good_osds), scrub_errors=pg.scrub_errors)
        d.before_after["bad copies"] = (", ".join(f"osd.{o}" for o in v.bad_osds), "none")
        verdicts = [judge_pg(p) for p in st.scrub.pgs] if st.scrub is not None else []
        for o, why in disk_suspects(st, verdicts).items():
            if o in v.bad_osds:
                d.warnings.append(f"osd.{o} is {' and '.join(why)}: the repair fixes the "
                                  "data, not the disk; suspect it (osd-replace-disk)")
        repair = _Scrubbed(pgid, "pg repair")
        scrub = _Scrubbed(pgid, "pg deep-scrub")
        # manager commands: shown where they go (the cluster), run through python-rados
        d._add(f"repair pg {pgid} from its good copies ({v.reason})", "ceph",
               PyOp(f"ceph pg repair {pgid}", repair.issue), None, None)
        d.wait("wait until the repair's scrub has run",
               f"ceph pg ls {pgid.split('.')[0]}: wait until pg {pgid} "
               "last_deep_scrub_stamp moves and it is not repairing",
               repair.waiter(clean=False), timeout_s=SCRUB_WAIT_S, interval_s=1.0)
        d._add(f"deep-scrub pg {pgid} to prove it", "ceph",
               PyOp(f"ceph pg deep-scrub {pgid}", scrub.issue), None, None)
        d.wait("wait for a clean deep scrub",
               f"ceph pg ls {pgid.split('.')[0]}: wait until pg {pgid} "
               "last_deep_scrub_stamp moves and it is active+clean with no scrub error",
               scrub.waiter(clean=True), timeout_s=SCRUB_WAIT_S, interval_s=1.0)
        d.verify_codes = ("PG_INCONSISTENT",)
        d.verify_entities = (f"pg {pgid}",)
