"""Flapping OSDs and stuck PGs on JSON captured from the Reef lab (tests/fixtures/
ceph-pgquery): a PG made ``down`` by hand (osd.1 stopped, writes to osd.2 alone, osd.2
stopped, osd.1 started), the same pool's PG with 10 unfound objects (norecover while
osd.1 came back, then osd.2 stopped), and ``ceph osd down 0`` four times while it ran.
Parsers, the check, Ceph's OBJECT_UNFOUND explained, and pg-mark-unfound-lost's gates."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from checks.ceph_codes import ceph_health_finding
from checks.model import CheckContext
from checks.pgblocks import FLAP_MIN, check_pg_blocks
from runbooks.api import InvalidRequest, Refused, RunContext, plan_from_snapshot
from runbooks.pg_unfound import canonical_pgid
from storage.ceph import build_state, load_raw_dir
from storage.ceph.parse_osdlog import parse_flaps
from storage.ceph.parse_pgquery import blocked_candidates, parse_pg_blocks, parse_pg_query
from storage.hostfacts.parse import parse_netdev
from storage.journal import Journal
from storage.model import ClusterSnapshot
from storage.targets import CephTarget, ClusterTarget

FIX = Path(__file__).resolve().parent.parent / "fixtures"
CAP = FIX / "ceph-pgquery"
SNAP = FIX / "snapshots" / "reef" / "pg-stuck" / "ceph"


def _empty_conf(d: Path) -> Path:
    """A ceph.conf with no monitor: nothing can be reached (a regular file: /dev/null,
    a character device, is refused as a config-named file)."""
    p = d / "ceph.conf"
    p.touch()
    return p


def cap(name: str) -> Any:
    return json.loads((CAP / name).read_text())


def test_down_pg_query_names_the_blocking_osd() -> None:
    b = parse_pg_query("3.0", cap("reef-down-3.0.json"))
    assert b.state == "down" and b.queried
    assert b.recovery_states[0] == "Started/Primary/Peering/Down"
    assert b.blocked == "peering is blocked due to down osds"
    assert b.down_osds_we_would_probe == (2,)
    assert [(p.osd, p.comment) for p in b.peering_blocked_by] == [
        (2, "starting or marking this osd lost may let us proceed")]
    assert b.blocking_osds == (2,) and b.num_unfound == 0


def test_unfound_pg_query_lists_where_they_might_be() -> None:
    b = parse_pg_query("3.0", cap("reef-unfound-3.0.json"))
    assert b.num_unfound == 10
    assert [(m.osd, m.status) for m in b.might_have_unfound] == [(2, "osd is down")]
    assert b.all_probed and b.blocking_osds == ()
    asking = replace(b, might_have_unfound=(replace(b.might_have_unfound[0],
                                                    status="querying"),))
    assert not asking.all_probed


def test_candidates_are_the_blocked_and_the_unfound_bounded() -> None:
    assert blocked_candidates(cap("reef-down-dump_stuck.json")) == ["3.0"]
    assert blocked_candidates(cap("reef-unfound-dump_stuck.json")) == ["3.0"]
    many = {"stuck_pg_stats": [{"pgid": f"4.{i:x}", "state": "down"} for i in range(9)]
            + [{"pgid": "5.0", "state": "active+recovery_unfound+degraded",
                "stat_sum": {"num_objects_unfound": 3}}]}
    got = blocked_candidates(many)
    assert got[0] == "5.0" and len(got) == 3  # unfound first, at most MAX_PG_QUERIES
    assert blocked_candidates({"stuck_pg_stats": [{"pgid": "2.1", "state": "active+undersized"}]}) == []


def test_a_query_that_did_not_answer_keeps_what_pg_stats_say() -> None:
    (b,) = parse_pg_blocks({"3.0": {"error": "'pg 3.0 query' failed (rc=-110)"}},
                           cap("reef-down-dump_stuck.json"))
    assert b.state == "down" and not b.queried and "rc=-110" in b.error
    assert b.acting == (1,)


def test_flaps_count_wrongly_marked_downs_then_boots() -> None:
    log = cap("reef-log-flap.json")
    (f,) = parse_flaps(log, now=1795757200.0)
    assert (f.osd, f.flaps, f.failed_reports) == (0, 4, 0)
    assert len(f.stamps) == 4 and f.window_s > 0


def _e(t: str, msg: str) -> dict[str, str]:
    return {"stamp": f"2026-11-27T05:{t}.000000+0000", "message": msg}


def test_a_crash_or_a_clean_restart_is_not_a_flap() -> None:
    killed = [_e("00:00", "osd.2 failed (root=default,host=node3) (connection refused "
                 "reported by osd.0)"), _e("00:30", "osd.2 v2:127.0.0.1:1/2 boot")]
    assert parse_flaps(killed, now=1795770000.0) == ()
    hung = [_e("00:00", "osd.2 failed (root=default,host=node3) (2 reporters from "
               "different host after 21.0 >= grace 20.0)"),
            _e("00:40", "Monitor daemon marked osd.2 down, but it is still running"),
            _e("00:41", "osd.2 v2:127.0.0.1:1/2 boot")]
    (f,) = parse_flaps(hung, now=1795770000.0)
    assert (f.flaps, f.failed_reports) == (1, 1)
    restarted = hung + [_e("01:00", "osd.2 marked itself down and dead"),
                        _e("01:05", "osd.2 v2:127.0.0.1:1/3 boot")]
    assert parse_flaps(restarted, now=1795770000.0) == ()


def test_netdev_counters() -> None:
    text = ("Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame "
            "compressed multicast|bytes packets errs drop fifo colls carrier compressed\n"
            "    lo: 10 1 0 0 0 0 0 0 10 1 0 0 0 0 0 0\n"
            "  eth0: 99 9 3 4 0 0 0 0 88 8 5 6 0 0 0 0\n")
    got = parse_netdev(text.splitlines())
    assert got is not None and got["lo"].bad == 0
    assert (got["eth0"].rx_errs, got["eth0"].rx_drop, got["eth0"].tx_errs,
            got["eth0"].tx_drop) == (3, 4, 5, 6)
    assert parse_netdev([]) is None


# ------------------------------------------------------------------ check, explainer
def state(kind: str, lost: bool = False, flags: tuple[str, ...] = ()) -> Any:
    raw = load_raw_dir(str(SNAP))
    raw["pg dump_stuck"] = cap(f"reef-{kind}-dump_stuck.json")
    raw["pg query"] = {"3.0": cap(f"reef-{kind}-3.0.json")}
    if kind == "unfound":
        raw["health detail"] = cap("reef-unfound-health.json")
    st = build_state(raw, collected_at=1795757200.0)
    pools = tuple(replace(p, id=3) if p.name == "lab-stuck" else p for p in st.pools)
    osds = tuple(replace(o, lost_at=160 if lost and o.id == 2 else 0) for o in st.osds)
    return replace(st, pools=pools, osds=osds, flags=st.flags + flags)


def test_pg_stuck_finding_names_the_blocking_osd_and_what_to_do() -> None:
    st = state("down")
    fs = list(check_pg_blocks(ClusterSnapshot("lab", 0.0, ceph=st), CheckContext()))
    (f,) = [f for f in fs if f.code == "PG_STUCK"]
    assert f.entity == "pg 3.0" and f.evidence["blocking_osds"] == [2]
    assert "blocked by osd.2 (down, node3)" in f.message and "start osd.2" in f.message


def test_object_unfound_explained_with_options_and_cost() -> None:
    st = state("unfound")
    hc = next(h for h in st.health_checks if h.code == "OBJECT_UNFOUND")
    f = ceph_health_finding(hc, st, CheckContext())
    assert "pg 3.0: 10 unfound, might be on osd.2 (down)" in f.message
    assert "start osd.2" in f.message and "revert" in f.message and "delete" in f.message
    assert f.runbook is None  # osd.2 is down but not lost: Ceph would refuse
    f = ceph_health_finding(hc, state("unfound", lost=True), CheckContext())
    assert (f.runbook, f.target) == ("pg-mark-unfound-lost", "3.0")
    assert "might be on osd.2 (down, marked lost)" in f.message
    assert "start osd.2 if its disk can still be read" in f.message


def test_pg_damaged_by_unfound_objects_is_not_an_inconsistent_pg() -> None:
    """Ceph's PG_DAMAGED of a PG with unfound objects (its detail line as the Reef lab's
    pg-unfound gave it): no pg-repair, and it folds in as OBJECT_UNFOUND (with the
    incident that explains them), not as an inconsistent PG."""
    from checks.incident_keys import ceph_code, fold_code
    from storage.model import HealthCheck

    hc = HealthCheck("PG_DAMAGED", "HEALTH_ERR",
                     "Possible data damage: 1 pg recovery_unfound",
                     ("pg 3.0 is active+recovery_unfound+undersized+degraded, acting [1], "
                      "8 unfound",))
    f = ceph_health_finding(hc, state("unfound", lost=True), CheckContext())
    assert "pg 3.0 has 8 unfound objects" in f.message and "OBJECT_UNFOUND" in f.message
    assert "pg-repair" in f.message and "cannot help" in f.message and f.runbook is None
    assert (ceph_code(f), fold_code(f)) == ("PG_DAMAGED", "OBJECT_UNFOUND")
    both = HealthCheck("PG_DAMAGED", "HEALTH_ERR", "Possible data damage: 2 pgs", (
        "pg 2.1 is active+clean+inconsistent, acting [0,1]", *hc.detail))
    f = ceph_health_finding(both, state("unfound", lost=True), CheckContext())
    assert "pg-repair 2.1" in f.message and "pg 3.0 has 8 unfound" in f.message
    assert fold_code(f) == "PG_DAMAGED"


def test_flapping_osd_finding() -> None:
    raw = load_raw_dir(str(SNAP))
    raw["log last flaps"] = cap("reef-log-flap.json")
    st = build_state(raw, collected_at=1795757200.0)
    fs = [f for f in check_pg_blocks(ClusterSnapshot("lab", 0.0, ceph=st), CheckContext())
          if f.code == "OSD_FLAPPING"]
    assert [f.entity for f in fs] == ["osd.0"] and fs[0].evidence["flaps"] == 4 >= FLAP_MIN
    assert "interface" in fs[0].message and "osd.0 on node1" in fs[0].message
    late = build_state(raw, collected_at=1795757200.0 + 7200)  # flaps two hours old
    assert not [f for f in check_pg_blocks(ClusterSnapshot("lab", 0.0, ceph=late),
                                           CheckContext()) if f.code == "OSD_FLAPPING"]


# ------------------------------------------------------------------ the runbook
def ctx(tmp_path: Path, user: str = "alice") -> RunContext:
    target = ClusterTarget("lab", ceph=CephTarget("/nonexistent/ceph.conf"))
    return RunContext("lab", target, Journal(tmp_path / "j.db"), user=user)


def plan(tmp_path: Path, target: str, st: Any, **opts: str) -> Any:
    return plan_from_snapshot(ctx(tmp_path), ClusterSnapshot("lab", 0.0, ceph=st),
                              "pg-mark-unfound-lost", target, opts or {"mode": "revert"})


@pytest.mark.parametrize("target,why", [
    ("9.zz", "is not a PG id"), ("3", "is not a PG id"), ("77.0", "no pool with id 77"),
    ("3.5", "has 1 PGs"), ("1.0", "has no unfound objects")])
def test_bad_targets_are_usage_errors(tmp_path: Path, target: str, why: str) -> None:
    with pytest.raises(InvalidRequest, match=why):
        plan(tmp_path, target, state("unfound", lost=True))


def test_refusals(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="mode .forget. is not one of revert"):
        plan(tmp_path, "3.0", state("unfound", lost=True), mode="forget")
    with pytest.raises(Refused, match="down, not lost"):
        plan(tmp_path, "3.0", state("unfound"))
    with pytest.raises(Refused, match="norecover"):
        plan(tmp_path, "3.0", state("unfound", lost=True, flags=("norecover",)))


def test_plan_and_two_people(tmp_path: Path) -> None:
    p = plan(tmp_path, "3.0", state("unfound", lost=True))
    assert [s.command for s in p.steps][0] == "ceph pg 3.0 mark_unfound_lost revert"
    assert p.needs_second_person and p.params["num_unfound"] == 10
    # the CLI's second person: a signature over the plan (tests/unit/test_approvals.py)
    assert "approval_code_of_planner" not in p.params
    assert any("signs this exact plan with their SSH key" in w for w in p.warnings)


def test_pgid_spelling() -> None:
    assert canonical_pgid(" 3.1F ") == "3.1f"
    assert canonical_pgid("03.0") == "3.0"
    with pytest.raises(InvalidRequest):
        canonical_pgid("3.٢")


def test_osdmap_history_counts_flaps_back_to_the_last_clean_restart() -> None:
    """Real osdmaps of a Pacific lab (epochs 28-50): osd.0 marked down 4 times while it
    ran (Ceph raised its laggy_probability at each boot: 0.3, 0.51, 0.657, 0.76), then
    restarted cleanly at epoch 47 (it fell to 0.532)."""
    from storage.ceph.parse_osdlog import parse_map_flaps, walk_boots

    d = cap("pacific-osdmap-briefs.json")
    briefs = d["briefs"]
    calls: list[int] = []

    def fetch(epoch: int) -> Any:
        calls.append(epoch)
        return briefs.get(str(epoch))

    # from the boot before the clean restart (up_from 42): four flaps, back to epoch 5
    boots = walk_boots(0, 42, fetch, budget=16)
    assert [(b["epoch"], b["flap"]) for b in boots][:4] == [
        (42, True), (38, True), (35, True), (31, True)]
    (f,) = parse_map_flaps({"0": boots}, now=1795770000.0)
    assert (f.osd, f.flaps) == (0, 4)
    # from now: the clean restart ends the walk at once, nothing counted
    now_boots = walk_boots(0, 47, fetch, budget=16)  # its up_from after the restart
    assert [b["flap"] for b in now_boots] == [False]
    assert parse_map_flaps({"0": now_boots}, now=1795770000.0) == ()
    calls.clear()
    assert len(walk_boots(0, 42, fetch, budget=4)) == 2 and len(calls) == 4  # bounded


def test_only_recently_downed_laggy_osds_are_walked() -> None:
    from storage.ceph.parse import parse_stamp
    from storage.ceph.parse_osdlog import flap_suspects

    recent, old = "2026-11-27T05:30:00.000000+0000", "2026-11-26T01:00:00.000000+0000"
    now = (parse_stamp(recent) or 0.0) + 1800  # half an hour after osd.0 went down
    dump = {"osd_xinfo": [
        {"osd": 0, "laggy_probability": 0.76, "down_stamp": recent},
        {"osd": 1, "laggy_probability": 0.3, "down_stamp": old},  # flapped yesterday
        {"osd": 2, "laggy_probability": 0, "down_stamp": recent},  # a clean stop only
        {"osd": 3, "laggy_probability": 0.5, "down_stamp": "0.000000"}]}
    assert flap_suspects(dump, now) == [0]


# ------------------------------------------------------------------ the CLI on the real fault
UNFOUND_SNAP = FIX / "snapshots" / "reef" / "pg-unfound"


@pytest.fixture
def unfound_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``stordoc`` in-process on the saved pg-unfound fault (Reef lab: 8 unfound in the
    pool's one PG, osd.2 stopped and marked lost): planning reads the snapshot instead of
    a cluster; returns run(argv) -> (exit, stdout, stderr) and the PG's id."""
    import io

    from core.service.snapshots import load
    from core.terminal import Terminal
    from runbooks import api as rb_api
    from stordoc.cli import main

    rp = load(str(UNFOUND_SNAP))
    snap = rp.outcome.snapshot
    monkeypatch.setattr(rb_api, "plan", lambda ctx, rb, target, opts=None:
                        rb_api.plan_from_snapshot(ctx, snap, rb, target, opts))
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   f'[clusters.lab.ceph]\nconf = "{_empty_conf(tmp_path)}"\n[slack]\nadmins = ["bob"]\n')
    (unf,) = [f for f in rp.outcome.report.findings if f.entity == "ceph OBJECT_UNFOUND"]

    def run(*argv: str) -> tuple[int, str, str]:
        term = Terminal.capture(width=200)
        rc = main(["--config", str(cfg), *argv], term)
        assert isinstance(term.stdout, io.StringIO) and isinstance(term.stderr, io.StringIO)
        return rc, term.stdout.getvalue(), term.stderr.getvalue()
    return run, str(unf.target), tmp_path / "j.db"


