"""``stordoc check``: run every check on a cluster, print findings, exit Nagios-style.

JSON schema (``--json``, version 2), documented in docs/checks.md::

  {"schema": 2, "cluster": str, "started_at": float, "duration_s": float,
   "exit_code": 0|1|2|3, "status": "ok"|"warn"|"crit"|"unreachable",
   "counts": {"crit": int, "warn": int, "info": int},
   "findings": [{"code", "severity", "entity", "message", "evidence", "runbook",
                 "target", "since", "new": bool}],
   "incidents": [{"id", "severity", "root": {"code", "entity", "message"},
                  "consequences": [{"code", "entity"}], "impact", "next_step":
                  {"runbook", "target", "command"}|null, "manual", "since", "new"}],
   "ceph_health": str|null,
   "resolved_since_last_run": [{"code", "entity"}], "run_id": int|null}
"""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING

from checks.model import Finding, Severity, Verdict
from core.exitstatus import ExitStatus
from core.fmt import human_age
from stordoc.commands.common import env_from_args

if TYPE_CHECKING:  # the handler imports them (the parser stays light)
    from rich.console import Console
    from rich.text import Text

    from checks.incidents import Incident
    from checks.outcome import CheckOutcome
    from core.env import Env
    from core.service.app import Service
    from core.service.inspect import RecordPolicy

STYLE = {Severity.CRIT: "bold red", Severity.WARN: "yellow", Severity.INFO: "cyan"}
# the default output's bounds, for a terminal of 80x24: rows of an incident's cause (the
# root's message; -v prints it whole) and findings no incident explains shown one by one
CAUSE_ROWS = 6
MORE_SHOWN = 5
VERDICT_STYLE = {Verdict.OK: "green", Verdict.WARN: "yellow", Verdict.CRIT: "bold red",
                 Verdict.UNREACHABLE: "bold magenta"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="run the health checks (exit 0 OK, 1 warn, 2 crit, "
                       "3 unreachable)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--cluster", help="cluster name from the settings (default: the "
                       "default)")
    which.add_argument("--all", action="store_true",
                       help="every configured cluster, one line each (in parallel); exit "
                            "status the worst")
    p.add_argument("--json", action="store_true", help="machine-readable output (schema 2)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="details: what each incident explains, every finding by severity "
                        "(Ceph's own checks too), the timing")
    p.add_argument("--only", metavar="CODES",
                   help="comma-separated finding codes to report (others are still checked)")
    hf = p.add_mutually_exclusive_group()
    hf.add_argument("--host-facts", dest="host_facts", action="store_true", default=True,
                    help="collect host facts over SSH (default)")
    hf.add_argument("--no-host-facts", dest="host_facts", action="store_false",
                    help="skip SSH: Ceph and Swift only")
    p.add_argument("--no-record", action="store_true", help="do not write to the journal")
    p.add_argument("--from", dest="from_dir", metavar="DIR",
                   help="diagnose a saved snapshot ('stordoc snapshot save DIR') instead of "
                        "the live cluster: no settings or network needed, nothing recorded")
    p.set_defaults(func=cmd_check)


def _since(ts: float | None, now: float | None = None) -> str:
    """How long before ``now`` (the check's moment: a snapshot's time when replayed)."""
    return human_age((now if now is not None else time.time()) - ts) if ts else ""


def to_json(out: CheckOutcome) -> dict:
    r = out.report
    new = set(out.delta.new) if out.delta else {f.key for f in r.findings}
    counts = {s.label: sum(1 for f in r.findings if f.severity == s)
              for s in (Severity.CRIT, Severity.WARN, Severity.INFO)}
    return {
        "schema": 2, "cluster": r.cluster, "started_at": r.started_at,
        "duration_s": round(out.collect_s + out.check_s, 3), "exit_code": int(r.verdict),
        "status": r.verdict.label, "counts": counts,
        "headline": headline(out),
        "incidents": [{**i.to_dict(), "new": i.root.key in new} for i in out.incidents],
        "ceph_health": out.snapshot.ceph.health_status if out.snapshot.ceph else None,
        "findings": [{**f.to_dict(), "new": f.key in new} for f in r.findings],
        "mute_ignored": [{"code": f.code, "entity": f.entity, "why": why}
                         for f, why in r.mute_ignored],
        "resolved_since_last_run": [{"code": c, "entity": e}
                                    for c, e in (out.delta.resolved if out.delta else ())],
        "run_id": out.run_id,
    }


def headline(out: CheckOutcome) -> str:
    """The first line: stordoc's verdict, then the top incident's cause (one line)."""
    from checks.incidents import headline as incidents_headline

    r = out.report
    return incidents_headline(r.cluster, r.verdict, out.incidents, len(r.findings))


