"""The noise-aware verdict of a comparison (what one run's measurements say, latency
percentiles, per-second series, steady state, is ``runbooks.bench.measure``).

Why so careful: on small shared machines two identical 5-second ``rados bench`` runs have
differed by 40%. A verdict therefore needs (a) a change larger than
``max(min_change, k x noise)`` where noise is the measured spread, and (b) a significance
test (Welch's t-test with 3-4 runs a side, Mann-Whitney U with 5+; per-second samples
when there are fewer runs). Anything else is "no significant change" or "inconclusive";
we never guess.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from runbooks.bench import figures
from runbooks.bench.measure import cv, steady


class Verdict(StrEnum):
    """A comparison's verdict against its baseline (a str: stored and shown as is)."""

    FASTER = "faster"
    SLOWER = "slower"
    SAME = "no significant change"
    INCONCLUSIVE = "inconclusive"


FASTER, SLOWER, SAME, INCONCLUSIVE = (Verdict.FASTER, Verdict.SLOWER, Verdict.SAME,
                                      Verdict.INCONCLUSIVE)
# metric -> True when higher is better
METRICS: dict[str, bool] = {"ops_s": True, "mb_s": True, "lat_avg_ms": False,
                            "lat_p99_ms": False}
# series key per metric (per-second samples)
SERIES_KEY = {"ops_s": "ops_s", "mb_s": "mb_s", "lat_avg_ms": "lat_ms"}
MAX_USEFUL_THRESHOLD = 0.5  # a noise-derived threshold above 50% can tell nothing
# Until 3 invocations of a fingerprint are stored, the drift of a shared machine from one
# invocation to the next is unknown; assume this much rather than none (two identical
# 5-second rados bench runs have differed by up to 40% on these machines).
ASSUMED_DRIFT = 0.10


@dataclass(frozen=True)
class MetricChange:
    metric: str
    base: float | None
    new: float | None
    change: float | None  # relative, (new - base) / base
    noise: float  # relative noise of the difference
    threshold: float  # |log(new/base)| needed: +(e^t - 1) or -(1 - e^-t) as a change
    p_value: float | None
    test: str
    n_base: int
    n_new: int
    verdict: str
    higher_is_better: bool

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "threshold_up": self.up, "threshold_down": self.down}

    def line(self) -> str:
        """The change in the figures the result table prints (``figures.figure``)."""
        name = figures.label(self.metric)
        if self.base is None or self.new is None or self.change is None:
            return f"{name}: no data"
        p = f", p={figures.p_value(self.p_value)} ({self.test})" \
            if self.p_value is not None else ""
        return (f"{name}: {figures.figure(self.metric, self.base)} -> "
                f"{figures.figure(self.metric, self.new)} {figures.unit(self.metric)} "
                f"({figures.percent(self.change)}); noise {self.noise:.1%}, threshold "
                f"+{self.up:.0%}/-{self.down:.0%}{p}: {self.verdict}")

    @property
    def up(self) -> float:
        """The smallest rise that counts, as a relative change."""
        return math.expm1(self.threshold)

    @property
    def down(self) -> float:
        """The smallest fall that counts, as a relative change (positive number)."""
        return -math.expm1(-self.threshold)


@dataclass
class Comparison:
    verdict: str
    basis: str  # "runs" | "per-second samples"
    metrics: list[MetricChange]
    baseline: str  # what we compared against, for people
    base_ids: list[int]
    new_ids: list[int]
    state_changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    k: float = 3.0
    min_change: float = 0.10
    workload: str = ""
    base_series: list[list[dict[str, float]]] = field(default_factory=list)
    new_series: list[list[dict[str, float]]] = field(default_factory=list)
    # no earlier run to compare with: no better/worse, this run is the baseline
    has_baseline: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "basis": self.basis, "baseline": self.baseline,
                "workload": self.workload, "base_ids": self.base_ids, "new_ids": self.new_ids,
                "metrics": [m.to_dict() for m in self.metrics],
                "state_changes": self.state_changes, "notes": self.notes, "k": self.k,
                "min_change": self.min_change, "has_baseline": self.has_baseline}

    def lines(self) -> list[str]:
        if not self.has_baseline:
            return [f"Compared ({self.workload}): no baseline yet; this run is the baseline "
                    "(the next run of the same kind, target and parameters compares with it)"]
        reps = max((m.n_new for m in self.metrics if self.basis == "runs"), default=0)
        how = "figures as in the table" + (f" (median of {reps} runs)" if reps > 1 else "")
        out = [(f"Verdict ({self.workload}): {self.verdict.upper()} against {self.baseline}"),
               (f"  {how}; tested on {self.basis}: a change must exceed max("
                f"{self.min_change:.0%}, {self.k:g} x noise) as a log ratio and pass the "
                "test at p<0.05")]
        out += ["  " + m.line() for m in self.metrics]
        if self.state_changes:
            out.append("  What changed in the cluster: " + "; ".join(self.state_changes))
        else:
            out.append("  What changed in the cluster: nothing seen (versions, OSDs, pool, "
                       "health are the same)")
        out += [f"  note: {n}" for n in self.notes]
        return out


