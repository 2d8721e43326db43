"""How a benchmark figure is written: one function for the result table and the verdict
lines, so the verdict quotes exactly what the table shows (same rounding, same units, no
scientific notation: ``1,050.0`` never ``1.05e+03``)."""

from __future__ import annotations

import math

# metric -> (label, unit, decimals)
FIGURES: dict[str, tuple[str, str, int]] = {
    "ops_s": ("ops/s", "ops/s", 1),
    "mb_s": ("MB/s", "MB/s", 2),
    "lat_avg_ms": ("avg latency", "ms", 2),
    "lat_p50_ms": ("p50 latency", "ms", 2),
    "lat_p90_ms": ("p90 latency", "ms", 2),
    "lat_p99_ms": ("p99 latency", "ms", 2),
    "lat_p999_ms": ("p99.9 latency", "ms", 2),
    "lat_max_ms": ("max latency", "ms", 2),
}


def figure(metric: str, value: float | None) -> str:
    """A metric's value as the table prints it ("-" when unknown)."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:,.{FIGURES.get(metric, ('', '', 2))[2]}f}"


def label(metric: str) -> str:
    return FIGURES.get(metric, (metric, "", 2))[0]


def unit(metric: str) -> str:
    return FIGURES.get(metric, ("", "", 2))[1]


def p_value(p: float) -> str:
    """A p-value without scientific notation."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def percent(change: float) -> str:
    return f"{change:+,.1%}"
