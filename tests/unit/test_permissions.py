"""As a real non-root user (``setpriv --reuid=nobody``): a file stordoc cannot read or
write is "permission denied: FILE" with exit 77, never a traceback, never "unreachable";
and the config search names what it looked for."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.exitstatus import ExitStatus
from stordoc.cli import main

STORDOC = str(Path(sys.executable).with_name("stordoc"))
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="needs root to switch to the nobody user")


@pytest.fixture()
def base() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="stordoc-perm-", dir="/var/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _config(base: Path, journal: Path, keyring: Path | None = None) -> Path:
    conf = base / "ceph.conf"
    conf.write_text("[global]\nmon host = 127.0.0.1:9\n")
    conf.chmod(0o644)
    cfg = base / "c.toml"
    kr = f'keyring = "{keyring}"\n' if keyring else ""
    cfg.write_text(f'journal = "{journal}"\n[clusters.c1.ceph]\nconf = "{conf}"\n{kr}'
                   "timeout = 1\n")
    cfg.chmod(0o644)
    return cfg


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           STORDOC, *argv], capture_output=True, text=True, timeout=120,
                          cwd="/", env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                        "HOME": "/nonexistent", "TERM": "dumb"})


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_journal_not_writable_is_permission_denied(base: Path) -> None:
    jdir = base / "j"
    jdir.mkdir(mode=0o755)  # root's directory: nobody cannot create the journal in it
    cfg = _config(base, jdir / "journal.db")
    for cmd in (["check"], ["audit"], ["locks"]):
        r = _as_nobody(*cmd, "--config", str(cfg))
        assert r.returncode == ExitStatus.NOPERM, (cmd, r.stderr)
        assert _one_line(r.stderr) == f"error: permission denied: {jdir}"


def test_unreadable_keyring_is_not_unreachable(base: Path) -> None:
    jdir = base / "j"
    jdir.mkdir()
    jdir.chmod(0o777)
    keyring = base / "ceph.client.admin.keyring"
    keyring.write_text("[client.admin]\n\tkey = AQ==\n")
    keyring.chmod(0o600)
    cfg = _config(base, jdir / "journal.db", keyring)
    r = _as_nobody("check", "--config", str(cfg))
    assert r.returncode == ExitStatus.NOPERM, r.stderr
    assert _one_line(r.stderr) == f"error: permission denied: {keyring}"
    # readable: then the cluster is just unreachable (exit 3), still no traceback
    keyring.chmod(0o644)
    r = _as_nobody("check", "--config", str(cfg), "--no-host-facts")
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr


def test_unreadable_config_file(base: Path) -> None:
    cfg = _config(base, base / "journal.db")
    cfg.chmod(0o600)
    r = _as_nobody("audit", "--config", str(cfg))
    assert r.returncode == ExitStatus.NOPERM
    assert _one_line(r.stderr) == f"error: permission denied: {cfg}"


def test_missing_stordoc_config_is_named(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STORDOC_CONFIG", "/nonexistent/stordoc-x.toml")
    assert main(["audit"]) == 64
    err = capsys.readouterr().err
    assert "/nonexistent/stordoc-x.toml" in err and "STORDOC_CONFIG" in err


def test_config_after_the_subcommand(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(base, base / "journal.db")
    assert main(["audit", "--config", str(cfg)]) == 0
    assert "no runbook runs recorded" in capsys.readouterr().out
    assert main(["bench", "history", "--config", str(cfg)]) == 0
    assert main(["audit", "--config", str(base / "nope.toml")]) == 64
    assert f"{base / 'nope.toml'}: no such config file" in capsys.readouterr().err


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_lab_up_as_non_root_refuses_before_making_anything(base: Path, release: str) -> None:
    target = base / "lab"
    r = _as_nobody("lab", "up", "--release", release, "--dir", str(target),
                   "--port-base", "29100")
    assert r.returncode == 77
    assert "lab up needs root" in _one_line(r.stderr) and "nothing was made" in r.stderr
    assert not target.exists()