def _counts(out: CheckOutcome) -> str:
    """``8 findings (2 crit, 6 warn)``: each finding once, by its own severity."""
    r = out.report
    counts = [(s, sum(1 for f in r.findings if f.severity == s))
              for s in (Severity.CRIT, Severity.WARN, Severity.INFO)]
    by = ", ".join(f"{n} {s.label}" for s, n in counts if n)
    return f"{len(r.findings)} finding{'' if len(r.findings) == 1 else 's'}" + \
        (f" ({by})" if by else "")


def _facts_line(out: CheckOutcome, verbose: bool) -> str:
    """Context after the incidents: Ceph's own health (what Ceph says, never a verdict
    beside stordoc's), the counts, mutes, what changed since the last run."""
    r = out.report
    parts = []
    if out.snapshot.ceph is not None:
        parts.append(f"Ceph says {out.snapshot.ceph.health_status}")
    parts.append(_counts(out) if r.findings else f"{len(r.checks_run)} checks, no findings")
    if r.muted:
        parts.append(f"{len(r.muted)} muted")
    for f, why in r.mute_ignored:  # a mute that may not hide this (checks.mutable)
        parts.append(f"{f.code} {f.entity} muted (ignored: {why})")
    if out.delta is not None and (out.delta.new or out.delta.resolved):
        parts.append(f"{len(out.delta.new)} new, {len(out.delta.resolved)} resolved")
    if r.findings and not verbose:
        parts.append("details: -v")
    return " · ".join(parts)


def _say(console: Console, text: Text | str, indent: int = 0, hang: int | None = None,
         max_lines: int | None = None, style: str = "") -> None:
    """One paragraph wrapped at the console's width (each row as the terminal shows it),
    the first row indented ``indent`` cells and the next ones ``hang``; at most
    ``max_lines`` rows, the last one ending in an ellipsis when cut."""
    from rich.text import Text

    t = text if isinstance(text, Text) else Text(text, style=style)
    hang = indent if hang is None else hang
    # every row at most the console's width, the indented first one included: a row wider
    # than the terminal loses its end (below ~10 columns nothing fits anyway)
    width = max(8, console.width - max(indent, hang))
    rows = list(t.wrap(console, width))
    if max_lines is not None and len(rows) > max_lines:
        rows = rows[:max_lines]
        rows[-1].rstrip()
        rows[-1].truncate(width - 1)
        rows[-1].append("…")
    for n, row in enumerate(rows):
        row.rstrip()
        console.print(Text(" " * (indent if n == 0 else hang)) + row, no_wrap=True,
                      crop=False)


def render_verdict(out: CheckOutcome, console: Console) -> None:
    """stordoc's verdict and the top incident's cause, wrapped like every other line (a
    continuation indented two cells): the one line ``check --all`` prints per cluster."""
    _say(console, headline(out), hang=2, style=VERDICT_STYLE[out.report.verdict])


def _tags(out: CheckOutcome, f: Finding, new: set[tuple[str, str]], *more: str) -> str:
    tags = list(more)
    if f.key in new:
        tags.append("new")
    if f.since:
        tags.append(f"for {_since(f.since, out.snapshot.taken_at)}")
    return f"  ({', '.join(tags)})" if tags else ""


def _finding_head(f: Finding, tags: str, prefix: str = "") -> Text:
    """``WARN OSD_DATA_UNMOUNTED  osd.1  (for 31s)``: a finding always with its own
    severity word, in an incident as in the lists."""
    from rich.text import Text

    head = Text()
    if prefix:
        head.append(prefix, style="bold")
    head.append(f.severity.name, style=STYLE[f.severity])
    head.append(f" {f.code}", style=STYLE[f.severity])
    head.append(f"  {f.entity}", style="bold")
    if tags:
        head.append(tags, style="dim")
    return head


def render_incidents(out: CheckOutcome, console: Console, verbose: bool = False) -> None:
    """Each incident: its root finding (with the root's own severity), the cause (the
    root's message), the impact when it says more, what it explains (``verbose``) and its
    one next step. An incident whose impact is worse than its root (PGs blocking client
    I/O under a warn finding) says so on its impact line: ``impact (crit): ...``."""
    from core.service import fixes  # the fix is the core's decision, worded here

    new = set(out.delta.new) if out.delta else set()
    for n, inc in enumerate(out.incidents, 1):
        pre = f"{n}. "
        ind = len(pre)
        _say(console, _finding_head(inc.root, _tags(out, inc.root, new), pre), hang=ind)
        cause = inc.root.message
        if inc.root.code == "CEPH_HEALTH":  # the head line names `ceph CODE` already
            cause = cause.removeprefix(f"Ceph {inc.root.entity.removeprefix('ceph ')}: ")
        _say(console, cause, indent=ind, max_lines=None if verbose else CAUSE_ROWS)
        if inc.escalated:
            _say(console, f"impact ({inc.severity.label}): "
                          f"{_unsaid(inc.impact, inc.root.message)}", indent=ind,
                 style=STYLE[inc.severity])
        elif inc.impact != inc.root.message:
            _say(console, f"impact: {_unsaid(inc.impact, inc.root.message)}", indent=ind)
        if inc.consequences:
            if verbose:
                also = ", ".join(f"{c.code} {c.entity}" for c in inc.consequences)
                _say(console, f"explains: {also}", indent=ind, style="dim")
        if (fx := fixes.incident_fix(inc)) is not None:
            _say(console, f"next: {fx.command}", indent=ind, style="green")
        elif inc.manual:
            _say(console, f"by hand: {_manual(inc)}", indent=ind,
                 style="yellow")


