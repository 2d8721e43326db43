"""Mutes with expiry: the journal table (storage/mutes.py), the engine honouring them, the
CLI (`stordoc mute/unmute`), the Slack grammar and the bot (operators only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import grammar as g
from checks.engine import run_checks
from checks.model import Finding, Severity
from storage.journal import Journal
from storage.model import ClusterSnapshot
from storage.mutes import active_mutes, add_mute, list_mutes, remove_mutes
from tests.support.cli import cli
from tests.unit.test_bot_app import OPERATOR, VIEWER, h, settings  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def test_mute_expires_by_itself_and_unmute_is_audited() -> None:
    j = Journal(":memory:")
    m = add_mute(j, "lab", "osd_down_out", "osd.1", 1000.0 + 3600, "alice", "disk swap",
                 now=1000.0)
    assert (m.code, m.entity, m.by) == ("OSD_DOWN_OUT", "osd.1", "alice")
    assert [x.id for x in active_mutes(j, "lab", now=1000.0 + 3599)] == [m.id]
    assert active_mutes(j, "lab", now=1000.0 + 3600) == []  # expired: no longer matches
    assert active_mutes(j, "other", now=1000.0) == []
    m2 = add_mute(j, "lab", "PGS_STUCK", None, 5000.0, "bob", "known", now=1000.0)
    assert remove_mutes(j, "lab", "PGS_STUCK", None, "carol", now=1001.0) == [m2]
    rows = list_mutes(j, "lab")
    assert [(x.code, x.removed_by) for x in rows] == [("PGS_STUCK", "carol"),
                                                      ("OSD_DOWN_OUT", None)]
    with pytest.raises(ValueError):
        add_mute(j, "lab", "X_Y", None, 10.0, "a", "r", now=20.0)
    with pytest.raises(ValueError):
        add_mute(j, "lab", "X_Y", None, 30.0, "a", "  ", now=20.0)


def test_engine_hides_a_muted_entity_only() -> None:
    from checks.model import REGISTRY, CodeInfo, Registry

    reg = Registry()

    @reg.register("t", codes=[CodeInfo("T_CODE", Severity.WARN, "t")], needs=())
    def t(snap: ClusterSnapshot, ctx: object) -> list[Finding]:
        return [Finding("T_CODE", Severity.WARN, e, "m") for e in ("osd.1", "osd.2")]

    snap = ClusterSnapshot(cluster="lab", taken_at=0.0, ceph=None, swift=None, hosts={})
    rep = run_checks(snap, registry=reg, mute_rules=[("T_CODE", "osd.1")])
    assert [f.entity for f in rep.findings] == ["osd.2"]
    assert [f.entity for f in rep.muted] == ["osd.1"]
    rep = run_checks(snap, registry=reg, mute_rules=[("t_code", None)])
    assert rep.findings == () and len(rep.muted) == 2
    assert "T_CODE" not in REGISTRY.codes


def test_cli_mute_list_unmute_and_bad_input(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   '[clusters.lab.ceph]\nconf = "/nonexistent/ceph.conf"\n')
    r = cli(cfg, "mute", "OSD_DOWN_OUT", "osd.1", "--for", "4h", "--reason", "disk swap",
            timeout=120, columns=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("muted OSD_DOWN_OUT osd.1 on lab until ")
    r = cli(cfg, "mute", "--list", timeout=120, columns=None)
    assert "OSD_DOWN_OUT osd.1" in r.stdout and "active" in r.stdout and "disk swap" in r.stdout
    for bad, needle in ((("mute", "NOPE_CODE", "--for", "4h", "--reason", "x"), "unknown finding code"),
                        (("mute", "OSD_DOWN_OUT", "--for", "90d", "--reason", "x"), "--for"),
                        (("mute", "OSD_DOWN_OUT", "--for", "4h"), "--reason"),
                        (("mute", "OSD_DOWN_OUT", "--reason", "x"), "--for"),
                        (("unmute", "PGS_STUCK"), "no active mute")):
        r = cli(cfg, *bad, timeout=120, columns=None)
        assert r.returncode == 64, (bad, r.stdout, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    r = cli(cfg, "unmute", "OSD_DOWN_OUT", "osd.1", timeout=120, columns=None)
    assert r.returncode == 0 and "unmuted OSD_DOWN_OUT osd.1" in r.stdout
    assert "removed by" in cli(cfg, "mute", "--list", timeout=120, columns=None).stdout


def test_slack_grammar_for_mutes() -> None:
    m = g.parse("mute OSD_DOWN_OUT osd.1 for 4h disk swap tomorrow")
    assert m == g.Mute("OSD_DOWN_OUT", "osd.1", 4 * 3600.0, "disk swap tomorrow")
    assert g.parse("mute POOL_PG_NUM_LOW pool:rbd for 30m because test") == \
        g.Mute("POOL_PG_NUM_LOW", "pool rbd", 1800.0, "test")
    assert g.parse("mute PGS_STUCK for 1d known").entity is None  # type: ignore[union-attr]
    assert g.parse("unmute OSD_DOWN_OUT osd.1") == g.Unmute("OSD_DOWN_OUT", "osd.1")
    assert g.parse("mute list --cluster lab") == g.MuteList("lab")
    for bad in ("mute OSD_DOWN_OUT osd.1 for 4h", "mute OSD_DOWN_OUT osd.1 for 1y x",
                "mute osd.1 for 4h x", "mute OSD_DOWN_OUT osd.1 4h x"):
        with pytest.raises(g.GrammarError):
            g.parse(bad)
    assert g.Mute in g.ACTING and g.Unmute in g.ACTING and g.MuteList not in g.ACTING


def test_slack_mute_needs_an_operator_and_is_audited_by_user_id(h) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    h.slack.slash("mute OSD_DOWN_OUT osd.1 for 2h swapping the disk", VIEWER)
    h.wait_post("*operator* role", ("chat.postEphemeral",))
    assert list_mutes(h.env.journal, "lab") == []
    h.slack.slash("mute OSD_DOWN_OUT osd.1 for 2h swapping the disk", OPERATOR)
    h.wait_post("muted `OSD_DOWN_OUT osd.1` on lab")
    (m,) = list_mutes(h.env.journal, "lab")
    assert (m.by, m.reason) == (OPERATOR, "swapping the disk")
    h.slack.slash("mute list", VIEWER)
    h.wait_post("OSD_DOWN_OUT osd.1")
    h.slack.slash("unmute OSD_DOWN_OUT osd.1", OPERATOR)
    h.wait_post("unmuted OSD_DOWN_OUT osd.1")
    assert list_mutes(h.env.journal, "lab")[0].removed_by == OPERATOR


def test_unrecorded_checks_honour_mutes_and_recorded_ones_date_every_finding() -> None:
    """The TUI's and the bot's unrecorded checks read the mutes too; a recorded check gives
    findings that know no start the start of their streak in the journal."""
    import dataclasses
    import json as _json

    from core.service.pipeline import CheckRequest, run_check
    from storage.ceph import build_state, load_raw_dir
    from storage.targets import ClusterTarget

    raw = load_raw_dir(str(ROOT / "tests" / "fixtures" / "ceph-pacific" / "pool-few-pgs"))
    st = build_state(raw)
    snap = ClusterSnapshot(cluster="lab", taken_at=0.0, ceph=st, swift=None, hosts={})
    j = Journal(":memory:")
    target = ClusterTarget("lab")
    out = run_check(CheckRequest(target, journal=j, snapshot=snap))
    low = [f for f in out.report.findings if f.code == "POOL_PG_NUM_LOW"]
    assert low and all(f.since is not None for f in low)  # dated from the journal
    first = low[0].since
    out2 = run_check(CheckRequest(target, journal=j, snapshot=dataclasses.replace(snap, taken_at=9.0)))
    assert [f.since for f in out2.report.findings if f.key == low[0].key] == [first]
    add_mute(j, "lab", "POOL_PG_NUM_LOW", low[0].entity, 4e9, "alice", "known")
    out3 = run_check(CheckRequest(target, journal=None, mutes_from=j, snapshot=snap))
    assert low[0].key not in {f.key for f in out3.report.findings}
    assert low[0].key in {f.key for f in out3.report.muted}
    assert _json.dumps([i.to_dict() for i in out3.incidents], default=str)
