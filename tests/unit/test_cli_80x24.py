"""`stordoc check` at 80x24 for every replayed lab scenario of both releases (issue #27):
the verdict, each incident with its cause, impact and one next step, the findings no
incident explains once each, and the next step again on the last line; `-v` for the
details. Rendered in-process through the CLI's own entry point (``main`` with an 80-column
terminal), as `COLUMNS=80 stordoc check --from DIR` prints it."""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import replace

import pytest
from rich.console import Console

from checks.incidents import Incident, NextStep
from checks.model import Finding, Severity
from core.service.snapshots import Replay
from core.terminal import Terminal
from stordoc.cli import main
from stordoc.commands.check import render
from tests.support.fixture_snapshots import CASES, ROOT, replayed

RELEASES = ("pacific", "reef")
PAIRS = [(rel, c.name) for rel in RELEASES for c in CASES]
CODE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")


def replay(release: str, name: str) -> Replay:
    return replayed(release, name)  # one replay per session (tests/support)


def check_text(monkeypatch: pytest.MonkeyPatch, release: str, name: str,
               *flags: str) -> tuple[int, str]:
    """`stordoc check --from tests/fixtures/snapshots/REL/NAME` in an 80-column terminal,
    the directory as on-call types it (relative), so the wrapping is the same anywhere."""
    monkeypatch.chdir(ROOT)
    term = Terminal.capture(width=80)
    rc = main(["check", "--from", f"tests/fixtures/snapshots/{release}/{name}", *flags],
              term)
    assert isinstance(term.stdout, io.StringIO) and isinstance(term.stderr, io.StringIO)
    assert term.stderr.getvalue() == ""
    return rc, term.stdout.getvalue()


def stable(text: str) -> str:
    """The picture without what changes between runs: the snapshot line's age (its rows
    are asserted by test_replay) and the timing of `-v`."""
    text = re.sub(r"\A.*?(?=^(OK|WARN|CRIT|UNREACHABLE) )", "from snapshot <dir> (taken "
                  "<when>)\n", text, count=1, flags=re.S | re.M)
    return re.sub(r"collect [0-9.]+s, checks [0-9.]+s", "collect <s>, checks <s>", text)


@pytest.mark.parametrize("release,name", PAIRS)
def test_default_check_fits_80x24_and_ends_with_the_next_step(
        monkeypatch: pytest.MonkeyPatch, snapshot: object, release: str, name: str) -> None:
    rp = replay(release, name)
    out = rp.outcome
    rc, text = check_text(monkeypatch, release, name)
    assert rc == int(out.report.verdict)
    lines = text.splitlines()
    assert stable(text) == snapshot
    # every row as the terminal shows it: nothing wider than the screen, no more rows
    assert all(len(ln) <= 80 for ln in lines), [ln for ln in lines if len(ln) > 80]
    assert len(lines) <= 24, text
    assert not any(ln != ln.rstrip() for ln in lines), "no trailing blanks"
    body = lines[1:]  # after "from snapshot DIR (taken ...)" (1-2 rows)
    while not re.match(r"(OK|WARN|CRIT|UNREACHABLE) lab: ", body[0]):
        body = body[1:]
    verdict_rows = 1 + next((i for i, ln in enumerate(body[1:]) if not ln.startswith("  ")),
                            len(body) - 1)
    after = body[verdict_rows:]
    if not out.incidents:  # a healthy cluster: the verdict, one line of context, and
        # what to do: nothing
        assert len(after) <= 2 + len(out.report.findings), text
        assert lines[-1] == "next: nothing to do", text
        return
    steps = [i.next_step.command for i in out.incidents if i.next_step]
    if steps:
        assert lines[-1].startswith(f"next: {steps[0]}"), text
        assert [ln.strip() for ln in after].count(f"next: {steps[0]}") == 2  # incident, end
    else:  # the first step's exact command (a long one goes on over indented rows, never
        # cut: cut, it is no longer the command), never the step in words, never "see ..."
        last = max(n for n, ln in enumerate(lines) if ln.startswith("next: "))
        assert all(ln.startswith("  ") for ln in lines[last + 1:]), text
        assert not lines[last].startswith("next: by hand") and "see incident" not in text
    # each finding code once below the verdict (which names the top incident's cause)
    # (one of Ceph's own codes as a root: its message opens with "Ceph CODE:", by design)
    # (one code may root incidents of different entities: CONFIG_OPTION_CAUSE of `config
    # global` and of `config mgr`, two sections each put back by its own config-restore;
    # each (code, entity) header once)
    head = re.compile(r"^\s*\d+\. [A-Z]+ ([A-Z][A-Z0-9_]+)  (.+)$")
    headers = Counter(m.groups() for ln in after if (m := head.match(ln)))
    assert [h for h, n in headers.items() if n > 1] == [], text
    body_text = "\n".join(ln for ln in after if not head.match(ln))
    shown = Counter(CODE.findall(re.sub(r"\bCeph [A-Z0-9_]+: ", "", body_text)))
    shown.update({c for c, _ in headers})
    twice = {c: n for c, n in shown.items() if n > 1}
    assert twice == {}, text
    for n, inc in enumerate(out.incidents, 1):
        head = next(ln for ln in after if ln.startswith(f"{n}. "))
        # the root with its own severity: the same word it has in `-v`'s lists
        assert head.startswith(f"{n}. {inc.root.severity.name} {inc.root.code}"), head
        assert inc.root.message.split()[0] in "\n".join(after)
    # Ceph's own status is context after the incidents, never under the verdict
    if out.snapshot.ceph is not None:
        where = [i for i, ln in enumerate(after) if "Ceph says HEALTH_" in ln]
        assert len(where) == 1 and where[0] > max(
            i for i, ln in enumerate(after) if re.match(r"\d+\. ", ln)), text
        assert not any("HEALTH_" in ln for ln in body[:verdict_rows + 1])
    # what no incident explains (INFO findings): each once, at most two rows
    explained = {f.key for inc in out.incidents for f in inc.findings}
    for f in out.report.findings:
        if f.key not in explained:
            i = next(i for i, ln in enumerate(after)
                     if ln.startswith(f"{f.severity.name} {f.code}  {f.entity}"))
            assert i + 2 >= len(after) or not after[i + 2].startswith("    "), text


