"""Numbers and verdicts: percentiles, per-second series, and the noise-aware comparison."""

from __future__ import annotations

import random

import numpy as np
import pytest

from runbooks.bench.measure import latency_summary, series_from_buckets, steady
from runbooks.bench.stats import (
    FASTER,
    INCONCLUSIVE,
    SAME,
    SLOWER,
    compare_groups,
    compare_metric,
    state_changes,
)


def test_latency_summary_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    lat_ns = (rng.lognormal(mean=15, sigma=0.5, size=5000)).astype(int).tolist()
    s = latency_summary(lat_ns)
    a = np.asarray(lat_ns) / 1e6
    assert s["lat_avg_ms"] == pytest.approx(a.mean())
    assert s["lat_p99_ms"] == pytest.approx(np.percentile(a, 99))
    assert s["lat_max_ms"] == pytest.approx(a.max())
    assert s["lat_p50_ms"] <= s["lat_p90_ms"] <= s["lat_p99_ms"] <= s["lat_p999_ms"] \
        <= s["lat_max_ms"]
    assert latency_summary([])["lat_avg_ms"] is None


def test_series_scales_the_partial_last_second_and_steady_drops_it() -> None:
    ser = series_from_buckets([100, 200, 200, 50], [100 * 4096, 200 * 4096, 200 * 4096,
                                                    50 * 4096], [10**6 * 100] * 4, 3.5)
    assert [p["ops_s"] for p in ser] == [100, 200, 200, 100]  # 50 ops in half a second
    assert ser[-1]["partial"] == 1.0 and ser[0]["partial"] == 0.0
    assert [p["t"] for p in steady(ser)] == [2.0, 3.0]  # ramp-up and partial tail dropped


def _runs(values: list[float], workload: str = "write") -> list[dict]:
    return [{"id": i + 1, "status": "ok", "workload": workload, "ops_s": v, "mb_s": v / 256,
             "lat_avg_ms": 16000 / v, "lat_p99_ms": 40000 / v, "errors": 0,
             "series": [], "state": {"versions": ["16.2.15"], "num_osds": 3}}
            for i, v in enumerate(values)]


def test_run_level_no_change_between_noisy_identical_clusters() -> None:
    rnd = random.Random(7)
    base = _runs([1000 * rnd.uniform(0.85, 1.15) for _ in range(3)])
    new = _runs([1000 * rnd.uniform(0.85, 1.15) for _ in range(3)])
    c = compare_groups(base, new)
    assert c.basis == "runs"
    assert c.verdict in (SAME, INCONCLUSIVE)
    m = next(m for m in c.metrics if m.metric == "ops_s")
    assert m.threshold >= 0.10 and m.test == "Welch t"


def test_run_level_real_slowdown_is_slower_with_latency_agreeing() -> None:
    base = _runs([1000, 1040, 980])
    new = _runs([420, 450, 430])
    c = compare_groups(base, new)
    assert c.verdict == SLOWER
    lat = next(m for m in c.metrics if m.metric == "lat_avg_ms")
    assert lat.verdict == SLOWER and lat.change is not None and lat.change > 0
    assert "SLOWER" in c.lines()[0]


def test_faster_and_threshold_blocks_a_small_significant_change() -> None:
    # 5% faster, very consistent: significant, but below the 10% minimum change
    m = compare_metric("ops_s", [1000, 1001, 999, 1000, 1000], [1050, 1051, 1049, 1050, 1050],
                       by_runs=True, k=3, min_change=0.10)
    assert m.p_value is not None and m.p_value < 0.05
    assert m.verdict == SAME
    m2 = compare_metric("ops_s", [1000, 1001, 999, 1000, 1000],
                        [1500, 1490, 1510, 1500, 1505], by_runs=True, k=3, min_change=0.10)
    assert m2.verdict == FASTER and m2.test == "Mann-Whitney U"


def test_big_change_without_consistency_is_inconclusive() -> None:
    m = compare_metric("ops_s", [1000, 300, 1700], [500, 1400, 200], by_runs=True, k=3,
                       min_change=0.10)
    assert m.verdict == INCONCLUSIVE


def test_too_little_data_is_inconclusive() -> None:
    c = compare_groups(_runs([1000]), _runs([500]))
    assert c.basis == "per-second samples"
    assert c.verdict == INCONCLUSIVE  # no per-second series at all


def test_per_second_basis_uses_steady_samples() -> None:
    def run(level: float, rid: int) -> dict:
        rnd = random.Random(rid)
        ser = [{"t": float(t + 1), "ops_s": level * rnd.uniform(0.95, 1.05),
                "mb_s": level * rnd.uniform(0.95, 1.05) / 256,
                "lat_ms": 16000 / level, "partial": 0.0} for t in range(10)]
        ser[0]["ops_s"] = 1.0  # ramp-up second: must not count
        return {**_runs([level])[0], "id": rid, "series": ser}

    c = compare_groups([run(1000, 1)], [run(1000, 2)])
    assert c.verdict == SAME
    c2 = compare_groups([run(1000, 1)], [run(400, 2)])
    assert c2.verdict == SLOWER
    assert c2.metrics[0].n_base == 9  # 10 seconds minus the ramp-up


