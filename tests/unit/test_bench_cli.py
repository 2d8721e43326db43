"""The CLI refuses bad input with one line, before touching any cluster: exit 64 for a
malformed command line, 4 (``ExitStatus.REFUSED``) when the benchmark itself refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.exitstatus import ExitStatus
from stordoc.cli import main
from tests.support.cli import unreachable_config


@pytest.fixture()
def cfg(tmp_path: Path) -> str:
    return unreachable_config(tmp_path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out + cap.err


def test_duration_cap(cfg: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(capsys, "-c", cfg, "bench", "rados", "--duration", "5", "--repeat", "3")
    assert rc == ExitStatus.REFUSED
    assert "exceeds the cap of 10 s" in out and "Traceback" not in out


def test_bad_mode_and_mix(cfg: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(capsys, "-c", cfg, "bench", "rados", "--mode", "write,bogus")
    assert rc == ExitStatus.REFUSED and "unknown rados mode(s) bogus" in out
    rc, out = _run(capsys, "-c", cfg, "bench", "swift", "--mix", "80/15/4")
    assert rc == ExitStatus.REFUSED and "summing to 100" in out
    with pytest.raises(SystemExit) as e:
        main(["-c", cfg, "bench", "swift", "--mix", "80/x/5"])
    assert e.value.code == 64


def test_unreachable_cluster_is_one_line(cfg: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(capsys, "-c", cfg, "bench", "rados", "--duration", "1")
    assert rc == ExitStatus.REFUSED
    assert "cannot connect to Ceph" in out and "Traceback" not in out
    rc, out = _run(capsys, "-c", cfg, "bench", "swift", "--duration", "1")
    assert rc == ExitStatus.REFUSED and "Swift proxy" in out and "not healthy" in out


def test_history_and_baseline_on_empty_journal(cfg: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(capsys, "-c", cfg, "bench", "history", "--json")
    assert rc == 0 and out.strip() == "[]"
    rc, out = _run(capsys, "-c", cfg, "bench", "baseline", "set", "b1")
    assert rc == ExitStatus.REFUSED and "no benchmark stored" in out
    rc, out = _run(capsys, "-c", cfg, "bench", "show", "nope")
    assert rc == 64 and "no stored benchmark group" in out


def test_baseline_and_compare_refusals_on_stored_groups(
        cfg: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a journal with a stored group and a baseline ``before``: a look-alike baseline
    name (Cyrillic е), an unknown group, an unknown baseline to compare with are each one
    line and exit 4, and the baselines stay as they were. (They read only the journal:
    the lab's tests/lab/test_bench.py stores real groups and shows them.)"""
    from runbooks.bench.model import BenchResult, fingerprint_fields
    from storage.benchstore import BenchStore
    from storage.journal import Journal

    fp = fingerprint_fields("c1", "rados", "native", "write", "stordoc-bench", 4096, 16,
                            "client1", ["18.2.7"])
    j = Journal(str(tmp_path / "journal.db"))
    try:
        for rep, v in enumerate([1000.0, 1004.0, 998.0], 1):
            BenchStore(j).save(BenchResult(
                cluster="c1", kind="rados", engine="native", workload="write",
                group_id="g-1", rep=rep, params={"size": 4096}, started_at=1000.0 + rep,
                fingerprint_fields=fp, ops=int(v * 5), ops_s=v, mb_s=v * 4096 / 2**20,
                lat_avg_ms=16000 / v).to_row())
    finally:
        j.close()
    rc, out = _run(capsys, "-c", cfg, "bench", "baseline", "set", "before", "--group", "g-1")
    assert rc == 0, out
    for argv, said in (
            (("bench", "baseline", "set", "bеfore", "--group", "g-1"), "baseline names"),
            (("bench", "baseline", "set", "after", "--group", "nosuch"),
             "no stored benchmark group"),
            (("bench", "show", "g-1", "--compare", "nosuch"), "known: before")):
        rc, out = _run(capsys, "-c", cfg, *argv)
        assert rc == ExitStatus.REFUSED and said in out, (argv, rc, out)
        assert out.strip().count("\n") == 0 and "Traceback" not in out, out
    rc, out = _run(capsys, "-c", cfg, "bench", "baseline", "list")
    assert rc == 0 and [ln.split(" ")[0] for ln in out.splitlines()] == ["before:"], out