def test_cli_plans_the_real_fault_with_its_options_and_cost(unfound_cli: Any) -> None:
    run, pgid, _ = unfound_cli
    rc, out, err = run("plan", "pg-mark-unfound-lost", pgid, "--mode", "revert")
    assert rc == 0, err
    assert f"$ ceph pg {pgid} mark_unfound_lost revert" in out
    assert f"8 objects of pg {pgid} will be rolled back to their previous versions" in out
    assert "osd.2 might have had them and is marked lost" in out
    assert "approval request (the approver signs this text):" in out  # the CLI's second
    assert "approval code" not in out  # person signs it (tests/unit/test_approvals.py)
    rc, out, err = run("plan", "pg-mark-unfound-lost", pgid, "-o", "mode=delete")
    assert rc == 0 and "deleted for good" in out, err


@pytest.mark.parametrize("target,mode,why", [
    ("1.0", "revert", "pg 1.0 has no unfound objects: nothing to mark lost"),
    ("77.0", "revert", "pg 77.0 does not exist (no pool with id 77)"),
    ("<pool>.5", "revert", "does not exist (pool lab-unfound has 1 PGs)"),
    ("<pool>.0", "lost", "mode 'lost' is not one of revert"),
    ("<pool>.0", "", "needs a mode: revert"),
])
def test_cli_bad_input_is_one_line_exit_64_and_nothing_done(
        unfound_cli: Any, target: str, mode: str, why: str) -> None:
    """Item 7's bad input: a PG with no unfound objects, one that does not exist, a mode
    Ceph does not have (``lost``), no mode: one line, exit 64, no run in the audit (even
    with an approval named: the request is refused before the approval is read)."""
    from storage.audit import Audit
    from storage.journal import Journal

    run, pgid, journal = unfound_cli
    target = target.replace("<pool>", pgid.split(".")[0])
    argv = ["fix", "pg-mark-unfound-lost", target, "--yes", "--approved-by", "bob",
            "--approval", "/nonexistent"] + (["--mode", mode] if mode else [])
    rc, out, err = run(*argv)
    assert rc == 64, (out, err)
    assert why in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert Audit(Journal(str(journal))).runs() == []