@pytest.mark.parametrize("release,name", [("pacific", "osd-unmounted-in"),
                                          ("reef", "cache-tier-misconfigured"),
                                          ("reef", "healthy")])
def test_verbose_shows_every_finding_by_severity_and_what_each_incident_explains(
        monkeypatch: pytest.MonkeyPatch, snapshot: object, release: str, name: str) -> None:
    out = replay(release, name).outcome
    rc, short = check_text(monkeypatch, release, name)
    for flag in ("-v", "--verbose"):
        rc2, text = check_text(monkeypatch, release, name, flag)
        assert rc2 == rc
        assert stable(text) == snapshot
        lines = text.splitlines()
        assert all(len(ln) <= 80 for ln in lines)
        for f in out.report.findings:  # each by severity, with its incident
            row = next(ln for ln in lines
                       if ln.startswith(f"{f.severity.name} {f.code}  {f.entity}"))
            n = next((n for n, i in enumerate(out.incidents, 1) if f in i.findings), None)
            assert (f"incident {n}" in row) == (n is not None), row
        for sev in Severity:
            k = sum(1 for f in out.report.findings if f.severity == sev)
            assert (f"{sev.name} ({k}) ─" in text) == bool(k), text
        for i in out.incidents:
            if i.consequences:
                assert "explains: " in text
        assert f"cluster lab: exit {int(out.report.verdict)} " in text  # the timing line
        steps = [i.next_step.command for i in out.incidents if i.next_step]
        if steps:
            assert lines[-1] == f"next: {steps[0]}"
        assert len(lines) > len(short.splitlines())


def _escalated() -> tuple[Incident, tuple[Finding, ...]]:
    """The tmpfs seed fault as the issue met it: the root finding is a warning, the
    incident critical (28 PGs inactive block client I/O)."""
    from checks.incidents import correlate

    root = Finding("OSD_DATA_UNMOUNTED", Severity.WARN, "osd.1",
                   "osd.1 data dir /var/lib/ceph/osd/ceph-1 is empty on node2",
                   runbook="osd-remount", target="osd.1")
    pgs = Finding("PGS_NOT_ACTIVE_CLEAN", Severity.CRIT, "cluster lab pgs",
                  "28 of 65 PGs are not active+clean: 28 peering",
                  evidence={"blocking": 28, "not_clean": {"peering": 28}})
    down = Finding("OSD_DOWN_IN", Severity.WARN, "osd.1", "osd.1 is down but still in")
    incs = correlate([root, pgs, down])
    assert len(incs) == 1 and incs[0].root == root
    return incs[0], (root, pgs, down)


def test_a_finding_has_one_severity_even_when_its_incident_is_worse() -> None:
    inc, findings = _escalated()
    assert inc.severity == Severity.CRIT and inc.root.severity == Severity.WARN
    assert inc.escalated
    rp = replay("pacific", "osd-unmounted-out")
    r = replace(rp.outcome.report, findings=findings)
    inc = replace(inc, next_step=NextStep("osd-remount", "osd.1"))
    o = replace(rp.outcome, report=r, incidents=(inc,))
    for verbose in (False, True):
        con = Console(file=io.StringIO(), width=80, highlight=False)
        render(o, con, verbose)
        text = con.file.getvalue()  # type: ignore[attr-defined]
        assert "1. WARN OSD_DATA_UNMOUNTED  osd.1" in text, text
        assert "CRIT OSD_DATA_UNMOUNTED" not in text, text
        assert "impact (crit): 28 PGs inactive: client I/O blocked" in text, text
        assert text.splitlines()[0].startswith("CRIT lab: OSD_DATA_UNMOUNTED osd.1")
        if verbose:
            assert "WARN OSD_DATA_UNMOUNTED  osd.1  (incident 1)" in text, text
        assert text.splitlines()[-1] == "next: stordoc fix osd-remount osd.1"


