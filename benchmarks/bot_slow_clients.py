"""Slow clients against signed requests (issue 37.8): the latency of a signed slash
command with 0 and with N slow connections open, and the ratio.

The bot runs as ``stordoc bot --http`` in a process of its own with its default settings
(workers, read timeout, request deadline), posting to a fake Slack on loopback. The slow
connections are unauthenticated: each sends the start of a request, then one byte every
``--every`` seconds (slowloris). Each figure is the slowest of ``--requests`` signed
``help`` commands, sent one at a time, from sending to the HTTP answer (the first one
after the slow connections opened is the one they delay most).

    .venv/bin/python benchmarks/bot_slow_clients.py [--slow 64] [--every 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.bot_process import BotProcess  # noqa: E402
from tests.support.fake_slack import FakeSlack, SlackSender  # noqa: E402
from tests.support.slowloris import SlowClients  # noqa: E402

VIEWER = "UBENCHVIEW1"


def latencies(sender: SlackSender, n: int) -> list[float]:
    out = []
    for _ in range(n):
        r = sender.slash("help", VIEWER)
        if r.status != 200:
            raise SystemExit(f"signed request answered {r.status}: {r.body[:200]}")
        out.append(r.elapsed_s)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slow", type=int, default=64, help="slow connections (default 64)")
    ap.add_argument("--every", type=float, default=5.0,
                    help="a slow connection sends one byte every this many s (default 5)")
    ap.add_argument("--requests", type=int, default=5, help="signed requests per figure")
    ap.add_argument("--in-body", action="store_true",
                    help="slow connections dribble a body (default: their headers)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="sd-bench-slow-"))
    conf = tmp / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    fake = FakeSlack().start()
    cfg = tmp / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp / "j.db"}"\ndefault_cluster = "lab"\n'
                   f'[clusters.lab.ceph]\nconf = "{conf}"\ntimeout = 2\n'
                   f'[slack]\napi_base_url = "{fake.base_url}"\n'
                   f'[slack.roles.lab]\nviewers = ["{VIEWER}"]\n')
    bot = BotProcess(cfg)
    try:
        sender = SlackSender(bot.url)
        latencies(sender, 2)  # warm-up
        idle = max(latencies(sender, args.requests))
        slow = SlowClients(bot.port, args.slow, every_s=args.every, in_body=args.in_body)
        try:
            time.sleep(0.5)  # all connected and past their first bytes
            busy = max(latencies(sender, args.requests))
            still_open = slow.open_count()
        finally:
            slow.close()
    finally:
        bot.stop()
        fake.stop()
    print(f"signed request latency (slowest of {args.requests}): "
          f"{idle * 1000:.1f} ms with 0 slow connections, {busy * 1000:.1f} ms with "
          f"{args.slow} open ({still_open} still open after the requests; one byte every "
          f"{args.every:g} s in their {'body' if args.in_body else 'headers'})")
    print(f"ratio: {busy / idle:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
