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

from checks.model import Severity, Verdict
from stordoc.commands.common import env_from_args
from stordoc.exitstatus import ExitStatus
from stordoc.fmt import human_age

if TYPE_CHECKING:  # the handler imports them (the parser stays light)
    from rich.console import Console

    from checks.service import CheckOutcome
    from stordoc.env import Env

STYLE = {Severity.CRIT: "bold red", Severity.WARN: "yellow", Severity.INFO: "cyan"}
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
        "resolved_since_last_run": [{"code": c, "entity": e}
                                    for c, e in (out.delta.resolved if out.delta else ())],
        "run_id": out.run_id,
    }


def headline(out: CheckOutcome) -> str:
    """The first line: stordoc's verdict, then the top incident's cause (one line)."""
    from checks.incidents import headline as incidents_headline

    r = out.report
    return incidents_headline(r.cluster, r.verdict, out.incidents, len(r.findings))


def _facts_line(out: CheckOutcome) -> str:
    """Ceph's own health as one fact among others."""
    r = out.report
    parts = []
    if out.snapshot.ceph is not None:
        parts.append(f"Ceph {out.snapshot.ceph.health_status}")
    counts = {s: sum(1 for f in r.findings if f.severity == s) for s in Severity}
    parts.append(f"{len(r.findings)} findings ({counts[Severity.CRIT]} crit, "
                 f"{counts[Severity.WARN]} warn, {counts[Severity.INFO]} info)")
    if out.delta is not None:
        parts.append(f"{len(out.delta.new)} new, {len(out.delta.resolved)} resolved")
    return " · ".join(parts)


def render_incidents(out: CheckOutcome, console: Console) -> None:
    from rich.padding import Padding
    from rich.text import Text

    new = set(out.delta.new) if out.delta else set()
    for n, inc in enumerate(out.incidents, 1):
        head = Text()
        head.append(f"{n}. ", style="bold")
        head.append(inc.severity.name, style=STYLE[inc.severity])
        head.append(f" {inc.root.code}", style=STYLE[inc.severity])
        head.append(f"  {inc.root.entity}", style="bold")
        tags = []
        if inc.root.key in new:
            tags.append("new")
        if inc.root.since:
            tags.append(f"for {_since(inc.root.since, out.snapshot.taken_at)}")
        if tags:
            head.append(f"  ({', '.join(tags)})", style="dim")
        console.print(head)
        console.print(Padding(Text(inc.root.message), (0, 0, 0, 4)))
        if inc.impact != inc.root.message:
            console.print(Padding(Text(f"impact: {inc.impact}"), (0, 0, 0, 4)))
        if inc.consequences:
            also = ", ".join(f"{c.code} {c.entity}" for c in inc.consequences)
            console.print(Padding(Text(f"explains: {also}", style="dim"), (0, 0, 0, 4)))
        if inc.next_step is not None:
            console.print(Padding(Text(f"next: {inc.next_step.command}", style="green"),
                                  (0, 0, 0, 4)))
        elif inc.manual:
            console.print(Padding(Text(f"by hand: {inc.manual}", style="yellow"),
                                  (0, 0, 0, 4)))


