"""A check of a 1,000- and 5,000-host cluster with host facts from Prometheus (issue #30).

The Prometheus is ``tests.support.prom_server.FakeProm`` on 127.0.0.1 in a child process
(its JSON is not stordoc's cost), answering for N node_exporters: each host has 4 OSD
data dirs and 2 Swift devices mounted, their units, and the system filesystems; 0.1 % of
the hosts are stale, 0.1 % have a read-only Swift device and 0.1 % an OSD's XFS shut down
(in their kernel-log textfile: the only hosts whose kernel lines are sent). The Ceph side is the
synthetic cluster of ``benchmarks/check_engine_scale.py`` (N x 4 OSDs in the real
commands' JSON, parsed by ``storage.ceph.build_state``; 0.2 % of the OSDs down) and one
object ring with the hosts' devices. SSH, for the hosts in question, is stubbed (the
SSH-only fleet benchmark is ``benchmarks/ssh_facts_parallel.py``): how many hosts it
would reach is printed.

Measured per size, in a fresh process each: the real path of a check after the Ceph read
(Prometheus's ten queries over HTTP with ``collect_via_prometheus``, the Ceph JSON
parsed, ``core.service.pipeline.run_check``: checks, incidents), the second of two
runs (``watch`` repeats it; the first is printed too): wall time, CPU time of this
process, peak RSS (getrusage) and Python's peak (tracemalloc, a third run).

Run: ``.venv/bin/python benchmarks/fleet_prometheus.py [--sizes 1000,5000]``. Goals:
<= 5 s and <= 500 MiB at 1,000 hosts (printed, never asserted by a test).
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OSDS_PER_HOST = 4
SWIFT_PER_HOST = 2


def addr(h: int) -> str:
    return f"10.{h >> 16 & 255}.{h >> 8 & 255}.{h & 255}"


def _serve(n: int, conn: Any) -> None:
    from tests.support.prom_server import SYSTEM_FS, FakeProm, fleet

    nodes = fleet(n, OSDS_PER_HOST, SWIFT_PER_HOST, addr=addr)
    for i, node in enumerate(nodes):
        if i % 1000 == 500:
            node.last = time.time() - 3600  # its exporter stopped an hour ago
        if i % 1000 == 700:
            node.fs[-1].readonly = 1  # a Swift device gone read-only
        if i % 1000 == 900 and node.kmsg is not None:  # its first OSD's XFS shut down
            dev = node.fs[len(SYSTEM_FS)].device.removeprefix("/dev/")
            ts = time.strftime("%Y-%m-%dT%H:%M:%S,000000+00:00", time.gmtime())
            node.kmsg.lines = {"xfslog": [f"{ts} XFS ({dev}): Mounting V5 Filesystem",
                                          f"{ts} XFS ({dev}): User initiated shutdown "
                                          "received."]}
    fake = FakeProm(nodes)
    with fake.serve() as url:
        conn.send(url)
        conn.recv()  # until the parent is done


def _target(n: int, url: str) -> Any:
    from storage.targets import ClusterTarget, HostTarget, PromTarget

    hosts = tuple(HostTarget(name=f"host{h:04d}", address=addr(h),
                             swift_devices_dir="/srv/node") for h in range(n))
    return ClusterTarget("fleet", hosts=hosts, prometheus=PromTarget(url, 30.0, 300.0))


def _ring(n: int) -> Any:
    from storage.model import RingDevice, RingState

    n_dev = n * SWIFT_PER_HOST
    wanted = round((1 << 18) * 3 / n_dev)
    devs = tuple(RingDevice(id=d, region=1, zone=1 + (d // SWIFT_PER_HOST) % 5,
                            ip=addr(d // SWIFT_PER_HOST), port=6200, device=f"d{d + 1}",
                            weight=100.0, parts=wanted, parts_wanted=wanted)
                 for d in range(n_dev))
    return RingState(kind="object", ring_path="/etc/swift/object.ring.gz",
                     builder_path="/etc/swift/object.builder", part_power=18,
                     replicas=3.0, min_part_hours=1, devices=devs, balance=0.5,
                     dispersion=0.0, ring_mtime=1.0, builder_mtime=0.5,
                     builder_matches_ring=True, last_rebalance_hours_ago=100.0)


def one(n: int) -> dict[str, Any]:
    import benchmarks.check_engine_scale as ces
    import checks.catalog  # noqa: F401
    from core.service.pipeline import CheckRequest, run_check
    from storage.ceph import build_state
    from storage.hostfacts.prom import collect_via_prometheus
    from storage.model import ClusterSnapshot, HostFacts, SwiftState

    ces.OSDS_PER_HOST = OSDS_PER_HOST
    raw = ces.synthetic_ceph_raw(n * OSDS_PER_HOST)
    swift = SwiftState(rings=(_ring(n),), recon=())
    parent, child = mp.get_context("fork").Pipe()
    proc = mp.get_context("fork").Process(target=_serve, args=(n, child), daemon=True)
    proc.start()
    url = parent.recv()
    target = _target(n, url)
    sshd: list[str] = []

    def ssh(sub: Any, ceph: Any, sw: Any) -> dict[str, HostFacts]:
        sshd[:] = [h.name for h in sub.hosts]
        return {}  # stubbed: the hosts keep Prometheus's facts

    phases: dict[str, float] = {}

    def check() -> tuple[Any, Any]:
        now = time.time()
        c0 = time.process_time()
        st = build_state(raw, collected_at=now)
        c1 = time.process_time()
        hosts, status = collect_via_prometheus(target, st, swift, ssh=ssh)
        c2 = time.process_time()
        snap = ClusterSnapshot("fleet", now, ceph=st, swift=swift, hosts=hosts,
                               host_facts_collected=True, prometheus=status)
        out = run_check(CheckRequest(target, snapshot=snap, now=now))
        phases.update(ceph_cpu=c1 - c0, prom_cpu=c2 - c1,
                      checks_cpu=time.process_time() - c2)
        return out, status

    runs = []
    for _ in range(2):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        out, status = check()
        runs.append((time.perf_counter() - w0, time.process_time() - c0))
    measured = dict(phases)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gc.collect()
    tracemalloc.start()
    check()
    py_peak = tracemalloc.get_traced_memory()[1] / (1 << 20)
    tracemalloc.stop()
    parent.send("done")
    proc.join(5)
    codes: dict[str, int] = {}
    for f in out.report.findings:
        codes[f.code] = codes.get(f.code, 0) + 1
    internal = [f.message for f in out.report.findings if f.code == "CHECK_INTERNAL_ERROR"]
    return {"hosts": n, "osds": n * OSDS_PER_HOST, "cold_wall": runs[0][0],
            "wall": runs[1][0], "cpu": runs[1][1], "rss_mib": rss, "py_peak_mib": py_peak,
            "prom_s": status.duration_s, "from_prom": len(status.from_prometheus),
            "stale": len(status.stale), "ssh_wanted": len(sshd),
            "findings": len(out.report.findings), "incidents": len(out.incidents),
            "codes": codes, "internal": internal[:1], **measured}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one)))
        return 0
    rows = []
    print(f"{'hosts':>6} {'OSDs':>6} {'wall s':>7} {'(cold)':>7} {'CPU s':>6} "
          f"{'RSS MiB':>8} {'py MiB':>7} {'prom s':>7} {'stale':>5} {'SSH':>4} "
          f"{'findings':>8}")
    for n in (int(x) for x in a.sizes.split(",")):
        p = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True,
                           text=True, check=False, cwd=ROOT)
        if p.returncode != 0:
            print(p.stderr[-2000:])
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(f"{r['hosts']:>6} {r['osds']:>6} {r['wall']:>7.2f} {r['cold_wall']:>7.2f} "
              f"{r['cpu']:>6.2f} {r['rss_mib']:>8.0f} {r['py_peak_mib']:>7.0f} "
              f"{r['prom_s']:>7.2f} {r['stale']:>5} {r['ssh_wanted']:>4} "
              f"{r['findings']:>8}")
        print(f"        CPU: Ceph parse {r['ceph_cpu']:.2f} s, Prometheus facts "
              f"{r['prom_cpu']:.2f} s, checks+incidents {r['checks_cpu']:.2f} s")
        if r["internal"]:
            print(f"  a check failed: {r['internal'][0]}")
        print("        " + ", ".join(f"{c} {k}" for c, k in sorted(r["codes"].items())))
    if len(rows) > 1:
        a0, b0 = rows[0], rows[-1]
        dn = b0["hosts"] - a0["hosts"]
        print(f"{b0['hosts'] / a0['hosts']:.0f}x the hosts -> {b0['wall'] / a0['wall']:.1f}x "
              f"the wall time, {b0['cpu'] / a0['cpu']:.1f}x the CPU, "
              f"{b0['rss_mib'] / a0['rss_mib']:.1f}x the RSS; per added host: "
              f"{(b0['wall'] - a0['wall']) / dn * 1000:.2f} ms wall, "
              f"{(b0['cpu'] - a0['cpu']) / dn * 1000:.2f} ms CPU, "
              f"{(b0['rss_mib'] - a0['rss_mib']) / dn * 1024:.0f} KiB RSS")
    first = next((r for r in rows if r["hosts"] == 1000), None)
    if first is not None:
        ok = first["wall"] <= 5 and first["rss_mib"] <= 500
        print(f"goal at 1000 hosts (<= 5 s, <= 500 MiB): {'met' if ok else 'MISSED'} "
              f"({first['wall']:.2f} s, {first['rss_mib']:.0f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
