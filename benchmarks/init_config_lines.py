"""How long the config ``stordoc init`` writes is: for the 4-host lab (its captured
metadata and rings, tests/fixtures/init/pacific-lab, with and without Prometheus) and for
a synthetic cluster of 1,000 hosts (issue 40's goals: <= 30 lines each, the same size
whatever the number of hosts: the hosts come from the cluster at each check).

    python benchmarks/init_config_lines.py [--hosts 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.init import InitRequest, check_text, plan  # noqa: E402
from tests.unit.test_init import lab_facts, synthetic  # noqa: E402

GOAL = 30


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=1000)
    a = ap.parse_args()
    req, facts = lab_facts()
    rows = [("lab, 4 hosts (Ceph + Swift)", plan(req, facts))]
    facts.prom_instances = [f"127.0.0.{n}:9100" for n in range(2, 6)]
    rows.append(("lab, 4 hosts (+ Prometheus)",
                 plan(InitRequest(**{**req.__dict__, "prometheus_url":
                                     "http://127.0.0.1:9090"}), facts)))
    big = InitRequest(name="big", ceph_conf="/etc/ceph/ceph.conf", keyring="/etc/ceph/k",
                      ssh_key="/etc/stordoc/id_ed25519")
    t0 = time.monotonic()
    p = plan(big, synthetic(a.hosts))
    took = time.monotonic() - t0
    rows.append((f"synthetic, {a.hosts} hosts", p))
    rows.append(("synthetic, 4 hosts", plan(big, synthetic(4))))
    worst = 0
    for what, pl in rows:
        check_text(pl.text)
        worst = max(worst, pl.lines)
        print(f"{what:32} {pl.lines:3d} lines, {len(pl.hosts):5d} hosts found, "
              f"{len(pl.text.encode())} bytes")
    print(f"plan for {a.hosts} hosts: {took * 1000:.0f} ms; goal <= {GOAL} lines: "
          f"{'met' if worst <= GOAL else 'NOT met'} (longest {worst})")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
