"""The report's last line, decided once for every front end (``stordoc check``, the Slack
``health`` reply, the TUI's overview, ``watch``): what to do now, in one line.

``next: stordoc fix NAME TARGET`` (a runbook that runs: ``runbooks.nextstep``), else
``next: COMMAND`` (the exact command of the incident's first step by hand), else ``next:
nothing to do`` (healthy, or only INFO incidents: settling, planned: ``checks.planned``),
else ``next: by hand: WHAT`` (no command exists: the first step in words). Never "see
incident N". Pure text over the incidents: no runbook is loaded here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from checks.incidents import Incident
from checks.model import Finding, Severity

# programs whose commands a person runs as printed; a span naming another program, or
# holding a placeholder (``CLASS``, ``OLD``, ``<id>``, ``...``), is no exact command
_PROGRAMS = frozenset({
    "ceph", "ceph-volume", "ceph-bluestore-tool", "ceph-objectstore-tool", "rados", "rbd",
    "radosgw-admin", "stordoc", "swift-ring-builder", "swift-init", "systemctl",
    "journalctl", "mount", "umount", "xfs_repair", "smartctl", "dmesg", "ip",
    "swift-get-nodes", "swift-recon", "curl", "tail", "du"})
# commands that read or act on one host (a daemon's admin socket, a disk, a unit): said
# with the host the incident is on
_ON_HOST = ("ceph daemon ", "ceph-volume ", "ceph-bluestore-tool ", "ceph-objectstore-tool ",
            "systemctl ", "journalctl ", "mount ", "umount ", "xfs_repair ", "smartctl ",
            "dmesg", "ip ", "tail ", "du ")
_SPAN_RE = re.compile(r"`([^`\n]+)`")
_PLACEHOLDER_RE = re.compile(r"(?:\A|\s)(?:[A-Z][A-Z_]+|<[^>]*>|\.\.\.|…)(?=\s|\Z)")
NOTHING_TO_DO = "nothing to do"


def _clauses(text: str) -> list[str]:
    """``text`` cut at ``; `` outside parentheses and backticks: its steps, in order."""
    out, depth, tick, start = [], 0, False, 0
    for n, ch in enumerate(text):
        if ch == "`":
            tick = not tick
        elif not tick and ch == "(":
            depth += 1
        elif not tick and ch == ")":
            depth = max(0, depth - 1)
        elif not tick and depth == 0 and text.startswith("; ", n):
            out.append(text[start:n])
            start = n + 2
    out.append(text[start:])
    return [c.strip() for c in out if c.strip()]


def exact_command(text: str) -> str | None:
    """The command a step holds, as a person runs it: ``text`` itself when it is one
    (``ceph osd crush reweight osd.1 0.0098``), else its first backticked command (a
    known program), unless a command of the step has a placeholder. None when it
    names none, or one only under a condition (``if it was set by hand, `mount ...```)."""
    def command(s: str) -> str | None:
        s = s.strip()
        words = s.split()
        if len(words) < 2 and s != "dmesg":
            return None
        if words[0] not in _PROGRAMS or _PLACEHOLDER_RE.search(s) or "`" in s:
            return None
        return s

    whole = command(text)
    if whole is not None and not any(c in text for c in ";:,()"):
        return whole
    if text.lstrip().lower().startswith("if "):
        return None
    spans = [m.group(1).strip() for m in _SPAN_RE.finditer(text)]
    if any(s.split()[0] in _PROGRAMS and _PLACEHOLDER_RE.search(s) for s in spans if s):
        return None  # the step's command needs filling in: it has no exact one
    return next((c for s in spans if (c := command(s)) is not None), None)


def _by_hand_text(inc: Incident) -> str:
    """What an incident says to do by hand, without the "no runbook fixes CODE:" lead
    (then its root's message is the advice: its ``next:`` part, when it has one)."""
    manual = inc.manual or ""
    lead = f"no runbook fixes {inc.root.code}"
    rest = manual[len(lead):].lstrip(":; ") if manual.startswith(lead) else manual
    # a runbook's refusal, then the root's own advice after "next:" (runbooks.nextstep)
    nxt = next((c for c in _clauses(rest) if c.startswith("next: ")), None)
    return nxt.removeprefix("next: ") if nxt else rest


def planned(f: Finding) -> str | None:
    """What a finding is planned as (a maintenance window, a temporary change stordoc
    made on purpose, within its deadline: ``checks.planned``), or None."""
    p = f.evidence.get("planned") if f.evidence else None
    return str(p.get("summary")) if isinstance(p, dict) and p.get("summary") else None


def actionable(inc: Incident) -> bool:
    """Something to do: an incident worse than INFO (settling, planned and other INFO
    incidents ask nothing of anyone)."""
    return inc.severity > Severity.INFO


def incident_step(inc: Incident) -> str:
    """One incident's step in one phrase: its runbook (``stordoc fix NAME TARGET``), else
    the exact command of its first step by hand (with the host it runs on), else
    "nothing to do" (planned, settling), else the first step by hand in words."""
    if inc.next_step is not None:
        return inc.next_step.command
    if not actionable(inc):
        why = planned(inc.root) or ("Ceph settles this by itself"
                               if (inc.manual or "").startswith(NOTHING_TO_DO) else "")
        return f"{NOTHING_TO_DO} ({why})" if why else NOTHING_TO_DO
    text = _by_hand_text(inc)
    steps = _clauses(text)
    first = steps[0] if steps else ""
    cmd = exact_command(first)
    if cmd is not None:
        host = inc.root.evidence.get("host") if inc.root.evidence else None
        if host and any(cmd.startswith(p) for p in _ON_HOST):
            return f"{cmd}  # on {host}"
        return cmd
    if first.strip().lower().startswith(NOTHING_TO_DO):  # Ceph does it by itself
        return f"{NOTHING_TO_DO} (Ceph settles this by itself)"
    return f"by hand: {first or inc.root.message}"


def last_line(incidents: Sequence[Incident], width: int | None = None,
              findings: Sequence[Finding] = ()) -> str:
    """The report's last line, the same in every front end: ``next: stordoc fix NAME
    TARGET`` (the first incident that has a runbook that runs, worst first), else ``next:
    COMMAND`` (the first incident's exact command by hand), else ``next: nothing to do``
    (healthy, or only INFO: settling, planned: said with the first planned one of
    ``findings`` or the incidents), else ``next: by hand: WHAT`` (no command
    exists: the first step in words). ``width``: words cut to one row of that many cells."""
    todo = [i for i in incidents if actionable(i)]
    if not todo:
        plan = next((p for f in findings if (p := planned(f))), None)
        line = (f"next: {incident_step(incidents[0])}" if incidents
                else f"next: {NOTHING_TO_DO}" + (f" ({plan})" if plan else ""))
    else:
        ran = next(((n, i) for n, i in enumerate(todo, 1) if i.next_step is not None), None)
        if ran is not None:
            n, i = ran
            line = f"next: {incident_step(i)}" + (
                "" if n == 1 else f"  # incident {incidents.index(i) + 1}; incident 1 has "
                                  "no runbook")
        else:
            steps = [incident_step(i) for i in todo]
            line = "next: " + next((s for s in steps if not s.startswith("by hand: ")),
                                   steps[0])
    # words are cut to the row; a command never (cut, it is no longer the command)
    if width is not None and len(line) > width and \
            line.startswith(("next: by hand: ", f"next: {NOTHING_TO_DO}")):
        line = line[:max(8, width) - 1].rstrip() + "…"
    return line
