"""Issue 26.5 and 26.8 on settings: what ``--config``, $STORDOC_CONFIG or a secret file
names is read only if it is a regular file within a size limit (a FIFO is never opened,
/dev/zero never read), a deeply nested TOML is one line, and an empty setting is an error.
Each is exit 64 and one line from the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import core.settings as settings_mod
from core.settings import SettingsError, load_settings, parse_settings
from storage import safefile
from storage.safefile import FileRefused, read_regular
from tests.support.cli import cli


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths safefile opened (for reading: it never opens for anything else)."""
    seen: list[str] = []
    real = os.open

    def spy(path: str, flags: int, *a: object, **kw: object) -> int:
        seen.append(os.fspath(path))
        return real(path, flags, *a, **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(safefile.os, "open", spy)
    return seen


def test_fifo_and_devices_refused_without_being_opened(tmp_path: Path,
                                                       opened: list[str]) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    for path, kind in ((str(fifo), "a FIFO"), ("/dev/zero", "a character device"),
                       ("/dev/urandom", "a character device")):
        with pytest.raises(SettingsError) as e:
            load_settings(path)
        assert str(e.value) == f"{path}: is {kind}, not a regular file: refused"
    assert opened == []


def test_huge_config_refused_before_reading(tmp_path: Path, opened: list[str]) -> None:
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:  # sparse: 10 GiB of nothing
        f.truncate(10 << 30)
    with pytest.raises(SettingsError, match=r"10737418240 bytes, more than the 1 MiB"):
        load_settings(big)
    assert opened == []


def test_read_stops_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that grows after the size check is read up to the limit + 1, then refused."""
    p = tmp_path / "f"
    p.write_bytes(b"x" * 10)
    got: list[int] = []
    real_read = os.read

    def read(fd: int, n: int) -> bytes:
        got.append(n)
        return b"y" * n if len(got) < 100 else real_read(fd, n)  # an endless file
    monkeypatch.setattr(safefile.os, "read", read)
    with pytest.raises(FileRefused, match="grew past 4096 bytes"):
        read_regular(p, 4096)
    assert sum(got) == 4097


def test_deep_toml_is_one_line_exit_64(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(SettingsError, match="nested too deeply"):
        load_settings(deep)
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for path in (str(deep), str(fifo), "/dev/zero"):
        r = cli(path, "check", timeout=300, columns=None)
        assert r.returncode == 64, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_secret_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    s = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {},
                        "slack": {"bot_token": {"file": str(fifo)}}})
    with pytest.raises(SettingsError, match="is a FIFO, not a regular file"):
        s.slack.bot_token.resolve()


def test_empty_config_settings_are_errors_not_another_cluster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = tmp_path / "lab.toml"
    lab.write_text(f'journal = "{tmp_path / "j.db"}"\n[clusters]\n')
    # were the fallback taken, this "running default lab" would be used
    monkeypatch.setattr(settings_mod, "running_lab_config", lambda: lab)
    monkeypatch.setattr(settings_mod, "DEFAULT_PATHS", (None, tmp_path / "no1",
                                                        tmp_path / "no2"))
    for value in ("", "  "):
        monkeypatch.setenv("STORDOC_CONFIG", value)
        with pytest.raises(SettingsError, match=r"\$STORDOC_CONFIG is set but empty"):
            load_settings(None, notice=lambda _: None)
    monkeypatch.delenv("STORDOC_CONFIG")
    with pytest.raises(SettingsError, match="--config: empty file name"):
        load_settings("")
    assert load_settings(None, notice=lambda _: None).source == str(lab)  # unset: fallback
    r = cli(None, "check", env={"STORDOC_CONFIG": ""}, timeout=300, columns=None)
    assert r.returncode == 64 and "STORDOC_CONFIG is set but empty" in r.stderr


def test_a_running_labs_config_is_found_through_its_pointer_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The product never imports the lab: `stordoc lab up` leaves a pointer, and a pointer
    whose monitor is gone (or that is garbage) is not followed."""
    pointer = tmp_path / "run" / "lab.json"
    monkeypatch.setattr(settings_mod, "LAB_POINTER", pointer)
    config = tmp_path / "stordoc.toml"
    config.write_text(f'journal = "{tmp_path / "j.db"}"\n')
    assert settings_mod.running_lab_config() is None  # no pointer
    settings_mod.announce_lab(config, os.getpid())
    assert settings_mod.running_lab_config() == config
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    settings_mod.announce_lab(config, int(dead.stdout))
    assert settings_mod.running_lab_config() is None  # its monitor is gone
    pointer.write_text("not json")
    assert settings_mod.running_lab_config() is None
    settings_mod.announce_lab(config, os.getpid())
    settings_mod.forget_lab()
    assert not pointer.exists() and settings_mod.running_lab_config() is None
