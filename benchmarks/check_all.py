"""``stordoc check --all`` over 50 clusters where one is dead: the whole run (a real
process, from its start to its exit) against that cluster's timeout.

The dead cluster is real: librados against a monitor address on loopback that accepts
TCP and never answers (``--dead refused``: a port nobody listens on), with a Ceph timeout
longer than the cluster's check timeout, so only ``check --all``'s own budget can end it.
The 49 others are served by saved snapshots (tests/fixtures/snapshots) through the
``Env.collect`` seam, in the child process; everything else is the real CLI: settings,
the journal, the checks, rendering, the exit. Each line's arrival time is noted.

Usage: .venv/bin/python benchmarks/check_all.py [--clusters 50] [--timeout 5]
       [--dead silent|refused] [--parallel 8]
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys
from dataclasses import replace
from core.env import Env
from core.service.snapshots import load
from tests.support.fixture_snapshots import FIXTURES

snaps = [load(str(FIXTURES / "reef" / n)).outcome.snapshot
         for n in ("healthy", "osd-out", "cache-tier-misconfigured")]
real = Env.collect

def collect(self, target, host_facts=True):
    if target.name == "dead":
        return real(self, target, host_facts)
    return replace(snaps[int(target.name[1:]) % len(snaps)], cluster=target.name)

Env.collect = collect
from stordoc.cli import main
import time
print(f"@@main {time.time()}", file=sys.stderr, flush=True)  # the product starts here
sys.exit(main(sys.argv[1:]))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clusters", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=5.0, help="the dead cluster's")
    ap.add_argument("--dead", choices=("silent", "refused"), default="silent")
    ap.add_argument("--parallel", type=int, default=8)
    a = ap.parse_args()
    if not 2 <= a.clusters <= 500 or not 1 <= a.timeout <= 300:
        sys.exit("--clusters 2..500, --timeout 1..300")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])
    if a.dead == "silent":
        listener.listen(64)  # the kernel accepts; nobody ever reads or writes
    else:
        listener.close()
    with tempfile.TemporaryDirectory(prefix="stordoc-check-all.") as tmp:
        d = Path(tmp)
        key = struct.pack("<HIIH", 1, 0, 0, 16) + os.urandom(16)
        (d / "keyring").write_text(f"[client.admin]\n\tkey = "
                                   f"{base64.b64encode(key).decode()}\n")
        (d / "dead.conf").write_text(f"[global]\nmon_host = 127.0.0.1:{port}\n")
        parts = [f'journal = "{d / "j.db"}"\n[check]\nparallel = {a.parallel}\n',
                 # first in the file: a config-order printer would hold every line back
                 f"[clusters.dead]\ncheck_timeout_s = {a.timeout}\n[clusters.dead.ceph]\n"
                 f'conf = "{d / "dead.conf"}"\nkeyring = "{d / "keyring"}"\n'
                 f"timeout = {a.timeout * 4}\n"]
        parts += [f'[clusters.c{n:03d}.swift]\nswift_dir = "{d}"\n'
                  for n in range(a.clusters - 1)]
        (d / "stordoc.toml").write_text("".join(parts))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, "-c", CHILD, "check", "--config",
                              str(d / "stordoc.toml"), "--all", "--no-host-facts"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=ROOT)
        assert p.stdout is not None
        arrivals = []
        for line in p.stdout:
            if not line.startswith("  "):
                arrivals.append((time.time(), line.rstrip()))
        rc = p.wait()
        total = time.monotonic() - t0
        ended = time.time()
        err = p.stderr.read() if p.stderr else ""
        mains = [float(ln.split()[1]) for ln in err.splitlines() if ln.startswith("@@main")]
        err = "\n".join(ln for ln in err.splitlines() if not ln.startswith("@@main"))
        in_main = ended - mains[0] if mains else float("nan")
    listener.close()
    t_main = mains[0] if mains else float("nan")  # arrivals: seconds after main()
    healthy = [t - t_main for t, ln in arrivals if not ln.startswith("dead")]
    dead = [(t - t_main, ln) for t, ln in arrivals if ln.startswith("dead")]
    print(f"check --all over {a.clusters} clusters, one dead ({a.dead} monitor, check "
          f"timeout {a.timeout:g}s, Ceph timeout {a.timeout * 4:g}s), {a.parallel} at once:")
    print(f"  stordoc's main() to the process's exit: {in_main:.2f}s; goal <= "
          f"{a.timeout + 2:g}s: {'met' if in_main <= a.timeout + 2 else 'NOT met'}  "
          f"(whole process {total:.2f}s, with Python's start and this benchmark's "
          f"loading of its snapshots), exit status {rc}")
    print(f"  {len(healthy)} other lines (seconds after main()), the last at {max(healthy, default=0):.2f}s; "
          f"first line at {min(healthy, default=0):.2f}s")
    for t, ln in dead:
        print(f"  at {t:.2f}s: {ln}")
    if err.strip():
        print(f"  stderr: {err.strip()[:300]}")


if __name__ == "__main__":
    main()
