"""A burst against the real `stordoc bot --http` process on the lab (issue 10): every
answer correct, ack p99, health answer p95, and no thread left blocked afterwards.

The bot runs as in production (`stordoc -c CONFIG bot --http`, a child process) with its
Web API pointed at a fake Slack in this process. This process sends N requests signed as
Slack signs them, C at a time, in a shuffled order, each from its own channel so every
answer can be matched to its request:

  health   `/stordoc health CLUSTER`: a public answer that matches the cluster's state
           (the finding codes a check run from this process sees just before the burst;
           no unreachable monitor or host that this process reaches)
  osd      `/stordoc osd tree`: a public answer listing the OSDs
  help     `/stordoc help`: an ephemeral answer
  bad      an unknown command: an ephemeral refusal
  button   an unknown button action: HTTP 200 and nothing posted
  badsig   a wrong signature: HTTP 401 and nothing posted

Then a final round of C `help` requests must all be answered, and the bot's thread count
(`/proc/PID/task`) must come back to its baseline (measured after a warm-up that starts
all pool workers): a thread blocked for good would stay. Prints counts and percentiles.

    .venv/bin/python benchmarks/bot_burst.py --config /var/tmp/sdlab-NAME/stordoc.toml
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

USER = "UBURST0001"


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(-(-p * len(s) // 100)) - 1))] if s else float("nan")


def expected_codes(config: Path, cluster: str) -> set[str]:
    from stordoc.env import Env
    from stordoc.settings import load_settings

    env = Env(load_settings(config))
    try:
        return {f.code for f in env.check(cluster, record=False).report.findings}
    finally:
        env.close()


def mix(n: int, health: int) -> list[str]:
    rest = n - health
    kinds = {"osd": rest // 9, "help": rest * 5 // 18, "bad": rest * 2 // 9,
             "button": rest * 2 // 9}
    kinds["badsig"] = rest - sum(kinds.values())
    out = ["health"] * health + [k for k, c in kinds.items() for _ in range(c)]
    random.Random(10).shuffle(out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, type=Path, help="the lab's stordoc.toml")
    ap.add_argument("--cluster", default="lab")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--health", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=20)
    args = ap.parse_args()

    from tests.support.bot_process import BotProcess, bot_config
    from tests.support.fake_slack import Call, FakeSlack, SlackSender, all_text

    cluster = args.cluster
    want = expected_codes(args.config, cluster)
    kinds = mix(args.requests, args.health)
    fake = FakeSlack().start()
    tmp = Path(tempfile.mkdtemp(prefix="stordoc-burst-"))
    cfg = bot_config(args.config, tmp / "bot.toml", fake.base_url, cluster, viewers=[USER],
                     journal=tmp / "j.db")
    proc = BotProcess(cfg)
    try:
        def chan(tag: str, i: int) -> str:
            return f"C{tag}{i:05d}"

        def in_channel(c: str) -> list[Call]:
            return [x for x in fake.of("chat.postMessage", "chat.update",
                                       "chat.postEphemeral")
                    if x.params.get("channel") == c]

        def round_of_help(tag: str) -> float:
            t0 = time.monotonic()
            with ThreadPoolExecutor(args.concurrency) as pool:
                list(pool.map(lambda i: SlackSender(proc.url, channel=chan(tag, i)).slash(
                    "help", USER), range(args.concurrency)))
            fake.wait_for(lambda f: all(
                any("help" in all_text(x) for x in in_channel(chan(tag, i)))
                for i in range(args.concurrency)), 120)
            return time.monotonic() - t0

        # warm-up: C concurrent health requests hold every pool worker at once (they wait
        # on one shared check run), so the pool is at its size; then the baseline
        round_of_help("W")
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(lambda i: SlackSender(proc.url, channel=chan("H", i)).slash(
                f"health {cluster}", USER), range(args.concurrency)))
        fake.wait_for(lambda f: all(
            [x for x in in_channel(chan("H", i))
             if f" {cluster}: " in " " + str(x.params.get("text", "")).split("\n")[0][:40]]
            for i in range(args.concurrency)), 300)
        time.sleep(0.5)  # benchmark only: let the warm-up's request threads exit
        baseline = proc.threads()

        sent: dict[int, float] = {}

        def one(i: int) -> tuple[int, str, int, float]:
            kind = kinds[i]
            s = SlackSender(proc.url, channel=chan("B", i))
            sent[i] = time.monotonic()
            if kind == "health":
                r = s.slash(f"health {cluster}", USER)
            elif kind == "osd":
                r = s.slash("osd tree", USER)
            elif kind == "help":
                r = s.slash("help", USER)
            elif kind == "bad":
                r = s.slash("frobnicate now", USER)
            elif kind == "button":
                r = s.press("no_such_action", "x", USER, "1700000000.000001")
            else:
                body = s.command_body("help", USER)
                r = s.send(body, "application/x-www-form-urlencoded", secret="not-the-secret")
            return i, kind, r.status, r.elapsed_s

        t0 = time.monotonic()
        with ThreadPoolExecutor(args.concurrency) as pool:
            res = list(pool.map(one, range(len(kinds))))
        ack_wall = time.monotonic() - t0

        def verdict(i: int, kind: str, status: int) -> tuple[bool, float | None]:
            calls = in_channel(chan("B", i))
            if kind in ("button", "badsig"):
                return status == (200 if kind == "button" else 401) and not calls, None
            if status != 200:
                return False, None
            if kind == "health":
                done = [x for x in calls
                        if f" {cluster}: " in " " + str(x.params.get("text", "")).split("\n")[0][:40]]
                if not done:
                    return False, None
                text = all_text(done[0])
                ok = (all(c in text for c in want) if want
                      else str(done[0].params.get("text")).startswith(f"OK {cluster}: no incidents"))
                ok = ok and "No existing session" not in text and not any(
                    c in text for c in ("CEPH_UNREACHABLE", "SWIFT_UNREACHABLE", "HOST_UNREACHABLE")
                    if c not in want)
                return ok, done[0].at - sent[i]
            needle = {"osd": "OSDs", "help": "help", "bad": "unknown command"}[kind]
            method = "chat.postEphemeral" if kind in ("help", "bad") else None
            hit = [x for x in calls if needle in all_text(x)
                   and (method is None or x.method == method)]
            return bool(hit), None

        def all_answered(f: FakeSlack) -> bool:
            return all(verdict(i, k, s)[0] or k in ("button", "badsig")
                       for i, k, s, _ in res)
        try:
            fake.wait_for(all_answered, 300)
        except AssertionError:
            pass  # counted as wrong below
        settle = time.monotonic()
        results = [(k, *verdict(i, k, s)) for i, k, s, _ in res]
        wrong = [(k, s, [str(x.params.get("text", ""))[:160] for x in in_channel(chan("B", i))])
                 for (i, k, s, _), (_, ok, _) in zip(res, results, strict=True) if not ok]
        final_round_s = round_of_help("F")
        deadline = time.monotonic() + 60
        while proc.threads() > baseline and time.monotonic() < deadline:
            time.sleep(0.2)  # benchmark only: poll the thread count back to baseline
        after = proc.threads()
        alive = proc.proc.poll() is None
        log = "".join(proc.log)
    finally:
        proc.stop()
        fake.stop()

    acks = [e * 1000 for _, _, _, e in res]
    health_s = [lat for k, ok, lat in results if k == "health" and lat is not None]
    counts = Counter(k for k in kinds)
    good = Counter(k for k, ok, _ in results if ok)
    total_ok = sum(good.values())
    print(f"bot burst: {len(kinds)} signed requests ({', '.join(f'{k} {counts[k]}' for k in counts)}), "
          f"{args.concurrency} concurrent, against the real `stordoc bot --http` on "
          f"{cluster!r}; expected findings: {', '.join(sorted(want)) or 'none'}")
    print(f"  correct answers: {total_ok}/{len(kinds)}  ("
          + ", ".join(f"{k} {good[k]}/{counts[k]}" for k in counts) + ")")
    print(f"  ack: p50 {pct(acks, 50):.0f} ms  p99 {pct(acks, 99):.0f} ms  max {max(acks):.0f} ms"
          f"  ({ack_wall:.1f} s to send all; Slack's limit 3000 ms)")
    if health_s:
        print(f"  health answer: p50 {pct(health_s, 50):.1f} s  p95 {pct(health_s, 95):.1f} s"
              f"  max {max(health_s):.1f} s  (n={len(health_s)}; all answered "
              f"{settle - t0:.1f} s after the first send)")
    print(f"  afterwards: final round of {args.concurrency} help answered in "
          f"{final_round_s:.1f} s; threads {baseline} before, {after} after "
          f"(left blocked: {max(0, after - baseline)}); bot alive: {alive}; "
          f"'greenlet.error' in log: {'greenlet.error' in log}")
    for k, status, texts in wrong[:5]:
        print(f"  wrong: {k} (HTTP {status}): {texts or 'no answer'}")
    print(f"  machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared)")
    ok = total_ok == len(kinds) and after <= baseline and alive and "greenlet.error" not in log
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
