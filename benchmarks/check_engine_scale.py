"""How the check engine scales: synthetic clusters of 1k-10k OSDs plus a big Swift ring.

The Ceph part is built in the JSON shapes of the real commands (``osd dump``, ``osd tree``,
``osd pool ls detail``, ``df``, ``pg stat``, ``pg dump_stuck``, ``health detail``,
``osd df``) and parsed with ``storage.ceph.build_state``, so the parsers are measured too.
The Swift ring (2^18 partitions x 3 replicas over 2,000 devices) is a ``RingState`` whose
per-device partition counts come from a real replica-to-partition-to-device table.

Run: ``.venv/bin/python benchmarks/check_engine_scale.py [--sizes 1000,2000,5000,10000]``.
Prints, per size: parse CPU, check CPU (time.process_time, best of --repeat), findings,
and peak Python memory of parse+check (tracemalloc), then the process's max RSS.
Goal for 10k OSDs: under 2 s CPU and under 1 GiB.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
import tracemalloc
from array import array
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checks.engine import run_checks
from storage.ceph import build_state
from storage.model import (
    ClusterSnapshot,
    RingDevice,
    RingState,
    SwiftState,
)

VERSION = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)"
N_POOLS = 100
OSDS_PER_HOST = 10


def _pow2_floor(x: float) -> int:
    n = 1
    while n * 2 <= x:
        n *= 2
    return n


def synthetic_ceph_raw(n_osds: int, seed: int = 1) -> dict[str, Any]:
    """The raw JSON ``collect_raw`` would return for a big, slightly unwell cluster."""
    rnd = random.Random(seed)
    n_hosts = max(1, n_osds // OSDS_PER_HOST)
    stamp = "2026-11-20T10:00:00.000000+0000"
    osds, xinfo, df_nodes = [], [], []
    down = set(rnd.sample(range(n_osds), max(1, n_osds // 500)))
    out = set(rnd.sample(sorted(down), len(down) // 2)) | {3}
    for i in range(n_osds):
        up = 0 if i in down else 1
        inn = 0 if i in out else 1
        osds.append({
            "osd": i, "uuid": f"00000000-0000-0000-0000-{i:012d}", "up": up, "in": inn,
            "weight": float(inn), "primary_affinity": 1.0, "last_clean_begin": 0,
            "last_clean_end": 0, "up_from": 10, "up_thru": 12, "down_at": 9 if up else 500,
            "lost_at": 0, "public_addr": f"10.0.{i // 250}.{i % 250}:6801/1",
            "cluster_addr": f"10.1.{i // 250}.{i % 250}:6803/1",
            "state": ["exists", "up"] if up else ["exists"],
        })
        xinfo.append({"osd": i, "down_stamp": stamp if not up else "0.000000",
                      "laggy_probability": 0, "laggy_interval": 0, "features": 1,
                      "old_weight": 0, "dead_epoch": 0})
    tree_nodes: list[dict[str, Any]] = [{"id": -1, "name": "default", "type": "root",
                                         "type_id": 11,
                                         "children": [-2 - h for h in range(n_hosts)]}]
    for h in range(n_hosts):
        ids = list(range(h * OSDS_PER_HOST, min(n_osds, (h + 1) * OSDS_PER_HOST)))
        tree_nodes.append({"id": -2 - h, "name": f"host{h:04d}", "type": "host",
                           "type_id": 1, "pool_weights": {}, "children": ids})
    for i in range(n_osds):
        tree_nodes.append({"id": i, "device_class": "hdd", "name": f"osd.{i}", "type": "osd",
                           "type_id": 0, "crush_weight": 7.27, "depth": 2,
                           "pool_weights": {}, "exists": 1,
                           "status": "down" if i in down else "up",
                           "reweight": 0.0 if i in out else 1.0, "primary_affinity": 1})
    budget = n_osds * 100 / 3
    pools, df_pools = [], []
    for p in range(1, N_POOLS + 1):
        name = "device_health_metrics" if p == 1 else f"pool{p:03d}"
        pg = 1 if p == 1 else _pow2_floor(budget / (N_POOLS - 1))
        if p == 7:
            pg = 8  # far too few
        if p == 8:
            pg = 48  # not a power of two
        cache = p == 100
        pools.append({
            "pool_id": p, "pool_name": name, "type": 1, "size": 3, "min_size": 2,
            "crush_rule": 0, "pg_autoscale_mode": "off", "pg_num": pg,
            "pg_placement_num": pg, "pg_placement_num_target": pg, "pg_num_target": pg,
            "tiers": [], "tier_of": 99 if cache else -1, "read_tier": -1, "write_tier": -1,
            "cache_mode": "writeback" if cache else "none", "target_max_bytes": 0,
            "target_max_objects": 0, "cache_target_dirty_ratio_micro": 800000,
            "cache_target_dirty_high_ratio_micro": 600000,
            "cache_target_full_ratio_micro": 800000, "hit_set_params": {"type": "none"},
            "hit_set_period": 0, "hit_set_count": 0, "min_read_recency_for_promote": 0,
            "min_write_recency_for_promote": 0, "quota_max_bytes": 0, "quota_max_objects": 0,
            "options": {}, "application_metadata": {"rbd": {}},
        })
        df_pools.append({"name": name, "id": p, "stats": {
            "stored": rnd.randint(1, 1 << 40), "objects": rnd.randint(1, 10**7),
            "kb_used": 0, "bytes_used": 0, "percent_used": rnd.random() * 0.5,
            "max_avail": 1 << 44}})
    total_pgs = sum(int(p["pg_num"]) for p in pools)  # type: ignore[call-overload]
    for i in range(n_osds):
        df_nodes.append({"id": i, "device_class": "hdd", "name": f"osd.{i}", "type": "osd",
                         "type_id": 0, "crush_weight": 7.27, "depth": 2, "reweight": 1.0,
                         "kb": 7_800_000_000, "kb_used": 0, "kb_avail": 1_000_000_000,
                         "utilization": 40.0 + rnd.random() * 50.0, "var": 1.0,
                         "pgs": total_pgs * 3 // n_osds, "status": "up"})
    degraded = total_pgs // 100
    stuck = [{"pgid": f"{rnd.randint(2, 99)}.{j:x}", "state": "active+undersized+degraded",
              "last_active": stamp, "last_clean": stamp, "up": [1, 2], "acting": [1, 2],
              "up_primary": 1, "acting_primary": 1} for j in range(degraded // 10)]
    return {
        "osd dump": {"epoch": 600, "fsid": "f" * 8 + "-0000-0000-0000-" + "0" * 12,
                     "flags_set": ["noout", "sortbitwise"], "full_ratio": 0.949999988079071,
                     "backfillfull_ratio": 0.8999999761581421,
                     "nearfull_ratio": 0.8500000238418579, "require_osd_release": "pacific",
                     "pools": pools, "osds": osds, "osd_xinfo": xinfo},
        "osd tree": {"nodes": tree_nodes, "stray": []},
        "osd pool ls detail": pools,
        "df": {"stats": {"total_bytes": n_osds * 8 << 40,
                         "total_avail_bytes": n_osds * 4 << 40}, "pools": df_pools},
        "pg stat": {"pg_ready": True, "pg_summary": {"num_pgs": total_pgs, "num_pg_by_state": [
            {"name": "active+clean", "num": total_pgs - degraded},
            {"name": "active+undersized+degraded", "num": degraded}]}},
        "pg dump_stuck": {"pg_ready": True, "stuck_pg_stats": stuck},
        "health detail": {"status": "HEALTH_WARN", "mutes": [], "checks": {
            "OSD_DOWN": {"severity": "HEALTH_WARN", "muted": False,
                         "summary": {"message": f"{len(down - out)} osds down"},
                         "detail": [{"message": f"osd.{i} is down"} for i in sorted(down)]},
            "OSDMAP_FLAGS": {"severity": "HEALTH_WARN", "muted": False,
                             "summary": {"message": "noout flag(s) set"}, "detail": []}}},
        "status": {"quorum_names": ["a", "b", "c"], "monmap": {"num_mons": 3}},
        "quorum_status": {"quorum_names": ["a", "b", "c"],
                          "monmap": {"mons": [{"name": n} for n in "abc"]}},
        "versions": {"overall": {VERSION: n_osds + 5}},
        "time-sync-status": {"time_skew_status": {n: {"skew": 0.001} for n in "abc"}},
        "osd df": {"nodes": df_nodes, "stray": []},
        "config": {"mon_max_pg_per_osd": 250, "mon_osd_down_out_interval": 600},
        "osdmap_stamps": {"500": stamp},
        "errors": {},
    }


def synthetic_ring(part_power: int = 18, n_devs: int = 2000, replicas: int = 3,
                   seed: int = 2) -> RingState:
    """An object ring: real replica2part2dev arrays, counted into per-device parts."""
    import numpy as np

    rng = np.random.default_rng(seed)
    parts = 1 << part_power
    table = [array("H", rng.integers(0, n_devs, parts, dtype=np.uint16).tobytes())
             for _ in range(replicas)]
    counts = np.zeros(n_devs, dtype=np.int64)
    for row in table:
        counts += np.bincount(np.frombuffer(row, dtype=np.uint16), minlength=n_devs)
    wanted = parts * replicas / n_devs
    devices = tuple(
        RingDevice(id=d, region=1, zone=1 + d % 5, ip=f"10.2.{d // 200}.{d % 200 + 1}",
                   port=6200, device=f"d{d}", weight=100.0, parts=int(counts[d]),
                   parts_wanted=round(wanted))
        for d in range(n_devs))
    balance = float(max(abs(c - wanted) / wanted for c in counts) * 100)
    return RingState(kind="object", ring_path="/etc/swift/object.ring.gz",
                     builder_path="/etc/swift/object.builder", part_power=part_power,
                     replicas=float(replicas), min_part_hours=1, devices=devices,
                     balance=balance, dispersion=0.0, ring_mtime=1.0, builder_mtime=0.5,
                     builder_matches_ring=True, last_rebalance_hours_ago=100.0)


def one_size(n_osds: int, ring: RingState, repeat: int) -> dict[str, float]:
    raw = synthetic_ceph_raw(n_osds)
    swift = SwiftState(rings=(ring,), recon=())
    now = time.time()
    best_parse = best_check = float("inf")
    n_find = 0
    for _ in range(repeat):
        gc.collect()
        t0 = time.process_time()
        st = build_state(raw, collected_at=now)
        t1 = time.process_time()
        snap = ClusterSnapshot("bench", now, ceph=st, swift=swift)
        rep = run_checks(snap, now=now)
        t2 = time.process_time()
        best_parse, best_check = min(best_parse, t1 - t0), min(best_check, t2 - t1)
        n_find = len(rep.findings)
        internal = [f for f in rep.findings if f.code == "CHECK_INTERNAL_ERROR"]
        if internal:
            raise SystemExit(f"a check failed on the synthetic cluster: {internal[0].message}")
    gc.collect()
    tracemalloc.start()
    st = build_state(raw, collected_at=now)
    run_checks(ClusterSnapshot("bench", now, ceph=st, swift=swift), now=now)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"osds": n_osds, "parse_s": best_parse, "check_s": best_check,
            "findings": n_find, "peak_mib": peak / (1 << 20)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,5000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import checks.catalog  # noqa: F401  (register the checks before timing)

    t0 = time.process_time()
    ring = synthetic_ring()
    ring_s = time.process_time() - t0
    print(f"Swift ring: 2^{ring.part_power} partitions x {ring.replicas:g} replicas over "
          f"{len(ring.devices)} devices (built in {ring_s:.2f} s CPU)")
    print(f"{'OSDs':>6} {'hosts':>6} {'pools':>5} {'parse CPU s':>11} {'check CPU s':>11} "
          f"{'total CPU s':>11} {'findings':>8} {'peak MiB':>8}")
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        r = one_size(n, ring, args.repeat)
        rows.append(r)
        print(f"{n:>6} {n // OSDS_PER_HOST:>6} {N_POOLS:>5} {r['parse_s']:>11.3f} "
              f"{r['check_s']:>11.3f} {r['parse_s'] + r['check_s']:>11.3f} "
              f"{int(r['findings']):>8} {r['peak_mib']:>8.1f}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max RSS of this process: {rss:.0f} MiB")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        grow = (b["parse_s"] + b["check_s"]) / max(1e-9, a["parse_s"] + a["check_s"])
        print(f"{b['osds'] / a['osds']:.0f}x the OSDs -> {grow:.1f}x the CPU time")
    last = rows[-1]
    ok = last["parse_s"] + last["check_s"] < 2.0 and rss < 1024
    print(f"goal (< 2 s CPU, < 1 GiB) at {int(last['osds'])} OSDs: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
