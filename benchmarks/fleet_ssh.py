"""SSH host facts over a simulated fleet (loopback only): first check, reused checks, errors.

Starts its own sshd(s) (port 21600 by default, in the 21600-22399 range given to this
benchmark), each bound to at most 16 loopback addresses 127.0.X.Y (sshd's limit of
listening sockets), so 1,000 hosts are 63 sshd processes and nothing listens beyond
loopback. Host keys are checked (a temporary known_hosts lists every address). Each
"host" answers the facts command with a captured facts output (``ForceCommand cat``):
the remote work runs on each real host in parallel, here it would all land on this
machine's two cores, so what is measured is stordoc's side: handshakes, channels,
transfer, parsing, the checks.

Each check is the real path: ``storage.collect.collect`` (``open_all`` then
``collect_host_facts``) on a cluster of SSH hosts only, then ``checks.engine.run_checks``.
With ``--pool`` (default) the checks share one ``SSHPool`` (what ``watch`` and the bot
do): the first check makes the handshakes, later ones reuse the connections. ``--old``
measures the previous behaviour: fresh connections each check, no handshake bound, no
retry.

Usage: .venv/bin/python benchmarks/fleet_ssh.py [--hosts 250,1000] [--checks 3]
       [--max-startups 10:30:100] [--per-sshd 16] [--old]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")

from checks.engine import run_checks  # noqa: E402
from storage.collect import collect  # noqa: E402
from storage.ssh import SSHPool  # noqa: E402
from storage.targets import ClusterTarget, HostTarget  # noqa: E402

FACTS = ROOT / "tests" / "fixtures" / "hosts" / "healthy-node1.facts.txt"
PORT_LO, PORT_HI = 21600, 22399


def addresses(n: int) -> list[str]:
    """127.0.1.1 ... : 250 a /24, never 127.0.0.x (the lab's and others' hosts)."""
    return [f"127.0.{1 + i // 250}.{1 + i % 250}" for i in range(n)]


class Fleet:
    """The sshds of ``n`` simulated hosts; ``stop()`` ends them by pid."""

    def __init__(self, d: Path, n: int, port: int, per_sshd: int, max_startups: str) -> None:
        self.d, self.port = d, port
        self.addrs = addresses(n)
        self.pids: list[int] = []
        for key in ("host", "client"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            str(d / key)], check=True)
        pub = (d / "client.pub").read_text().strip()
        (d / "authorized_keys").write_text(f'from="127.0.0.0/8" {pub}\n')
        os.chmod(d / "authorized_keys", 0o600)
        hostpub = " ".join((d / "host.pub").read_text().split()[:2])
        (d / "known_hosts").write_text("".join(f"[{a}]:{port} {hostpub}\n"
                                               for a in self.addrs))
        Path("/run/sshd").mkdir(exist_ok=True)
        for k in range(0, n, per_sshd):
            group = self.addrs[k:k + per_sshd]
            cfg = d / f"sshd_{k}.conf"
            cfg.write_text(
                f"Port {port}\n" + "".join(f"ListenAddress {a}\n" for a in group) +
                f"HostKey {d / 'host'}\nPidFile {d / f'sshd_{k}.pid'}\n"
                f"AuthorizedKeysFile {d / 'authorized_keys'}\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                f"AllowUsers root@127.*\nMaxStartups {max_startups}\nLogLevel ERROR\n"
                f"UseDNS no\nSetEnv SHLVL=1\nForceCommand cat {FACTS}\n")
            subprocess.run(["/usr/sbin/sshd", "-f", str(cfg), "-E", str(d / "sshd.log")],
                           check=True)
        for k in range(0, n, per_sshd):
            pidf = d / f"sshd_{k}.pid"
            for _ in range(100):
                if pidf.exists() and pidf.read_text().strip():
                    break
                time.sleep(0.05)
            self.pids.append(int(pidf.read_text()))

    def target(self) -> ClusterTarget:
        hosts = tuple(HostTarget(f"h{i}", a, port=self.port, key_file=str(self.d / "client"),
                                 known_hosts=str(self.d / "known_hosts"), timeout_s=10)
                      for i, a in enumerate(self.addrs))
        return ClusterTarget("fleet", hosts=hosts)

    def stop(self) -> None:
        for pid in self.pids:  # the listeners; each connection's sshd ends with it
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one_size(n: int, a: argparse.Namespace) -> list[tuple[float, float, int, int]]:
    """(seconds, CPU seconds, host errors, findings) per check."""
    d = Path(tempfile.mkdtemp(prefix="stordoc-fleet-ssh."))
    fleet = Fleet(d, n, a.port, a.per_sshd, a.max_startups)
    target = fleet.target()
    rows = []
    pool = None if a.old else SSHPool(max_connecting=a.max_connecting)
    try:
        for _ in range(a.checks):
            if a.old:  # fresh connections, all handshakes at once, no retry
                run_pool = SSHPool(max_connecting=10_000, retry=False)
            else:
                assert pool is not None
                run_pool = pool
            t0, c0 = time.monotonic(), cpu_s()
            snap = collect(target, host_facts=True, ssh_pool=run_pool)
            rep = run_checks(snap)
            rows.append((time.monotonic() - t0, cpu_s() - c0,
                         sum(1 for f in snap.hosts.values() if f.error),
                         len(rep.findings)))
            errs = {f.error for f in snap.hosts.values() if f.error}
            if errs:
                print(f"    errors seen: {sorted(errs)[:3]}", flush=True)
            if a.old:
                run_pool.close()
        if pool is not None:
            s = pool.stats
            print(f"    pool: {len(pool)} open, {s.opened} handshakes, {s.reused} reused, "
                  f"{s.retried} retried, {s.reconnected} reconnected; handshakes at once "
                  f"now {pool._connecting.limit}", flush=True)
    finally:
        if pool is not None:
            pool.close()
        fleet.stop()
        shutil.rmtree(d, ignore_errors=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", default="250,1000", help="fleet sizes, comma-separated")
    ap.add_argument("--checks", type=int, default=3)
    ap.add_argument("--port", type=int, default=PORT_LO)
    ap.add_argument("--per-sshd", type=int, default=16, help="addresses per sshd (<= 16)")
    ap.add_argument("--max-startups", default="10:30:100", help="sshd's (default 10:30:100)")
    ap.add_argument("--max-connecting", type=int, default=24, help="handshakes at once")
    ap.add_argument("--old", action="store_true",
                    help="fresh connections each check, no handshake bound, no retry")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the sshds stop (finally)
    sizes = [int(x) for x in a.hosts.split(",")]
    if not PORT_LO <= a.port <= PORT_HI or not 1 <= a.per_sshd <= 16 or \
            not all(1 <= n <= 5000 for n in sizes) or a.checks < 1:
        sys.exit("--port 21600..22399, --per-sshd 1..16, --hosts 1..5000, --checks >= 1")
    mode = "old: fresh connections" if a.old else \
        f"pooled connections, {a.max_connecting} handshakes at once"
    print(f"SSH-only check over simulated hosts ({mode}; MaxStartups {a.max_startups}, "
          f"{a.per_sshd} hosts per sshd):")
    results = {}
    for n in sizes:
        rows = one_size(n, a)
        results[n] = rows
        first, rest = rows[0], rows[1:]
        reused = min(r[0] for r in rest) if rest else float("nan")
        print(f"  {n:5d} hosts: first check {first[0]:6.2f}s (CPU {first[1]:.1f}s, "
              f"{first[2]} host errors)  later checks {reused:6.2f}s best of {len(rest)} "
              f"(CPU {min((r[1] for r in rest), default=float('nan')):.1f}s, "
              f"{sum(r[2] for r in rest)} host errors)  findings {first[3]}", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS {peak:.0f} MiB (this process)")
    if len(sizes) >= 2:
        lo, hi = sizes[0], sizes[-1]
        per_first = (results[hi][0][0] - results[lo][0][0]) / (hi - lo) * 1000
        if a.checks > 1:
            per_reused = (min(r[0] for r in results[hi][1:]) -
                          min(r[0] for r in results[lo][1:])) / (hi - lo) * 1000
            print(f"  cost per added host: first check {per_first:.1f} ms, "
                  f"reused {per_reused:.1f} ms")
        else:
            print(f"  cost per added host: first check {per_first:.1f} ms")


if __name__ == "__main__":
    main()