def _unsaid(text: str, said: str) -> str:
    """``text`` without a tail that repeats ``said`` (an impact or a manual step ending
    in the root's message, just printed above it)."""
    return text[:-len(said) - 2] if text.endswith(f": {said}") else text


def _manual(inc: Incident) -> str:
    """The incident's step by hand, without what its header and cause just said."""
    text = _unsaid(inc.manual or "", inc.root.message)
    return text.replace(f"no runbook fixes {inc.root.code}", "no runbook fixes it", 1)


def _last_line(out: CheckOutcome, width: int) -> str:
    """What to do, as the last line (a screen showing only the end shows it): the core's
    one decision (``core.service.fixes.last_line``), as every front end prints it."""
    from core.service.fixes import last_line

    # words cut to one row (its continuation would be indented two cells)
    return last_line(out.incidents, width - 2, out.report.findings)


def render(out: CheckOutcome, console: Console, verbose: bool = False) -> None:
    """The text of ``stordoc check`` (live, ``--from``, ``--only``; ``--all -v`` per
    cluster). Default, for a terminal of 80x24: the verdict; each incident with its cause,
    impact and one next step; the findings no incident explains, each once; Ceph's own
    health and the counts as context; the next step again on the last line. ``verbose``
    adds what each incident explains, every finding by severity, the resolved ones and
    the timing."""
    r = out.report
    new = set(out.delta.new) if out.delta else set()
    if out.incidents and not verbose:  # its cause follows in full under incident 1
        _say(console, headline(out), hang=2, max_lines=2,
             style=VERDICT_STYLE[out.report.verdict])
    else:
        render_verdict(out, console)
    if verbose and out.incidents:
        console.rule(f"INCIDENTS ({len(out.incidents)})", align="left", style="dim")
    render_incidents(out, console, verbose)
    in_incident = {f.key: n for n, inc in enumerate(out.incidents, 1) for f in inc.findings}
    if verbose:
        for sev in (Severity.CRIT, Severity.WARN, Severity.INFO):
            rows = [f for f in r.findings if f.severity == sev]
            if not rows:
                continue
            console.rule(f"[{STYLE[sev]}]{sev.name} ({len(rows)})", align="left",
                         style="dim")
            for f in rows:
                where = [f"incident {in_incident[f.key]}"] if f.key in in_incident else []
                head = _finding_head(f, _tags(out, f, new, *where))
                _say(console, head, hang=4)
                _say(console, f.message, indent=4)
        if out.delta and out.delta.resolved:
            _say(console, "resolved since the last run: " +
                 ", ".join(f"{c} {e}" for c, e in out.delta.resolved), hang=2,
                 style="green")
    else:
        rest = [f for f in r.findings if f.key not in in_incident]
        for f in rest[:MORE_SHOWN]:
            head = _finding_head(f, "")
            head.append(f": {f.message}")
            _say(console, head, hang=4, max_lines=2)
        if len(rest) > MORE_SHOWN:
            _say(console, f"+{len(rest) - MORE_SHOWN} more findings no incident explains "
                          "(-v lists them)", hang=2, style="dim")
    _say(console, _facts_line(out, verbose), hang=2, style="dim")
    if verbose:
        _say(console, f"cluster {r.cluster}: exit {int(r.verdict)} ({r.verdict.label}); "
                      f"collect {out.collect_s:.2f}s, "
                      f"checks {out.check_s:.3f}s", hang=2, style="dim")
    _say(console, _last_line(out, console.width), hang=2, style="bold green")


