"""The local end of a Unix socket forwarded over SSH (``storage.ssh_forward``) without an
sshd: the channel is a plain socket to a local echo server. Proven here: bytes go both
ways and the end of either side reaches the other, the local socket is 0600, closing
removes it and ends live connections, and a host whose sshd forbids the forwarding is
told apart from one where nothing listens yet. (The real streamlocal channel through the
lab's sshd: tests/lab/test_bench_multi.py.)"""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from paramiko.ssh_exception import ChannelException

from storage.ssh_forward import ForwardRefused, SocketForward


class _Chan:
    """A socket with the paramiko Channel methods the forward uses."""

    def __init__(self, path: str) -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)

    def recv(self, n: int) -> bytes:
        return self.s.recv(n)

    def sendall(self, b: bytes) -> None:
        self.s.sendall(b)

    def shutdown_write(self) -> None:
        self.s.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.s.close()


def _echo_server(path: str) -> socket.socket:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)

    def serve() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            with c:
                data = b""
                try:
                    while chunk := c.recv(4096):
                        data += chunk
                    c.sendall(data.upper())
                except OSError:
                    pass  # the forward closed first

    threading.Thread(target=serve, daemon=True).start()
    return srv


def test_bytes_go_both_ways_through_a_private_socket(tmp_path: Path) -> None:
    remote = str(tmp_path / "remote.sock")
    srv = _echo_server(remote)
    local = str(tmp_path / "c1.sock")
    fwd = SocketForward("node1", remote, local, lambda: _Chan(remote))
    try:
        assert stat.S_IMODE(os.stat(local).st_mode) == 0o600
        for _ in range(2):  # a connection per fio --client run
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                c.settimeout(10)
                c.connect(local)
                c.sendall(b"x" * 100_000 + b"job")
                c.shutdown(socket.SHUT_WR)  # our end reaches the server...
                got = b""
                while chunk := c.recv(65536):  # ...and its end reaches us
                    got += chunk
            assert got == b"X" * 100_000 + b"JOB"
        assert fwd.reachable()
    finally:
        fwd.close()
        srv.close()
    assert not os.path.exists(local)


def test_close_ends_a_live_connection(tmp_path: Path) -> None:
    remote = str(tmp_path / "remote.sock")
    srv = _echo_server(remote)
    fwd = SocketForward("node1", remote, str(tmp_path / "c1.sock"), lambda: _Chan(remote))
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(10)
    c.connect(str(tmp_path / "c1.sock"))
    c.sendall(b"partial")
    try:
        fwd.close()
        try:
            assert c.recv(10) == b""  # ended, not hanging
        except ConnectionResetError:
            pass  # ended too
    finally:
        c.close()
        srv.close()


@pytest.mark.parametrize("code,expect", [(1, "refused"), (2, False)])
def test_forbidden_forwarding_is_told_apart_from_nothing_listening(
        tmp_path: Path, code: int, expect: Any) -> None:
    def opener() -> Any:
        raise ChannelException(code, "Administratively prohibited" if code == 1
                               else "Connect failed")

    fwd = SocketForward("node1", "/x/fio.sock", str(tmp_path / "c1.sock"), opener)
    try:
        if expect == "refused":
            with pytest.raises(ForwardRefused, match="does not forward to Unix sockets"):
                fwd.reachable()
        else:
            assert fwd.reachable() is False
    finally:
        fwd.close()
