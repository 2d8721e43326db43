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

``--rounds R`` measures instead the answer time of C concurrent ``health`` (issue 26.9),
R rounds, before and after in one run: the bot (bolt over real HTTP on loopback, signed
requests, the fake Slack) twice in this process, one as it is ("shared": a run under way
when a person asked answers them) and one whose health requests pass no request time
("unshared": the code before, where only a run still in flight when a pool worker took the
request up was shared, so 20 requests on 8 workers were about 3 runs). Rounds alternate
between the two. It prints p50/p95 of the answer time, the check runs started, and the
ratios. The cluster is the lab's (``--config``) or, to measure the bot's own overhead and
scheduling without a lab, a replay snapshot (``--replay DIR``, e.g.
tests/fixtures/snapshots/reef/osd-unmounted-out) whose collection is made to take
``--collect-s`` seconds (about a lab check's time):

    .venv/bin/python benchmarks/bot_burst.py --rounds 10 \
        --replay tests/fixtures/snapshots/reef/osd-unmounted-out
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

from core.service import Service
from core.service.inspect import RecordPolicy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

USER = "UBURST0001"


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(-(-p * len(s) // 100)) - 1))] if s else float("nan")


def expected_codes(config: Path, cluster: str) -> set[str]:
    from core.env import Env
    from core.settings import load_settings

    env = Env(load_settings(config))
    try:
        return {f.code for f in Service(env).check(cluster, "bench", RecordPolicy.NEVER).report.findings}
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
    ap.add_argument("--config", type=Path, help="the lab's stordoc.toml")
    ap.add_argument("--cluster", default="lab")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--health", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=0,
                    help="health-only rounds, shared versus unshared (issue 26.9)")
    ap.add_argument("--replay", type=Path, help="with --rounds: a snapshot directory "
                    "instead of the lab")
    ap.add_argument("--collect-s", type=float, default=1.0,
                    help="with --replay: how long a collection takes")
    args = ap.parse_args()
    if args.rounds:
        return health_rounds(args)
    if args.config is None:
        ap.error("--config is required (or --rounds with --replay)")

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


def health_rounds(args: argparse.Namespace) -> int:
    """C concurrent `health`, R rounds, on the bot as it is and on the unshared variant."""
    import threading

    from core.settings import load_settings, parse_settings
    from tests.support.fake_slack import BotHarness, SlackSender, all_text

    tmp = Path(tempfile.mkdtemp(prefix="stordoc-burst-"))
    cluster, rp = args.cluster, None
    if args.replay is not None:
        from core.service.snapshots import load

        rp = load(str(args.replay))
        cluster = rp.doc.cluster
        conf = tmp / "ceph.conf"
        conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
        settings = parse_settings({"journal": str(tmp / "j.db"), "clusters": {
            cluster: {"ceph": {"conf": str(conf), "timeout": 2}}}})
    elif args.config is not None:
        settings = load_settings(args.config)
    else:
        print("--rounds needs --config (the lab) or --replay DIR", file=sys.stderr)
        return 64

    def bot(variant: str) -> BotHarness:
        h = BotHarness(settings, {cluster: {"viewers": [USER]}}, str(tmp / f"{variant}.db"))
        if rp is not None:
            snap = rp.outcome.snapshot

            def collect(target: object, host_facts: bool = True) -> object:
                time.sleep(args.collect_s)  # stands for the collection (mons, recon, SSH)
                return snap
            h.env.collect = collect  # type: ignore[method-assign,assignment]
        if variant == "unshared":  # the code before: a health request passes no time
            shared = h.bot.backend.check

            def check(c: str | None, source: str, record: object = None,
                      since: float | None = None, **kw: object) -> object:
                if record is None:
                    return shared(c, source, **kw)  # type: ignore[arg-type]
                return shared(c, source, record, **kw)  # type: ignore[arg-type]
            h.bot.backend.check = check  # type: ignore[method-assign,assignment]
        return h

    bots = {v: bot(v) for v in ("unshared", "shared")}
    lat: dict[str, list[float]] = {v: [] for v in bots}
    wrong: dict[str, int] = {v: 0 for v in bots}
    want = {f.code for f in rp.outcome.report.findings} if rp is not None else \
        expected_codes(args.config, cluster)
    lock = threading.Lock()
    try:
        for rnd in range(args.rounds):
            for v, h in bots.items():
                chans = [f"C{v[0].upper()}{rnd:03d}{i:04d}" for i in range(args.concurrency)]
                sent: dict[str, float] = {}

                def one(ch: str, h: BotHarness = h, sent: dict[str, float] = sent) -> int:
                    with lock:
                        sent[ch] = time.monotonic()
                    return SlackSender(h.server.url, channel=ch).slash(
                        f"health {cluster}", USER).status

                with ThreadPoolExecutor(args.concurrency) as pool:
                    codes = list(pool.map(one, chans))

                def answer(f: object, ch: str, h: BotHarness = h) -> object:
                    for x in h.fake.of("chat.postMessage", "chat.update"):
                        if x.params.get("channel") == ch and f" {cluster}: " in \
                                " " + str(x.params.get("text", "")).split("\n")[0][:40]:
                            return x
                    return None
                h.fake.wait_for(lambda f, h=h, chans=chans: all(  # type: ignore[misc]
                    answer(f, c, h) for c in chans), 300)
                for ch, code in zip(chans, codes, strict=True):
                    x = answer(h.fake, ch)
                    text = all_text(x) if x is not None else ""  # type: ignore[arg-type]
                    ok = code == 200 and x is not None and all(c in text for c in want)
                    wrong[v] += not ok
                    if x is not None:
                        lat[v].append(x.at - sent[ch])  # type: ignore[attr-defined]
        runs = {v: h.bot.backend.inspector.runs for v, h in bots.items()}
    finally:
        for h in bots.values():
            h.close()
    n = args.rounds * args.concurrency
    where = (f"replay {args.replay} (collection {args.collect_s:.1f} s)" if rp is not None
             else f"the lab ({args.config})")
    print(f"bot health burst: {args.concurrency} concurrent `health {cluster}` x "
          f"{args.rounds} rounds per variant, the real bolt App over HTTP, on {where}")
    for v in bots:
        print(f"  {v:8s}: correct {n - wrong[v]}/{n}  answer p50 {pct(lat[v], 50):.2f} s  "
              f"p95 {pct(lat[v], 95):.2f} s  max {max(lat[v]):.2f} s  check runs "
              f"{runs[v]} ({runs[v] / args.rounds:.1f} a round)")
    p = {v: (pct(lat[v], 50), pct(lat[v], 95)) for v in bots}
    print(f"  unshared/shared: p50 x{p['unshared'][0] / p['shared'][0]:.2f}  p95 "
          f"x{p['unshared'][1] / p['shared'][1]:.2f}  check runs "
          f"x{runs['unshared'] / max(1, runs['shared']):.2f}")
    print(f"  machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared)")
    return 0 if not any(wrong.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