def _test(base: Sequence[float], new: Sequence[float], by_runs: bool) -> tuple[float | None, str]:
    from scipy import stats

    if len(base) < 3 or len(new) < 3:
        return None, "none"
    if np.ptp(list(base) + list(new)) == 0:
        return 1.0, "identical"
    if by_runs and min(len(base), len(new)) < 5:
        r = stats.ttest_ind(new, base, equal_var=False)
        p = float(r.pvalue)
        return (p if not math.isnan(p) else None), "Welch t"
    r2 = stats.mannwhitneyu(new, base, alternative="two-sided")
    return float(r2.pvalue), "Mann-Whitney U"


def between_group_cv(groups: Sequence[Sequence[Mapping[str, Any]]], metric: str
                     ) -> float | None:
    """Relative spread between invocations (group medians) beyond what the spread within
    them explains: the drift of a shared machine from one invocation to the next. Needs
    3+ stored groups; None when unknown."""
    meds, within, sizes = [], [], []
    for g in groups:
        vals = [float(r[metric]) for r in g if r.get(metric) is not None
                and r.get("status", "ok") == "ok"]
        if vals:
            meds.append(float(np.median(vals)))
            within.append(cv(vals))
            sizes.append(len(vals))
    if len(meds) < 3:
        return None
    total = cv(meds) ** 2
    explained = float(np.mean([w ** 2 / n for w, n in zip(within, sizes)]))
    return math.sqrt(max(0.0, total - explained))


def compare_metric(metric: str, base: Sequence[float], new: Sequence[float], by_runs: bool,
                   k: float, min_change: float, alpha: float = 0.05,
                   between: float = 0.0,
                   level: tuple[float, float] | None = None) -> MetricChange:
    """One metric's change, noise, threshold, test and verdict. ``between`` is the relative
    spread between invocations seen in the history (0 when unknown). ``level``: the two
    figures the result table prints (the runs' own, or their medians); the change is
    theirs, while the noise and the test come from ``base`` and ``new`` (per-second
    samples when there are too few runs), so the verdict quotes the table."""
    hib = METRICS.get(metric, True)
    base = [float(v) for v in base if v is not None and math.isfinite(v)]
    new = [float(v) for v in new if v is not None and math.isfinite(v)]
    if not base or not new:
        return MetricChange(metric, None, None, None, 0.0, min_change, None, "none",
                            len(base), len(new), INCONCLUSIVE, hib)
    mb, mn = (float(np.median(base)), float(np.median(new))) if level is None else level
    change = (mn - mb) / mb if mb else None
    if by_runs:
        # relative standard error of the difference of two means, from the pooled spread
        nb, nn = len(base), len(new)
        if nb + nn > 2 and (nb > 1 or nn > 1):
            pooled = math.sqrt(((nb - 1) * cv(base) ** 2 + (nn - 1) * cv(new) ** 2)
                               / max(1, (nb - 1) + (nn - 1)))
        else:
            pooled = 0.0
        noise = math.sqrt(pooled ** 2 * (1 / nb + 1 / nn) + 2 * between ** 2)
    else:
        # per-second samples are autocorrelated and miss the run-to-run spread: take the
        # larger one-side spread as it is, never shrunk by sqrt(n)
        noise = max(cv(base), cv(new), math.sqrt(2) * between)
    # judged on the log ratio: symmetric for up and down (a 4x slowdown is -75% but as
    # large a change as a 4x speed-up), and noise (a relative spread) is on that scale
    threshold = max(math.log1p(min_change), k * noise)
    p, test = _test(base, new, by_runs)
    size = abs(math.log(mn / mb)) if mb > 0 and mn > 0 else None
    if change is None or size is None or p is None:
        verdict = INCONCLUSIVE
    elif size >= threshold:
        if p < alpha:
            better = (change > 0) == hib
            verdict = FASTER if better else SLOWER
        else:
            verdict = INCONCLUSIVE
    elif threshold > MAX_USEFUL_THRESHOLD or size >= math.log1p(min_change):
        # a change larger than min_change but inside the noise: it may be real or the
        # machine; say so instead of "no change"
        verdict = INCONCLUSIVE
    else:
        verdict = SAME
    return MetricChange(metric, mb, mn, change, noise, threshold, p, test, len(base),
                        len(new), verdict, hib)


