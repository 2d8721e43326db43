"""Files the config names (ceph.conf, keyring, known_hosts, SSH key, secret files, the
config itself, swift.conf, a snapshot for ``check --from``) that are a FIFO, a device, a
directory or far too large: one line and exit 64 before anything opens them, never a hang
or a MemoryError (issue 37.5). The subprocess timeouts are hang guards, not limits."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from storage.safefile import FileRefused
from tests.support.cli import cli

HANG_GUARD_S = 60  # a FIFO blocked the old code for good: anything finishing is a pass


def kinds(tmp: Path) -> dict[str, str]:
    """A FIFO, /dev/zero, a directory and a sparse 300 MB file."""
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    big = tmp / "big"
    with big.open("wb") as f:
        f.truncate(300 << 20)
    d = tmp / "adir"
    d.mkdir()
    return {"fifo": str(fifo), "zero": "/dev/zero", "dir": str(d), "big": str(big)}


WHY = {"fifo": "is a FIFO", "zero": "is a character device", "dir": "is a directory",
       "big": "314572800 bytes"}


def config(tmp: Path, **files: str) -> Path:
    """A config whose Ceph and hosts name ``files`` (else harmless, existing files)."""
    ok = tmp / "ok"
    ok.write_text("[global]\n")
    conf = files.get("conf", str(ok))
    ceph = f'conf = "{conf}"\ntimeout = 1\n'
    if "keyring" in files:
        ceph += f'keyring = "{files["keyring"]}"\n'
    host = ""
    if "known_hosts" in files or "key_file" in files:
        host = '[[clusters.c1.hosts]]\nname = "h1"\naddress = "127.0.0.1"\nport = 9\n'
        for k in ("known_hosts", "key_file"):
            if k in files:
                host += f'{k} = "{files[k]}"\n'
    swift = ""
    if "swift_key" in files:
        swift = ('[clusters.c1.swift]\nauth_url = "http://127.0.0.1:9/auth/v1.0"\n'
                 f'user = "u"\nkey = {{ file = "{files["swift_key"]}" }}\n')
    p = tmp / "c.toml"
    p.write_text(f'journal = "{tmp / "j.db"}"\n[clusters.c1.ceph]\n{ceph}{swift}{host}')
    return p


def one_line(r: Any, *words: str) -> None:
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], r.stderr


@pytest.mark.parametrize("kind", ["fifo", "zero", "dir", "big"])
@pytest.mark.parametrize("field", ["conf", "keyring", "known_hosts"])
def test_check_refuses_a_named_file_that_is_no_bounded_regular_file(
        tmp_path: Path, field: str, kind: str) -> None:
    path = kinds(tmp_path)[kind]
    r = cli(config(tmp_path, **{field: path}), "check", timeout=HANG_GUARD_S)
    assert r.returncode == 64, (r.returncode, r.stderr)
    one_line(r, path, WHY[kind], "refused")
    assert not (tmp_path / "j.db").exists()  # refused before anything else


@pytest.mark.parametrize("field", ["key_file", "swift_key"])
def test_an_ssh_key_or_secret_file_that_is_a_fifo_or_device_is_refused(
        tmp_path: Path, field: str) -> None:
    k = kinds(tmp_path)
    for kind in ("fifo", "zero"):
        r = cli(config(tmp_path, **{field: k[kind]}), "check", timeout=HANG_GUARD_S)
        assert r.returncode == 64, (r.returncode, r.stderr)
        one_line(r, k[kind], WHY[kind])


def test_the_config_itself_and_a_snapshot_to_check_from(tmp_path: Path) -> None:
    k = kinds(tmp_path)
    for kind in ("fifo", "zero", "big"):
        r = cli(k[kind], "check", timeout=HANG_GUARD_S)
        assert r.returncode == 64, (kind, r.returncode, r.stderr)
        one_line(r, k[kind])
    cfg = config(tmp_path)
    for kind in ("fifo", "zero", "big"):
        r = cli(cfg, "check", "--from", k[kind], timeout=HANG_GUARD_S)
        assert r.returncode == 64, (kind, r.returncode, r.stderr)
        one_line(r, k[kind])


# ------------------------------------------------------------ the storage layer itself


def finishes(fn: Callable[[], object]) -> BaseException | None:
    """What ``fn`` raised (None: nothing), run in a thread: a hang fails, not blocks."""
    out: list[BaseException | None] = [None]

    def run() -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001
            out[0] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG_GUARD_S)
    assert not t.is_alive(), "hung"
    return out[0]


def test_librados_and_paramiko_are_never_handed_a_fifo_or_device(tmp_path: Path) -> None:
    from storage.ceph.client import CephClient, CephUnreachable
    from storage.dispersion import hash_prefix_suffix
    from storage.rados_io import RadosBenchError, connect
    from storage.runner import HostUnreachable
    from storage.ssh import SSHPool
    from storage.targets import CephTarget, HostTarget

    k = kinds(tmp_path)
    ok = tmp_path / "ok"
    ok.write_text("[global]\n")
    for kind in ("fifo", "zero", "big"):
        for t in (CephTarget(k[kind], None, timeout_s=1),
                  CephTarget(str(ok), k[kind], timeout_s=1)):
            e = finishes(CephClient(t).connect)
            assert isinstance(e, CephUnreachable) and WHY[kind] in str(e), e
            e = finishes(lambda t=t: connect(t))
            assert isinstance(e, RadosBenchError) and WHY[kind] in str(e), e
        pool = SSHPool()
        try:
            for h in (HostTarget("h1", "127.0.0.1", port=9, known_hosts=k[kind]),
                      HostTarget("h1", "127.0.0.1", port=9, key_file=k[kind],
                                 known_hosts=str(ok))):
                e = finishes(lambda h=h, p=pool: p.connect(h))
                assert isinstance(e, HostUnreachable) and WHY[kind] in str(e), e
        finally:
            pool.close()
        e = finishes(lambda kind=kind: hash_prefix_suffix(k[kind]))
        assert isinstance(e, FileRefused), e


# ------------------------------------------------------------ the journal's own files


def test_a_journal_named_through_a_symlink_is_0600_as_a_direct_one(tmp_path: Path) -> None:
    from storage.journal import Journal

    d = tmp_path / "j"
    d.mkdir()
    (d / "link.db").symlink_to(d / "real.db")
    old = os.umask(0o022)
    try:
        Journal(str(d / "direct.db")).close()
        Journal(str(d / "link.db")).close()
    finally:
        os.umask(old)
    for name in ("direct.db", "real.db", "direct.db.lock", "real.db.lock"):
        assert stat.S_IMODE((d / name).stat().st_mode) == 0o600, name
    assert (d / "link.db").is_symlink()
    # a .lock planted as a dangling link is not followed (nothing made where it points)
    (d / "other.db.lock").symlink_to(tmp_path / "elsewhere")
    e = finishes(lambda: Journal(str(d / "other.db")).close())
    assert isinstance(e, OSError), e
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("field", ["conf", "keyring", "known_hosts", "key_file", "swift_key"])
def test_a_symlink_loop_named_in_the_config_is_one_line(tmp_path: Path, field: str) -> None:
    """ELOOP is no FileNotFoundError: it was a traceback out of the preflight (hostile
    run); now it is refused like a FIFO, in one line naming the key and path."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop.name)
    r = cli(config(tmp_path, **{field: str(loop)}), "check", timeout=HANG_GUARD_S)
    assert r.returncode == 64, (r.returncode, r.stderr)
    one_line(r, str(loop), "too many levels of symbolic links", "refused")
    assert not (tmp_path / "j.db").exists()


