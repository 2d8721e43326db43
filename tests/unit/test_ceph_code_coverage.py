"""Every code of Ceph's health-check list (Reef) and those added since, replayed (issue 38
items 3 and 8): Ceph's health-detail entry in its own shapes, injected into a saved lab
snapshot (or the lab scenario that made it, as saved), through the real check. Each code
is in exactly one incident (never shown twice), under its cause (never misfiled), and,
but for the few the docs list with their reason, stordoc's words name its entity and give
a next step: a runbook that plans, or an exact command (tests/support/ceph_code_cases.py).
The runbooks the codes point to (pool-app-enable, global-id-reclaim-off, pool-pg-num for
MANY_OBJECTS_PER_PG) are planned against the same snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.ceph_codes_rest import guess_app
from core.service.snapshots import load
from runbooks.model import Refused, RunContext
from runbooks.planning import plan_from_snapshot
from storage.ceph.parse_osdlog import parse_large_omap
from storage.journal import Journal
from storage.targets import CephTarget, ClusterTarget
from tests.support.ceph_code_cases import (
    ALL_CODES,
    REEF_CODES,
    Case,
    cases,
    exact_command,
    measure,
    pool_edit,
    prepare,
)

ROOT = Path(__file__).resolve().parents[2]
CASES = {c.code: c for c in cases()}
# codes whose incident's root is one of stordoc's own findings (monitors, fullness, a
# pool's pg_num) that prints no exact command yet: the work of the items on ratios and
# next lines (issue 38 items 2 and 6). The set may only shrink: a code that gains a next
# step must leave it, one that loses its step fails.
NO_STEP_YET: frozenset[str] = frozenset()  # every code ends in a runbook or a command
# codes whose entity stordoc names only through its own root's words (the manager's
# daemon: the mgr-stopped scenario's root is the stopped daemon, item 4's)
UNNAMED_YET = frozenset({"MGR_DOWN"})


@pytest.fixture
def ctx(tmp_path: Path) -> RunContext:
    return RunContext("lab", ClusterTarget("lab", ceph=CephTarget("/x/ceph.conf")),
                      Journal(str(tmp_path / "j.db")))


def test_the_list_is_ceph_reef_list_and_the_codes_since() -> None:
    assert len(REEF_CODES) == len(set(REEF_CODES)) == 74
    assert list(CASES) == list(ALL_CODES)


@pytest.mark.parametrize("code", ALL_CODES)
def test_each_ceph_code_is_shown_once_under_its_cause_with_entity_and_next_step(
        tmp_path: Path, code: str) -> None:
    case = CASES[code]
    r = measure(case, tmp_path)
    assert r.carriers == 1, (code, r.carriers)
    assert r.root_ok, (code, r.root, case.roots)
    assert not r.bare, (code, r.message)
    if code not in UNNAMED_YET:
        assert r.named, (code, r.missing, r.message)
    if code in NO_STEP_YET:
        assert r.next_step is None, f"{code} has a next step now: take it off NO_STEP_YET"
    else:
        assert r.next_step, (code, r.message, r.manual)


def test_docs_name_each_code_stordoc_explains_and_each_left_bare(tmp_path: Path) -> None:
    """docs/checks.md's table of Ceph's codes names each code an explainer answers, and
    the coverage paragraph names every code a replay finds bare (none now), with why."""
    from checks.ceph_codes import EXPLAIN

    doc = (ROOT / "docs" / "checks.md").read_text()
    table = doc[doc.index("## Ceph's own codes, explained"):doc.index("## Engine codes")]
    assert [c for c in EXPLAIN if f"`{c}`" not in table] == []
    bare = [c.code for c in cases() if measure(c, tmp_path / c.code).bare]
    assert [c for c in bare if f"`{c}`" not in table] == []


def test_exact_command_refuses_placeholders() -> None:
    assert exact_command("run `ceph crash info ID` then") is None
    assert exact_command("`ceph osd pool set <pool> pg_num 64`") is None
    assert exact_command("`radosgw-admin bucket reshard --bucket B --num-shards N`") is None
    assert exact_command("x `ls -l` then `ceph osd set sortbitwise`") == \
        "ceph osd set sortbitwise"


def test_large_omap_object_is_named_with_its_pool_and_pg_from_the_cluster_log(
        tmp_path: Path) -> None:
    r = measure(CASES["LARGE_OMAP_OBJECTS"], tmp_path)
    assert "rbd/big-omap in pg 2.1a, 200001 keys" in r.message, r.message
    assert r.next_step == "rados -p rbd listomapkeys big-omap"
    assert "ceph pg deep-scrub 2.1a" in r.message


def test_large_omap_parse_rgw_index_and_namespace() -> None:
    log = [{"message": "Large omap object found. Object: 7:a1b2c3d4:::.dir.d4a1b2c3-1234."
                       "4567.1.3:head PG: 7.2b3c4d5 (7.5) Key count: 250000 Size (bytes): "
                       "60000000"},
           {"message": "Large omap object found. Object: 3:0f0f0f0f:ns1::obj1:head PG: "
                       "3.0f0f0f0f (3.f) Key count: 300000 Size (bytes): 100"},
           {"message": "osd.0 boot"}, "not a dict"]
    objs = parse_large_omap(log)
    assert [(o.pool_id, o.name, o.pgid, o.keys, o.namespace) for o in objs] == [
        (7, ".dir.d4a1b2c3-1234.4567.1.3", "7.5", 250000, ""),
        (3, "obj1", "3.f", 300000, "ns1")]


def test_pool_app_enable_plans_the_command_ceph_names(tmp_path: Path,
                                                      ctx: RunContext) -> None:
    snap = load(str(prepare(CASES["POOL_APP_NOT_ENABLED"], tmp_path))).outcome.snapshot
    p = plan_from_snapshot(ctx, snap, "pool-app-enable", "rbd")
    assert [s.command for s in p.steps] == ["ceph osd pool application enable rbd rbd"]
    p = plan_from_snapshot(ctx, snap, "pool-app-enable", "rbd", {"app": "myapp"})
    assert [s.command for s in p.steps] == ["ceph osd pool application enable rbd myapp"]
    with pytest.raises(Refused, match="application name"):
        plan_from_snapshot(ctx, snap, "pool-app-enable", "rbd", {"app": "a b"})
    with pytest.raises(Refused, match="already has application"):
        plan_from_snapshot(ctx, snap, "pool-app-enable", ".mgr")
    with pytest.raises(Refused, match="does not exist"):
        plan_from_snapshot(ctx, snap, "pool-app-enable", "nope")


def test_guess_app_from_pool_names() -> None:
    assert [guess_app(p) for p in ("default.rgw.buckets.index", ".rgw.root", "cephfs_data",
                                   "fs_meta", "rbd", "volumes", "lab-noapp")] == \
        ["rgw", "rgw", "cephfs", "cephfs", "rbd", "rbd", "rados"]


def _reclaim(tmp_path: Path, clients: bool) -> Case:
    allowed = CASES["AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED"]
    if not clients:
        return allowed
    c = CASES["AUTH_INSECURE_GLOBAL_ID_RECLAIM"]

    def also(d: Path) -> None:
        p = d / "ceph" / "health_detail.json"
        h = json.loads(p.read_text())
        h["checks"][c.code] = {"severity": c.severity, "muted": False,
                               "summary": {"message": c.summary, "count": 1},
                               "detail": [{"message": m} for m in c.detail]}
        p.write_text(json.dumps(h))
    return Case(allowed.code, allowed.severity, allowed.summary, allowed.detail,
                edits=(also,), names=allowed.names)


def test_global_id_reclaim_off_is_the_next_step_once_no_client_needs_it(
        tmp_path: Path, ctx: RunContext) -> None:
    rp = load(str(prepare(_reclaim(tmp_path, False), tmp_path)))
    inc = next(i for i in rp.outcome.incidents
               if i.root.entity == "ceph AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED")
    assert inc.next_step is not None
    assert inc.next_step.command == "stordoc fix global-id-reclaim-off lab"
    p = plan_from_snapshot(ctx, rp.outcome.snapshot, "global-id-reclaim-off", "lab")
    assert [s.command for s in p.steps] == \
        ["ceph config set mon auth_allow_insecure_global_id_reclaim false"]


def test_global_id_reclaim_off_refused_while_clients_still_need_it(
        tmp_path: Path, ctx: RunContext) -> None:
    rp = load(str(prepare(_reclaim(tmp_path, True), tmp_path)))
    with pytest.raises(Refused, match="clients still reclaim"):
        plan_from_snapshot(ctx, rp.outcome.snapshot, "global-id-reclaim-off", "lab")
    inc = next(i for i in rp.outcome.incidents
               if i.root.entity == "ceph AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED")
    assert inc.next_step is None
    assert "not yet: clients still need it" in inc.root.message
    assert "global-id-reclaim-off refuses: clients still reclaim" in (inc.manual or "")


def _at_target(d: Path) -> None:
    """rbd at the heuristic's pg_num (256 for 4 OSDs) and room for more PGs per OSD."""
    pool_edit(pg_num=256, pg_placement_num=256, pg_num_target=256,
              pg_placement_num_target=256)(d)
    p = d / "ceph" / "config.json"
    c = json.loads(p.read_text())
    c["mon_max_pg_per_osd"] = "1000"
    p.write_text(json.dumps(c))


