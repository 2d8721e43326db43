"""Ack latency of the Slack bot: slash commands and button presses, over real HTTP.

The bot runs as it does in production, in a process of its own (the real bolt App over
the same WSGI server as `stordoc bot --http`), with a full health check of the cluster
running in a loop in its worker pool the whole time. This process plays Slack: the fake
Web API the bot posts its answers to, and a client sending N signed requests (half slash
commands, half button presses) C at a time. Each latency is from sending a request to
receiving the HTTP answer, the ack Slack waits for (limit 3 s). Prints p50/p90/p99/max.

    .venv/bin/python benchmarks/bot_ack_latency.py --config /var/tmp/sd-lab-bot/stordoc.toml
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from core.service import Service

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPS = "UBENCHOPS1"


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(-(-p * len(s) // 100)) - 1))]


def serve(config: str, cluster: str | None, base_url: str, journal: str, n_tokens: int) -> None:
    """The bot process: HTTP server + a health check looping in the bot's own pool."""
    from bot.server import HttpServer, build_bot
    from core.env import Env
    from core.settings import Role, Secret, SlackSettings, load_settings
    from tests.support.fake_slack import SIGNING_SECRET, TOKEN

    s = load_settings(config)
    name = s.cluster_name(cluster)
    slack = SlackSettings(bot_token=Secret(value=TOKEN),
                          signing_secret=Secret(value=SIGNING_SECRET),
                          api_base_url=base_url, roles={name: Role(operators=[OPS])})
    env = Env(s.model_copy(update={"slack": slack, "journal": journal}))
    bot = build_bot(env, throttle_s=0.0)
    srv = HttpServer(bot, "127.0.0.1", 0).start()
    checks = {"started": 0, "done": 0}

    def loop() -> None:
        while True:
            checks["started"] += 1
            Service(env).check(name, "bench")
            checks["done"] += 1

    bot.pool.submit(loop)  # occupies one worker for the whole run, like a slow check
    tokens = [bot.store.new_button("cancel", name, "osd-start", "osd.0", OPS, 900)
              for _ in range(n_tokens)]
    print(json.dumps({"url": srv.url, "tokens": tokens, "cluster": name}), flush=True)
    for _line in sys.stdin:  # the parent asks for the check counters, then closes stdin
        print(json.dumps(checks), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="stordoc settings (e.g. the lab's)")
    ap.add_argument("--cluster", default=None)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=20)
    ap.add_argument("--serve", metavar="BASE_URL", help=argparse.SUPPRESS)
    ap.add_argument("--journal", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.config, args.cluster, args.serve, args.journal, args.requests)
        return 0

    from tests.support.fake_slack import FakeSlack, SlackSender

    fake = FakeSlack().start()
    with tempfile.TemporaryDirectory() as tmp:
        child = subprocess.Popen(
            [sys.executable, __file__, "--config", args.config, "--serve", fake.base_url,
             "--journal", f"{tmp}/bot.db", "--requests", str(args.requests)]
            + (["--cluster", args.cluster] if args.cluster else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(f"{tmp}/bot.log", "w"),
            text=True, cwd=ROOT)
        try:
            assert child.stdout is not None and child.stdin is not None
            info = json.loads(child.stdout.readline())
            client = SlackSender(info["url"])
            texts = ["help", "findings", "history", "helth"]
            cluster = info["cluster"]

            def one(i: int) -> tuple[str, float, int]:
                if i % 2 == 0:
                    r = client.slash(f"{texts[i // 2 % len(texts)]} --cluster {cluster}", OPS)
                    return "slash", r.elapsed_s, r.status
                r = client.press("cancel", info["tokens"][i // 2], OPS, "1700000000.000001")
                return "button", r.elapsed_s, r.status

            child.stdin.write("?\n")
            child.stdin.flush()
            before = json.loads(child.stdout.readline())
            t0 = time.monotonic()
            with ThreadPoolExecutor(args.concurrency) as pool:
                res = list(pool.map(one, range(args.requests)))
            wall = time.monotonic() - t0
            child.stdin.write("?\n")
            child.stdin.flush()
            after = json.loads(child.stdout.readline())
            # every request was answered in Slack too (the work after the ack)
            try:
                fake.wait_for(lambda f: len(f.of("chat.postEphemeral", "chat.postMessage",
                                                  "chat.update")) >= args.requests, 120)
            except AssertionError:
                log = Path(f"{tmp}/bot.log").read_text()
                print("not every request was answered; bot log:\n" + "\n".join(
                    ln for ln in log.splitlines() if "Warning" not in ln)[-3000:])
                raise SystemExit(2) from None
        finally:
            if child.stdin:
                child.stdin.close()
            child.terminate()
            child.wait(30)
            fake.stop()

    running = before["started"] > before["done"] or after["started"] > before["started"]
    print(f"bot ack latency: {args.requests} requests ({args.requests // 2} slash commands, "
          f"{args.requests - args.requests // 2} button presses), {args.concurrency} "
          f"concurrent, {wall:.2f} s wall; health check of {cluster!r} running in the bot "
          f"process: {'yes' if running else 'no'} (checks started {before['started']} -> "
          f"{after['started']})")
    bad = [x for x in res if x[2] != 200]
    for kind in ("slash", "button", "all"):
        xs = [x[1] * 1000 for x in res if kind == "all" or x[0] == kind]
        print(f"  {kind:6s} n={len(xs):3d}  p50 {statistics.median(xs):6.1f} ms  "
              f"p90 {pct(xs, 90):6.1f} ms  p99 {pct(xs, 99):6.1f} ms  max {max(xs):6.1f} ms")
    print(f"  non-200 answers: {len(bad)}   goal: p99 < 300 ms (Slack's limit 3000 ms)")
    print(f"  machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} "
          "(shared: other work competes for the same cores)")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