@pytest.mark.parametrize("kind", ["fifo", "dir", "big", "notdb"])
def test_a_journal_that_is_no_database_file_is_one_line(tmp_path: Path, kind: str) -> None:
    """The journal named in the config is a FIFO, a directory or a file that is not an
    SQLite database: one line naming it, exit 64, never SQLite's traceback ("disk I/O
    error", "file is not a database": hostile run), and the file is left as it was."""
    k = kinds(tmp_path)
    path = tmp_path / "notdb" if kind == "notdb" else Path(k[kind])
    if kind == "notdb":
        path.write_text("these are someone's notes, not a journal\n")
    before = path.read_bytes() if kind == "notdb" else None
    if kind == "notdb":
        path.chmod(0o644)
    mode = path.stat().st_mode & 0o777
    cfg = config(tmp_path)
    cfg.write_text(cfg.read_text().replace(str(tmp_path / "j.db"), str(path)))
    for argv in (("mute", "--list"), ("audit", "--last", "1")):
        r = cli(cfg, *argv, timeout=HANG_GUARD_S)
        assert r.returncode == 64, (argv, r.returncode, r.stderr)
        one_line(r, "journal", str(path), "is a directory" if kind == "dir" else "refused")
    if before is not None:  # not ours: unchanged, its mode too
        assert path.read_bytes() == before and path.stat().st_mode & 0o777 == mode
        assert path.read_bytes() == before
