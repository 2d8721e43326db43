"""Issue 38 items 5 and 6, without a lab.

5. Planned is not a problem: a maintenance window someone opened (``storage.expiring``,
   a real SQLite journal) is said as on, until when, by whom, and `check` exits 0 for it
   until its deadline; past it, a WARN whose next step is maintenance-end. A flag set by
   hand with no window stays a problem. The Slack ``health`` reply (the real bolt App)
   reads the same verdict and ends with the same line.
6. The last line always says what to do: every saved snapshot of both releases through
   `stordoc check --from` ends with a runbook (`stordoc fix ...`), a plan to make live
   (`stordoc plan ...`), an exact command of the incident (with the host it runs on), or
   "nothing to do": never the step in words (`by hand: ...`), never "see incident N".
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from checks.model import Severity, Verdict
from core.env import Env
from core.service.snapshots import Replay
from core.terminal import Terminal
from runbooks.nextline import actionable, exact_command, last_line
from storage import expiring
from storage.journal import Journal
from storage.model import ClusterSnapshot
from stordoc.cli import main
from stordoc.commands.check import render
from tests.support.fixture_snapshots import FIXTURES, ROOT, replayed

RELEASES = ("pacific", "reef")
HOSTS = [{"name": f"node{i}", "address": f"127.0.0.{i + 1}"} for i in range(1, 5)]
PAIRS = [(rel, d.name) for rel in RELEASES for d in sorted((FIXTURES / rel).iterdir())
         if (d / "snapshot.json").exists()]


def replay(release: str, name: str) -> Replay:
    return replayed(release, name)  # one replay per session (tests/support)


def last_of(text: str) -> str:
    """The report's last line as one line: the last row starting with ``next:`` and its
    continuation rows (indented two cells), which must end the text."""
    rows = text.rstrip("\n").splitlines()
    i = max(n for n, r in enumerate(rows) if r.startswith("next: "))
    assert all(r.startswith("  ") for r in rows[i + 1:]), text
    return " ".join([rows[i], *(r.strip() for r in rows[i + 1:])])


def test_the_fixtures_are_all_there() -> None:
    assert len(PAIRS) >= 2 * 30 and {n for _, n in PAIRS} >= {
        "healthy", "maintenance-left", "mon-disk-low", "osd-crash", "swift-device-readonly"}


@pytest.mark.parametrize("release,name", PAIRS)
def test_every_snapshot_ends_with_what_to_do(monkeypatch: pytest.MonkeyPatch,
                                             release: str, name: str) -> None:
    monkeypatch.chdir(ROOT)
    term = Terminal.capture(width=80)
    rc = main(["check", "--from", f"tests/fixtures/snapshots/{release}/{name}"], term)
    assert isinstance(term.stdout, io.StringIO)
    text = term.stdout.getvalue()
    out = replay(release, name).outcome
    assert rc == int(out.report.verdict)
    assert "see incident" not in text and "no runbook applies" not in text, text
    line = last_of(text)
    todo = [i for i in out.incidents if actionable(i)]
    with_runbook = [i for i in todo if i.next_step is not None]
    if not todo:  # healthy, or only INFO (settling, planned)
        assert line.startswith("next: nothing to do"), text
    elif with_runbook:
        assert line.split("  # ")[0] == f"next: {with_runbook[0].next_step.command}", text
    else:  # an exact command, word for word as the incident says it: never words alone
        assert not line.startswith("next: by hand"), text
        cmd = line.removeprefix("next: ").split("  # on ")[0]
        assert re.fullmatch(r"[a-z][a-z_-]* \S.*", cmd), line
        assert exact_command(f"`{cmd}`") == cmd, line  # a known program, nothing to fill in
        assert any(cmd in (i.manual or "") for i in todo), (cmd, text)
        if "  # on " in line:  # said with the host the incident is on
            host = line.split("  # on ")[1]
            assert any(host == (i.root.evidence or {}).get("host") for i in todo), line


@pytest.mark.parametrize("release,name,rc,want", [
    ("pacific", "healthy", 0, "next: nothing to do"),
    ("reef", "osd-crash", 2, "next: stordoc fix daemon-restart osd.2"),
    ("pacific", "mon-disk-low", 1, "next: stordoc fix config-restore mon.a"),
    ("reef", "osd-crush-weight-zero", 1, "next: ceph osd crush reweight osd.1 0.0098"),
    # the kernel log on the disk's host says why it went read-only (issue 38.6)
    ("reef", "swift-device-readonly", 2, "next: dmesg -T --level=err,warn  # on node2"),
    # a restart loop: what ended its lives, on its host; a builder that plans more
    # replicas than devices: back to the live ring's; a ring to rebalance: planned live
    ("pacific", "osd-restart-loop", 2,
     "next: tail -n 50 /var/tmp/stordoc-lab-daemons/log/ceph-osd.2.log  # on node3"),
    ("reef", "swift-ring-replicas", 2, "next: swift-ring-builder "
     "/var/tmp/stordoc-snapshots-reef/swift/etc/object.builder set_replicas 3"),
    ("pacific", "swift-ring-drift", 1, "next: stordoc plan swift-ring-rebalance object"),
    ("pacific", "mgr-not-answering", 2, "next: ceph mgr metadata x"),
])
def test_the_real_cli_prints_it_last(release: str, name: str, rc: int, want: str) -> None:
    """`python -m stordoc check --from DIR` as on-call runs it, in a real process."""
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "stordoc", "check", "--from",
                        f"tests/fixtures/snapshots/{release}/{name}"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.stderr == "" and p.returncode == rc, (p.returncode, p.stderr)
    assert last_of(p.stdout) == want, p.stdout


@pytest.mark.parametrize("text,want", [
    ("ceph osd crush reweight osd.1 0.0098", "ceph osd crush reweight osd.1 0.0098"),
    ("free space (logs) or compact the store (`ceph tell mon.a compact`)",
     "ceph tell mon.a compact"),
    ("remove it: `ceph config rm osd.1 x_y` and `ceph config rm osd.1 y_z`",
     "ceph config rm osd.1 x_y"),
    ("if it was set by hand, `mount -o remount,rw /srv/d2`", None),  # a condition
    ("set it (`ip -br addr`): `swift-ring-builder object.builder set_info OLD NEW`",
     None),  # the step's command has placeholders: no exact one
    ("set a class: `ceph osd crush set-device-class CLASS osd.1`", None),
    ("read the kernel log on node2 (dmesg) for why", None),
    ("read the kernel log on node2 (`dmesg -T --level=err,warn`) for why",
     "dmesg -T --level=err,warn"),
    ("plan it live (`stordoc plan swift-ring-rebalance object`)",
     "stordoc plan swift-ring-rebalance object"),
    ("look at it with `less /var/log/x`", None),  # not a program stordoc names
    ("restart ceph-mgr x on its host", None),
])
def test_exact_command(text: str, want: str | None) -> None:
    assert exact_command(text) == want


def test_settling_after_a_fix_is_nothing_to_do() -> None:
    from tests.unit.test_settling_after_fix import fix_run, outcome, peering

    base = peering()
    out = outcome(replace(base, runs=(fix_run(base),)))
    assert out.report.verdict is Verdict.OK and out.incidents[0].severity is Severity.INFO
    con = Console(file=io.StringIO(), width=80, highlight=False)
    render(out, con)
    text = con.file.getvalue()  # type: ignore[attr-defined]
    assert text.splitlines()[-1] == "next: nothing to do (Ceph settles this by itself)", text


# -- 5: a maintenance window in a real journal, through the CLI's and the bot's live path

def _now_snapshot(now: float) -> ClusterSnapshot:
    """The lab with noout on node2's osd.1 (``maintenance-left``), read now: Ceph only."""
    snap = replay("pacific", "maintenance-left").outcome.snapshot
    assert snap.ceph is not None
    return replace(snap, swift=None, taken_at=now, ceph=replace(snap.ceph, collected_at=now))


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Path, Journal]]:
    """A config whose cluster `lab` reads the snapshot above (``Env.collect``, the one
    place a check reaches a cluster) and a real SQLite journal."""
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   f'[clusters.lab.ceph]\nconf = "{conf}"\n' + "".join(
                       f'[[clusters.lab.hosts]]\nname = "{h["name"]}"\n'
                       f'address = "{h["address"]}"\n' for h in HOSTS))
    monkeypatch.setattr(Env, "collect", lambda self, target, host_facts=True:
                        _now_snapshot(time.time()))
    j = Journal(str(tmp_path / "j.db"))
    yield cfg, j
    j.close()


