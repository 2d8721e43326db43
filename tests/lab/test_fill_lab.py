"""Uneven OSDs on the real lab, made by plain commands (a pool of one PG pinned to two
OSDs with ``pg-upmap``, 600 MB written to it): ``osd-reweight-by-utilization`` shows Ceph's
own dry run in its plan, applies it, and the OSDs it named carry the new reweights."""

from __future__ import annotations

import json
import re

from lab import Lab
from stordoc.env import Env
from tests.lab.test_ceph_codes import ceph, cli
from tests.support.poll import wait_until

POOL = "lab-uneven"
HEAVY = (2, 1)  # the OSDs that hold the pool's one PG
MB = 600


def _var(lab: Lab) -> dict[int, float]:
    """Each OSD's utilization over the average (``ceph osd df``'s VAR)."""
    df = json.loads(ceph(lab, "osd", "df", "--format=json"))
    return {int(n["id"]): float(n["var"]) for n in df["nodes"]}


def _reweights(lab: Lab) -> dict[int, float]:
    df = json.loads(ceph(lab, "osd", "df", "--format=json"))
    return {int(n["id"]): float(n["reweight"]) for n in df["nodes"]}


def test_reweight_by_utilization_shows_the_dry_run_then_applies_it(lab: Lab, env: Env
                                                                   ) -> None:
    import rados

    before = _reweights(lab)
    assert set(before.values()) == {1.0}, before
    even = cli(lab, env, "plan", "osd-reweight-by-utilization", "lab")
    assert even.returncode != 0 and "Ceph's dry run changes nothing" in even.stdout + \
        even.stderr, even.stdout + even.stderr
    try:
        ceph(lab, "osd", "pool", "create", POOL, "1", "1", "replicated",
             "--autoscale-mode=off")
        ceph(lab, "osd", "pool", "set", POOL, "size", "2")
        ceph(lab, "osd", "pool", "application", "enable", POOL, "rbd")
        pid = next(p["pool_id"] for p in json.loads(
            ceph(lab, "osd", "pool", "ls", "detail", "--format=json"))
            if p["pool_name"] == POOL)
        ceph(lab, "osd", "pg-upmap", f"{pid}.0", *map(str, HEAVY))
        lab.wait_pgs_clean(180, "the uneven pool")
        c = rados.Rados(conffile=str(lab.conf), conf={"keyring": str(lab.admin_keyring)})
        c.connect(timeout=30)
        try:
            io = c.open_ioctx(POOL)
            try:
                for i in range(MB // 4):
                    io.write_full(f"uneven-{i}", b"u" * (4 << 20))
            finally:
                io.close()
        finally:
            c.shutdown()
        lab.wait_pgs_clean(180, "the uneven pool written")
        # the manager's OSD statistics follow the writes a few seconds later
        wait_until(lambda: min(_var(lab)[o] for o in HEAVY) >= 1.4, 120,
                   lambda: f"the heavy OSDs' variance at 1.4 or more ({_var(lab)})", 2.0)

        plan = cli(lab, env, "plan", "osd-reweight-by-utilization", "lab")
        assert plan.returncode == 0, plan.stdout + plan.stderr
        named = {int(m) for m in re.findall(r"osd\.(\d+) reweight 1\.0000 -> 0\.\d+",
                                            plan.stdout)}
        assert named and named <= set(HEAVY), plan.stdout  # Ceph's dry run, in the plan
        r = cli(lab, env, "fix", "osd-reweight-by-utilization", "lab", "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "verified" in r.stdout, r.stdout
        after = _reweights(lab)
        assert {o for o, w in after.items() if w < 1.0} == named, after
        assert all(after[o] == 1.0 for o in after if o not in named), after
    finally:
        for o, w in _reweights(lab).items():
            if w != 1.0:
                ceph(lab, "osd", "reweight", str(o), "1.0")
        if POOL in lab.ceph_cluster.pool_names():
            lab.ceph_cluster.delete_pool(POOL, "test cleanup")
        lab.wait_pgs_clean(300, "reweights back to 1, the uneven pool removed")
