"""The benchmark API every front end calls (CLI, Slack bot, TUI).

Benchmarks write to the cluster, so they are runbooks: ``plan_bench`` validates the
options, the caps and the cluster's health and returns the plan without changing
anything; ``run_bench`` takes the per-cluster lock target ``bench``, audits every phase,
stores the results in the journal and cleans up (also after a cancel). ``compare`` gives
the noise-aware verdict against earlier runs of the same fingerprint or a named baseline.

This module is the one place front ends import from; the parts live beside it:
``runbooks.bench.planning`` (plan_bench), ``runbooks.bench.run`` (run_bench) and
``runbooks.bench.results`` (detail lines, compare, history, baselines).
"""

from __future__ import annotations

from runbooks.bench.charts import chart_png, chart_text
from runbooks.bench.common import BenchLimits
from runbooks.bench.model import KINDS, BenchOptions, BenchResult, Progress
from runbooks.bench.planning import (
    CLIENT_TOOLS,
    DEFAULT_MODES,
    LOCK_TARGET,
    VALID_MODES,
    BenchPlan,
    plan_bench,
)
from runbooks.bench.results import (
    bench_after_fix,
    compare,
    detail_lines,
    history,
    set_baseline,
    verify_line,
)
from runbooks.bench.run import BenchReport, run_bench
from runbooks.bench.stats import Comparison
from runbooks.model import Refused

__all__ = ["CLIENT_TOOLS", "DEFAULT_MODES", "KINDS", "LOCK_TARGET", "VALID_MODES",
           "BenchLimits", "BenchOptions", "BenchPlan", "BenchReport", "BenchResult",
           "Comparison", "Progress", "Refused", "bench_after_fix", "chart_png", "chart_text",
           "compare", "detail_lines", "history", "plan_bench", "run_bench", "set_baseline",
           "verify_line"]