def _window(j: Journal, deadline_in: float) -> None:
    """alice's window on node2 (noout on osd.1), opened an hour ago."""
    now = time.time()
    ch = expiring.record(j, "lab", "osd-flag", "noout", now + 3600, "alice", ["osd.1"],
                         reason="maintenance of host node2", now=now - 3600)
    expiring.mark(j, ch.id, "held")
    if deadline_in <= 0:  # its deadline passed (the sweep could not end it yet)
        with j.lock, j.db.atomic():
            j.db.table(expiring.TABLE).update(ch.id, {"deadline": now + deadline_in})


def _check(cfg: Path) -> tuple[int, str]:
    term = Terminal.capture(width=80)
    rc = main(["check", "--config", str(cfg)], term)
    assert isinstance(term.stdout, io.StringIO)
    return rc, term.stdout.getvalue()


def test_a_colleagues_window_is_on_until_its_deadline_and_exits_0(
        live: tuple[Path, Journal]) -> None:
    cfg, j = live
    _window(j, 3600)
    until = time.strftime("%H:%M", time.gmtime(expiring.open_changes(j, "lab")[0].deadline))
    rc, text = _check(cfg)
    assert rc == 0, text
    assert f"maintenance node2 on until {until} by alice" in text, text
    assert "maintenance-end" not in text  # a colleague's window is never a next step
    assert last_of(text) == f"next: nothing to do (maintenance node2 on until {until} " \
                            "by alice)", text
    assert text.splitlines()[0].startswith("OK lab: "), text