def state_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs in the recorded cluster state (versions, OSD counts, pool, health)."""
    out = []
    for key in ("versions", "num_osds", "num_up_osds", "num_in_osds", "health",
                "health_checks", "pool", "swift_version", "proxy"):
        b, a = before.get(key), after.get(key)
        if b != a and (b is not None or a is not None):
            out.append(f"{key}: {b} -> {a}")
    return out


def _level(metric: str, base: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
           ) -> tuple[float, float] | None:
    """The figures of both sides as the result table prints them: each run's own value
    (the median of the runs when repeated); None when a side has none."""
    sides = []
    for rows in (base, new):
        vals = [float(r[metric]) for r in rows if r.get(metric) is not None
                and math.isfinite(float(r[metric]))]
        if not vals:
            return None
        sides.append(float(np.median(vals)))
    return sides[0], sides[1]


def compare_groups(base: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]],
                   k: float = 3.0, min_change: float = 0.10, baseline: str = "",
                   primary: str = "ops_s",
                   history: Sequence[Sequence[Mapping[str, Any]]] = ()) -> Comparison:
    """Compare two sets of stored runs (rows or ``BenchResult.to_row()`` dicts).
    ``history``: earlier invocations (groups) of the same fingerprint, for the noise
    between invocations."""
    base_ok = [r for r in base if r.get("status", "ok") == "ok"]
    new_ok = [r for r in new if r.get("status", "ok") == "ok"]
    by_runs = len(base_ok) >= 3 and len(new_ok) >= 3
    metrics: list[MetricChange] = []
    notes: list[str] = []
    betw: dict[str, float] = {}
    known = False
    for m in METRICS:
        b = between_group_cv(history, m) if history else None
        known = known or b is not None
        betw[m] = b if b is not None else ASSUMED_DRIFT
    if known:
        notes.append(f"noise between invocations from {len(history)} stored ones: "
                     f"{betw[primary]:.1%}")
    else:
        notes.append("fewer than 3 earlier invocations stored: the drift between "
                     f"invocations is not known yet; {ASSUMED_DRIFT:.0%} assumed")
    for m in METRICS:
        if by_runs:
            bv = [r.get(m) for r in base_ok]
            nv = [r.get(m) for r in new_ok]
        else:
            key = SERIES_KEY.get(m)
            if key is None:
                continue
            bv = [s[key] for r in base_ok for s in steady(r.get("series") or [])
                  if s.get("ops_s")]
            nv = [s[key] for r in new_ok for s in steady(r.get("series") or [])
                  if s.get("ops_s")]
        metrics.append(compare_metric(m, [v for v in bv if v is not None],
                                      [v for v in nv if v is not None], by_runs, k,
                                      min_change, between=betw[m],
                                      level=_level(m, base_ok, new_ok)))
    if not by_runs:
        notes.append(f"{len(base_ok)} run(s) against {len(new_ok)}: judged on per-second "
                     "samples (first second and partial tail dropped); use --repeat 3 or more "
                     "for a run-level test")
    prim = next((m for m in metrics if m.metric == primary), None)
    lat = next((m for m in metrics if m.metric == "lat_avg_ms"), None)
    verdict = prim.verdict if prim else INCONCLUSIVE
    if prim and lat and verdict in (FASTER, SLOWER) and lat.verdict in (FASTER, SLOWER) \
            and lat.verdict != verdict:
        verdict = INCONCLUSIVE
        notes.append("throughput and latency disagree")
    errs_b = sum(int(r.get("errors") or 0) for r in base_ok)
    errs_n = sum(int(r.get("errors") or 0) for r in new_ok)
    if errs_n > errs_b:
        notes.append(f"errors: {errs_b} -> {errs_n}")
    sc = state_changes(base_ok[0].get("state") or {}, new_ok[-1].get("state") or {}) \
        if base_ok and new_ok else []
    if not base_ok:
        notes.append("no comparable baseline runs")
    return Comparison(
        verdict=verdict, basis="runs" if by_runs else "per-second samples", metrics=metrics,
        baseline=baseline, base_ids=[int(r["id"]) for r in base_ok if r.get("id") is not None],
        new_ids=[int(r["id"]) for r in new_ok if r.get("id") is not None],
        state_changes=sc, notes=notes, k=k, min_change=min_change,
        workload=str((new_ok or base_ok or [{}])[0].get("workload", "")),
        base_series=[list(r.get("series") or []) for r in base_ok],
        new_series=[list(r.get("series") or []) for r in new_ok], has_baseline=bool(base_ok))
