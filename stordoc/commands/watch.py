"""``stordoc watch``: on-call without Prometheus. Check a cluster every ``--every``, print a
line per new incident and per resolution (and one per stordoc run for what it did
itself: a flag it set, PGs settling after it; never a NEW line), and, when Slack is configured and a channel is
bound to the cluster (``[slack.channels]``), post them there the way alerts are posted
(one message per incident, its Fix button, the resolution in its thread, the channel's
rate limit). The posted threads live in the journal: a restarted watch posts nothing twice.
``stordoc bot --watch CLUSTER`` runs the same loop (``core.service.watch``) inside the bot
process; both post through ``core.slack.poster``.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import TYPE_CHECKING

from core.argtypes import duration, int_range
from stordoc.commands.common import env_from_args

if TYPE_CHECKING:
    from core.env import Env
    from core.slack.poster import SlackPoster

MIN_EVERY_S, MAX_EVERY_S = 5.0, 86400.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("watch", help="check periodically; print (and post to the cluster's "
                       "Slack channel) new incidents and resolutions")
    p.add_argument("--cluster", help="cluster name from the settings (default: the default)")
    p.add_argument("--every", type=duration(MIN_EVERY_S, MAX_EVERY_S), default=60.0,
                   help="time between checks: 30s, 5m, 1h (default 60s; 5s to 1d)")
    p.add_argument("--count", type=int_range(1, 1_000_000), default=None,
                   help="stop after this many checks (default: until Ctrl-C or SIGTERM)")
    p.add_argument("--no-slack", action="store_true",
                   help="print only, even when Slack is configured")
    p.set_defaults(func=run)


def _poster(env: Env, cluster: str, no_slack: bool) -> SlackPoster | None:
    """A Slack poster for the cluster's channel (its ``desk`` posts: ``core.slack.poster``),
    or None."""
    if no_slack or not env.settings.slack.bot_token.resolve():
        return None
    if cluster not in env.settings.slack.channels.values():
        env.term.out.print(f"[yellow]no Slack channel is bound to {cluster} (slack.channels): "
                      "printing only[/]")
        return None
    from core.slack.poster import build_poster

    return build_poster(env)


def run(args: argparse.Namespace) -> int:
    from core.service.watch import loop, stamp  # the check engine: when run, not parsed

    env = env_from_args(args)
    try:
        cluster = env.cluster_name(args.cluster)
        poster = _poster(env, cluster, args.no_slack)
        stop = threading.Event()
        old = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            from core.service import Service

            loop(Service(env), cluster, args.every, stop, env.term.line,
                 poster.desk if poster is not None else None, args.count,
                 warn=env.term.note)
        except KeyboardInterrupt:
            env.term.out.print(f"{stamp()} {cluster}: watch stopped")
        finally:
            signal.signal(signal.SIGTERM, old)
            if poster is not None:
                poster.close()
    finally:
        env.close()
    return 0