def test_past_its_deadline_it_is_a_warn_that_ends_it(live: tuple[Path, Journal]) -> None:
    cfg, j = live
    _window(j, -60)
    rc, text = _check(cfg)
    assert rc == 1, text
    assert re.search(r"its window ended 1m \d+s ago", text), text
    assert last_of(text) == "next: stordoc fix maintenance-end node2", text


def test_a_flag_set_by_hand_stays_a_problem(live: tuple[Path, Journal]) -> None:
    cfg, j = live
    rc, text = _check(cfg)  # no window in the journal
    assert rc == 1 and "(not set by stordoc)" in text, text
    assert last_of(text) == "next: stordoc fix maintenance-end node2", text


def test_another_osds_flag_beside_a_window_stays_a_problem(
        live: tuple[Path, Journal]) -> None:
    """A window on osd.3 does not cover the noout osd.1 carries: still WARN."""
    cfg, j = live
    now = time.time()
    ch = expiring.record(j, "lab", "osd-flag", "noout", now + 3600, "alice", ["osd.3"],
                         reason="maintenance of host node4", now=now)
    expiring.mark(j, ch.id, "held")
    rc, text = _check(cfg)
    assert rc == 1 and "osd.1 flag noout" in text, text


def test_slack_health_says_the_same_verdict_and_last_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from core.settings import parse_settings
    from tests.support.fake_slack import BotHarness, all_text

    monkeypatch.setattr(Env, "collect", lambda self, target, host_facts=True:
                        _now_snapshot(time.time()))
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    settings = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}, "hosts": HOSTS}},
        "default_cluster": "lab"})
    h = BotHarness(settings, {"lab": {"viewers": ["UVIEWNEXT1"]}}, str(tmp_path / "bot.db"),
                   throttle_s=0.05)
    try:
        _window(h.env.journal, 3600)
        until = time.strftime("%H:%M", time.gmtime(
            expiring.open_changes(h.env.journal, "lab")[0].deadline))
        h.slack.slash("health lab", "UVIEWNEXT1")
        msg = h.wait_post("next:", ("chat.postMessage",), timeout=30)
        text = all_text(msg)
        blocks = msg.params["blocks"]
        assert blocks[0]["text"]["text"].startswith("*OK lab: "), blocks[0]
        assert f"maintenance node2 on until {until} by alice" in text, text
        assert blocks[-1]["text"]["text"] == \
            f"*next:* nothing to do (maintenance node2 on until {until} by alice)", blocks[-1]
    finally:
        h.close()


def test_slack_health_ends_with_the_clis_last_line() -> None:
    """Every snapshot: the bot's last block is the CLI's last line (one decision)."""
    from bot import render as r

    for rel, name in PAIRS:
        out = replay(rel, name).outcome
        rep = r.health_reply("lab", out.report.verdict, out.incidents, out.report.findings,
                             lambda inc: None)
        last = rep.messages[-1].blocks[-1]["text"]["text"]
        want = last_line(out.incidents, findings=out.report.findings).removeprefix("next: ")
        said = last.removeprefix("*next:* ")
        if said.startswith("`") and said.endswith("`"):  # a command, as code
            said = said[1:-1]
        assert said == r.esc(want), (rel, name, last)
