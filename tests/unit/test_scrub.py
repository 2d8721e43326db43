"""Inconsistent PGs copy by copy (storage/ceph/parse_scrub.py, checks/scrub.py) and the
pg-repair runbook's gate and plan (runbooks/pg_repair.py), on `rados
list-inconsistent-obj` JSON captured from the Pacific lab (tests/fixtures/scrub/: one
copy overwritten on disk, one copy removed, two copies overwritten differently) and on the
saved pg-inconsistent snapshots of both releases."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from checks.ceph_codes import EXPLAIN
from checks.engine import run_checks
from checks.scrub import judge_pg
from core.service.snapshots import load
from runbooks.api import plan_from_snapshot
from runbooks.model import InvalidRequest, Refused
from runbooks.nextstep import planning_context
from runbooks.targets import canonical_pg
from storage.ceph.parse_scrub import parse_inconsistent_obj, parse_pg_ls, parse_scrub
from storage.model import ClusterSnapshot
from storage.model.scrub import PgScrub
from storage.targets import CephTarget, ClusterTarget
from tests.support.fixture_snapshots import FIXTURES

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "scrub"


def _empty_conf(d: Path) -> Path:
    """A ceph.conf with no monitor: nothing can be reached (a regular file: /dev/null,
    a character device, is refused as a config-named file)."""
    p = d / "ceph.conf"
    p.touch()
    return p


def doc(name: str) -> dict[str, Any]:
    return dict(json.loads((FIX / f"pacific-{name}.json").read_text()))


def pg_of(d: dict[str, Any], pgid: str = "2.1") -> PgScrub:
    return PgScrub(pgid, "active+clean+inconsistent", (3, 0, 2), 3, None, 2,
                   parse_inconsistent_obj(d), listed=True)


def test_parser_reads_each_copy_and_its_errors() -> None:
    (o,) = parse_inconsistent_obj(doc("data-digest"))
    assert o.name == "stordoc-lab-scrub" and o.errors == ("data_digest_mismatch",)
    assert o.info_data_digest == "0x9f649b72" and o.info_size == 12
    by_osd = {s.osd: s for s in o.shards}
    assert by_osd[0].errors == ("data_digest_mismatch_info",) and not by_osd[0].primary
    assert by_osd[0].data_digest == "0x3830662f" and by_osd[3].primary
    (m,) = parse_inconsistent_obj(doc("missing"))
    missing = next(s for s in m.shards if s.errors)
    assert missing.osd == 0 and missing.errors == ("missing",) and missing.size is None
    assert parse_inconsistent_obj({"inconsistents": [{"shards": [{"osd": "x"}]}]})[0].shards == ()
    assert parse_inconsistent_obj("junk") == () and parse_pg_ls(None) == []


def test_one_bad_copy_among_agreeing_good_ones_is_repairable() -> None:
    v = judge_pg(pg_of(doc("data-digest")))
    assert v.repairable and v.bad_osds == (0,) and set(v.good_osds) == {2, 3}
    assert v.objects[0]["bad"] == {"osd.0": ["data_digest_mismatch_info"]}
    m = judge_pg(pg_of(doc("missing"), "2.0"))
    assert m.repairable and m.bad_osds == (0,)


def test_refusals_say_why_in_one_line() -> None:
    two = judge_pg(pg_of(doc("two-bad"), "2.21"))
    assert not two.repairable and two.reason.startswith("2 copies bad (osd.1, osd.2)")
    d = doc("data-digest")
    good = d["inconsistents"][0]["shards"]
    good[1]["data_digest"] = "0x00000001"  # osd.2 now disagrees with osd.3
    dis = judge_pg(pg_of(d))
    assert not dis.repairable and dis.reason.startswith("two copies disagree: osd.2 and osd.3")
    d = doc("data-digest")
    for s in d["inconsistents"][0]["shards"]:
        s["errors"] = []  # copies differ, none marked bad
    assert judge_pg(pg_of(d)).reason.startswith("no authoritative copy")
    d = doc("data-digest")
    for s in d["inconsistents"][0]["shards"]:
        s["errors"] = ["read_error"]
    assert "every copy has errors" in judge_pg(pg_of(d)).reason
    stale = PgScrub("2.1", "active+clean+inconsistent", (3, 0, 2), 3, None, 2,
                    error="No scrub information available for pg 2.1")
    assert "deep-scrub it first (ceph pg deep-scrub 2.1)" in judge_pg(stale).reason
    for v in (two, dis, judge_pg(stale)):
        assert "\n" not in v.reason


def test_pg_ids_have_one_spelling() -> None:
    assert canonical_pg("2.05") == "2.5" and canonical_pg("2.A") == "2.a"
    assert canonical_pg(" 12.1f ") == "12.1f"
    for bad in ("2.zz", "1e20", "٢.5", "２.5", "2", "2.", ".5", "-1.5", "2.5;reboot",
                "2.123456789", ""):
        with pytest.raises(InvalidRequest):
            canonical_pg(bad)


def saved(release: str) -> ClusterSnapshot:
    return load(str(FIXTURES / release / "pg-inconsistent")).outcome.snapshot


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_the_saved_fault_names_the_bad_copy_and_plans_the_repair(release: str) -> None:
    if not (FIXTURES / release / "pg-inconsistent" / "snapshot.json").exists():
        pytest.fail(f"no pg-inconsistent snapshot for {release}")
    snap = saved(release)
    rep = run_checks(snap, now=snap.taken_at)
    (f,) = [f for f in rep.findings if f.code == "PG_INCONSISTENT"]
    assert f.entity == "pg 2.1" and (f.runbook, f.target) == ("pg-repair", "2.1")
    assert f.evidence["bad_osds"] == [0] and f.evidence["repairable"] is True
    assert "bad copy on osd.0 (node1)" in f.message
    assert "data_digest_mismatch_info" in f.message
    ctx = planning_context("lab", ClusterTarget(name="lab", ceph=CephTarget(conf="/dev/null")))
    p = plan_from_snapshot(ctx, snap, "pg-repair", "2.01")
    assert p.target == "2.1" and p.locks == ("pg 2.1",)
    assert [s.command for s in p.steps][0::2] == ["ceph pg repair 2.1",
                                                  "ceph pg deep-scrub 2.1"]
    # bad input: a consistent PG, an unknown PG or pool, a malformed id (exit 64)
    for target, said in (("2.5", "pg 2.5 is consistent"), ("2.40", r"pool rbd \(2\) has 64 PGs"),
                         ("9.1", "no pool 9"), ("2.zz", "not a PG id"),
                         ("1e20", "not a PG id"), ("٢.1", "outside plain ASCII")):
        with pytest.raises(InvalidRequest, match=said) as e:
            plan_from_snapshot(ctx, snap, "pg-repair", target)
        assert "\n" not in str(e.value)


def test_a_repeated_bad_copy_points_to_the_disk() -> None:
    snap = saved("pacific")
    ceph = snap.ceph
    assert ceph is not None and ceph.scrub is not None
    raw = copy.deepcopy(dict(ceph.raw["scrub"]))
    row = copy.deepcopy(raw["pgs"]["pg_stats"][0])
    row["pgid"] = "2.9"
    raw["pgs"]["pg_stats"].append(row)
    raw["objects"]["2.9"] = raw["objects"]["2.1"]
    scrub = parse_scrub(raw)
    from dataclasses import replace

    snap2 = replace(snap, ceph=replace(ceph, scrub=scrub))
    fs = [f for f in run_checks(snap2, now=snap.taken_at).findings
          if f.code == "PG_INCONSISTENT"]
    assert len(fs) == 2
    for f in fs:
        assert "osd.0 is the bad copy in 2 inconsistent PGs (2.1, 2.9)" in f.message
        assert "osd-replace-disk" in f.message and f.evidence["disk_suspect"]


def test_overdue_scrubs_and_large_omap_say_what_to_run() -> None:
    from checks.model import CheckContext
    from storage.model import HealthCheck

    ceph = saved("pacific").ceph
    assert ceph is not None
    ctx = CheckContext(now=0.0)
    hc = HealthCheck("PG_NOT_DEEP_SCRUBBED", "HEALTH_WARN", "2 pgs not deep-scrubbed in time",
                     ("pg 2.1f not deep-scrubbed since 2026-11-01T10:00:00.000000+0000",
                      "pg 2.3 not deep-scrubbed since 2026-10-30T08:00:00.000000+0000"))
    ex = EXPLAIN["PG_NOT_DEEP_SCRUBBED"](hc, ceph, ctx)
    assert ex.evidence["pgs"] == ["2.1f", "2.3"] and ex.evidence["pools"] == {"rbd": 2}
    assert "`ceph pg deep-scrub 2.1f`" in ex.message
    assert "`ceph osd pool deep-scrub rbd`" in ex.message
    assert "oldest since 2026-10-30" in ex.message
    hc2 = HealthCheck("PG_NOT_SCRUBBED", "HEALTH_WARN", "1 pgs not scrubbed in time",
                      ("pg 2.3 not scrubbed since 2026-10-30T08:00:00.000000+0000",))
    assert "`ceph pg scrub 2.3`" in EXPLAIN["PG_NOT_SCRUBBED"](hc2, ceph, ctx).message
    om = HealthCheck("LARGE_OMAP_OBJECTS", "HEALTH_WARN", "1 large omap objects",
                     ("1 large objects found in pool 'default.rgw.buckets.index'",
                      "Search the cluster log for 'Large omap object found' for more "
                      "details."))
    ex = EXPLAIN["LARGE_OMAP_OBJECTS"](om, ceph, ctx)
    assert ex.evidence["pools"] == ["default.rgw.buckets.index"]
    assert "radosgw-admin bucket limit check" in ex.message
    assert "Large omap object found" in ex.message


@pytest.mark.parametrize("pgid", ["2.zz", "1e20", "٢.5", "2.5\n"])
def test_cli_refuses_a_malformed_pgid_in_one_line_with_64(tmp_path: Path, pgid: str) -> None:
    """Refused before anything is read or locked: no cluster is reached (its conf is
    /dev/null), no run is audited."""
    import io

    from core.terminal import Terminal
    from stordoc.cli import main

    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   f'[clusters.lab.ceph]\nconf = "{_empty_conf(tmp_path)}"\n')
    for verb in (["plan"], ["fix", "--yes"]):
        term = Terminal.capture(width=200)
        rc = main(["--config", str(cfg), verb[0], "pg-repair", pgid, *verb[1:]], term)
        assert isinstance(term.stderr, io.StringIO) and isinstance(term.stdout, io.StringIO)
        err = term.stderr.getvalue()
        assert rc == 64, (verb, err, term.stdout.getvalue())
        assert err.count("\n") == 1 and "Traceback" not in err
    from storage.audit import Audit
    from storage.journal import Journal

    j = Journal(str(tmp_path / "j.db"))
    assert Audit(j).runs() == []


def test_the_gate_refuses_two_bad_copies_before_anything_runs() -> None:
    """The safety gate's refusal (exit 4), not bad input: the evidence forbids a repair."""
    from dataclasses import replace

    snap = saved("pacific")
    ceph = snap.ceph
    assert ceph is not None
    raw = copy.deepcopy(dict(ceph.raw["scrub"]))
    raw["objects"]["2.1"] = doc("two-bad")
    snap2 = replace(snap, ceph=replace(ceph, scrub=parse_scrub(raw)))
    ctx = planning_context("lab", ClusterTarget(name="lab", ceph=CephTarget(conf="/dev/null")))
    with pytest.raises(Refused) as e:
        plan_from_snapshot(ctx, snap2, "pg-repair", "2.1")
    assert not isinstance(e.value, InvalidRequest)
    assert str(e.value) == ("pg 2.1 not repaired: 2 copies bad (osd.1, osd.2), only 1 good: "
                            "no two agreeing good copies")
    (f,) = [f for f in run_checks(snap2, now=snap.taken_at).findings
            if f.code == "PG_INCONSISTENT"]
    assert f.runbook is None and "not repaired automatically: 2 copies bad" in f.message
