"""Issue #38.7, readable at 80 columns: what a tester met at 80 columns, each as the real
`python -m stordoc` prints it into a pipe (COLUMNS=80, or no COLUMNS at all), on a real
journal the test writes: every row fits, no code is cut (`OSD_DATA_UNMOUNT…`) or split
across rows (`OSDMAP_FLA` / `GS`), no word is folded (`maintenanc` / `e-end`), and the
listings take few rows. The plan (which needs a cluster to be made live) is the CLI's own
renderer on plans made from saved snapshots."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from runbooks.api import list_runbooks
from storage.audit import Audit
from storage.benchstore import BenchStore
from storage.journal import Journal
from tests.unit.test_bench_figures import RESULTS

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
CODES = {c for i in list_runbooks() for c in i.fixes}


def stordoc(*argv: str, columns: str | None = "80", cfg: Path | None = None
            ) -> tuple[int, str, str]:
    """`python -m stordoc ARGV` with stdout and stderr into pipes."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    env.pop("STORDOC_CONFIG", None)
    pre = ["-c", str(cfg)] if cfg is not None else []
    r = subprocess.run([sys.executable, "-m", "stordoc", *pre, *argv], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def readable(text: str, width: int = 80) -> list[str]:
    """The rows, asserted to fit ``width`` with every code whole on one row."""
    rows = text.splitlines()
    assert rows, "no output"
    too_wide = [r for r in rows if len(r) > width]
    assert too_wide == [], text
    assert not re.search(r"[A-Z0-9_]…", text), f"a code cut short:\n{text}"
    for a, b in zip(rows, rows[1:]):
        tail = re.search(r"([A-Za-z0-9_]+)$", a.rstrip("│┃ ").rstrip())
        head = re.match(r"[│┃ ]*([A-Za-z0-9_]+)", b)
        if tail and head and a.rstrip("│┃ ") == a.rstrip("│┃ ").rstrip():
            joined = tail.group(1) + head.group(1)
            # a row that ends inside a code: its end and the next row's start make one
            assert not (CODE.fullmatch(joined) and not (CODE.fullmatch(tail.group(1))
                                                        and CODE.fullmatch(head.group(1)))
                        and a.endswith(tail.group(1)) and "_" in joined
                        and not a.endswith(",")), f"a code split:\n{a}\n{b}"
    return rows


def whole(code: str, text: str) -> bool:
    return re.search(rf"(?<![A-Z0-9_]){re.escape(code)}(?![A-Z0-9_])", text) is not None


# ------------------------------------------------------------------ runbooks


def test_runbooks_listing_is_one_row_per_runbook_with_every_code_whole(
        snapshot: object) -> None:
    rc, out, err = stordoc("runbooks")
    assert rc == 0 and err == ""
    rows = readable(out)
    infos = list_runbooks()
    # the tester's 214 rows: now about one per runbook (a long list of codes wraps once)
    assert len(rows) <= len(infos) + 10, out
    for i in infos:
        row = next(r for r in rows if r.split()[0] == i.name)
        assert row.split()[1:2] == ["*"] if i.destructive else True
        for code in i.fixes:
            assert whole(code, out), (code, out)
    assert not any(r != r.rstrip() for r in rows), "no trailing blanks"
    assert rows[-1].endswith("details: stordoc runbooks NAME")
    assert out == snapshot


def test_one_runbook_says_its_target_what_it_does_and_how_to_run_it(
        snapshot: object) -> None:
    rc, out, err = stordoc("runbooks", "daemon-restart")
    assert rc == 0 and err == ""
    rows = readable(out)
    info = next(i for i in list_runbooks() if i.name == "daemon-restart")
    flat = " ".join(" ".join(rows).split())
    assert info.summary in flat and info.target_help in flat
    assert "stordoc fix daemon-restart TARGET" in flat
    assert all(whole(c, out) for c in info.fixes)
    assert out == snapshot
    rc, out, err = stordoc("runbooks", "daemon-restrat")
    assert rc == 64 and out == ""
    assert err.strip() == "error: unknown runbook daemon-restrat: did you mean daemon-restart?"


# ------------------------------------------------------------------ audit


@pytest.fixture
def journal(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A settings file and a journal with the runs the tester listed (their messages
    long, with codes where a row would end)."""
    from runbooks.daemons import EVIDENCE_SCRIPT

    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   '[clusters.lab.swift]\nswift_dir = "/etc/swift"\n')
    a = Audit(Journal(tmp_path / "j.db"))
    ids: dict[str, int] = {}
    runs = [
        ("maintenance-start", "node2", "success", "node2 in maintenance until 18:00 (noout "
         "set on its OSDs: osd.1, osd.4; OSDMAP_FLAGS expected while it lasts)"),
        ("maintenance-end", "node2", "success", "maintenance-end node2: 2 step(s) done; "
         "verified: OSDMAP_FLAGS cleared; OSD_DOWN_IN cleared"),
        ("osd-reweight-by-utilization", "lab", "verify_failed", "verify: OSD_FILL_SPREAD "
         "still reported for osd.3 after 120 s: the spread is 31% (threshold 20%); the "
         "reweight moved 412 PGs, recovery still running, SWIFT_RING_MD5_MISMATCH too"),
        ("daemon-restart", "osd.2", "failed", "step 3 (start osd.2 on node3) failed: rc 1: "
         "ceph-osd: unable to open OSD superblock on /var/lib/ceph/osd/ceph-2"),
        ("flag-unset", "noout", "cancelled", "cancelled before step 1. Done: nothing")]
    for rb, tgt, outcome, msg in runs:
        rid = a.start_run("lab", rb, tgt, "alice", "cli", {})
        a.record_step(rid, 1, "save the evidence of osd.2 in /var/tmp/ev/osd.2-pid42",
                      "node3", shlex.join(["sh", "-c", EVIDENCE_SCRIPT, "stordoc-evidence",
                                           "/var/tmp/ev/osd.2-pid42",
                                           "/var/log/ceph/ceph-osd.2.log", "", "42"]),
                      0, "log-tail\nproc\n", "", 0.4, "done")
        a.record_step(rid, 2, "set noout", "ceph", "ceph osd set noout", 0, "noout is set",
                      "", 0.1, "done")
        a.finish_run(rid, outcome, msg)
        ids[rb] = rid
    a.journal.close()
    return cfg, ids


def test_audit_last_5_is_a_block_per_run_with_nothing_split(
        journal: tuple[Path, dict[str, int]]) -> None:
    cfg, ids = journal
    rc, out, err = stordoc("audit", "--last", "5", cfg=cfg)
    assert rc == 0 and err == ""
    rows = readable(out)
    assert len(rows) <= 5 * 3 + 1, out  # the tester's 44 rows
    for rb, rid in ids.items():  # id, runbook, target and outcome whole on one row
        assert any(re.match(rf"{rid}  \S+ \S+  {re.escape(rb)} \S+  \S+  by alice$", r)
                   for r in rows), (rb, out)
    for code in ("OSDMAP_FLAGS", "OSD_DOWN_IN", "OSD_FILL_SPREAD"):
        assert whole(code, out), (code, out)
    assert "SWIFT_RING_MD5_MISMATCH" not in out or whole("SWIFT_RING_MD5_MISMATCH", out)
    assert not any(r != r.rstrip() for r in rows), "no trailing blanks"


def test_audit_run_names_the_script_and_shows_it_on_request(
        journal: tuple[Path, dict[str, int]]) -> None:
    from runbooks.daemons import EVIDENCE_SCRIPT

    cfg, ids = journal
    rid = str(ids["daemon-restart"])
    rc, out, err = stordoc("audit", "--run", rid, cfg=cfg)
    assert rc == 0 and err == ""
    readable(out)
    assert "sh -c <script stordoc-evidence, 10 lines> stordoc-evidence" in out
    assert "umask 077" not in out and "--show-scripts prints them" in out
    rc, full, _ = stordoc("audit", "--run", rid, "--show-scripts", cfg=cfg)
    assert rc == 0
    body = [ln.strip() for ln in EVIDENCE_SCRIPT.strip().splitlines()]
    assert all(ln in full for ln in body)
    rc, js, _ = stordoc("audit", "--run", rid, "--json", cfg=cfg)
    assert EVIDENCE_SCRIPT.strip() in js.encode().decode("unicode_escape")  # whole as run


# ------------------------------------------------------------------ bench


def test_bench_table_in_a_pipe_is_80_columns_unless_columns_says(tmp_path: Path) -> None:
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   '[clusters.lab.swift]\nswift_dir = "/etc/swift"\n')
    st = BenchStore(Journal(tmp_path / "j.db"))
    for r in RESULTS:
        st.save(r.to_row())
    st.journal.close()
    for columns in (None, "80"):
        rc, out, err = stordoc("bench", "show", "g", columns=columns, cfg=cfg)
        assert rc == 0, err
        rows = readable(out)
        assert "p99 ms" in out and "123,456.7" in out and "p99.9" not in out
        assert len(rows) < 15
    rc, wide, _ = stordoc("bench", "show", "g", columns="200", cfg=cfg)
    assert rc == 0 and "p99.9 ms" in wide  # a wider COLUMNS: every column
    assert max(len(r) for r in wide.splitlines()) > 80


def test_a_swift_bench_plan_says_what_it_knows_never_osds() -> None:
    from runbooks.bench.model import BenchOptions
    from runbooks.bench.planning import BenchPlan

    swift = BenchPlan("swift", "lab", BenchOptions(modes=("mix",)), "container bench",
                      ["PUT/GET/DELETE"], state={"proxy": "http://127.0.0.1:8080",
                                                 "health": "ok", "swift_version": "2.30.1",
                                                 "versions": ["swift 2.30.1"]})
    text = "\n".join(swift.lines())
    assert "OSD" not in text and "?" not in text, text
    assert "  Swift proxy http://127.0.0.1:8080: ok, Swift 2.30.1" in text
    rados = BenchPlan("rados", "lab", BenchOptions(), "pool p", ["write"],
                      state={"health": "HEALTH_OK", "num_osds": 6, "num_up_osds": 5})
    assert "  cluster: HEALTH_OK, 5/6 OSDs up" in rados.lines()


# ------------------------------------------------------------------ a misspelt command


@pytest.mark.parametrize("argv,line", [
    (["chek"], "error: unknown command 'chek'; did you mean 'check'?"),
    (["snapshot", "sav", "x"], "error: unknown command 'snapshot sav'; did you mean "
     "'snapshot save'?"),
    (["zzzz"], "error: unknown command 'zzzz' (see 'stordoc --help')")])
def test_a_misspelt_command_is_one_line_with_the_closest(argv: list[str], line: str) -> None:
    rc, out, err = stordoc(*argv)
    assert (rc, out, err) == (64, "", line + "\n")


# ------------------------------------------------------------------ a plan


def _plan_text(case: str, show_scripts: bool = False) -> tuple[object, str]:
    from stordoc.commands.runbooks import render_plan
    from tests.unit.test_replay_plans import plan_of

    p = plan_of("reef", case, "daemon-restart", "osd.2")
    con = Console(file=io.StringIO(), width=80, highlight=False)
    if show_scripts:
        render_plan(con, p, show_scripts=True)
    else:
        render_plan(con, p)  # as `stordoc plan` and `fix` print it by default
    return p, con.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", ["osd-crash", "osd-hung"])
def test_a_plan_names_the_script_a_step_runs_and_shows_it_on_request(
        case: str, snapshot: object) -> None:
    from core import approvals
    from runbooks.daemons import EVIDENCE_SCRIPT, KILL_SCRIPT

    p, text = _plan_text(case)
    rows = readable(text)
    assert text == snapshot
    assert "umask 077" not in text and "kill -KILL" not in text  # named, not inlined
    assert "$ sh -c <script stordoc-evidence, 10 lines> stordoc-evidence" in text
    assert "--show-scripts prints them" in rows[-1]
    assert len(rows) <= 34, text  # the tester's 34 rows had a 12-line script inlined
    # what runs, and what an approver signs, is still the whole script
    steps = p.steps  # type: ignore[attr-defined]
    assert steps[0].op.argv[2] == EVIDENCE_SCRIPT
    assert f"step 1: {' '.join(steps[0].command.split())}" in approvals.request_for(p)
    _, full = _plan_text(case, show_scripts=True)
    for ln in EVIDENCE_SCRIPT.strip().splitlines():
        assert f"    {ln}" in full.splitlines()
    if case == "osd-hung":
        assert "kill -KILL" in full and KILL_SCRIPT.strip().splitlines()[1] in full
