"""``stordoc swift dispersion populate|report``: stordoc's own dispersion objects, created
only with consent (the swift-dispersion-populate runbook: plan, confirm, audit), then
sampled by every check."""

from __future__ import annotations

import argparse
import json

from core.argtypes import int_range
from core.exitstatus import ExitStatus
from stordoc.commands.common import env_from_args


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("swift", help="Swift tools: dispersion (are all copies there?)")
    ssub = p.add_subparsers(dest="swift_command", metavar="SUBCOMMAND")
    d = ssub.add_parser("dispersion", help="stordoc's dispersion objects: populate, report")
    dsub = d.add_subparsers(dest="dispersion_command", metavar="ACTION")
    pop = dsub.add_parser("populate", help="create the dispersion container, objects and "
                          "containers (asks first; --yes to confirm)")
    pop.add_argument("--objects", type=int_range(1, 10_000), default=32)
    pop.add_argument("--containers", type=int_range(1, 10_000), default=8)
    pop.add_argument("--yes", "-y", action="store_true", help="confirm without asking")
    pop.add_argument("--cluster", help="cluster name from the settings")
    pop.set_defaults(func=cmd_populate)
    rep = dsub.add_parser("report", help="sample the dispersion objects now: %% of copies")
    rep.add_argument("--cluster", help="cluster name from the settings")
    rep.add_argument("--json", action="store_true")
    rep.set_defaults(func=cmd_report)


def cmd_populate(args: argparse.Namespace) -> int:
    from stordoc.commands.runbooks import cmd_fix, fix_namespace

    # exactly `stordoc fix swift-dispersion-populate dispersion -o ...`: every option
    # `fix` has gets its default from fix's own parser (no re-parse through the CLI's
    # parser: the command modules never import stordoc.cli back)
    ns = fix_namespace(args, runbook="swift-dispersion-populate", target="dispersion",
                       option=[f"objects={args.objects}", f"containers={args.containers}"],
                       yes=bool(args.yes), cluster=args.cluster, command="fix")
    return cmd_fix(ns)


def cmd_report(args: argparse.Namespace) -> int:
    from checks.swift_dispersion import CODES, dispersion_summary

    env = env_from_args(args)
    try:
        from core.service import Service

        out = Service(env).check(args.cluster, "cli-dispersion",
                                 only=[c.code for c in CODES])
        sw = out.snapshot.swift
        console = env.term.out
        if sw is None:
            console.print(f"Swift not reachable: {out.snapshot.swift_error}")
            return ExitStatus.UNREACHABLE
        s = dispersion_summary(sw)
        if args.json:
            env.term.line(json.dumps({"state": s.state, "object_pct": s.object_pct,
                              "container_pct": s.container_pct, "objects": s.objects,
                              "containers": s.containers, "missing": s.missing,
                              "errors": s.errors,
                              "findings": [f.to_dict() for f in out.report.findings]},
                             indent=2))
        else:
            console.print(s.line())
            for f in out.report.findings:
                console.print(f"{f.code}  {f.entity}: {f.message}")
        return ExitStatus.of(out.report.verdict)
    finally:
        env.close()
