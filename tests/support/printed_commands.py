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


# ------------------------------------------------------------- commands run on a host
# the last line's step of an incident with no runbook (runbooks/nextline.py) that is not a
# ``ceph`` command: a host command said with its host (``dmesg ...  # on node2``), a Swift
# tool run where stordoc reads the rings (``swift-get-nodes``, ``swift-ring-builder``), a
# ``curl`` of a server's recon, a ``stordoc plan`` (made live by the lab test's CLI)
_ON = "  # on "
# programs that only read, whatever their arguments (curl: without a method or data)
READ_PROGRAMS = frozenset({"dmesg", "tail", "du", "df", "findmnt", "ls", "swift-get-nodes",
                           "swift-recon", "ip", "journalctl"})
# swift-ring-builder BUILDER [SUBCOMMAND]: what only reads the builder, what undoes a
# scenario's fault where no runbook applies (the lab's heal restores the rings anyway)
RING_READS = ("", "search", "list_parts", "validate")
RING_UNDOES = ("set_replicas", "set_info")


def printed_steps(outcome: Any) -> list[tuple[str, str, str | None]]:
    """(where, command, host or None) of each step a check prints as an exact command
    that is not a ``ceph`` one (those are ``outcome_commands``'): each incident's step
    by hand as the last line says it (``runbooks.nextline.incident_step``)."""
    from runbooks.nextline import actionable, incident_step

    out = []
    for inc in outcome.incidents:
        if inc.next_step is not None or not actionable(inc):
            continue
        step = incident_step(inc)
        if step.startswith(("by hand: ", "ceph ")):
            continue
        cmd, _, host = step.partition(_ON)
        out.append((f"incident {inc.id} step", cmd.strip(), host.strip() or None))
    return out


def host_runnable(cmd: str, undo: bool) -> tuple[bool, str]:
    """Whether the lab test runs a printed host or Swift command (and why not): it reads,
    or (``undo``: the scenario has no runbook) it undoes the fault."""
    argv = shlex.split(cmd)
    prog = argv[0]
    if prog == "stordoc":
        return (argv[1:2] == ["plan"]), "plans (changes nothing)"
    if prog in READ_PROGRAMS:
        if prog == "ip" and not set(argv[1:]) <= {"-br", "-o", "addr", "link", "show"}:
            return False, "changes the host (ip)"
        return True, "reads"
    if prog == "curl":
        if any(a in ("-X", "--request", "-d", "--data", "-T", "-F") for a in argv[1:]):
            return False, "changes a server (curl with a method or a body)"
        return True, "reads"
    if prog == "swift-ring-builder" and len(argv) >= 2:
        sub = argv[2] if len(argv) > 2 else ""
        if sub in RING_READS:
            return True, "reads"
        if undo and sub in RING_UNDOES:
            return True, "undoes the fault"
        return False, f"changes the builder ({sub})"
    return False, f"not a command the test knows to be safe ({prog})"


def run_host_printed(lab: Any, target: Any, outcome: Any, undo: bool,
                     plan: Any = None) -> list[tuple[str, str, int, str]]:
    """Run on the lab each printed step ``host_runnable`` allows: a command said with its
    host over SSH to that lab host (stordoc's own runner, argv never shell text), a Swift
    tool where the rings are (this machine, through the lab release's ``argv``: Reef's
    root filesystem), ``curl`` here, ``stordoc plan`` through ``plan`` (a callable taking
    its arguments and returning (exit status, stderr)). (command, why run, exit status,
    stderr)."""
    import subprocess

    from storage.ssh import FabricRunner

    done = []
    runner = FabricRunner(target.hosts)
    try:
        for where, cmd, host in dict.fromkeys(printed_steps(outcome)):
            ok, why = host_runnable(cmd, undo)
            assert ok or not why.startswith("not a command"), (where, cmd, why)
            if not ok:
                continue
            argv = shlex.split(cmd)
            if argv[0] == "stordoc":
                assert plan is not None, (where, cmd)
                rc, err = plan(*argv[1:])
            elif host is not None:
                r = runner.run(host, argv, timeout_s=120)
                rc, err = (r.rc if not r.timed_out else -1), r.stderr
            else:
                full = lab.system.argv(argv) if argv[0].startswith("swift-") else argv
                p = subprocess.run(full, capture_output=True, text=True, timeout=120,
                                   check=False)
                rc, err = p.returncode, p.stderr
            done.append((f"{cmd}{_ON}{host}" if host else cmd, why, rc, err.strip()[-500:]))
    finally:
        runner.close()
    return done
