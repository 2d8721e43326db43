"""Verdict honesty: N runs of an unchanged lab compared pairwise must give no "faster" or
"slower"; a real slowdown (an injected OSD dispatch delay) must be reported as slower.

Two shapes are measured: invocations of --repeat 3 (run-level Welch/Mann-Whitney test) and
single runs (per-second samples). The benchmark results go to a throw-away journal.

Usage: .venv/bin/python benchmarks/bench_verdict.py --config /var/tmp/sd-lab-bench/stordoc.toml [--runs 10] [--duration 2]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.env import Env
from core.settings import load_settings
from runbooks.bench import api
from runbooks.bench.stats import compare_groups


def _ceph(conf: str, *args: str) -> None:
    subprocess.run(["ceph", "-c", conf, *args], check=True, capture_output=True, timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="/var/tmp/sd-lab-bench/stordoc.toml")
    ap.add_argument("--cluster")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--delay-probability", default="0.2")
    ap.add_argument("--delay-seconds", default="0.005")
    ap.add_argument("--shapes", default="repeat 3,single run")
    a = ap.parse_args()
    s = load_settings(a.config)
    tmp = tempfile.mkdtemp(prefix="stordoc-verdict-")
    env = Env(s.model_copy(update={"journal": f"{tmp}/journal.db"}))
    ctx = env.run_context(a.cluster, source="bench_verdict")
    lim = api.BenchLimits.from_mapping(s.bench.model_dump())
    conf = ctx.target.ceph.conf
    shapes = {"repeat 3": api.BenchOptions(duration_s=a.duration, size=a.size, repeat=3),
              "single run": api.BenchOptions(duration_s=max(5.0, a.duration), size=a.size)}
    for label, opts in shapes.items():
        if label not in a.shapes.split(","):
            continue
        groups = []
        for i in range(a.runs):
            rep = api.run_bench(ctx, "rados", opts, limits=lim)
            groups.append([r.to_row() for r in rep.results])
            ops = [round(r.ops_s) for r in rep.results]
            print(f"  {label} run {i + 1}: ops/s {ops}", flush=True)
        counts: collections.Counter[str] = collections.Counter()
        changes, thr = [], []
        for i, j in itertools.combinations(range(len(groups)), 2):
            # as `compare` does: the history is what was stored before the newer run
            c = compare_groups(groups[i], groups[j], lim.k_noise, lim.min_change,
                               history=groups[:j])
            counts[c.verdict] += 1
            m = c.metrics[0]
            changes.append(abs(m.change or 0))
            thr.append(m.down)
        print(f"{label}: {a.runs} unchanged runs, {sum(counts.values())} pairs: "
              f"{dict(counts)}; |change| median {sorted(changes)[len(changes) // 2]:.1%}, "
              f"max {max(changes):.1%}; threshold (down) median "
              f"{sorted(thr)[len(thr) // 2]:.1%}", flush=True)
        _ceph(conf, "config", "set", "osd", "osd_debug_inject_dispatch_delay_probability",
              a.delay_probability)
        _ceph(conf, "config", "set", "osd", "osd_debug_inject_dispatch_delay_duration",
              a.delay_seconds)
        try:
            slow = api.run_bench(ctx, "rados", opts, limits=lim)
        finally:
            _ceph(conf, "config", "rm", "osd", "osd_debug_inject_dispatch_delay_probability")
            _ceph(conf, "config", "rm", "osd", "osd_debug_inject_dispatch_delay_duration")
        srows = [r.to_row() for r in slow.results]
        cs = [compare_groups(g, srows, lim.k_noise, lim.min_change, history=groups)
              for g in groups]
        sc: collections.Counter[str] = collections.Counter(c.verdict for c in cs)
        ch = [c.metrics[0].change or 0.0 for c in cs]
        print(f"{label}: slowdown (OSD dispatch delay p={a.delay_probability}, "
              f"{a.delay_seconds} s) against each of the {a.runs} runs: {dict(sc)}; change "
              f"{min(ch):+.0%}..{max(ch):+.0%}", flush=True)
    env.close()


if __name__ == "__main__":
    main()
