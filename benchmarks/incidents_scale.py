"""How long the incident correlation takes when a large part of a cluster is down.

Each down OSD gives a root (OSD_DATA_UNMOUNTED) and a consequence (OSD_DOWN_IN), plus
Ceph's OSD_DOWN and the cluster-wide PG finding. Prints findings, incidents and seconds.
Run: .venv/bin/python benchmarks/incidents_scale.py
"""

from __future__ import annotations

import time

from checks.incidents import correlate
from checks.model import Finding, Severity


def findings(n: int) -> list[Finding]:
    fs = []
    for i in range(n):
        fs.append(Finding("OSD_DATA_UNMOUNTED", Severity.CRIT, f"osd.{i}", "m", {},
                          "osd-remount", f"osd.{i}"))
        fs.append(Finding("OSD_DOWN_IN", Severity.CRIT, f"osd.{i}", "m", {}, "osd-start",
                          f"osd.{i}"))
    fs.append(Finding("CEPH_HEALTH", Severity.WARN, "ceph OSD_DOWN", "m",
                      {"ceph_code": "OSD_DOWN",
                       "detail": [f"osd.{i} (root=default,host=h{i // 20}) is down"
                                  for i in range(min(n, 20))]}))
    fs.append(Finding("PGS_NOT_ACTIVE_CLEAN", Severity.CRIT, "cluster lab pgs", "m",
                      {"not_clean": {"peering": 5}, "blocking": 5}))
    return fs


def main() -> None:
    for n in (10, 100, 1000, 10_000):
        fs = findings(n)
        t = time.perf_counter()
        inc = correlate(fs)
        dt = time.perf_counter() - t
        assert len(inc) == n
        print(f"{n:>6} OSDs down: {len(fs):>6} findings -> {len(inc):>6} incidents "
              f"in {dt * 1000:.1f} ms")


if __name__ == "__main__":
    main()