def test_state_changes_lists_what_differs() -> None:
    before = {"versions": ["16.2.14"], "num_osds": 3, "num_up_osds": 3, "health": "HEALTH_OK",
              "pool": {"size": 3, "pg_num": 16}}
    after = {"versions": ["16.2.15"], "num_osds": 3, "num_up_osds": 2, "health": "HEALTH_WARN",
             "pool": {"size": 3, "pg_num": 16}}
    ch = state_changes(before, after)
    assert any(c.startswith("versions") for c in ch)
    assert any(c.startswith("num_up_osds: 3 -> 2") for c in ch)
    assert not any(c.startswith(("pool", "num_osds:")) for c in ch)


def test_between_invocation_drift_raises_the_threshold() -> None:
    from runbooks.bench.stats import between_group_cv

    steady_groups = [_runs([1000, 1010, 990]) for _ in range(4)]
    assert between_group_cv(steady_groups, "ops_s") == pytest.approx(0.0, abs=0.01)
    drifting = [_runs([v, v * 1.01, v * 0.99]) for v in (1000, 1300, 800, 1150)]
    b = between_group_cv(drifting, "ops_s")
    assert b is not None and 0.15 < b < 0.30
    assert between_group_cv(drifting[:2], "ops_s") is None  # too few to know
    base, new = _runs([1300, 1310, 1290]), _runs([850, 860, 840])  # -35%, very consistent
    # no history: the drift between invocations is unknown and assumed, not taken as 0,
    # so a -35% change is not called (it may be the machine), nor called "no change"
    assert compare_groups(base, new).verdict == INCONCLUSIVE
    # steady history: invocations do not drift, the same change is a real slowdown
    assert compare_groups(base, new, history=steady_groups).verdict == SLOWER
    c = compare_groups(base, new, history=drifting)
    assert c.verdict != SLOWER  # the same change is within what invocations drift by
    assert any("between invocations" in n for n in c.notes)
    # a 4x slowdown still counts: judged on the log ratio, -75% is a large change
    assert compare_groups(base, _runs([320, 330, 325]), history=drifting).verdict == SLOWER


def test_log_ratio_threshold_is_symmetric() -> None:
    m = compare_metric("ops_s", [1000, 1010, 990, 1000, 1005],
                       [2000, 2020, 1980, 2000, 2010], by_runs=True, k=3, min_change=0.10)
    m2 = compare_metric("ops_s", [2000, 2020, 1980, 2000, 2010],
                        [1000, 1010, 990, 1000, 1005], by_runs=True, k=3, min_change=0.10)
    assert m.verdict == FASTER and m2.verdict == SLOWER
    assert m.up == pytest.approx(0.10, abs=1e-9) and m.down == pytest.approx(1 - 1 / 1.1)
    assert "+10%/-9%" in m.line()


def test_terminal_chart_keeps_new_runs_beside_the_baseline() -> None:
    from runbooks.bench.charts import is_baseline, text_sets

    ser = [{"t": float(i), "mb_s": 10.0 + i, "lat_ms": 2.0} for i in range(5)]
    sets = [(f"baseline #{i}", ser) for i in range(1, 11)] + [("new #1", ser), ("new #2", ser)]
    shown = [label for label, _ in text_sets(sets)]
    assert len(shown) == 8 and shown[-2:] == ["new #1", "new #2"]
    assert shown[0] == "baseline #5" and all(is_baseline(x) for x in shown[:6])
    assert [label for label, _ in text_sets(sets[:2])] == ["baseline #1", "baseline #2"]
    assert len(text_sets([(f"new #{i}", ser) for i in range(12)])) == 8


def test_terminal_chart_draws_baseline_as_dots_new_as_lines(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from runbooks.bench import charts

    ser = [{"t": float(i), "mb_s": 10.0 + (i % 3), "lat_ms": 2.0 + i} for i in range(30)]
    sets = [("baseline #1", ser)]
    monkeypatch.setattr(charts, "_series_sets", lambda obj: ("t", sets, None))
    dots = charts.chart_text(object(), width=80, height=20)
    sets[:] = [("new #1", ser)]
    lines = charts.chart_text(object(), width=80, height=20)
    assert "baseline #1" in dots and "new #1" in lines
    # the same data: lines fill the gaps between points, so they draw more cells
    assert sum(c not in " \n" for c in lines) > sum(c not in " \n" for c in dots)
