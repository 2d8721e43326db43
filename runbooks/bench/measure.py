"""What one run's raw measurements say: latency percentiles, per-second series, and
whether throughput settled (the steady-state rule: the live stop and the result's line).
Comparing runs against a baseline is ``runbooks.bench.stats``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MIB = 1024 * 1024


def latency_summary(lat_ns: Sequence[int]) -> dict[str, float | None]:
    """avg, p50, p90, p99, p99.9 and max in milliseconds (None when nothing completed)."""
    if not lat_ns:
        return {k: None for k in ("lat_avg_ms", "lat_p50_ms", "lat_p90_ms", "lat_p99_ms",
                                  "lat_p999_ms", "lat_max_ms")}
    a = np.asarray(lat_ns, dtype=np.float64) / 1e6
    p50, p90, p99, p999 = np.percentile(a, [50, 90, 99, 99.9])
    return {"lat_avg_ms": float(a.mean()), "lat_p50_ms": float(p50), "lat_p90_ms": float(p90),
            "lat_p99_ms": float(p99), "lat_p999_ms": float(p999), "lat_max_ms": float(a.max())}


def series_from_buckets(sec_ops: Sequence[int], sec_bytes: Sequence[int],
                        sec_lat_ns: Sequence[int], elapsed_s: float) -> list[dict[str, float]]:
    """Per-second throughput and mean latency; the last bucket is scaled to its length."""
    out = []
    for i, (o, b, ln) in enumerate(zip(sec_ops, sec_bytes, sec_lat_ns)):
        span = min(1.0, max(1e-3, elapsed_s - i))
        out.append({"t": float(i + 1), "ops_s": o / span, "mb_s": b / MIB / span,
                    "lat_ms": (ln / o / 1e6) if o else 0.0, "partial": float(span < 0.999)})
    return out


def steady(series: Sequence[Mapping[str, float]], drop_head: int = 1
           ) -> list[Mapping[str, float]]:
    """Per-second samples without ramp-up (first ``drop_head`` s) and the partial tail."""
    body = [s for s in series if not s.get("partial")]
    return list(body[drop_head:]) if len(body) > drop_head + 1 else list(body)


STEADY_WINDOW_S = 3
STEADY_SLOPE_MAX = 0.02  # of the window's mean, per second (fio's iops_slope, as a share)
STEADY_CV_MAX = 0.15


def steady_state(series: Sequence[Mapping[str, float]], window: int = STEADY_WINDOW_S,
                 slope_max: float = STEADY_SLOPE_MAX, cv_max: float = STEADY_CV_MAX
                 ) -> dict[str, Any]:
    """Did throughput settle? The first window of ``window`` whole seconds (after the
    first second) whose least-squares slope stays under ``slope_max`` of its mean per
    second and whose variation under ``cv_max``; else the last window's figures. A run
    with fewer whole seconds than the window cannot tell (``reached`` None)."""
    rule = (f"{window} s window: slope <= {slope_max:.0%}/s of its mean, "
            f"variation <= {cv_max:.0%}")
    body = [float(x.get("ops_s", 0.0)) for x in steady(series)]
    if len(body) < window:
        return {"reached": None, "rule": rule, "samples": len(body)}
    last: dict[str, Any] = {}
    for end in range(window, len(body) + 1):
        w = body[end - window:end]
        m = float(np.mean(w))
        slope = float(np.polyfit(np.arange(window), w, 1)[0]) / m if m > 0 else math.inf
        var = cv(w)
        last = {"slope_pct": round(100 * slope, 2) if math.isfinite(slope) else None,
                "cv_pct": round(100 * var, 2)}
        if m > 0 and abs(slope) <= slope_max and var <= cv_max:
            return {"reached": True, "from_s": end - window + 2, "rule": rule,
                    "samples": len(body), **last}
    return {"reached": False, "rule": rule, "samples": len(body), **last}


def steady_reached(ops_per_s: Sequence[float]) -> bool:
    """The live form of the rule: True once whole seconds so far (ramp-up included, it is
    dropped here) hold a steady window. Engines without a steady-state stop of their own
    (rados bench, the native drivers, the Swift mix) are stopped when this turns True."""
    return bool(steady_state([{"ops_s": float(v)} for v in ops_per_s]).get("reached"))


def fio_steadystate_options() -> dict[str, str]:
    """fio's own steady-state stop with the slope part of the same rule (fio has no
    variation criterion: the result's verdict still applies the whole rule)."""
    return {"steadystate": f"iops_slope:{STEADY_SLOPE_MAX * 100:g}%",
            "steadystate_duration": str(STEADY_WINDOW_S), "steadystate_ramp_time": "1"}


def steady_line(st: Mapping[str, Any] | None) -> str | None:
    """One line for a result's ``extra["steady_state"]``."""
    if not st:
        return None
    stop = ""
    if st.get("stopped_early"):
        stop = f"; phase stopped when steady, after {st.get('stopped_after_s', 0):.1f} s"
    elif st.get("stop_enabled"):
        stop = "; ran to its maximum duration"
    if st.get("reached") is None:
        return (f"steady state: too short to tell ({st.get('samples', 0)} whole second(s) "
                f"after ramp-up; {st.get('rule')}){stop}")
    figs = f"slope {st.get('slope_pct')}%/s, variation {st.get('cv_pct')}%"
    if st["reached"]:
        return f"steady state: reached from second {st.get('from_s')} ({figs}){stop}"
    return (f"steady state: NOT reached (last window {figs}; {st.get('rule')}){stop}: a "
            "longer --duration measures the cluster rather than its warm-up")


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation (sample std / mean); 0 for fewer than 2 values."""
    if len(values) < 2:
        return 0.0
    m = float(np.mean(values))
    return float(np.std(values, ddof=1) / m) if m else 0.0
