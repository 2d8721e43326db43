"""A Unix socket on a remote host, reached through the SSH connection we already hold.

``SocketForward`` listens on a local Unix socket (its directory must be private: mode
0700) and carries every connection made to it over an OpenSSH ``direct-streamlocal``
channel to a Unix socket on the host, as ``ssh -L LOCAL:REMOTE`` does. Nothing listens
on TCP, here or there: who may connect is decided by the two sockets' directories.

paramiko opens TCP forwarding channels (``direct-tcpip``) but has no name for the
streamlocal kind; ``open_streamlocal`` sends OpenSSH's request (PROTOCOL, 2.4:
``string socket path, string reserved, uint32 reserved``) the way paramiko's own
``Transport.open_channel`` sends a ``direct-tcpip`` one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from storage.why import why

STREAMLOCAL = "direct-streamlocal@openssh.com"
PROHIBITED = 1  # SSH_OPEN_ADMINISTRATIVELY_PROHIBITED (RFC 4254 5.1)


class _QuietOpenFailures(logging.Filter):
    """paramiko logs every refused channel at ERROR ("Secsh channel N open FAILED");
    with no logging configured that lands on stderr. A refused channel here is an
    answer (nothing listens there yet), raised to and judged by the caller."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "open FAILED" not in record.getMessage()


_QUIET = _QuietOpenFailures()


class ForwardRefused(Exception):
    """The host's sshd refuses to forward to a Unix socket (``AllowStreamLocalForwarding``,
    ``DisableForwarding``, a ``restrict``/``no-port-forwarding`` key), or the connection
    is gone."""


def open_streamlocal(transport: Any, path: str, timeout_s: float) -> Any:
    """A paramiko ``Channel`` connected to the Unix socket ``path`` on the host.

    Raises ``paramiko.ChannelException`` when the host refuses it (``code`` 1: forwarding
    not allowed; 2: nothing listens there) and ``paramiko.SSHException`` when the
    connection is gone or the answer does not come in time."""
    from paramiko.channel import Channel
    from paramiko.common import cMSG_CHANNEL_OPEN
    from paramiko.message import Message
    from paramiko.ssh_exception import SSHException

    if not transport.active:
        raise SSHException("SSH session not active")
    if _QUIET not in transport.logger.filters:
        transport.logger.addFilter(_QUIET)
    with transport.lock:
        window = transport._sanitize_window_size(None)
        packet = transport._sanitize_packet_size(None)
        chanid = transport._next_channel()
        m = Message()
        m.add_byte(cMSG_CHANNEL_OPEN)
        m.add_string(STREAMLOCAL)
        m.add_int(chanid)
        m.add_int(window)
        m.add_int(packet)
        m.add_string(path)
        m.add_string("")
        m.add_int(0)
        chan = Channel(chanid)
        transport._channels.put(chanid, chan)
        transport.channel_events[chanid] = event = threading.Event()
        transport.channels_seen[chanid] = True
        chan._set_transport(transport)
        chan._set_window(window, packet)
    transport._send_user_message(m)
    deadline = time.monotonic() + timeout_s
    while not event.wait(0.1):
        if not transport.active:
            raise transport.get_exception() or SSHException("Unable to open channel.")
        if time.monotonic() > deadline:
            raise SSHException("Timeout opening channel.")
    got = transport._channels.get(chanid)
    if got is not None:
        return got
    raise transport.get_exception() or SSHException("Unable to open channel.")


class SocketForward:
    """Listen on ``local_path``; each connection is piped to a channel from ``opener``
    (``open_streamlocal`` to the remote socket). ``close()`` stops listening, ends every
    piped connection and removes the local socket."""

    def __init__(self, host: str, remote_path: str, local_path: str,
                 opener: Callable[[], Any]) -> None:
        self.host = host
        self.remote_path = remote_path
        self.local_path = local_path
        self._open = opener
        self._lock = threading.Lock()
        self._live: list[Any] = []
        self._closed = False
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is created 0600: only our user may connect
        try:
            self._sock.bind(local_path)
        finally:
            os.umask(old)
        self._sock.listen(16)
        threading.Thread(target=self._accept, daemon=True,
                         name=f"fwd-{host}").start()

    def reachable(self) -> bool:
        """Something listens on the remote socket now (a channel opens; closed at once).
        Raises ``ForwardRefused`` when the host does not forward to Unix sockets."""
        from paramiko.ssh_exception import ChannelException, SSHException

        try:
            self._open().close()
            return True
        except ChannelException as e:
            if e.code == PROHIBITED:
                raise ForwardRefused(f"{self.host}: its sshd does not forward to Unix "
                                     f"sockets ({e.text})") from None
            return False
        except (SSHException, OSError, EOFError) as e:
            raise ForwardRefused(f"{self.host}: {why(e)}") from None

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._pipe, args=(conn,), daemon=True,
                             name=f"fwd-{self.host}-conn").start()

    def _pipe(self, conn: socket.socket) -> None:
        try:
            chan = self._open()
        except Exception:  # noqa: BLE001  (the client sees the connection close)
            conn.close()
            return
        with self._lock:
            if self._closed:
                chan.close()
                conn.close()
                return
            self._live += [conn, chan]

        def up() -> None:  # local -> host
            try:
                while data := conn.recv(65536):
                    chan.sendall(data)
            except Exception:  # noqa: BLE001, S110  (either side went away)
                pass
            with contextlib.suppress(Exception):
                chan.shutdown_write()

        t = threading.Thread(target=up, daemon=True, name=f"fwd-{self.host}-up")
        t.start()
        try:
            while data := chan.recv(65536):
                conn.sendall(data)
        except Exception:  # noqa: BLE001, S110
            pass
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)
        t.join(30)
        chan.close()
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            live, self._live = self._live, []
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        for x in live:
            with contextlib.suppress(Exception):
                x.close()
        with contextlib.suppress(OSError):
            os.unlink(self.local_path)