def test_many_objects_per_pg_plans_one_doubling_of_the_named_pool(
        tmp_path: Path, ctx: RunContext) -> None:
    """Ceph says rbd has too many objects per PG where stordoc's heuristic has no more
    PGs to give: pool-pg-num doubles it once, and says why."""
    many = CASES["MANY_OBJECTS_PER_PG"]
    snap = load(str(prepare(Case(many.code, many.severity, many.summary, many.detail,
                                 edits=(_at_target,)), tmp_path))).outcome.snapshot
    p = plan_from_snapshot(ctx, snap, "pool-pg-num", "rbd")
    assert [s.command for s in p.steps if s.command.startswith("ceph osd pool set")] == [
        "ceph osd pool set rbd pg_num 512", "ceph osd pool set rbd pgp_num 512"]
    assert any("MANY_OBJECTS_PER_PG on pool rbd" in w for w in p.warnings), p.warnings


def test_pool_pg_num_without_cephs_word_still_refuses_a_pool_at_its_target(
        tmp_path: Path, ctx: RunContext) -> None:
    snap = load(str(prepare(Case("X", inject=False, edits=(_at_target,)),
                            tmp_path))).outcome.snapshot
    with pytest.raises(Refused, match="nothing to raise"):
        plan_from_snapshot(ctx, snap, "pool-pg-num", "rbd")


@given(pool=st.integers(0, 10**6), name=st.text(
           st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters=":"),
           min_size=1, max_size=40),
       ns=st.sampled_from(["", "ns1", "rgw-ns"]), seed=st.integers(0, 0xFFFF),
       keys=st.integers(0, 10**9), size=st.integers(0, 10**12))
def test_large_omap_parse_reads_back_what_an_osd_writes(pool: int, name: str, ns: str,
                                                        seed: int, keys: int,
                                                        size: int) -> None:
    pg = f"{pool}.{seed:x}"
    line = (f"Large omap object found. Object: {pool}:{seed:08x}:{ns}::{name}:head PG: "
            f"{pool}.{seed:08x} ({pg}) Key count: {keys} Size (bytes): {size}")
    [o] = parse_large_omap([{"message": line}, {"message": line}])
    assert (o.pool_id, o.name, o.namespace, o.pgid, o.keys, o.size_bytes) == \
        (pool, name, ns, pg, keys, size)
