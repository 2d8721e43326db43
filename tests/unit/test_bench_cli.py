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
