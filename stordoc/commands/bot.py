"""``stordoc bot``: run the Slack bot over HTTP (signed requests) or Socket Mode.

Secrets come from the environment or files named in ``[slack]`` (``bot_token``,
``signing_secret``, ``app_token``), never from the command line, and are redacted from
the log. HTTP mode listens on loopback only: put a TLS reverse proxy in front for Slack.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from typing import TYPE_CHECKING

from core.argtypes import duration, int_range
from stordoc.commands.common import env_from_args

if TYPE_CHECKING:
    from bot.app import StordocBot
    from core.env import Env


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bot", help="run the Slack bot (HTTP or Socket Mode)",
                       description="Run the Slack bot. See docs/slack.md for the Slack app "
                       "manifest, scopes and settings.")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--http", action="store_true",
                      help="serve Slack's HTTP requests at POST /slack/events")
    mode.add_argument("--socket", action="store_true",
                      help="connect to Slack over Socket Mode (app token, no open port)")
    p.add_argument("--port", type=int_range(1, 65535), default=3000, help="HTTP port (default 3000)")
    p.add_argument("--host", default="127.0.0.1", help="HTTP address, loopback only "
                   "(default 127.0.0.1)")
    p.add_argument("--workers", type=int_range(1, 256), default=8,
                   help="background workers for checks and runbooks (default 8)")
    p.add_argument("--watch", action="append", default=[], metavar="CLUSTER",
                   help="also watch this cluster (repeatable): check every --every and post "
                        "new incidents and resolutions to its bound channel")
    p.add_argument("--every", type=duration(5, 86400), default=60.0,
                   help="watch interval: 30s, 5m (default 60s)")
    p.add_argument("--verbose", "-v", action="store_true", help="log at debug level")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bot.server import HttpServer, alert_gate, build_bot, check_loopback, socket_mode
    from core.errors import UserError

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not 1 <= args.port <= 65535:
        raise UserError(f"--port {args.port}: must be 1..65535")
    if not 1 <= args.workers <= 64:
        raise UserError(f"--workers {args.workers}: must be 1..64")
    if args.http:
        check_loopback(args.host)
    env = env_from_args(args)
    bot = build_bot(env, socket_mode=args.socket, workers=args.workers)
    from storage.swiftlib import restore_real_threading
    restore_real_threading()  # whatever the imports above pulled in: OS-thread locks only
    log = logging.getLogger("stordoc.bot")
    _mark_interrupted(env, log)
    stop = threading.Event()
    watched = {env.cluster_name(name) for name in args.watch}
    for name in sorted(watched):
        _start_watch(env, bot, name, args.every, stop, log)
    # the clusters no watch loop looks after: their temporary changes reverted on time
    _start_sweeper(env, [c for c in env.settings.clusters if c not in watched], stop, log)
    try:
        if args.http:
            try:
                srv = HttpServer(bot, args.host, args.port, alerts=alert_gate(env, bot))
            except OSError as e:
                raise UserError(f"cannot listen on {args.host}:{args.port}: "
                                f"{e.strerror or e}") from None
            log.info("stordoc bot: HTTP on %s (command %s)", srv.url, bot.command)
            try:
                srv.serve_forever()
            finally:
                srv.close()
        else:
            app_token = env.settings.slack.app_token.resolve() or ""
            handler = socket_mode(bot, app_token)
            handler.connect()
            log.info("stordoc bot: Socket Mode connected (command %s)", bot.command)
            threading.Event().wait()
    except KeyboardInterrupt:
        log.info("stordoc bot: stopping")
    finally:
        stop.set()
        bot.close()
        env.close()
    return 0


def _start_watch(env: Env, bot: StordocBot, cluster: str, every: float,
                 stop: threading.Event, log: logging.Logger) -> None:
    """Watch mode inside the bot: the same loop as ``stordoc watch``, posting through the
    bot's alert desk (one thread per incident, shared with Alertmanager's alerts)."""
    from core.service.watch import loop

    if cluster not in env.settings.slack.channels.values():
        from core.errors import UserError
        raise UserError(f"--watch {cluster}: no Slack channel is bound to it (slack.channels)")

    def run() -> None:
        while not stop.is_set():
            try:
                loop(bot.backend, cluster, every, stop, log.info, bot.desk,
                     source="watch", warn=log.warning)
            except Exception as e:  # a failed round must not end the watch
                log.warning("watch %s: %s", cluster, e)
                stop.wait(every)
    threading.Thread(target=run, name=f"stordoc-watch-{cluster}", daemon=True).start()


def _start_sweeper(env: Env, clusters: list[str], stop: threading.Event,
                   log: logging.Logger, poll_s: float = 30.0) -> threading.Thread | None:
    """The bot's timer: wakes at the next deadline of a temporary change stordoc holds on
    ``clusters`` (and every ``poll_s``, to see changes other stordoc processes made) and
    reverts what is due (``Env.sweep_expired``: one audited ``expiry-revert`` run). A
    check never does it (issue 39.3)."""
    if not clusters:
        return None
    from core.service.watch import next_deadline

    def run() -> None:
        while not stop.is_set():
            soonest = time.time() + poll_s
            for cluster in clusters:
                due = next_deadline(env, cluster)
                if due is not None and due <= time.time():
                    try:
                        for line in env.sweep_expired(cluster, "bot", remember=False):
                            log.info("cluster %s: expired: %s", cluster, line)
                    except Exception as e:  # a failed revert stays held: tried again
                        log.warning("cluster %s: reverting expired changes: %s", cluster, e)
                    due = next_deadline(env, cluster)
                    if due is not None and due <= time.time():
                        continue  # not reverted (the cluster did not answer): next poll
                if due is not None:
                    soonest = min(soonest, due + 0.05)
            stop.wait(max(0.05, soonest - time.time()))
    t = threading.Thread(target=run, name="stordoc-expiry-timer", daemon=True)
    t.start()
    return t


def _mark_interrupted(env: Env, log: logging.Logger) -> None:
    """Start-up reconciliation: runs whose process died become ``interrupted``; what they
    left is logged (undoing it needs a person: `stordoc locks --yes` or the next fix)."""
    from core.service import Service

    locks = Service(env).locks
    for name in env.settings.clusters:
        try:
            for x in locks.interrupted(name, source="slack"):
                log.warning("cluster %s: %s", name, x.line())
        except Exception as e:  # an unreadable journal must not stop the bot from starting
            log.warning("cluster %s: reconciliation failed: %s", name, e)
