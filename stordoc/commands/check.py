"""``stordoc check``: run every check on a cluster, print findings, exit Nagios-style.

JSON schema (``--json``, version 1), documented in docs/checks.md::

  {"schema": 1, "cluster": str, "started_at": float, "duration_s": float,
   "exit_code": 0|1|2|3, "status": "ok"|"warn"|"crit"|"unreachable",
   "counts": {"crit": int, "warn": int, "info": int},
   "findings": [{"code", "severity", "entity", "message", "evidence", "runbook",
                 "target", "since", "new": bool}],
   "resolved_since_last_run": [{"code", "entity"}], "run_id": int|null}
"""

from __future__ import annotations

import argparse
import json
import time

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from checks.model import Severity
from checks.service import CheckOutcome
from stordoc.commands.common import env_from_args
from stordoc.fmt import human_age

STATUS = {0: "ok", 1: "warn", 2: "crit", 3: "unreachable"}
STYLE = {Severity.CRIT: "bold red", Severity.WARN: "yellow", Severity.INFO: "cyan"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="run the health checks (exit 0 OK, 1 warn, 2 crit, "
                       "3 unreachable)")
    p.add_argument("--cluster", help="cluster name from the settings (default: the default)")
    p.add_argument("--json", action="store_true", help="machine-readable output (schema 1)")
    p.add_argument("--only", metavar="CODES",
                   help="comma-separated finding codes to report (others are still checked)")
    hf = p.add_mutually_exclusive_group()
    hf.add_argument("--host-facts", dest="host_facts", action="store_true", default=True,
                    help="collect host facts over SSH (default)")
    hf.add_argument("--no-host-facts", dest="host_facts", action="store_false",
                    help="skip SSH: Ceph and Swift only")
    p.add_argument("--no-record", action="store_true", help="do not write to the journal")
    p.set_defaults(func=cmd_check)


def _since(ts: float | None) -> str:
    return human_age(time.time() - ts) if ts else ""


def to_json(out: CheckOutcome) -> dict:
    r = out.report
    new = set(out.delta.new) if out.delta else {f.key for f in r.findings}
    counts = {s.label: sum(1 for f in r.findings if f.severity == s)
              for s in (Severity.CRIT, Severity.WARN, Severity.INFO)}
    return {
        "schema": 1, "cluster": r.cluster, "started_at": r.started_at,
        "duration_s": round(out.collect_s + out.check_s, 3), "exit_code": r.exit_code,
        "status": STATUS[r.exit_code], "counts": counts,
        "findings": [{**f.to_dict(), "new": f.key in new} for f in r.findings],
        "resolved_since_last_run": [{"code": c, "entity": e}
                                    for c, e in (out.delta.resolved if out.delta else ())],
        "run_id": out.run_id,
    }


def render(out: CheckOutcome, console: Console) -> None:
    """Findings grouped by severity, one block each: readable on a phone-width terminal."""
    r = out.report
    new = set(out.delta.new) if out.delta else set()
    if not r.findings:
        console.print(f"[green]cluster {r.cluster}: no findings[/] "
                      f"({len(r.checks_run)} checks, {out.collect_s + out.check_s:.2f}s)")
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
                tags.append(f"for {_since(f.since)}")
            if tags:
                head.append(f"  ({', '.join(tags)})", style="dim")
            console.print(head)
            console.print(Padding(Text(f.message), (0, 0, 0, 4)))
            if f.runbook:
                fix = f"stordoc fix {f.runbook} {f.target}" if f.target else f.runbook
                console.print(Padding(Text(f"fix: {fix}", style="green"), (0, 0, 0, 4)))
    if out.delta and out.delta.resolved:
        console.print("[green]resolved since the last run:[/] " +
                      ", ".join(f"{c} {e}" for c, e in out.delta.resolved))
    muted = len(r.muted)
    console.print(f"[dim]cluster {r.cluster}: exit {r.exit_code} ({STATUS[r.exit_code]}); "
                  f"collect {out.collect_s:.2f}s, checks {out.check_s:.3f}s"
                  + (f"; {muted} muted" if muted else "") + "[/]")


def cmd_check(args: argparse.Namespace) -> int:
    env = env_from_args(args)
    only = [c.strip() for c in args.only.split(",") if c.strip()] if args.only else None
    if only:
        import checks.catalog  # noqa: F401
        from checks.engine import run_checks  # noqa: F401  (registers every code)
        from checks.model import REGISTRY

        unknown = [c for c in only if c.upper() not in REGISTRY.codes]
        if unknown:
            from stordoc.errors import UserError

            raise UserError(f"unknown code(s): {', '.join(unknown)}; see docs/checks.md")
    try:
        out = env.check(args.cluster, only=only, host_facts=args.host_facts,
                        record=not args.no_record)
    finally:
        env.close()
    if args.json:
        print(json.dumps(to_json(out), indent=1, default=str))
    else:
        render(out, Console(highlight=False))
    return out.report.exit_code
