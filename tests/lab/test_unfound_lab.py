"""Unfound objects on the real lab (lab/scenarios/unfound.py), broken once (on Reef) and
everything asserted on that one break: the live findings reach the saved snapshot's
(tests/fixtures/snapshots/reef/pg-unfound: the replay tests' fixture cannot rot; this
case is not broken again by test_scenarios.py), Ceph's OBJECT_UNFOUND and PG_DAMAGED
explained with the lost OSD, the CLI's plan of pg-mark-unfound-lost with its options and
cost, the CLI's second person (an SSH signature over the plan: others refused); then through the real slack-bolt App over HTTP, on a cluster WITHOUT the
two-person rule: the plan says two people, the requester's own Confirm is refused and
audited, a second operator confirms, Ceph reverts the objects (overwrites back to their
previous version, new objects forgotten), the verification passes, and the journal's
audit names both. Then the lab heals (key, OSD, pool and upmap gone)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.env import Env
from core.service import Service
from core.service.snapshots import load
from core.settings import load_settings
from lab import Lab
from lab.scenarios.unfound import (
    HOLD_KEY,
    UNFOUND_NEW,
    UNFOUND_OLD,
    UNFOUND_OSDS,
    UNFOUND_POOL,
    num_unfound,
    pool_pgid,
)
from tests.lab.test_scenarios import reach
from tests.support.cli import run_main
from tests.support.fake_slack import BotHarness, all_text, buttons
from tests.support.fixture_snapshots import BY_NAME, FIXTURES, finding_keys, snapshot_ports

OPS, OPS2 = "UOPSUNF001", "UOPSUNF002"
PLAN_CALLS = ("chat.postMessage", "chat.update")


@pytest.fixture
def h(lab: Lab, tmp_path: Path) -> Iterator[BotHarness]:
    # two_person False: pg-mark-unfound-lost needs a second person all the same
    harness = BotHarness(load_settings(lab.config_path),
                         {"lab": {"operators": [OPS, OPS2], "two_person": False}},
                         str(tmp_path / "bot.db"), throttle_s=0.2)
    yield harness
    harness.close()


def _objects(lab: Lab) -> list[str]:
    import rados

    c = rados.Rados(conffile=str(lab.conf), conf={"keyring": str(lab.admin_keyring)})
    c.connect(timeout=30)
    try:
        io_ = c.open_ioctx(UNFOUND_POOL)
        try:
            return sorted(o.key for o in io_.list_objects())
        finally:
            io_.close()
    finally:
        c.shutdown()


def _cli_approvals(cfg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lab: Lab,
                   pgid: str) -> None:
    """On the real fault, as OPS (``SUDO_USER``): a signature over the delete plan, OPS's
    own, or by another key is refused in one line; OPS2's over this plan passes the gate
    (the run then stops at the confirmation: no --yes and no terminal). Nothing runs."""
    from core import approvals
    from tests.unit.test_approvals import _keypair

    keys = {n: _keypair(tmp_path, n) for n in (OPS, OPS2, "other")}
    own = tmp_path / "cli.toml"
    own.write_text(cfg.read_text() + f'\n[slack]\nadmins = ["{OPS}", "{OPS2}"]\n'
                   f'[approver_keys]\n{OPS} = ["{keys[OPS][1]}"]\n'
                   f'{OPS2} = ["{keys[OPS2][1]}"]\n')
    monkeypatch.setenv("SUDO_USER", OPS)

    def request(mode: str) -> str:
        req = tmp_path / f"req-{mode}.txt"
        rc, text, err = run_main("--config", str(own), "plan", "pg-mark-unfound-lost", pgid,
                                 "--mode", mode, "--approval-request", str(req))
        assert rc == 0 and "approval code" not in text, err
        return req.read_text()

    def fix(name: str, signed: str, *extra: str) -> tuple[int, str]:
        path = tmp_path / name
        path.write_text(signed)
        rc, _, err = run_main("--config", str(own), "fix", "pg-mark-unfound-lost", pgid,
                              "--mode", "revert", "--approval", str(path), *extra)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        return rc, err

    revert = request("revert")
    assert f"param num_unfound: {UNFOUND_NEW}" in revert
    for name, signed, why in (
            ("delete", approvals.sign(request("delete"), OPS2, str(keys[OPS2][0])),
             "is for another plan: this plan has 'param mode: revert'"),
            ("own", approvals.sign(revert, OPS, str(keys[OPS][0])),
             f"{OPS} cannot approve their own run"),
            ("other-key", approvals.sign(revert, OPS2, str(keys["other"][0])),
             f"signature is not by a key of {OPS2}")):
        rc, err = fix(name, signed, "--yes")
        assert rc == 64 and why in err, err
    rc, err = fix("good", approvals.sign(revert, OPS2, str(keys[OPS2][0])))
    assert rc == 64 and "not confirmed: pass --yes" in err, err  # past the approval gate
    assert num_unfound(lab, pgid) == UNFOUND_NEW  # nothing ran


@pytest.mark.on_reef
def test_unfound_objects_marked_lost_by_two_people_in_slack(
        lab: Lab, h: BotHarness, env: Env, cfg: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    case = BY_NAME["pg-unfound"]
    rp = load(str(FIXTURES / lab.release / case.name))
    want = finding_keys(rp.outcome.report.findings, snapshot_ports(rp.doc.settings), "<lab>")
    a, b = UNFOUND_OSDS
    lab.break_("pg-unfound")
    try:
        pgid = pool_pgid(lab)
        assert pgid is not None and num_unfound(lab, pgid) == UNFOUND_NEW
        reach(env, lab, want, case.name)
        # the diagnosis on the real thing: which PG, how many, the lost OSD, the options
        out = Service(env).check("lab", "test")
        by = {f.entity: f for f in out.report.findings}
        unf = by["ceph OBJECT_UNFOUND"]
        assert (unf.runbook, unf.target) == ("pg-mark-unfound-lost", pgid)
        assert (f"pg {pgid}: {UNFOUND_NEW} unfound, might be on osd.{b} (down, marked lost)"
                in unf.message), unf.message
        assert "revert" in unf.message and "delete" in unf.message
        dmg = by["ceph PG_DAMAGED"]
        assert f"pg {pgid} has {UNFOUND_NEW} unfound objects" in dmg.message
        assert dmg.runbook is None and "pg-repair cannot help" in dmg.message
        top = out.incidents[0]
        assert (top.root.code, top.root.entity) == ("OSD_DAEMON_STOPPED", f"osd.{b}")
        assert {"ceph OBJECT_UNFOUND", "ceph PG_DAMAGED"} <= {
            c.entity for c in top.consequences}
        # the CLI's plan: the options and their cost; its run needs a second person
        rc, text, err = run_main("--config", str(cfg), "plan", "pg-mark-unfound-lost", pgid,
                                 "--mode", "revert")
        assert rc == 0, err
        assert f"ceph pg {pgid} mark_unfound_lost revert" in text
        assert f"{UNFOUND_NEW} objects of pg {pgid} will be rolled back" in text
        assert f"osd.{b} might have had them and is marked lost" in text
        rc, text, err = run_main("--config", str(cfg), "fix", "pg-mark-unfound-lost", pgid,
                                 "--mode", "revert", "--yes")
        assert rc == 64 and "needs two people" in err and err.count("\n") == 1, err
        # the CLI's second person: this plan signed by OPS2's own SSH key (issue #37.1)
        _cli_approvals(cfg, tmp_path, monkeypatch, lab, pgid)
        # Slack: the mode as a word; two people although the cluster has no such rule
        h.slack.slash(f"fix pg-mark-unfound-lost {pgid} revert", OPS)
        plan = h.wait_post(f"Plan: pg-mark-unfound-lost {pgid}", PLAN_CALLS, timeout=120)
        plan_ts = plan.response["ts"]
        text = all_text(plan)
        assert "two-person rule: someone else must confirm" in text
        assert f"another operator than {OPS} must press Confirm" in text
        assert "mark_unfound_lost revert" in text and "rolled back" in text
        confirm = buttons(plan, "confirm")[0]["value"]
        h.slack.press("confirm", confirm, OPS, plan_ts)
        h.wait_post("two-person rule on `lab`", ("chat.postEphemeral",))
        assert num_unfound(lab, pgid) == UNFOUND_NEW  # refused: nothing ran
        h.slack.press("confirm", confirm, OPS2, plan_ts)
        closed = h.fake.wait_for(lambda f: [c for c in f.of("chat.update")
                                            if c.params.get("ts") == plan_ts
                                            and "verification" in all_text(c)], 300)[0]
        assert ":white_check_mark:" in all_text(closed), all_text(closed)
        # Ceph reverted them: the overwritten objects are back at their previous
        # version, the new ones are forgotten; none unfound
        assert num_unfound(lab, pgid) == 0
        assert _objects(lab) == sorted(f"stuck-{i}" for i in range(UNFOUND_OLD))
        from storage.audit import Audit

        runs = [r for r in Audit(h.env.journal).runs(cluster="lab")
                if r.runbook == "pg-mark-unfound-lost"]
        assert len(runs) == 1 and runs[0].target == pgid and runs[0].outcome == "success"
        assert (runs[0].user, runs[0].confirmed_by, runs[0].source) == (OPS, OPS2, "slack")
        rows = [(x["user"], x["action"], x["outcome"]) for x in h.bot.store.audit_rows()]
        assert (OPS, "confirm", "refused: two-person") in rows
        assert (OPS2, "confirm", "running") in rows
    finally:
        lab.heal("pg-unfound")
    # the heal undid what the break made
    assert pool_pgid(lab) is None and lab.osd_up(b) is True
    dump: Any = lab.ceph("osd", "dump")
    assert not dump.get("pg_upmap") and "norecover" not in str(dump.get("flags"))
    assert not [x for x in lab.ceph("config", "dump") if x.get("name") == HOLD_KEY]