def test_live_check_and_all_use_the_same_renderer(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: object) -> None:
    """`check` (live) prints what `check --from` prints after its snapshot line; `check
    --all` prints each cluster's verdict, wrapped at the width (continuation indented), and
    `--all -v` each cluster's details."""
    from pathlib import Path

    from core.service.app import Service

    assert isinstance(tmp_path, Path)
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "a"\n'
                   '[check]\nparallel = 1\n'  # one at a time: printed in config order
                   '[clusters.a.swift]\nswift_dir = "/etc/swift"\n'
                   '[clusters.b.swift]\nswift_dir = "/etc/swift"\n')
    cases = {"a": ("reef", "cache-tier-misconfigured"), "b": ("pacific", "osd-killed")}

    def fake_check(self: Service, cluster: str | None, *_: object, **__: object) -> object:
        return replay(*cases[cluster or "a"]).outcome

    monkeypatch.setattr(Service, "check", fake_check)

    def run(*argv: str) -> tuple[int, str]:
        term = Terminal.capture(width=80)
        rc = main(["check", "--config", str(cfg), *argv], term)
        assert isinstance(term.stdout, io.StringIO)
        return rc, term.stdout.getvalue()

    rc, live = run("--cluster", "a")
    _, saved = check_text(monkeypatch, *cases["a"])
    assert rc == 1 and live == saved.split("\n", 2)[2], (live, saved)  # after 2 header rows
    rc, every = run("--all")
    rows = every.splitlines()
    assert rc == 2 and all(len(ln) <= 80 for ln in rows)
    starts = [ln for ln in rows if not ln.startswith("  ")]
    assert [ln.split(" ", 2)[:2] for ln in starts] == [["WARN", "lab:"], ["CRIT", "lab:"]]  # the replays name theirs
    assert len(rows) > len(starts)  # the cache tier's long verdict wraps, indented
    rc, every_v = run("--all", "-v")
    assert rc == 2 and "explains: " in every_v and "WARN (5) ─" in every_v
    assert every_v.splitlines()[-1] == "next: stordoc fix daemon-restart osd.2"


def test_many_loose_findings_and_a_long_cause_stay_within_the_screen() -> None:
    rp = replay("reef", "osd-out")
    inc = rp.outcome.incidents[0]
    long_root = replace(inc.root, message=" ".join(["word"] * 400))
    infos = tuple(Finding(f"INFO_CODE_{n}", Severity.INFO, f"pool p{n}", "x " * 100)
                  for n in range(8))
    o = replace(rp.outcome, report=replace(rp.outcome.report, findings=(long_root, *infos)),
                incidents=(replace(inc, root=long_root, impact="one disk fewer"),))
    con = Console(file=io.StringIO(), width=80, highlight=False)
    render(o, con)
    text = con.file.getvalue()  # type: ignore[attr-defined]
    lines = text.splitlines()
    assert len(lines) <= 24 and lines[-1] == "next: stordoc fix osd-in osd.2", text
    assert sum("INFO_CODE_" in ln for ln in lines) == 5
    assert "+3 more findings no incident explains (-v lists them)" in text
    assert sum(ln.startswith("   word") for ln in lines) == 6 and "…" in text
    con = Console(file=io.StringIO(), width=80, highlight=False)
    render(o, con, verbose=True)
    full = con.file.getvalue()  # type: ignore[attr-defined]
    assert all(f"INFO_CODE_{n}" in full for n in range(8)) and full.count("word") == 800


@pytest.mark.parametrize("width", [20, 33, 47, 80, 119])
def test_wrapping_loses_no_character_at_any_width(monkeypatch: pytest.MonkeyPatch,
                                                  width: int) -> None:
    """Every row fits the terminal and wrapping drops nothing: the `-v` text at ``width``
    holds the same characters as at 1000 columns (rules, timings and the last line, which
    says the next step in as much as one row holds, aside). Once, a row indented past a
    20-column minimum lost its end on a narrow terminal."""
    def norm(text: str) -> str:
        body = text[:text.rfind("next:")]  # the last line, however many rows it takes
        flat = re.sub(r"collect[0-9.]+s,checks[0-9.]+s", "", re.sub(r"[\s─]", "", body))
        return re.sub(r"\(taken[^)]*ago\)", "", flat)  # the age moves between the runs

    for name in ("osd-unmounted-in", "swift-ring-drift", "cache-tier-misconfigured"):
        for flags in ((), ("-v",)):
            term = Terminal.capture(width=width)
            monkeypatch.chdir(ROOT)
            main(["check", "--from", f"tests/fixtures/snapshots/pacific/{name}", *flags],
                 term)
            wide = Terminal.capture(width=1000)
            main(["check", "--from", f"tests/fixtures/snapshots/pacific/{name}", *flags],
                 wide)
            got = term.stdout.getvalue()  # type: ignore[attr-defined]
            assert max(len(r) for r in got.splitlines()) <= width, got
            if flags:  # the default cuts a long cause to its rows on purpose
                assert norm(got) == norm(wide.stdout.getvalue()), got  # type: ignore[attr-defined]
