"""SSH to the configured hosts with fabric: ``FabricRunner``, the real ``storage.runner.Runner``.

One fabric ``Connection`` per host, reused for the whole run; host keys checked against the
configured known_hosts (paramiko ``RejectPolicy``: an unknown key is an error, never
added); key-file auth; a connect timeout and a timeout per command. Commands are argv lists
joined with ``shlex.join``, never shell text.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from storage.runner import CommandResult, HostUnreachable, Spawned
from storage.ssh_forward import SocketForward, open_streamlocal
from storage.targets import HostTarget


class FabricRunner:
    """``Runner`` over SSH with fabric; one connection per host, one thread at a time on it.

    ``host`` in ``run()`` is a configured host name or address. Connections open lazily
    and stay open until ``close()``.
    """

    def __init__(self, hosts: Iterable[HostTarget]) -> None:
        self._targets: dict[str, HostTarget] = {}
        for h in hosts:
            self._targets[h.name] = h
            self._targets.setdefault(h.address, h)
        self._conns: dict[str, Any] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._failed: dict[str, str] = {}

    def _target(self, host: str) -> HostTarget:
        t = self._targets.get(host)
        if t is None:
            raise HostUnreachable(host, "not a configured host")
        return t

    def _lock(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())

    def _connect(self, t: HostTarget) -> Any:
        """Open (or reuse) the connection; unknown host keys and refusals raise."""
        import paramiko
        from fabric import Config, Connection

        conn = self._conns.get(t.name)
        if conn is not None and conn.is_connected:
            return conn
        cfg = Config(overrides={"load_ssh_configs": False})
        ck: dict[str, Any] = {
            "timeout": t.timeout_s,
            "banner_timeout": t.timeout_s,
            "auth_timeout": t.timeout_s,
            "allow_agent": False,
            "look_for_keys": t.key_file is None,
        }
        if t.key_file:
            ck["key_filename"] = [t.key_file]
        conn = Connection(host=t.address, port=t.port, user=t.user, config=cfg,
                          connect_kwargs=ck)
        client = conn.client
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            if t.known_hosts:
                client.load_host_keys(t.known_hosts)
            else:
                client.load_system_host_keys()
        except OSError as e:
            raise HostUnreachable(t.name, f"cannot read known_hosts {t.known_hosts}: {e}") from e
        try:
            conn.open()
        except paramiko.BadHostKeyException as e:
            raise HostUnreachable(t.name, f"host key mismatch: {e}") from None
        except paramiko.SSHException as e:
            msg = str(e)
            if "not found in known_hosts" in msg:
                msg = f"unknown host key (not in {t.known_hosts or 'known_hosts'}): {msg}"
            raise HostUnreachable(t.name, msg) from None
        except (TimeoutError, OSError, EOFError) as e:
            raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
        self._conns[t.name] = conn
        return conn

    def open_all(self, max_workers: int = 32) -> dict[str, str]:
        """Connect to every host in parallel now (e.g. while Ceph and Swift are read).

        Returns host name -> reason for the hosts that failed; ``run()`` on those raises
        ``HostUnreachable`` at once instead of waiting out the connect timeout again.
        """
        targets = list({t.name: t for t in self._targets.values()}.values())

        def one(t: HostTarget) -> tuple[str, str | None]:
            try:
                with self._lock(t.name):
                    self._connect(t)
                return t.name, None
            except HostUnreachable as e:
                return t.name, e.reason

        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(targets)))) as pool:
            failed = {n: r for n, r in pool.map(one, targets) if r is not None}
        self._failed.update(failed)
        return failed

    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        from invoke.exceptions import CommandTimedOut

        t = self._target(host)
        if t.name in self._failed:
            raise HostUnreachable(t.name, self._failed[t.name])
        cmd = shlex.join(list(argv))
        t0 = time.monotonic()
        with self._lock(t.name):
            conn = self._connect(t)
            try:
                r = conn.run(cmd, hide=True, warn=True, timeout=max(1, int(timeout_s + 0.999)),
                             in_stream=False, pty=False)
            except CommandTimedOut as e:
                out = e.result.stdout if e.result is not None else ""
                return CommandResult(t.name, tuple(argv), -1, out, "timed out",
                                     time.monotonic() - t0, timed_out=True)
            except (OSError, EOFError) as e:
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
            except Exception as e:  # paramiko.SSHException mid-run  # noqa: BLE001
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
        return CommandResult(t.name, tuple(argv), r.exited, r.stdout, r.stderr,
                             time.monotonic() - t0)

    def put(self, host: str, local_path: str, remote_path: str,
            timeout_s: float = 60.0) -> None:
        """SFTP ``local_path`` to ``remote_path`` on the host (no shell involved)."""
        t = self._target(host)
        if t.name in self._failed:
            raise HostUnreachable(t.name, self._failed[t.name])
        with self._lock(t.name):
            conn = self._connect(t)
            try:
                sftp = conn.client.open_sftp()
            except Exception as e:  # noqa: BLE001  (paramiko.SSHException: no sftp)
                raise OSError(f"{t.name}: no SFTP: {type(e).__name__}: {e}") from None
            try:
                sftp.get_channel().settimeout(timeout_s)
                sftp.put(local_path, remote_path)
            finally:
                sftp.close()

    def spawn(self, host: str, argv: Sequence[str],
              on_line: Callable[[str, str], None] | None = None) -> Spawned:
        """Start argv on the host on a channel of its own (the connection is shared, its
        lock held only while the channel opens): several commands can run on one host at
        once, and ``run`` still works beside them (e.g. to signal them)."""
        t = self._target(host)
        if t.name in self._failed:
            raise HostUnreachable(t.name, self._failed[t.name])
        with self._lock(t.name):
            conn = self._connect(t)
            try:
                transport = conn.client.get_transport()
                if transport is None or not transport.is_active():
                    raise EOFError("connection closed")
                chan = transport.open_session(timeout=t.timeout_s)
                chan.set_combine_stderr(True)
                chan.exec_command(shlex.join(list(argv)))
            except (OSError, EOFError) as e:
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
            except Exception as e:  # noqa: BLE001  (paramiko.SSHException)
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
        return _ChannelSpawned(t.name, argv, on_line, chan)

    def forward_socket(self, host: str, remote_path: str, local_path: str) -> SocketForward:
        """Listen on the local Unix socket ``local_path`` (in a private directory) and
        carry each connection to it over this host's SSH connection to the Unix socket
        ``remote_path`` there (``storage.ssh_forward``): no TCP port on either side."""
        t = self._target(host)
        if t.name in self._failed:
            raise HostUnreachable(t.name, self._failed[t.name])
        with self._lock(t.name):
            transport = self._connect(t).client.get_transport()
        if transport is None or not transport.is_active():
            raise HostUnreachable(t.name, "connection closed")
        return SocketForward(t.name, remote_path, local_path,
                             lambda: open_streamlocal(transport, remote_path, t.timeout_s))

    def _drop(self, name: str) -> None:
        conn = self._conns.pop(name, None)
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001, S110
                pass

    def close(self) -> None:
        for name in list(self._conns):
            self._drop(name)


class _ChannelSpawned(Spawned):
    """A command on an SSH channel: its output read by a thread, its exit status kept."""

    def __init__(self, host: str, argv: Sequence[str],
                 on_line: Callable[[str, str], None] | None, chan: Any) -> None:
        super().__init__(host, argv, on_line)
        self._chan = chan
        threading.Thread(target=self._run, daemon=True, name=f"ssh-{host}").start()

    def _run(self) -> None:
        self._feed_lines(lambda: self._chan.recv(65536))
        try:
            rc = int(self._chan.recv_exit_status())
        except Exception:  # noqa: BLE001  (the connection died: no status)
            rc = -1
        self._finish(rc)

    def write(self, data: str) -> None:
        try:
            self._chan.sendall(data.encode())
        except Exception as e:  # noqa: BLE001
            raise OSError(f"{self.host}: cannot write to the command: {e}") from None

    def close(self) -> None:
        try:
            self._chan.shutdown_write()
        except Exception:  # noqa: BLE001, S110
            pass
