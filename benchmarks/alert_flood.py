"""An alert flood on a healthy cluster: how many top-level posts and Slack calls for N
alert groups, each group its own top-level post (``alerts.thread_window_s = 0``, what the
bot did before issue 37 item 11) against one thread per cluster and window (the default,
300 s).

The real bot (bolt over real HTTP) with the real webhook, Alertmanager's captured v4
payload (tests/fixtures/alertmanager), one group per alert name, a fake Slack on loopback,
the cluster's collection a captured healthy snapshot. The bot's per-channel throttle is
``--throttle`` (default 1 s, Slack's pace; the replies pack what queued meanwhile, so the
pace sets how many there are). "Before" posts one message per group whatever the pace: it
runs with a 0.02 s throttle (500 s at Slack's pace otherwise).

Usage: .venv/bin/python benchmarks/alert_flood.py [--groups 500] [--throttle 1.0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.unit.test_alert_windows import (  # noqa: E402
    EAST,
    deliver,
    group,
    harness,
    in_channel,
    named,
    top_level,
)


def run(n: int, window_s: float, throttle_s: float) -> tuple[int, int, int, int, float]:
    """(top-level posts, replies, updates, all Slack calls, seconds to the last call)."""
    with tempfile.TemporaryDirectory() as tmp:
        h = harness(Path(tmp), window_s=window_s, throttle_s=throttle_s)
        h.bot.desk.outbox.summary_every_s = 3.0  # the bot's own pace (the tests' is 0.3)
        try:
            names = [f"Flood{i:04d}" for i in range(n)]
            t0 = time.monotonic()
            with ThreadPoolExecutor(4) as pool:
                assert list(pool.map(lambda x: deliver(h, group(x, "east")), names)) == \
                    [200] * n
            h.fake.wait_for(lambda f: named(f, EAST, names), 600)
            h.bot.desk.outbox.wait_idle(600)  # the last replies and summary update sent
            posts = in_channel(h.fake, EAST)
            tops = top_level(h.fake, EAST)
            updates = in_channel(h.fake, EAST, "chat.update")
            calls = [c for c in h.fake.calls if c.method != "auth.test"]
            last = max(c.at for c in calls)
            return (len(tops), len(posts) - len(tops), len(updates), len(calls), last - t0)
        finally:
            h.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--throttle", type=float, default=1.0)
    args = ap.parse_args()
    for label, window_s, throttle in (("before (a post per group)", 0.0, 0.02),
                                      ("after (one thread per cluster and window)", 300.0,
                                       args.throttle)):
        tops, replies, updates, calls, took = run(args.groups, window_s, throttle)
        print(f"{args.groups} alert groups, {label}: {tops} top-level posts, {replies} "
              f"thread replies, {updates} summary updates, {calls} Slack calls in all; "
              f"{took:.1f} s to the last call with a {throttle} s throttle (at Slack's "
              f"1 message/s/channel the posts take about {tops + replies} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
