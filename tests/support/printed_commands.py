"""Every ``ceph ...`` command stordoc prints for a person, gathered from what it prints:
a check's findings and incidents (cause, impact, step by hand), a runbook plan's steps,
and the docs. Shared by the unit test that judges them all against each release's
command table (tests/unit/test_printed_commands.py) and the lab test that runs the
read-only ones (tests/lab/test_scenarios.py)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from checks.ceph_cli import commands_in

ROOT = Path(__file__).resolve().parents[2]


def printed_texts(outcome: Any) -> Iterator[tuple[str, str]]:
    """(where, text) of each text a check prints: each finding's cause and step by hand
    (muted ones too: ``-v`` shows them), each incident's impact and step by hand."""
    rep = outcome.report
    for f in (*rep.findings, *rep.muted):
        yield f"{f.code} {f.entity}", f.message
        manual = (f.evidence or {}).get("manual")
        if isinstance(manual, str):
            yield f"{f.code} {f.entity} (by hand)", manual
    for inc in outcome.incidents:
        yield f"incident {inc.id} impact", inc.impact
        if inc.manual:
            yield f"incident {inc.id} (by hand)", inc.manual


def outcome_commands(outcome: Any) -> list[tuple[str, str]]:
    """(where, command) of each ``ceph ...`` command a check's outcome prints."""
    return [(where, cmd) for where, text in printed_texts(outcome)
            for _, cmd in commands_in(text)]


def plan_commands(plan: Any) -> list[tuple[str, str]]:
    """(where, command) of each ``ceph ...`` line a runbook plan shows for its steps:
    a monitor command as its ``ceph`` line, a host command whose argv runs ``ceph``."""
    from runbooks.model import HostOp, MonOp

    out = []
    for s in plan.steps:
        where = f"plan {plan.runbook} {plan.target} step {s.index}"
        if isinstance(s.op, MonOp):
            out.append((where, s.op.command()))
        elif isinstance(s.op, HostOp) and s.op.argv[:1] == ("ceph",):
            out.append((where, shlex.join(s.op.argv)))
        else:  # a wait: ``ceph osd dump: wait until ...``, what it reads named first
            out.extend((where, cmd) for part in s.command.split(" + ")
                       for _, cmd in commands_in(part))
    return out


def expanded(cmd: str) -> list[str]:
    """The commands a docs shorthand stands for: ``ceph pg (deep-)scrub PGID`` is ``ceph
    pg scrub PGID`` and ``ceph pg deep-scrub PGID``; ``set|unset``, ``disable/enable``."""
    out = [[]]  # type: list[list[str]]
    for w in cmd.split():
        m = re.fullmatch(r"\(([a-z-]+)\)([a-z-]+)", w)
        alts = ([m.group(2), m.group(1) + m.group(2)] if m else
                w.split("|") if re.fullmatch(r"[a-z-]+(\|[a-z-]+)+", w) else
                w.split("/") if re.fullmatch(r"[a-z-]+(/[a-z-]+)+", w) else [w])
        out = [o + [a] for o in out for a in alts]
    return [" ".join(o) for o in out]


_DOC_LINE = re.compile(r"^\s*(?:\$\s+)?(ceph\s.*)$")


def doc_commands(paths: list[Path] | None = None) -> list[tuple[str, str]]:
    """(file:line, command) of each ``ceph ...`` command in docs/*.md: in backquotes, in
    parentheses, or a code block's line."""
    out = []
    for path in paths or sorted((ROOT / "docs").glob("*.md")):
        fence = False
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            where = f"{path.relative_to(ROOT)}:{n}"
            if fence:
                m = _DOC_LINE.match(line)
                if m:
                    out.extend((where, c) for c in
                               expanded(m.group(1).split(" #", 1)[0].strip()))
                continue
            out.extend((where, c) for _, cmd in commands_in(line)
                       if not line.strip().startswith("ceph ") for c in expanded(cmd))
    return out


# admin-socket and tell commands carry no permission in Ceph's tables: these only read
DAEMON_READS = ("dump", "perf dump", "bluefs stats", "config get", "config show", "status",
                "version", "list_unfound", "query", "get_command_descriptions")
# maintenance that changes no data, map or setting (an online RocksDB compaction)
HARMLESS = ("compact",)
# a printed step by hand that undoes a scenario's fault: run where no runbook applies
UNDOES = ("config rm", "osd unset", "osd unset-group", "osd crush reweight", "osd reweight",
          "osd in", "osd set-nearfull-ratio", "osd set-backfillfull-ratio",
          "osd set-full-ratio", "health unmute")


def runnable(cmd: str, release: str, undo: bool) -> tuple[bool, str]:
    """Whether the lab test runs ``cmd`` (and why not): read-only, harmless, or (``undo``:
    the scenario has no runbook) a by-hand undo; never one with a value to fill in."""
    from checks.ceph_cli import is_placeholder, judge

    j = judge(cmd, release)
    if not j.ok:
        return False, f"refused: {j.why}"
    if any(is_placeholder(w) for w in shlex.split(cmd)[1:]):
        return False, "has a value to fill in"
    if j.read_only or (j.table.split()[0] in ("tell", "daemon")
                       and j.prefix.startswith(DAEMON_READS)):
        return True, "reads"
    if j.prefix in HARMLESS:
        return True, "harmless"
    if undo and j.prefix in UNDOES:
        return True, "undoes the fault"
    return False, f"changes the cluster ({j.prefix}, {j.perm or j.table})"


def run_printed(lab: Any, outcome: Any, undo: bool) -> list[tuple[str, str, int, str]]:
    """Run on the lab, with its release's own ``ceph`` CLI, each printed command that
    ``runnable`` allows: (command, why run, exit status, stderr)."""
    import subprocess

    done = []
    for cmd in dict.fromkeys(c for _, c in outcome_commands(outcome)):
        ok, why = runnable(cmd, lab.release, undo)
        if not ok:
            assert not why.startswith("refused"), (cmd, why)
            continue
        argv = lab.system.argv(("ceph", "-c", lab.system.daemon_path(lab.conf),
                                *shlex.split(cmd)[1:]))
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        done.append((cmd, why, p.returncode, p.stderr.strip()[-500:]))
    return done
