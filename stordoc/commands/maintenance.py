"""``stordoc maintenance start HOST --for 2h`` / ``end HOST`` / ``list``: a maintenance
window on one host (runbooks ``maintenance-start``/``maintenance-end``: noout on that
host's OSDs only, unset by stordoc at the deadline, ``runbooks.expiry``), planned,
confirmed and audited like every fix. ``list`` shows every temporary change stordoc holds
(windows and raised full ratios) and when each ends."""

from __future__ import annotations

import argparse

from stordoc.commands.common import env_from_args
from stordoc.errors import UserError


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
                       "OSDs until a deadline (start, end, list)")
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
    ls.add_argument("--cluster", help="cluster name from the settings")
    p.set_defaults(func=cmd_maintenance)


def cmd_maintenance(args: argparse.Namespace) -> int:
    from stordoc.commands.runbooks import cmd_fix, fix_namespace

    if args.action == "list":
        return _list(args)
    if args.action not in ("start", "end"):
        raise UserError("maintenance needs an action: start HOST --for 2h, end HOST, list")
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
        env.sweep_expired(cluster)
        for line in env.take_reverted():
            env.term.line(f"expired: {line}")
        lines = describe_open(env.journal, cluster)
        for line in lines or [f"no temporary change held on {cluster}"]:
            env.term.line(line)
        return 0
    finally:
        env.close()
