"""Issue #26.3: a mute covers a finding, never the ability to look. The codes that say
stordoc cannot see the cluster are refused by every front end, an older version's mute of
one is ignored (the verdict stays UNREACHABLE), and a mute never hides an escalation."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from checks.engine import run_checks
from checks.model import REGISTRY, CodeInfo, Finding, Registry, Severity, Verdict
from checks.mutable import CANNOT_LOOK, mute_ignored, mute_refusal
from storage.journal import Journal
from storage.model import ClusterSnapshot, HostFacts
from storage.mutes import add_mute, list_mutes
from tests.support.cli import cli
from tests.unit.test_bot_app import OPERATOR, h, settings  # noqa: F401


def _dead_mon(**kw: object) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="lab", taken_at=0.0, ceph=None, swift=None, hosts={},
                           ceph_error="timed out", **kw)  # type: ignore[arg-type]


def test_every_cannot_look_code_is_registered_and_refused() -> None:
    assert CANNOT_LOOK <= set(REGISTRY.codes)  # a renamed code would be mutable again
    for code in CANNOT_LOOK:
        why = mute_refusal(code.lower())
        assert why and why.startswith(f"{code} cannot be muted") and "\n" not in why
    assert mute_refusal("OSD_DOWN_OUT") is None


@pytest.mark.parametrize("rules,static", [([("CEPH_UNREACHABLE", None)], ()),
                                          ([("CEPH_UNREACHABLE", "cluster lab")], ()),
                                          ([], ("CEPH_UNREACHABLE",))])
def test_a_dead_monitor_under_any_mute_stays_unreachable(rules: list[tuple[str, str | None]],
                                                         static: tuple[str, ...]) -> None:
    rep = run_checks(_dead_mon(), mute_rules=rules, muted=static)
    assert rep.verdict == Verdict.UNREACHABLE
    assert [f.code for f in rep.findings] == ["CEPH_UNREACHABLE"]
    assert rep.muted == ()
    assert [(f.code, why) for f, why in rep.mute_ignored] == [
        ("CEPH_UNREACHABLE", "cannot see the cluster")]


def test_an_unreachable_host_is_shown_under_a_mute() -> None:
    snap = ClusterSnapshot(cluster="lab", taken_at=0.0, ceph=None, swift=None,
                           hosts={"node1": HostFacts("node1", "127.0.0.2", error="refused")})
    rep = run_checks(snap, mute_rules=[("HOST_UNREACHABLE", None)])
    assert [f.entity for f in rep.findings] == ["host node1"] and rep.muted == ()
    assert rep.verdict == Verdict.WARN


def test_a_mute_does_not_hide_an_escalation() -> None:
    reg = Registry()

    @reg.register("t", codes=[CodeInfo("T_STALE", Severity.WARN, "t")], needs=())
    def t(snap: ClusterSnapshot, ctx: object) -> list[Finding]:
        return [Finding("T_STALE", Severity.WARN, "a", "m"),
                Finding("T_STALE", Severity.CRIT, "b", "m")]

    snap = ClusterSnapshot(cluster="lab", taken_at=0.0, ceph=None, swift=None, hosts={})
    rep = run_checks(snap, registry=reg, mute_rules=[("T_STALE", None)])
    assert [f.entity for f in rep.muted] == ["a"]
    assert [f.entity for f in rep.findings] == ["b"] and rep.verdict == Verdict.CRIT
    assert [why for _, why in rep.mute_ignored] == ["escalated to crit (usually warn)"]
    # at its usual severity a code stays mutable
    assert mute_ignored(Finding("T_STALE", Severity.WARN, "a", "m"), reg.codes) is None


def test_cli_refuses_the_mute_and_ignores_an_old_one(tmp_path: Path) -> None:
    """The issue's reproduction: a Ceph that cannot be read (no config here; the lab test
    uses a dead monitor port), muted by an older version: still exit 3."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   '[clusters.lab.ceph]\nconf = "/nonexistent/ceph.conf"\n')
    r = cli(cfg, "mute", "CEPH_UNREACHABLE", "--for", "1m", "--reason", "maintenance", timeout=120)
    assert r.returncode == 64, r.stderr
    assert "cannot be muted" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    j = Journal(str(tmp_path / "j.db"))
    assert list_mutes(j, "lab") == []  # nothing written
    add_mute(j, "lab", "CEPH_UNREACHABLE", None, time.time() + 3600, "old", "legacy")
    j.close()
    r = cli(cfg, "check", timeout=120)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "OK" not in r.stdout.split()[0]
    assert "CEPH_UNREACHABLE cluster lab muted (ignored: cannot see the cluster)" in r.stdout
    r = cli(cfg, "mute", "--list", timeout=120)
    assert "active (ignored: cannot see the cluster)" in r.stdout


def test_slack_and_tui_refuse_too(h) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    h.slack.slash("mute CEPH_UNREACHABLE for 30d the mon is being replaced", OPERATOR)
    h.wait_post("cannot be muted", ("chat.postEphemeral",))
    assert list_mutes(h.env.journal, "lab") == []

    from tests.support.tui_backend import SnapshotBackend
    from tui.backend import ActionRefused

    b = SnapshotBackend(_dead_mon())
    with pytest.raises(ActionRefused, match="cannot be muted"):
        b.mute("lab", "HOST_UNREACHABLE", "host node1", 3600.0, "r")
    assert b.mutes == []
