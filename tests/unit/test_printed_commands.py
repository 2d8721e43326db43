"""Issue 38.1: every ``ceph ...`` command stordoc prints is one its cluster's Ceph takes.

Each command gathered from what stordoc prints (every replayed scenario's findings and
incidents, each runbook's plan for its usual targets, the docs) is judged by Ceph's own
parser (``ceph_argparse.validate_command``, the ``ceph`` CLI's) against the command
table captured from the lab of that release (checks/ceph_cmdtables/). A command Ceph
would refuse (``ceph osd unset pauserd``: EINVAL) fails the test; the check engine never
prints one (it gives the CLI's help for the command meant instead)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest

from checks.ceph_cli import commands_in, judge, releases, vetted
from checks.engine import run_checks
from checks.model import CodeInfo, Finding, Registry, Severity
from core.service.pipeline import CheckRequest, run_check
from runbooks.api import Refused, RunContext, plan_from_snapshot
from runbooks.catalog import registry
from runbooks.nextstep import planning_context
from storage.journal import Journal
from tests.support.printed_commands import (
    doc_commands,
    expanded,
    host_runnable,
    outcome_commands,
    plan_commands,
    printed_steps,
)
from tests.unit.test_replay import PAIRS, replay
from tests.unit.test_replay_words import EXAMPLES

pytest.importorskip("ceph_argparse")  # python3-ceph-argparse: ships with the ceph CLI

RELEASES = ("pacific", "reef")


def test_a_table_per_release_the_lab_runs() -> None:
    assert set(RELEASES) <= set(releases())
    for rel in RELEASES:
        from checks.ceph_cli import TABLES

        doc = json.loads((TABLES / f"{rel}.json").read_text())
        assert rel in doc["version"], doc["version"]
        assert len(doc["mon"]) > 400 and doc["tell"]["osd"] and doc["daemon"]["osd"]


@pytest.mark.parametrize("release", RELEASES)
def test_ceph_s_own_parser_refuses_what_ceph_refuses(release: str) -> None:
    """The parser judges as Ceph does (these were run on the labs: EINVAL, or taken)."""
    bad = judge("ceph osd unset pauserd", release)
    assert bad.ok is False and "pauserd not in" in bad.why and bad.prefix == "osd unset"
    assert judge("ceph osd unset pause", release).ok is True
    assert judge("ceph osd set-nearfull-ratio 0.85", release).ok is True
    assert judge("ceph osd set-nearfull-ratio high", release).ok is False
    assert judge("ceph osd reweight osd.3 1", release).ok is True
    assert judge("ceph pg 1.a query", release).table == "tell osd"
    assert judge("ceph tell osd.1 dump_ops_in_flight", release).ok is True
    assert judge("ceph daemon osd.1 dump_osd_network", release).ok is True
    assert judge("ceph tell osd.1 dump_ops_in_fligh", release).ok is False
    # a capitalised word is a value the reader fills in
    assert judge("ceph osd pool set-quota POOL max_bytes N", release).ok is True
    assert judge("ceph daemon DAEMON dump_ops_in_flight", release).ok is True
    # read-only as Ceph's table says
    assert judge("ceph osd dump", release).read_only
    assert not judge("ceph osd unset pause", release).read_only
    # a command named without its arguments is a reference, never withheld
    named = judge("ceph config rm", release)
    assert named.ok is False and named.named
    assert judge("ceph osd unset pause", "quincy").ok is None  # no table: not judged
    # the table lists the confirmation word as optional; the monitor refuses without it
    lost = judge("ceph osd lost 2", release)
    assert lost.ok is False and "--yes-i-really-mean-it" in lost.why
    assert judge("ceph osd lost 2 --yes-i-really-mean-it", release).ok is True


def test_commands_are_found_where_they_are_printed() -> None:
    text = ("osdmap flag pause is set (by hand): unset it when the maintenance is over "
            "(ceph osd unset pauserd); or `ceph osd unset pausewr | cat`; entity "
            "`ceph OSD_DOWN`; muted in Ceph (ceph health mute, for 1h more)")
    assert [c for _, c in commands_in(text)] == [
        "ceph osd unset pausewr", "ceph osd unset pauserd", "ceph health mute"]
    assert [c for _, c in commands_in("ceph osd reweight 3 1")] == ["ceph osd reweight 3 1"]


def _all_commands(release: str) -> list[tuple[str, str]]:
    """(where, command) of every command printed on every scenario of ``release``: the
    findings and incidents, and each runbook's plan for the targets of its findings and
    the usual ones (tests/unit/test_replay_words.EXAMPLES)."""
    out: list[tuple[str, str]] = []
    journal = Journal(":memory:")
    for rel, name in PAIRS:
        if rel != release:
            continue
        rp = replay(rel, name)
        snap = rp.outcome.snapshot
        out += [(f"{name}: {w}", c) for w, c in outcome_commands(rp.outcome)]
        named: dict[str, set[str]] = {}
        for f in rp.outcome.report.findings:
            if f.runbook and f.target:
                named.setdefault(f.runbook, set()).add(f.target)
        for rb_name, rb in sorted(registry().items()):
            if rb_name.startswith("bench"):
                continue
            for target in sorted(named.get(rb_name, set())
                                 | set(EXAMPLES.get(rb.info.target_kind, ()))):
                ctx = RunContext("lab", rp.target, journal, rp.thresholds, user="t")
                try:
                    plan = plan_from_snapshot(ctx, snap, rb_name, target)
                except Refused:
                    continue
                out += [(f"{name}: {w}", c) for w, c in plan_commands(plan)]
    return out


def _refused(cmds: list[tuple[str, str]], release: str) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    for where, cmd in cmds:
        j = judge(cmd, release)
        # every command is judged, none skipped, but those of a manager module the labs
        # do not run (the dashboard's: its table exists only where it runs)
        assert j.ok is not None or "was not loaded" in j.why, (cmd, j.why)
        if j.ok is False and not j.named:
            bad.setdefault(f"{cmd}  <- {j.why[:160]}", []).append(where)
    return bad


@pytest.mark.parametrize("release", RELEASES)
def test_every_command_a_scenario_prints_is_one_ceph_takes(release: str) -> None:
    cmds = _all_commands(release)
    assert len(cmds) > 100  # what is judged: findings, incidents and plans of all cases
    bad = _refused(cmds, release)
    tables = Counter(judge(c, release).table for _, c in cmds)
    print(f"{release}: {len(cmds)} printed commands ({len({c for _, c in cmds})} distinct; "
          f"by table {dict(tables)}), {sum(len(v) for v in bad.values())} refused")
    assert not bad, "\n".join(f"{k}: {v[:3]}" for k, v in bad.items())


@pytest.mark.parametrize("release", RELEASES)
def test_every_command_in_the_docs_is_one_ceph_takes(release: str) -> None:
    """docs/*.md: each ``ceph ...`` command (a shorthand like ``(deep-)scrub`` stands
    for both). A line that names a command as one Ceph refuses is exempt."""
    from tests.support.printed_commands import ROOT

    cmds = doc_commands()
    assert len(cmds) > 30
    lines = {f"{p.relative_to(ROOT)}:{n}": line for p in sorted((ROOT / "docs").glob("*.md"))
             for n, line in enumerate(p.read_text().splitlines(), 1)}
    cmds = [(w, c) for w, c in cmds if "refuse" not in lines[w]]
    bad = _refused(cmds, release)
    print(f"{release}: {len(cmds)} commands in the docs, "
          f"{sum(len(v) for v in bad.values())} refused")
    assert not bad, "\n".join(f"{k}: {v[:3]}" for k, v in bad.items())


@pytest.mark.parametrize("release", RELEASES)
def test_pause_set_prints_no_command_ceph_refuses(release: str) -> None:
    """The case of issue 38: ``ceph osd set pause`` on a saved healthy cluster. Every
    command the check prints for it, and each plan's, is one Ceph takes (before the fix
    the cause said ``ceph osd unset pauserd`` / ``pausewr``: EINVAL)."""
    rp = replay(release, "healthy")
    snap = rp.outcome.snapshot
    assert snap.ceph is not None
    paused = replace(snap, ceph=replace(snap.ceph,
                                        flags=(*snap.ceph.flags, "pauserd", "pausewr")))
    out = run_check(CheckRequest(rp.target, rp.thresholds, snapshot=paused, now=rp.doc.taken_at,
                    planning=planning_context("lab", rp.target, rp.thresholds, offline=True)))
    assert any(f.code == "OSDMAP_FLAGS" for f in out.report.findings)
    cmds = outcome_commands(out)
    for inc in out.incidents:
        if inc.next_step is not None:
            ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, user="t")
            cmds += plan_commands(plan_from_snapshot(ctx, paused, inc.next_step.runbook,
                                                     inc.next_step.target))
    assert any("unset pause" in c for _, c in cmds), cmds
    assert not _refused(cmds, release), cmds


def _check_printing(text: str, manual: str) -> Registry:
    reg = Registry()

    @reg.register("printing", [CodeInfo("PRINTS_A_COMMAND", Severity.WARN, "test")])
    def _(snap, ctx):  # type: ignore[no-untyped-def]
        yield Finding("PRINTS_A_COMMAND", Severity.WARN, "cluster lab", text,
                      {"manual": manual})

    return reg


@pytest.mark.parametrize("release", RELEASES)
def test_the_engine_never_prints_a_command_the_release_refuses(release: str) -> None:
    """A check that words a command the cluster's release refuses: the engine gives the
    CLI's help for the command it meant (``ceph osd unset -h`` lists the flags Ceph
    takes); a command Ceph takes, and a reference by name, stay as written."""
    snap = replay(release, "healthy").outcome.snapshot
    assert snap.ceph is not None and snap.ceph.release == release
    text = ("osdmap flag pause is set: unset it when the maintenance is over "
            "(ceph osd unset pauserd), then `ceph osd dump`; see `ceph config rm`")
    rep = run_checks(snap, registry=_check_printing(text, "ceph osd unset pausewr"))
    (f,) = rep.findings
    assert f.message == ("osdmap flag pause is set: unset it when the maintenance is over "
                         "(ceph osd unset -h), then `ceph osd dump`; see `ceph config rm`")
    assert f.evidence["manual"] == "ceph osd unset -h"
    for t in (f.message, f.evidence["manual"]):
        for _, cmd in commands_in(t):
            j = judge(cmd, release)
            assert j.ok or j.named, (cmd, j.why)
    # refused only for its confirmation word (EPERM): the word is added
    (h,) = run_checks(snap, registry=_check_printing(
        "if it is gone for good, `ceph osd lost 2` lets it go on", "x")).findings
    assert h.message == ("if it is gone for good, `ceph osd lost 2 --yes-i-really-mean-it` "
                         "lets it go on")
    # a release without a table: nothing judged, nothing changed
    other = replace(snap, ceph=replace(snap.ceph, release="quincy"))
    (g,) = run_checks(other, registry=_check_printing(text, "x")).findings
    assert g.message == text
    assert vetted(text, "squid") == text



def _help_texts() -> list[tuple[str, str]]:
    """(where, text) of each help line: ``stordoc --help`` and every subcommand's (and
    theirs), each runbook's summary and target help."""
    import argparse

    from stordoc.cli import build_parser

    out: list[tuple[str, str]] = []
    todo: list[tuple[str, argparse.ArgumentParser]] = [("stordoc", build_parser())]
    while todo:
        name, p = todo.pop()
        out += [(f"{name} --help", line) for line in p.format_help().splitlines()]
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                todo += [(f"{name} {k}", sp) for k, sp in a.choices.items()]
    for rb_name, rb in registry().items():
        out += [(f"runbook {rb_name}", rb.info.summary),
                (f"runbook {rb_name} target", rb.info.target_help)]
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_every_command_a_help_line_names_is_one_ceph_takes(release: str) -> None:
    # a shorthand (``revert|delete``) stands for each command, as in the docs
    cmds = [(w, x) for w, text in _help_texts() for _, c in commands_in(text)
            for x in expanded(c)]
    assert any("flag-unset" in w for w, _ in cmds), cmds  # `ceph osd unset FLAG` in help
    bad = _refused(cmds, release)
    print(f"{release}: {len(cmds)} commands in help lines, "
          f"{sum(len(v) for v in bad.values())} refused")
    assert not bad, "\n".join(f"{k}: {v[:3]}" for k, v in bad.items())


# ------------------------------------------------- the other exact steps (issue 38.6)
@pytest.mark.parametrize("release,name", PAIRS)
def test_each_printed_host_step_is_one_the_lab_test_runs_or_knows(release: str,
                                                                    name: str) -> None:
    """Each non-``ceph`` exact step a saved scenario prints (a host's command with its
    host, a Swift tool, a recon read, a ``stordoc plan``) is one the lab test
    (test_scenarios.py, ``run_host_printed``) runs there: it reads, or undoes the fault
    where no runbook applies. A step of a program it does not know fails here first."""
    for where, cmd, host in printed_steps(replay(release, name).outcome):
        ok, why = host_runnable(cmd, undo=True)
        assert ok, (where, cmd, why)
        assert host is None or host.startswith("node"), (where, cmd, host)


@pytest.mark.parametrize("cmd,ok", [
    ("dmesg -T --level=err,warn", True), ("tail -n 50 /var/log/x.log", True),
    ("curl -s http://127.0.0.2:6200/recon/quarantined", True),
    ("curl -s -X DELETE http://127.0.0.2:6200/d1/1/a/c/o", False),
    ("swift-ring-builder /etc/swift/object.builder", True),
    ("swift-ring-builder /etc/swift/object.builder set_replicas 3", True),  # undo=True
    ("swift-ring-builder /etc/swift/object.builder rebalance", False),
    ("stordoc plan swift-ring-rebalance object", True),
    ("stordoc fix daemon-start mgr.x", False),
    ("ip addr add 127.0.0.99/8 dev lo", False), ("xfs_repair /dev/loop1", False),
])
def test_host_runnable(cmd: str, ok: bool) -> None:
    assert host_runnable(cmd, undo=True)[0] is ok

