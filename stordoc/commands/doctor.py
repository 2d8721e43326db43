"""``stordoc doctor [--cluster C] [--json]``: one line per access stordoc uses (the Ceph
user and its caps, each host's SSH, Prometheus, Swift, the Slack tokens), what works and
what stordoc will not do without the missing part; exit status by the worst
(``core.service.doctor`` does the work; this only prints)."""

from __future__ import annotations

import argparse
import json

from stordoc.commands.common import env_from_args


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("doctor", help="which access works (Ceph caps, SSH, Prometheus, "
                       "Swift, Slack) and what stordoc cannot do without each")
    p.add_argument("--cluster", help="cluster name from the settings (default: the default)")
    p.add_argument("--json", action="store_true", help="the results as a JSON list")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from core.service.doctor import Access, diagnose, worst

    env = env_from_args(args)
    try:
        def show(a: Access) -> None:
            for line in a.lines():
                env.term.line(line)

        results = diagnose(env.settings, args.cluster,
                           progress=None if args.json else show)
        if args.json:
            env.term.line(json.dumps([a.as_dict() for a in results], indent=1))
        return int(worst(results))
    finally:
        env.close()
