"""Issue 27.5: the result table fits 80 columns without a cut cell, the verdict quotes the
table's own figures (no scientific notation), a run is compared with the last run of the
same kind/target/parameters by default (and says which), no verdict without a baseline,
and the plan's pool: a named existing one is used, else the run's own is announced and
removed, and a cluster that forbids pool deletion is refused before anything is made."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from runbooks.bench import pools
from runbooks.bench.figures import figure
from runbooks.bench.model import BenchResult, fingerprint, fingerprint_fields
from runbooks.bench.results import baseline_label, last_run
from runbooks.bench.stats import compare_groups
from runbooks.model import Refused
from storage.benchstore import BenchStore
from storage.journal import Journal
from stordoc.cli import build_parser
from stordoc.commands.bench import results_view


def _result(workload: str, rep: int, ops_s: float, group: str = "g", rid: int = 7,
            series_ops: list[float] | None = None, started: float = 1_790_000_000.0,
            pool: str = "stordoc-bench-20261126T221000-123") -> BenchResult:
    series = [{"t": float(i), "ops_s": v, "mb_s": v * 4096 / 2**20, "lat_ms": 16000 / v,
               "partial": 0.0} for i, v in enumerate(series_ops or [ops_s] * 6, 1)]
    return BenchResult(
        cluster="lab", kind="rados", engine="native", workload=workload, group_id=group,
        rep=rep, params={}, started_at=started, status="ok", user="alice",
        fingerprint_fields=fingerprint_fields("lab", "rados", "native", workload, pool,
                                              4096, 16, "client1", ["16.2.15"]),
        ops=int(ops_s * 5), ops_s=ops_s, mb_s=ops_s * 4096 / 2**20,
        lat_avg_ms=16000 / ops_s, lat_p50_ms=12.3, lat_p90_ms=45.6, lat_p99_ms=1999.99,
        lat_p999_ms=2500.0, lat_max_ms=12345.67, series=series, id=rid)


RESULTS = [_result("write", 1, 31.6, rid=1234), _result("randrw 4K", 2, 1050.04, rid=1235),
           _result("seqwrite 64K", 3, 123456.7, rid=1236)]


def _render(width: int) -> str:
    c = Console(file=io.StringIO(), width=width, record=True)
    view = results_view(c, RESULTS)
    if isinstance(view, list):
        for line in view:
            c.print(line, markup=False)
    else:
        c.print(view)
    return c.export_text()


@pytest.mark.parametrize("width", [80, 200, 60])
def test_result_table_fits_the_width_with_no_cut_cell(width: int) -> None:
    text = _render(width)
    assert all(len(line) <= width for line in text.splitlines()), text
    assert "…" not in text and "e+" not in text, text
    for r in RESULTS:  # every figure whole, as figures.figure writes it
        assert r.workload in text
        for m in ("ops_s", "mb_s", "lat_avg_ms", "lat_p99_ms"):
            assert figure(m, getattr(r, m)) in text, (m, text)
    assert "1,050.0" in text and "123,456.7" in text
    if width == 200:  # room for every column, units in the headers
        assert "p99.9 ms" in text and "p50 ms" in text and "1234" in text
    if width == 80:
        assert "ops/s" in text and "p99 ms" in text


def test_verdict_quotes_the_table_figures() -> None:
    # one run a side: the test runs on per-second samples whose median (16 / 36.5) is not
    # what the table shows (the run's own 20.0 / 31.6): the verdict must quote the table
    base = _result("write", 1, 20.0, group="g1", rid=1, series_ops=[10, 16, 16, 16, 30, 40])
    new = _result("write", 1, 31.6, group="g2", rid=2,
                  series_ops=[30, 36.5, 36.5, 36.5, 36.5, 20])
    c = compare_groups([base.to_row()], [new.to_row()], baseline="x")
    text = "\n".join(c.lines())
    ops = next(m for m in c.metrics if m.metric == "ops_s")
    assert ops.base == 20.0 and ops.new == 31.6
    assert "ops/s: 20.0 -> 31.6 ops/s (+58.0%)" in text, text
    assert "36.5" not in text and "16 ->" not in text
    assert not re.search(r"\d[eE][+-]\d", text), text
    big = compare_groups([_result("write", 1, 1000.0).to_row()],
                         [_result("write", 1, 1050.04).to_row()], baseline="x")
    line = "\n".join(big.lines())
    assert "1,000.0 -> 1,050.0 ops/s" in line and "e+" not in line, line


def test_no_baseline_no_verdict() -> None:
    c = compare_groups([], [_result("write", 1, 31.6).to_row()])
    assert not c.has_baseline
    text = "\n".join(c.lines())
    assert "no baseline yet; this run is the baseline" in text
    assert not re.search(r"FASTER|SLOWER|INCONCLUSIVE|NO SIGNIFICANT", text), text


def test_default_baseline_is_the_last_run_and_named(tmp_path: Path) -> None:
    st = BenchStore(Journal(tmp_path / "journal.db"))
    for g, ops, t in (("20261126T200000-001", 900.0, 1_790_000_000.0),
                      ("20261126T210000-002", 1000.0, 1_790_003_600.0)):
        for rep in (1, 2):
            st.save(_result("write", rep, ops + rep, group=g, started=t,
                            pool=f"stordoc-bench-{g}").to_row())
    new = _result("write", 1, 1100.0, group="20261126T220000-003",
                  pool="stordoc-bench-20261126T220000-003")
    # runs in their own pools (a new name each time) share one fingerprint
    assert new.fingerprint_fields["where"] == "stordoc-bench-<run>"
    base = last_run(st, "lab", fingerprint(new.fingerprint_fields), "write", new.group_id)
    assert {r["group_id"] for r in base} == {"20261126T210000-002"}
    assert sorted(r["ops_s"] for r in base) == [1001.0, 1002.0]
    label = baseline_label(base)
    assert "20261126T210000-002" in label and "UTC" in label and "alice" in label
    c = compare_groups(base, [new.to_row()], baseline=label)
    assert c.lines()[0].startswith("Verdict (write):") and "20261126T210000-002" in \
        c.lines()[0]
    assert baseline_label([]) == "no baseline"


class _Cluster:
    def __init__(self, pools_: list[str], allow: str | None) -> None:
        self.pools, self.allow = pools_, allow

    def list_pools(self) -> list[str]:
        return list(self.pools)

    def mgr_command(self, cmd: str, inbuf: bytes, timeout: int = 0) -> tuple[int, bytes, str]:
        assert json.loads(cmd)["key"] == "mon_allow_pool_delete"
        if self.allow is None:
            return -22, b"", "no mgr"
        return 0, (self.allow + "\n").encode(), ""


class _IO:
    class target:  # noqa: N801
        timeout_s = 5

    def __init__(self, pools_: list[str], allow: str | None, db: str | None = None) -> None:
        self.cluster = _Cluster(pools_, allow)
        self.db = db

    def mon(self, cmd: dict[str, Any]) -> Any:
        assert cmd["prefix"] == "mon dump"
        return {"mons": [{"name": "a"}, {"name": "b"}]}

    def config_value(self, who: str, key: str) -> str | None:
        return self.db


def test_pool_named_and_existing_is_used_and_stays() -> None:
    c = pools.choose_pool(_IO(["rbd", "fast"], "false"), "fast", "settings [bench] pool",
                          keep=True)  # type: ignore[arg-type]
    assert not c.create and c.for_run("20261126T221000-123") == "fast"
    assert c.plan_lines()[0].startswith("uses pool fast named in settings [bench] pool")


def test_pool_of_its_own_announced_and_legacy_left_alone() -> None:
    io_ = _IO(["rbd", "stordoc-bench", "stordoc-bench-20261126T200000-001"], "true")
    c = pools.choose_pool(io_, None, None, keep=False)  # type: ignore[arg-type]
    assert c.create and c.name == "stordoc-bench-<run>"
    assert c.for_run("20261126T221000-123") == "stordoc-bench-20261126T221000-123"
    text = "\n".join(c.plan_lines())
    assert "creates pool stordoc-bench-<run>" in text and "removes it afterwards" in text
    assert "pool stordoc-bench is there (left by an older stordoc): not used, not removed" \
        in text
    assert "stordoc-bench-20261126T200000-001 is there" in text


@pytest.mark.parametrize("allow,db", [("false", None), (None, "false"), (None, None)])
def test_pool_creation_refused_when_the_cluster_forbids_deletion(allow: str | None,
                                                                  db: str | None) -> None:
    with pytest.raises(Refused, match="mon_allow_pool_delete") as e:
        pools.choose_pool(_IO(["rbd"], allow, db), None, None, False)  # type: ignore[arg-type]
    assert "settings [bench] pool or --pool" in str(e.value)


def test_keep_refused_in_a_pool_the_run_removes() -> None:
    with pytest.raises(Refused, match="--keep"):
        pools.choose_pool(_IO(["rbd"], "true"), None, None, True)  # type: ignore[arg-type]


def test_cli_compares_by_default_and_no_compare_skips() -> None:
    p = build_parser()
    assert p.parse_args(["bench", "rados"]).compare == ""  # compare with the last run
    assert p.parse_args(["bench", "rados", "--no-compare"]).compare is None
    assert p.parse_args(["bench", "swift", "--compare", "before"]).compare == "before"


@pytest.mark.parametrize("width", [80, 200])
def test_history_table_fits_too(width: int) -> None:
    from stordoc.commands.bench import _HISTORY, _HISTORY_NARROW

    c = Console(file=io.StringIO(), width=width, record=True)
    view = results_view(c, RESULTS, (_HISTORY, _HISTORY_NARROW))
    assert not isinstance(view, list)  # a table at both widths
    c.print(view)
    text = c.export_text()
    assert all(len(line) <= width for line in text.splitlines()) and "…" not in text, text
    assert "123,456.7" in text and "g" in text
    assert ("fingerprint" in text) == (width == 200)
