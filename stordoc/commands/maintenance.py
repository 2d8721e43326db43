"""``stordoc maintenance start HOST --for 2h`` / ``end HOST`` / ``list``: a maintenance
window on one host (runbooks ``maintenance-start``/``maintenance-end``: noout on that
host's OSDs only, unset by stordoc at the deadline, ``runbooks.expiry``), planned,
confirmed and audited like every fix. ``list`` shows every temporary change stordoc holds
(windows and raised full ratios) and when each ends, or that it is overdue: a read never
reverts. ``sweep`` reverts what is past its deadline now, the step ``watch`` and the bot's
timer run at each deadline."""

from __future__ import annotations

import argparse

from core.errors import UserError
from stordoc.commands.common import env_from_args


def _window(text: str) -> str:
    """``--for``: a window from 5 s to 7 d (runbooks.expiry's one rule), else exit 64."""
    from runbooks.expiry import parse_window
    from runbooks.model import InvalidRequest

    try:
        parse_window(text)
    except InvalidRequest as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text.strip().lower()


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("maintenance", help="a maintenance window on a host: noout on its "
                       "OSDs until a deadline (start, end, list, sweep)")
    msub = p.add_subparsers(dest="action", metavar="ACTION")
    s = msub.add_parser("start", help="noout on HOST's OSDs for --for (stordoc unsets it "
                        "at the deadline)")
    s.add_argument("host")
    s.add_argument("--for", dest="for_", type=_window, default="2h", metavar="DURATION",
                   help="how long: 30m, 2h, 1d (5s to 7d; default 2h)")
    e = msub.add_parser("end", help="end HOST's window now (unset noout on its OSDs)")
    e.add_argument("host")
    for x in (s, e):
        x.add_argument("--cluster", help="cluster name from the settings")
        x.add_argument("--yes", "-y", action="store_true", help="confirm without asking")
    ls = msub.add_parser("list", help="the temporary changes stordoc holds and their ends")
    sw = msub.add_parser("sweep", help="revert the temporary changes past their deadline "
                         "now (what watch and the bot do at each deadline), audited")
    for x in (ls, sw):
        x.add_argument("--cluster", help="cluster name from the settings")
    p.set_defaults(func=cmd_maintenance)


def cmd_maintenance(args: argparse.Namespace) -> int:
    from stordoc.commands.runbooks import cmd_fix, fix_namespace

    if args.action == "list":
        return _list(args)
    if args.action == "sweep":
        return _sweep(args)
    if args.action not in ("start", "end"):
        raise UserError("maintenance needs an action: start HOST --for 2h, end HOST, list, "
                        "sweep")
    if not args.host.strip():
        raise UserError(f"maintenance {args.action}: the host is empty: it takes a "
                        f"configured host name (stordoc maintenance {args.action} HOST)")
    ns = fix_namespace(args, runbook=f"maintenance-{args.action}", target=args.host,
                       option=[f"for={args.for_}"] if args.action == "start" else [],
                       follow=0.0)
    return cmd_fix(ns)


def _list(args: argparse.Namespace) -> int:
    from runbooks.expiry import describe_open

    env = env_from_args(args)
    try:
        cluster = env.cluster_name(args.cluster)
        lines = describe_open(env.journal, cluster)  # a read: overdue ones are said so
        for line in lines or [f"no temporary change held on {cluster}"]:
            env.term.line(line)
        return 0
    finally:
        env.close()


def _sweep(args: argparse.Namespace) -> int:
    """Revert what is past its deadline now: one audited ``expiry-revert`` run (exit 1
    when a revert failed or the cluster did not answer: the change stays held)."""
    env = env_from_args(args)
    try:
        cluster = env.cluster_name(args.cluster)
        env.target(cluster, discover=False)  # an unknown or unusable cluster: one line, nothing done
        env.sweep_expired(cluster)
        lines = env.take_reverted()
        for line in lines or [f"nothing past its deadline on {cluster}"]:
            env.term.line(f"expired: {line}" if lines else line)
        return 1 if any("FAILED" in x or "not reverted" in x for x in lines) else 0
    finally:
        env.close()