def render(out: CheckOutcome, console: Console) -> None:
    """The verdict and the top cause first, incidents with one next step each, then every
    finding grouped by severity: readable on a phone-width terminal."""
    from rich.padding import Padding
    from rich.text import Text

    r = out.report
    new = set(out.delta.new) if out.delta else set()
    w = r.worst
    console.print(Text(headline(out), style=STYLE[w] if w is not None else "green"),
                  soft_wrap=True)
    console.print(Text(_facts_line(out), style="dim"))
    if not r.findings:
        console.print(f"[green]cluster {r.cluster}: no findings[/] "
                      f"({len(r.checks_run)} checks, {out.collect_s + out.check_s:.2f}s)")
    if out.incidents:
        console.rule(f"INCIDENTS ({len(out.incidents)})", align="left", style="dim")
        render_incidents(out, console)
    for sev in (Severity.CRIT, Severity.WARN, Severity.INFO):
        rows = [f for f in r.findings if f.severity == sev]
        if not rows:
            continue
        console.rule(f"[{STYLE[sev]}]{sev.name} ({len(rows)})", align="left", style="dim")
        for f in rows:
            head = Text()
            head.append(f.code, style=STYLE[sev])
            head.append(f"  {f.entity}", style="bold")
            tags = []
            if f.key in new:
                tags.append("new")
            if f.since:
                tags.append(f"for {_since(f.since, out.snapshot.taken_at)}")
            if tags:
                head.append(f"  ({', '.join(tags)})", style="dim")
            console.print(head)
            console.print(Padding(Text(f.message), (0, 0, 0, 4)))
    if out.delta and out.delta.resolved:
        console.print("[green]resolved since the last run:[/] " +
                      ", ".join(f"{c} {e}" for c, e in out.delta.resolved))
    muted = len(r.muted)
    console.print(f"[dim]cluster {r.cluster}: exit {int(r.verdict)} ({r.verdict.label}); "
                  f"collect {out.collect_s:.2f}s, checks {out.check_s:.3f}s"
                  + (f"; {muted} muted" if muted else "") + "[/]")


def cmd_check(args: argparse.Namespace) -> int:
    only = [c.strip() for c in args.only.split(",") if c.strip()] if args.only else None
    if only:
        import checks.catalog  # noqa: F401
        from checks.engine import run_checks  # noqa: F401  (registers every code)
        from checks.model import REGISTRY

        unknown = [c for c in only if c.upper() not in REGISTRY.codes]
        if unknown:
            from stordoc.errors import UserError

            raise UserError(f"unknown code(s): {', '.join(unknown)}; see docs/checks.md")
    if args.from_dir is not None:
        return _check_from(args, only)
    env = env_from_args(args)
    if args.all:
        return _check_all(env, args, only)
    try:
        out = env.check(args.cluster, only=only, host_facts=args.host_facts,
                        record=not args.no_record)
    finally:
        env.close()
    if args.json:
        env.term.line(json.dumps(to_json(out), indent=1, default=str))
    else:
        render(out, env.term.out)
    return ExitStatus.of(out.report.verdict)


def _check_from(args: argparse.Namespace, only: list[str] | None) -> int:
    """A saved snapshot, judged as a live check would have judged it; no settings read."""
    from stordoc.commands.common import load_snapshot, term_of
    from stordoc.errors import UserError

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
        from rich.text import Text

        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(doc.taken_at))
        term.out.print(Text(f"from snapshot {doc.directory} (taken {when}, "
                            f"{human_age(time.time() - doc.taken_at)} ago"
                            + (f"; {'; '.join(doc.notes)}" if doc.notes else "") + ")",
                            style="dim"), soft_wrap=True)
        render(out, term.out)
    return ExitStatus.of(out.report.verdict)


def _check_all(env: Env, args: argparse.Namespace, only: list[str] | None) -> int:
    """Every cluster at a glance: checked in parallel, one headline each, the worst exit."""
    from concurrent.futures import ThreadPoolExecutor

    names = sorted(env.settings.clusters)
    try:
        with ThreadPoolExecutor(max_workers=min(8, len(names))) as ex:
            outs = list(ex.map(lambda n: env.check(n, only=only, host_facts=args.host_facts,
                                                   record=not args.no_record), names))
    finally:
        env.close()
    # ok < warn < crit < unreachable: the order of the verdicts
    worst = max((o.report.verdict for o in outs), default=Verdict.OK)
    if args.json:
        env.term.line(json.dumps({"schema": 2, "exit_code": int(worst), "status": worst.label,
                                  "clusters": [to_json(o) for o in outs]},
                                 indent=1, default=str))
        return ExitStatus.of(worst)
    from rich.text import Text

    for o in outs:
        env.term.out.print(Text(headline(o), style=VERDICT_STYLE[o.report.verdict]),
                           soft_wrap=True)
    return ExitStatus.of(worst)
