"""Parsers of the stock tools' output, on captured output from the lab (Ceph 16.2, fio)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runbooks.bench.limits import parse_dd, parse_fio_bw
from runbooks.bench.rbd import iter_json_objects, summarize_fio
from storage.rados_io import parse_rados_bench

FX = Path(__file__).resolve().parent.parent / "fixtures" / "bench"


def test_rados_bench_plain_write() -> None:
    out = parse_rados_bench((FX / "rados_bench_write_4k.txt").read_text())
    assert out.complete
    assert out.ops == 5759 and out.op_size == 4096
    assert out.total_time_s == pytest.approx(3.00612)
    assert out.bandwidth_mb_s == pytest.approx(7.48344)
    assert out.lat_avg_s == pytest.approx(0.00834169)
    assert out.lat_max_s == pytest.approx(0.0294616)
    # sec 0 row has "-" as last latency: parsed as None, not dropped
    assert [r["sec"] for r in out.per_second] == [0, 1, 2, 3]
    assert out.per_second[0]["last_lat_s"] is None
    assert out.per_second[-1]["finished"] == 5743
    # bandwidth agrees with ops x size / time (MB = MiB in rados bench)
    assert out.ops * out.op_size / 2**20 / out.total_time_s == pytest.approx(
        out.bandwidth_mb_s, rel=1e-3)


def test_rados_bench_plain_seq_read() -> None:
    out = parse_rados_bench((FX / "rados_bench_seq_4k.txt").read_text())
    assert out.ops == 5759 and out.op_size == 4096
    assert out.lat_avg_s == pytest.approx(0.000896777)
    assert out.iops == 17746


def test_rados_bench_long_run_repeats_header_and_timestamps() -> None:
    text = (FX / "rados_bench_write_22s.txt").read_text()
    out = parse_rados_bench(text)
    assert out.complete
    # every second has a row even though the header is printed again after 20 s
    assert [r["sec"] for r in out.per_second if r["sec"] > 0] == list(range(1, len(
        [r for r in out.per_second if r["sec"] > 0]) + 1))
    assert len([r for r in out.per_second if r["sec"] > 0]) >= 21
    assert text.count("sec Cur ops") >= 2
    assert not out.errors


def test_rados_bench_json_with_strings_and_cleanup_inside() -> None:
    text = (FX / "rados_bench_write_4m_json.txt").read_text()
    assert "Cleaning up" in text  # the 16.2 bug this parser survives
    out = parse_rados_bench(text)
    assert out.ops == 212 and out.op_size == 4194304
    assert out.bandwidth_mb_s == pytest.approx(272.161033)
    assert out.lat_avg_s == pytest.approx(0.231148)
    assert [r["sec"] for r in out.per_second] == [0, 1, 2, 3]


def test_rados_bench_garbage_is_incomplete_not_an_exception() -> None:
    out = parse_rados_bench("error opening pool stordoc-bench: (2) No such file or directory\n")
    assert not out.complete
    assert out.errors


def test_fio_status_stream() -> None:
    text = (FX / "fio_rbd_randrw_status.json").read_text()
    objs = list(iter_json_objects(text))
    assert len(objs) >= 2
    s = summarize_fio(objs)
    job = objs[-1]["jobs"][0]
    assert s["ops"] == job["read"]["total_ios"] + job["write"]["total_ios"]
    assert s["bytes"] == job["read"]["io_bytes"] + job["write"]["io_bytes"]
    assert s["lat_p99_ms"] is not None and s["lat_p50_ms"] <= s["lat_p99_ms"] <= s["lat_p999_ms"]
    assert s["series"] and all(p["ops_s"] >= 0 for p in s["series"])
    # the per-second series adds up to what the intermediate reports counted
    last_interim = objs[-2]["jobs"][0]
    interim_ops = last_interim["read"]["total_ios"] + last_interim["write"]["total_ios"]
    counted = 0.0
    prev_t = 0.0
    for p in s["series"]:
        counted += p["ops_s"] * (p["t"] - prev_t)
        prev_t = p["t"]
    assert counted == pytest.approx(interim_ops, rel=1e-6)
    assert set(s["per_dir"]) == {"read", "write"}


def test_fio_limit_and_dd() -> None:
    bw = parse_fio_bw((FX / "fio_limit_write.json").read_text(), "write")
    assert bw is not None and bw > 0
    dd = (FX / "dd_write.txt").read_text()
    mb = parse_dd(dd)
    assert mb is not None
    nbytes, secs = 16777216, float(dd.split("copied, ")[1].split(" s")[0])
    assert mb == pytest.approx(nbytes / 2**20 / secs)
    assert parse_dd("dd: failed to open 'x': Permission denied") is None
