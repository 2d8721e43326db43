"""How fast ``stordoc`` starts and answers, side by side with Ceph's own CLI (issue 24).

Two pairs, interleaved in one run (each round runs both commands of a pair, the order
alternating between rounds), every run a fresh process as an operator would start it:

  stordoc --help                          vs  ceph --version
  stordoc check --json --config CFG       vs  ceph -c CONF health detail -f json

For each command: the median wall time and the median CPU time of the process (user +
system, from ``resource.getrusage(RUSAGE_CHILDREN)``); then the ratios stordoc/ceph. On a
shared machine only the ratios of one run mean something, never absolute numbers from
different moments. The goals are printed beside the figures; nothing fails on time.

    .venv/bin/python benchmarks/cli_startup.py --config /var/tmp/stordoc-lab/stordoc.toml \
        [--cluster lab] [--rounds 7]

Measured (2026-11-26, quiet machine, load 1.9-2.2, Pacific lab, 7 rounds, medians):
  stordoc --help 0.138 s wall against ceph --version 0.115 s: 1.2x (goal <= 0.3 s: met;
  1.04 s before issue 24)
  stordoc check --json 1.402 s wall (1.264 s CPU) against ceph health detail 0.324 s:
  4.3x wall, 4.0x CPU (goal <= 5x: met; <= 1.0 s: not met). Of it, collect + check inside
  the process is 0.714 s; the rest is imports, mostly Swift's ring library (eventlet,
  pkg_resources, swift.common.utils: ~0.3 s) and paramiko (~0.2 s), both needed by a
  check that reads rings and SSHes to hosts.

Issue 39.7 (2026-11-28, Reef lab /var/tmp/stordoc-lab-me, 7 rounds, medians; a shared
2-core machine at load 6-10, so only the ratios within one run mean anything; "before" is
faaff73 run with this script right before "after", same lab, same hour):
  before: stordoc check --json 7.067 s wall (1.763 s CPU) against ceph health detail
  1.272 s (0.372 s CPU): 5.6x wall, 4.7x CPU; its imports alone 1.373 s CPU (Swift's ring
  library: eventlet, pkg_resources, swift.common.utils; the runbook machinery; numpy
  through sqlite-utils); collect+check inside 2.956 s.
  after: stordoc check --json 4.374 s wall (1.166 s CPU) against ceph health detail
  0.843 s (0.338 s CPU): 5.2x wall, 3.5x CPU; its imports 0.549 s CPU; collect+check
  inside 2.856 s (host facts over SSH: ~1 s per host at that load, the facts script on
  the hosts). A second pair of runs (before/after back to back, load 6-7): 6.0x -> 4.3x
  wall, 4.4x -> 3.2x CPU, 1.947 -> 1.384 s CPU.
  Goals: <= 5x met on CPU in every run and on wall in one of two; <= 1.0 s wall not
  measurable on this machine at this load (what is left is collection, not imports).

Issue 39.7, second pass (2026-11-28, Pacific lab /var/tmp/stordoc-lab-speed, 7 rounds,
medians, bytecode cached as installed; load 6-10 on the shared 2-core machine; runs in the
order before, after, after, before, "before" being 31fb325 with this script):
  before: 3.847 s wall (1.501 s CPU) against ceph health detail 0.738 s: 5.2x wall, 3.8x
  CPU (load 10.1); 2.913 s (1.508 s CPU) against 0.492 s: 5.9x, 3.8x CPU (load 7.6).
  after: 4.196 s wall (1.317 s CPU) against 0.887 s: 4.7x wall, 3.1x CPU (load 9.6);
  2.587 s (1.296 s CPU) against 0.480 s: 5.4x, 3.4x CPU (load 6.4).
  What changed: swiftclient without pkg_resources (~0.2 s CPU, storage/swiftclient_lib.py),
  the hosts' facts started once Ceph's OSD map and Swift's rings are read instead of after
  all of Ceph and Swift, a facts script with a third fewer processes (600 -> 397 over the
  lab's four hosts: one awk per daemon log,
  one md5sum per ring dir). Not met: <= 1.0 s (not on this machine at this load: the
  check's own CPU is ~1.3 s, of it ~0.8 s imports and ~0.5 s collection: paramiko's four
  handshakes, ~100 recon requests through requests, rados; the lab's four "hosts" run
  their facts scripts on the same two cores). Before this pass every run of this script
  also recompiled the checkout (the environment's PYTHONDONTWRITEBYTECODE=1): ~0.5 s CPU
  more per stordoc run that an installed stordoc never pays (``--bytecode env`` keeps it).

``stordoc`` runs as ``python -m stordoc`` from this checkout (first on ``sys.path``), so a
worktree measures its own code, not an editable install elsewhere. The Ceph command gets
the cluster's ``conf``, ``keyring`` and ``client`` from the same settings file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_HELP_S = 0.3
GOAL_CHECK_S = 1.0
GOAL_CHECK_RATIO = 5.0
CHECK_IMPORTS = ("stordoc.cli", "stordoc.commands.check", "core.env", "core.service.app")
ENV = dict(os.environ)  # what every measured command runs with (main() sets the bytecode)


def _bytecode(mode: str, cache_dir: str) -> str:
    """``cached``: Python's compiled bytecode is written once (the unmeasured first runs)
    and read after, as an installed stordoc runs (pip compiles it at install) and as any
    interpreter without PYTHONDONTWRITEBYTECODE does; kept in ``cache_dir``
    (PYTHONPYCACHEPREFIX), so neither this checkout nor the virtualenv is written to.
    ``env``: the environment as it is (with PYTHONDONTWRITEBYTECODE=1, every run compiles
    every module of this checkout again: ~0.5 s of CPU more per stordoc run)."""
    if mode == "cached":
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV["PYTHONPYCACHEPREFIX"] = cache_dir
        return f"bytecode cached in {cache_dir} (as installed)"
    return ("bytecode as the environment says (PYTHONDONTWRITEBYTECODE="
            f"{ENV.get('PYTHONDONTWRITEBYTECODE', '')!r})")


@dataclass
class Runs:
    name: str
    argv: list[str]
    ok: tuple[int, ...] = (0,)
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    last_stdout: str = ""

    def run(self) -> None:
        before = _children_cpu()
        t0 = time.monotonic()
        p = subprocess.run(self.argv, capture_output=True, text=True, cwd=ROOT, check=False,
                           env={**ENV, "PYTHONPATH": str(ROOT)})
        wall = time.monotonic() - t0
        cpu = _children_cpu() - before
        if p.returncode not in self.ok:
            sys.exit(f"{self.name} exited {p.returncode}: {p.stderr.strip()[-400:]}")
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.last_stdout = p.stdout

    def line(self) -> str:
        return (f"{self.name}: median {statistics.median(self.wall):.3f} s wall "
                f"(min {min(self.wall):.3f}, max {max(self.wall):.3f}), "
                f"median {statistics.median(self.cpu):.3f} s CPU over {len(self.wall)} runs")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _ratio(a: Runs, b: Runs) -> str:
    wall = statistics.median(a.wall) / statistics.median(b.wall)
    cpu = statistics.median(a.cpu) / max(statistics.median(b.cpu), 1e-6)
    return f"ratio {a.name} / {b.name}: {wall:.1f}x wall, {cpu:.1f}x CPU"


def _ceph_argv(config: str, cluster: str | None) -> list[str]:
    with open(config, "rb") as f:
        cfg = tomllib.load(f)
    clusters = cfg.get("clusters") or {}
    name = cluster or cfg.get("default_cluster") or next(iter(clusters), None)
    ceph = (clusters.get(name) or {}).get("ceph") if name else None
    if not ceph or not ceph.get("conf"):
        sys.exit(f"{config}: cluster {name!r} has no [ceph] conf")
    argv = ["ceph", "-c", ceph["conf"]]
    if ceph.get("keyring"):
        argv += ["--keyring", ceph["keyring"]]
    if ceph.get("client"):
        argv += ["--name", ceph["client"]]
    return argv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="/var/tmp/stordoc-lab/stordoc.toml",
                    help="the lab's (or a cluster's) stordoc settings")
    ap.add_argument("--cluster", help="cluster in the settings (default: the default one)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--bytecode", choices=("cached", "env"), default="cached",
                    help="cached (default: as an installed stordoc runs) or env (as the "
                         "environment says)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="stordoc-bench-pyc.") as cache:
        _measure(a, _bytecode(a.bytecode, cache))


def _measure(a: argparse.Namespace, bytecode: str) -> None:
    py = [sys.executable, "-W", "ignore", "-m", "stordoc"]
    ceph = _ceph_argv(a.config, a.cluster)
    cl = ["--cluster", a.cluster] if a.cluster else []
    help_ = Runs("stordoc --help", [*py, "--help"])
    version = Runs("ceph --version", ["ceph", "--version"])
    check = Runs("stordoc check --json", [*py, "check", "--json", "--config", a.config, *cl],
                 ok=(0, 1, 2))
    health = Runs("ceph health detail", [*ceph, "health", "detail", "-f", "json"])
    # what the check's process imports before it collects anything (issue 39.7)
    imports = Runs("imports of stordoc check", [sys.executable, "-W", "ignore", "-c",
                                                 "import " + ", ".join(CHECK_IMPORTS)])
    pairs = [(help_, version), (check, health)]
    for r in (help_, version, check, health, imports):  # unmeasured: page cache, journal
        r.run()
        r.wall.clear()
        r.cpu.clear()
    inproc: list[float] = []
    for i in range(a.rounds):
        for x, y in pairs:
            for r in ((x, y) if i % 2 == 0 else (y, x)):
                r.run()
        imports.run()
        inproc.append(float(json.loads(check.last_stdout)["duration_s"]))
    print(f"{a.rounds} rounds, {bytecode}, load average {os.getloadavg()[0]:.1f}")
    print(help_.line())
    print(version.line())
    print(_ratio(help_, version))
    print(f"goal stordoc --help <= {GOAL_HELP_S} s: median "
          f"{statistics.median(help_.wall):.3f} s")
    print(check.line())
    print(health.line())
    print(_ratio(check, health))
    print(f"  of which collect+check inside stordoc: median {statistics.median(inproc):.3f} s")
    print(f"  {imports.line()}")
    print(f"goal stordoc check --json <= {GOAL_CHECK_S} s and <= {GOAL_CHECK_RATIO:g}x ceph "
          f"health detail: median {statistics.median(check.wall):.3f} s, "
          f"{statistics.median(check.wall) / statistics.median(health.wall):.1f}x")


if __name__ == "__main__":
    main()
