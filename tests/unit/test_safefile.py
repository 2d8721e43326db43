"""Issue 26.5: every other file stordoc reads from a path the user named (rings and
builders, swift.conf's md5, a keyring, ceph.conf for fio) refuses a FIFO or a device and
is size-bounded, instead of hanging or exhausting memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runbooks.bench.client_hosts import client_key
from runbooks.bench.rbd import _conf_for_fio
from runbooks.model import Refused
from storage import safefile
from storage.safefile import FileRefused, read_regular
from storage.swift import file_md5, read_ring
from storage.targets import CephTarget


def test_read_regular_reads_a_small_file(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"abc")
    assert read_regular(p, 3) == b"abc"
    with pytest.raises(FileRefused, match="3 bytes, more than the 2 bytes allowed"):
        read_regular(p, 2)


def test_fifo_and_devices_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    fifo = tmp_path / "keyring"
    os.mkfifo(fifo)
    monkeypatch.setattr(safefile.os, "open", lambda *a, **k: pytest.fail(f"opened {a}"))
    assert file_md5(str(fifo)) is None and file_md5("/dev/zero") is None
    for path in (str(fifo), "/dev/urandom"):
        with pytest.raises(Refused, match="not a regular file"):
            client_key(CephTarget(conf="/nonexistent", keyring=path), None)
        with pytest.raises(FileRefused, match="not a regular file"):
            _conf_for_fio(CephTarget(conf=path))


def test_ring_and_builder_that_are_too_big_or_fifos(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "object.ring.gz")
    with open(tmp_path / "object.builder", "wb") as f:
        f.truncate(2 << 30)  # sparse
    st = read_ring(str(tmp_path), "object")
    assert st.error is not None and "more than the 1024 MiB allowed: refused" in st.error
    os.mkfifo(tmp_path / "container.builder")
    st = read_ring(str(tmp_path), "container")
    assert st.error == "no ring or builder for container"
