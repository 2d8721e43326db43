"""Temporary changes reverted at their deadline on the lab (issue 29): a forgotten
temporary full-ratio raise and a maintenance window's noout, each reverted by
``stordoc watch`` within one interval after its deadline, also when stordoc was killed
(SIGKILL) in between and started again.

For each case: make the change through the CLI (``fix full-ratio-raise`` /
``maintenance start``) with a short window, run ``stordoc watch --every E``; in the
"restart" case, kill that watch before the deadline and start a new one after it. The
cluster is polled (``ceph osd dump``) until the value stordoc recorded is back; printed:
seconds from the deadline to the revert, against the interval.

Usage: .venv/bin/python benchmarks/expiry_revert.py --dir /var/tmp/stordoc-lab \
           [--every 5] [--window 10] [--host node2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from storage import expiring  # noqa: E402
from storage.journal import Journal  # noqa: E402


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore",
            "COLUMNS": "200"}


def stordoc(cfg: str, *argv: str, timeout: float = 300) -> str:
    r = subprocess.run([sys.executable, "-m", "stordoc", "--config", cfg, *argv],
                       capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                       stdin=subprocess.DEVNULL, env=_env(), check=False)
    if r.returncode != 0:
        raise SystemExit(f"stordoc {' '.join(argv)} failed ({r.returncode}): "
                         f"{r.stdout[-1500:]}{r.stderr[-1500:]}")
    return r.stdout


def watch(cfg: str, every: float) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "stordoc", "--config", cfg, "watch",
                             "--every", f"{every:.0f}s", "--no-slack"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT, stdin=subprocess.DEVNULL, env=_env())


def osd_dump(conf: str) -> dict[str, Any]:
    out = subprocess.run(["ceph", "-c", conf, "osd", "dump", "-f", "json"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return dict(json.loads(out))


def newest_open(journal: str, cluster: str, kind: str) -> Any:
    j = Journal(journal)
    try:
        got = [c for c in expiring.open_changes(j, cluster) if c.kind == kind]
        assert got, f"no open {kind} change in the journal"
        return got[-1]
    finally:
        j.close()


def case(name: str, cfg: str, conf: str, journal: str, cluster: str, every: float,
         window: float, make: list[str], kind: str, restored: Any, restart: bool
         ) -> dict[str, Any]:
    stordoc(cfg, *make)
    ch = newest_open(journal, cluster, kind)
    w = watch(cfg, every)
    started = time.time()
    lines: list[str] = []
    try:
        if restart:  # stordoc killed before the deadline, started again after it
            time.sleep(max(0.0, ch.deadline - time.time() - 2))
            os.kill(w.pid, signal.SIGKILL)
            w.wait(10)
            assert w.stdout is not None
            lines += w.stdout.read().splitlines()
            time.sleep(max(0.0, ch.deadline - time.time()))
            w = watch(cfg, every)
            started = time.time()
        limit = ch.deadline + every + 120
        while time.time() < limit:
            if restored(osd_dump(conf)):
                break
            time.sleep(0.2)
        at = time.time()
        ok = restored(osd_dump(conf))
    finally:
        w.send_signal(signal.SIGTERM)
        try:
            out, _ = w.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            out, _ = w.communicate()
        lines += out.splitlines()
    expired = [x for x in lines if " EXPIRED " in x]
    return {"case": name, "restart": restart, "window_s": window, "every_s": every,
            "reverted": ok, "after_deadline_s": round(at - ch.deadline, 2),
            "after_watch_start_s": round(at - started, 2) if restart else None,
            "within_one_interval": ok and at - ch.deadline <= every,
            "watch_line": expired[0].split(" EXPIRED ", 1)[1][:160] if expired else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/var/tmp/stordoc-lab")
    ap.add_argument("--every", type=float, default=5.0)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--host", default="node2")
    a = ap.parse_args()
    cfg = str(Path(a.dir) / "stordoc.toml")
    conf = str(Path(a.dir) / "ceph" / "ceph.conf")
    from core.settings import load_settings

    settings = load_settings(cfg)
    cluster = settings.cluster_name(None)
    full0 = float(osd_dump(conf)["full_ratio"])
    osds = [f"osd.{i}" for i in
            next(h.osd_ids for h in _crush_hosts(conf) if h.name == a.host)]

    def ratio_back(d: dict[str, Any]) -> bool:
        return abs(float(d["full_ratio"]) - full0) < 1e-4

    def noout_gone(d: dict[str, Any]) -> bool:
        return not any("noout" in o.get("state", []) for o in d["osds"]
                       if f"osd.{o['osd']}" in osds)

    results = []
    for restart in (False, True):
        results.append(case("full-ratio-raise", cfg, conf, settings.journal, cluster,
                            a.every, a.window,
                            ["fix", "full-ratio-raise", cluster, "-o", f"for={a.window}s",
                             "-o", f"full={min(0.99, full0 + 0.02):.2f}", "--yes"],
                            "ratio", ratio_back, restart))
        results.append(case("maintenance", cfg, conf, settings.journal, cluster, a.every,
                            a.window, ["maintenance", "start", a.host, "--for",
                                       f"{a.window}s", "--yes"],
                            "osd-flag", noout_gone, restart))
    for r in results:
        print(json.dumps(r))
    ok = all(r["within_one_interval"] for r in results)
    print(f"{'OK' if ok else 'SLOW'}: "
          + "; ".join(f"{r['case']}{' after a kill' if r['restart'] else ''} reverted "
                      f"{r['after_deadline_s']} s after its deadline (watch every "
                      f"{r['every_s']:g} s)" for r in results))
    return 0 if ok else 1


class _Host:
    def __init__(self, name: str, osd_ids: list[int]) -> None:
        self.name, self.osd_ids = name, osd_ids


def _crush_hosts(conf: str) -> list[_Host]:
    out = subprocess.run(["ceph", "-c", conf, "osd", "tree", "-f", "json"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    nodes = json.loads(out).get("nodes", [])
    return [_Host(n["name"], list(n.get("children", []))) for n in nodes
            if n.get("type") == "host"]


if __name__ == "__main__":
    raise SystemExit(main())