def cmd_check(args: argparse.Namespace) -> int:
    only = [c.strip() for c in args.only.split(",") if c.strip()] if args.only else None
    if only:
        import checks.catalog  # noqa: F401
        from checks.engine import run_checks  # noqa: F401  (registers every code)
        from checks.model import REGISTRY

        unknown = [c for c in only if c.upper() not in REGISTRY.codes]
        if unknown:
            from checks.spelling import closest
            from core.errors import UserError

            def said(c: str) -> str:
                near = closest(c, REGISTRY.codes)
                return f"{c} (did you mean {near}?)" if near else c

            raise UserError(f"unknown finding code(s): {', '.join(map(said, unknown))}; "
                            "see docs/checks.md")
    if args.from_dir is not None:
        return _check_from(args, only)
    env = env_from_args(args)
    if args.all:
        return _check_all(env, args, only)
    try:
        out = _service(env).check(args.cluster, "cli", _policy(args), only=only,
                                  host_facts=args.host_facts)
    finally:
        env.close()
    if args.json:
        env.term.line(json.dumps(to_json(out), indent=1, default=str))
    else:
        render(out, env.term.out, args.verbose)
    return ExitStatus.of(out.report.verdict)


def _service(env: Env) -> Service:
    from core.service import Service

    return Service(env)


def _policy(args: argparse.Namespace) -> RecordPolicy:
    from core.service.inspect import RecordPolicy

    return RecordPolicy.NEVER if args.no_record else RecordPolicy.ALWAYS


def _check_from(args: argparse.Namespace, only: list[str] | None) -> int:
    """A saved snapshot, judged as a live check would have judged it; no settings read."""
    from core.errors import UserError
    from stordoc.commands.common import load_snapshot, term_of

    term = term_of(args)
    if args.all or args.cluster:
        raise UserError("--from reads one snapshot: it names its own cluster (no --cluster "
                        "or --all)")
    rp = load_snapshot(args.from_dir, only)
    out, doc = rp.outcome, rp.doc
    if args.json:
        d = to_json(out)
        d["snapshot"] = {"dir": doc.directory, "version": doc.version, "taken_at": doc.taken_at,
                         "written_by": doc.written_by, "notes": list(doc.notes)}
        term.line(json.dumps(d, indent=1, default=str))
    else:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(doc.taken_at))
        _say(term.out, f"from snapshot {doc.directory} (taken {when}, "
                       f"{human_age(time.time() - doc.taken_at)} ago"
                       + (f"; {'; '.join(doc.notes)}" if doc.notes else "") + ")",
             hang=2, style="dim")
        render(out, term.out, args.verbose)
    return ExitStatus.of(out.report.verdict)


def _check_all(env: Env, args: argparse.Namespace, only: list[str] | None) -> int:
    """Every cluster at a glance: ``[check] parallel`` at a time, each within its own
    timeout, one line each printed as soon as it is ready (a dead cluster holds back no
    other line: it gets its own, "unreachable after Ns", when its time is up); the worst
    exit. ``--json`` waits for all and lists them in config order."""
    # Swift's library in this (main) thread, before the checks' threads start: a check
    # with an incident plans its fix, which loads the ring runbooks and, through them,
    # eventlet; eventlet imported first in a thread leaves it unjoinable (storage.swiftlib)
    import storage.swiftlib  # noqa: F401
    from core.errors import UserError
    from core.service.fleet import check_many

    names = list(env.settings.clusters)
    if not names:
        env.close()
        raise UserError("check --all: no clusters configured ([clusters.NAME] in the "
                        "settings)")
    svc = _service(env)
    policy = _policy(args)
    results = {}
    worst = Verdict.OK
    try:
        for n, res in enumerate(check_many(
                names, lambda c: svc.check(c, "cli", policy, only=only,
                                           host_facts=args.host_facts),
                env.settings.check_timeout_for, env.settings.check.parallel)):
            results[res.cluster] = res
            verdict = res.outcome.report.verdict if res.outcome else Verdict.UNREACHABLE
            worst = max(worst, verdict)  # ok < warn < crit < unreachable
            if args.json:
                continue
            if res.outcome is None:
                _say(env.term.out, f"{res.cluster}: {res.error}", hang=2,
                     style=VERDICT_STYLE[Verdict.UNREACHABLE])
            elif args.verbose:  # each cluster as `check --cluster NAME -v` shows it
                if n:
                    env.term.out.print()
                render(res.outcome, env.term.out, verbose=True)
            else:
                render_verdict(res.outcome, env.term.out)
    finally:
        env.close()
    if args.json:
        env.term.line(json.dumps({
            "schema": 2, "exit_code": int(worst), "status": worst.label,
            "clusters": [to_json(r.outcome) if r.outcome is not None else
                         {"cluster": r.cluster, "exit_code": int(Verdict.UNREACHABLE),
                          "status": Verdict.UNREACHABLE.label, "error": r.error,
                          "duration_s": round(r.elapsed_s, 3)}
                         for r in (results[c] for c in names)]},
            indent=1, default=str))
    return ExitStatus.of(worst)
