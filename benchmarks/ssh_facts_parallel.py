"""Host-fact collection over 50 loopback "hosts": in parallel versus a one-by-one loop.

127.0.0.2 ... 127.0.0.51 all reach the lab's sshd (it listens on 0.0.0.0); a temporary
known_hosts lists the lab's host key for each of them, so host keys are still checked.
Both modes run the real ``collect_host_facts`` path (one facts script per host, fresh SSH
connections each round, the lab's Ceph/Swift state so node1..node3 also get their OSD and
Swift device probes).

Usage: .venv/bin/python benchmarks/ssh_facts_parallel.py --config DIR/stordoc.toml
       [--hosts 50] [--rounds 3] [--workers 32]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")

from core.settings import load_settings
from storage.collect import collect
from storage.hostfacts import collect_host_facts, collect_one, plan_for
from storage.ssh import FabricRunner
from storage.targets import ClusterTarget


def fleet(target: ClusterTarget, n: int, known_hosts: str) -> ClusterTarget:
    base = target.hosts[0]
    port = base.port
    key = Path(base.known_hosts or "").read_text().split()
    keytype, keyb64 = key[-2], key[-1]
    names = ",".join(f"[127.0.0.{i}]:{port}" for i in range(2, n + 2))
    Path(known_hosts).write_text(f"{names} {keytype} {keyb64}\n")
    hosts = tuple(dataclasses.replace(base, name=f"node{i - 1}", address=f"127.0.0.{i}",
                                      known_hosts=known_hosts,
                                      fstab_path=(target.hosts[(i - 2) % len(target.hosts)]
                                                  .fstab_path))
                  for i in range(2, n + 2))
    return dataclasses.replace(target, hosts=hosts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="/var/tmp/stordoc-lab/stordoc.toml")
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=32)
    a = ap.parse_args()
    if not 1 <= a.hosts <= 200:
        sys.exit("--hosts must be 1..200 (127.0.0.2 .. 127.0.0.201)")
    s = load_settings(a.config)
    base = s.cluster(None).target(s.cluster_name(None))
    snap = collect(base, host_facts=False)
    with tempfile.TemporaryDirectory(prefix="stordoc-bench-kh.") as tmp:
        target = fleet(base, a.hosts, str(Path(tmp) / "known_hosts"))
        par, seq = [], []
        errors = 0
        for _ in range(a.rounds):
            t0 = time.monotonic()
            facts = collect_host_facts(target, snap.ceph, snap.swift, max_workers=a.workers)
            par.append(time.monotonic() - t0)
            errors += sum(1 for f in facts.values() if f.error)
            t0 = time.monotonic()
            runner = FabricRunner(target.hosts)
            try:
                for h in target.hosts:
                    f = collect_one(plan_for(target, h, snap.ceph, snap.swift), runner)
                    errors += 1 if f.error else 0
            finally:
                runner.close()
            seq.append(time.monotonic() - t0)
    p, q = statistics.median(par), statistics.median(seq)
    print(f"SSH host facts over {a.hosts} loopback hosts ({a.rounds} rounds, "
          f"{a.workers} workers, fresh connections each round):")
    print(f"  parallel  (collect_host_facts): median {p:.2f}s  "
          f"(min {min(par):.2f}s, max {max(par):.2f}s)")
    print(f"  one by one (loop of collect_one): median {q:.2f}s  "
          f"(min {min(seq):.2f}s, max {max(seq):.2f}s)")
    print(f"  speed-up: {q / p:.1f}x   per host: parallel {p / a.hosts * 1000:.0f} ms, "
          f"sequential {q / a.hosts * 1000:.0f} ms   host errors: {errors}")


if __name__ == "__main__":
    main()
