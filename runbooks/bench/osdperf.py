"""Per-OSD latency during a benchmark: ``ceph osd perf`` sampled in the background, so a
result (and a "slower" verdict) names the OSDs that were slow while it ran.

The manager averages each OSD's commit/apply latency over its stats period; sampling every
second or two and keeping the samples inside a phase's window is what ``ceph osd perf``
watched by hand gives an operator, recorded beside the result instead of remembered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runbooks.bench.model import BenchResult
from storage.ceph import parse_osd_perf

Sample = tuple[float, dict[int, tuple[float, float]]]
TOP = 3


class OsdLatencySampler:
    """Calls ``fetch`` (the raw ``osd perf`` answer) every ``interval_s`` until stopped.

    A failing fetch is counted, never raised: the benchmark must not die because the
    manager did not answer one sample."""

    def __init__(self, fetch: Callable[[], Any], interval_s: float = 1.0) -> None:
        self._fetch = fetch
        self.interval_s = interval_s
        self.samples: list[Sample] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = time.time()
            try:
                got = parse_osd_perf(self._fetch())
            except Exception:  # noqa: BLE001  (any failure of one sample is one error)
                self.errors += 1
            else:
                if got:
                    self.samples.append((t, got))
            self._stop.wait(self.interval_s)

    def start(self) -> OsdLatencySampler:
        self._thread = threading.Thread(target=self._loop, name="osd-perf", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def __enter__(self) -> OsdLatencySampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def window(self, t0: float, t1: float) -> list[Sample]:
        return [s for s in self.samples if t0 <= s[0] <= t1]


def summarize(samples: Sequence[Sample], interval_s: float) -> dict[str, Any] | None:
    """Per OSD: average and max commit latency, average apply latency over the samples;
    the slowest (by average commit latency, above 0) first. None without a sample."""
    if not samples:
        return None
    acc: dict[int, list[tuple[float, float]]] = {}
    for _, per in samples:
        for osd, v in per.items():
            acc.setdefault(osd, []).append(v)
    osds = {str(osd): {"commit_avg_ms": round(sum(c for c, _ in v) / len(v), 3),
                       "commit_max_ms": round(max(c for c, _ in v), 3),
                       "apply_avg_ms": round(sum(a for _, a in v) / len(v), 3),
                       "samples": len(v)}
            for osd, v in sorted(acc.items())}
    ranked = sorted((o for o in osds if osds[o]["commit_avg_ms"] > 0),
                    key=lambda o: (-osds[o]["commit_avg_ms"], int(o)))
    return {"samples": len(samples), "interval_s": interval_s, "osds": osds,
            "slowest": [int(o) for o in ranked[:TOP]]}


def line(summary: Mapping[str, Any] | None) -> str | None:
    """"slowest OSDs during the run: osd.2 14.0 ms (max 30.0), ..." or None."""
    if not summary:
        return None
    osds = summary.get("osds") or {}
    slow = [o for o in summary.get("slowest") or [] if str(o) in osds]
    if not slow:
        return (f"per-OSD commit latency: 0 ms on every OSD over {summary.get('samples')} "
                "sample(s) of ceph osd perf")
    parts = [f"osd.{o} {osds[str(o)]['commit_avg_ms']:.1f} ms "
             f"(max {osds[str(o)]['commit_max_ms']:.1f})" for o in slow]
    return (f"slowest OSDs (commit latency, avg of {summary.get('samples')} ceph osd perf "
            f"sample(s)): " + ", ".join(parts))


def attach(results: Sequence[BenchResult], sampler: OsdLatencySampler) -> None:
    """Each result gets the samples of its own window in ``extra["osd_latency"]``."""
    for r in results:
        t0 = float(r.started_at)
        summ = summarize(sampler.window(t0, t0 + max(float(r.duration_s), 0.0) + 0.5),
                         sampler.interval_s)
        if summ is not None:
            r.extra["osd_latency"] = summ


def change_note(base: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
                ) -> str | None:
    """The OSDs whose average commit latency rose most from the base runs to the new ones
    (rows as stored: ``extra.osd_latency``): where to look when the verdict is slower."""
    def avg(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        per: dict[str, list[float]] = {}
        for r in rows:
            ol = (r.get("extra") or {}).get("osd_latency") or {}
            for o, v in (ol.get("osds") or {}).items():
                per.setdefault(str(o), []).append(float(v.get("commit_avg_ms", 0.0)))
        return {o: sum(v) / len(v) for o, v in per.items() if v}

    b, n = avg(base), avg(new)
    common = sorted(set(b) & set(n), key=lambda o: -(n[o] - b[o]))
    if not common:
        return None
    top = [o for o in common if n[o] > b[o]][:TOP]
    if not top:
        return "per-OSD commit latency: no OSD slower than in the runs compared with"
    return "per-OSD commit latency (avg): " + ", ".join(
        f"osd.{o} {b[o]:.1f} -> {n[o]:.1f} ms" for o in top)
