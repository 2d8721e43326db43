"""SSH to the configured hosts with fabric: ``FabricRunner``, the real ``storage.runner.Runner``.

One fabric ``Connection`` per host, reused for the whole run; host keys checked against the
configured known_hosts (paramiko ``RejectPolicy``: an unknown key is an error, never
added); key-file auth; a connect timeout and a timeout per command. Commands are argv lists
joined with ``shlex.join``, never shell text.

``SSHPool`` keeps the connections: a runner's own (closed with it) or one shared by every
check of a process (``watch``, the bot: ``Env.ssh_pool``), bounded (least recently used
closed first), at most ``max_connecting`` handshakes at once, a connection idle for a
while probed (a session channel opened and closed) and reopened when it died. A transient connect failure (reset, refused, timeout,
the banner never read: what sshd's MaxStartups does to a connection it drops) is tried once
more after a short jittered pause; an auth failure or a host key mismatch never is.
"""

from __future__ import annotations

import logging
import os
import random
import shlex
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from storage.runner import CommandResult, HostUnreachable, Spawned
from storage.safefile import (
    MAX_KNOWN_HOSTS_BYTES,
    MAX_SSH_KEY_BYTES,
    FileRefused,
    check_regular,
    fd_path,
    open_regular,
)
from storage.ssh_forward import SocketForward, open_streamlocal
from storage.targets import HostTarget
from storage.why import why

# paramiko's reader thread logs a dropped handshake as an ERROR with its traceback; with
# no logging configured (the CLI) Python printed that on stderr under check's answer, where
# the failure is already a host finding (or was retried): a handler of its own keeps it
# quiet there, and a configured log (the bot's) still gets it
logging.getLogger("paramiko").addHandler(logging.NullHandler())

# what a connect attempt may retry: the network or sshd's throttling, not a refusal by policy
_TRANSIENT = (ConnectionResetError, ConnectionRefusedError, ConnectionAbortedError,
              BrokenPipeError, TimeoutError, EOFError)
RETRY_PAUSE_S = (0.2, 0.8)  # the jittered pause before the one retry
MAX_OPEN = 2048  # pooled connections (each is a transport thread here, a process there)
# handshakes at once. Each host has its own sshd (MaxStartups counts per sshd): this bounds
# our CPU burst. Measured on 1,000 loopback hosts, 16 per sshd (benchmarks/fleet_ssh.py):
# 8 at once made no sshd drop one but took 89 s; 24 took 33 s and the 96 drops were
# all mended by the retry
MAX_CONNECTING = 24
PROBE_IDLE_S = 5.0
IDLE_WAKE_S = 2.0  # how often an open connection's paramiko thread wakes (its default 0.1 s)  # a pooled connection idle this long is probed before it is used again


class HandshakeGate:
    """At most ``limit`` handshakes at once; the limit halves (down to ``low``) when an
    sshd drops one unanswered and grows back by one after ``limit`` handshakes in a row
    went through (TCP's way with congestion): the retry of a dropped handshake then
    meets a calmer sshd instead of the same crowd."""

    def __init__(self, high: int, low: int = 4) -> None:
        self.high = high
        self.low = min(low, high)
        self.limit = high
        self.active = 0
        self._ok = 0
        self._cond = threading.Condition()

    def __enter__(self) -> HandshakeGate:
        with self._cond:
            while self.active >= self.limit:
                self._cond.wait()
            self.active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self.active -= 1
            self._cond.notify()

    def dropped(self) -> None:
        with self._cond:
            self.limit = max(self.low, self.limit // 2)
            self._ok = 0

    def passed(self) -> None:
        with self._cond:
            self._ok += 1
            if self._ok >= self.limit and self.limit < self.high:
                self.limit += 1
                self._ok = 0
                self._cond.notify()


class _Transient(HostUnreachable):
    """A connect failure worth one more try (``crowded``: the sshd dropped it unanswered,
    as under its MaxStartups: fewer handshakes at once from now on)."""

    def __init__(self, host: str, reason: str, crowded: bool = False) -> None:
        super().__init__(host, reason)
        self.crowded = crowded


def tried(reasons: Sequence[str]) -> str:
    """Why a host was not reached after these failed attempts (oldest first): the last
    reason, and with a retry that it was tried twice (and the first reason when it
    differed)."""
    last = reasons[-1]
    if len(reasons) == 1:
        return last
    return f"{last} (tried twice" + (")" if reasons[0] == last else f"; first: {reasons[0]})")


def _key(t: HostTarget) -> tuple[str, str, int, str | None, str | None]:
    return (t.user, t.address, t.port, t.key_file, t.known_hosts)


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)  # one user at a time
    conn: Any = None
    used_at: float = 0.0
    opened_at: float = 0.0


@dataclass
class PoolStats:
    opened: int = 0  # handshakes that succeeded
    reused: int = 0  # leases served by an open connection
    retried: int = 0  # connect attempts tried a second time
    reconnected: int = 0  # pooled connections found dead and reopened
    evicted: int = 0  # closed to stay within max_open


class SSHPool:
    """Open SSH connections keyed by (user, address, port, key, known_hosts); thread-safe.

    Callers hold ``lock(t)`` while they ``connect(t)`` and use the connection (one thread
    at a time on a connection, as before)."""

    def __init__(self, max_open: int = MAX_OPEN, max_connecting: int = MAX_CONNECTING,
                 probe_idle_s: float = PROBE_IDLE_S,
                 retry_pause_s: tuple[float, float] = RETRY_PAUSE_S, retry: bool = True
                 ) -> None:
        self.max_open = max(1, max_open)
        self.retry = retry  # off only to measure what the retry is worth
        self.probe_idle_s = probe_idle_s
        self.retry_pause_s = retry_pause_s
        self._entries: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        self._guard = threading.Lock()
        self._connecting = HandshakeGate(max(1, max_connecting))
        self._known: dict[str, tuple[tuple[int, int], Any]] = {}  # path -> (stamp, HostKeys)
        self.stats = PoolStats()

    def _entry(self, t: HostTarget) -> _Entry:
        with self._guard:
            e = self._entries.get(_key(t))
            if e is None:
                e = self._entries[_key(t)] = _Entry()
            self._entries.move_to_end(_key(t))
            return e

    def lock(self, t: HostTarget) -> threading.Lock:
        return self._entry(t).lock

    def conn(self, t: HostTarget) -> Any:
        """The open connection of ``t`` now, if any (no I/O)."""
        with self._guard:
            e = self._entries.get(_key(t))
        return e.conn if e is not None else None

    def __len__(self) -> int:
        with self._guard:
            return sum(1 for e in self._entries.values() if e.conn is not None)

    def connect(self, t: HostTarget) -> Any:
        """The open connection of ``t`` (the caller holds ``lock(t)``): reused when alive,
        else opened, a transient failure tried once more. Raises ``HostUnreachable``."""
        e = self._entry(t)
        conn = e.conn
        if conn is not None:
            if self._alive(t, e):
                e.used_at = time.monotonic()
                with self._guard:
                    self.stats.reused += 1
                return conn
            self._close(e)
            with self._guard:
                self.stats.reconnected += 1
        reasons: list[str] = []  # of the attempts that failed transiently
        for attempt in range(2 if self.retry else 1):
            if attempt:  # the one retry, after a jittered pause
                lo, hi = self.retry_pause_s
                time.sleep(random.uniform(lo, hi))  # noqa: S311  (jitter, not a secret)
                with self._guard:
                    self.stats.retried += 1
            try:
                conn = self._open(t)
                break
            except _Transient as err:
                if err.crowded:
                    self._connecting.dropped()
                reasons.append(err.reason)
        else:
            raise HostUnreachable(t.name, tried(reasons)) from None
        self._connecting.passed()
        now = time.monotonic()
        e.conn, e.used_at, e.opened_at = conn, now, now
        with self._guard:
            self.stats.opened += 1
        self._evict()
        return conn

    def _alive(self, t: HostTarget, e: _Entry) -> bool:
        """An open transport; probed (a session opened and closed: nothing runs) when it
        sat idle, so a connection sshd or the network dropped is reopened before a
        command is sent on it, never after (a runbook's step must not run twice)."""
        transport = e.conn.client.get_transport() if e.conn.is_connected else None
        if transport is None or not transport.is_active():
            return False
        if time.monotonic() - e.used_at < self.probe_idle_s:
            return True
        try:
            chan = transport.open_session(timeout=t.timeout_s)
            chan.close()
            return True
        except Exception:  # noqa: BLE001  (EOFError, SSHException, OSError: it died)
            return False

    def _open(self, t: HostTarget) -> Any:
        import paramiko
        from fabric import Config, Connection

        cfg = Config(overrides={"load_ssh_configs": False})
        ck: dict[str, Any] = {
            "timeout": t.timeout_s,
            "banner_timeout": t.timeout_s,
            "auth_timeout": t.timeout_s,
            "allow_agent": False,
            "look_for_keys": t.key_file is None,
        }
        if t.key_file:
            try:  # paramiko reads it whole: a FIFO would block it, /dev/zero never end
                check_regular(t.key_file, MAX_SSH_KEY_BYTES)
            except FileRefused as e:
                raise HostUnreachable(t.name, f"SSH key {e}") from None
            except OSError:
                pass  # missing or unreadable: paramiko says so, as before
            ck["key_filename"] = [t.key_file]
        conn = Connection(host=t.address, port=t.port, user=t.user, config=cfg,
                          connect_kwargs=ck)
        client = conn.client
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            if t.known_hosts:
                self._host_keys(client, t)
            else:
                client.load_system_host_keys()
        except OSError as e:
            raise HostUnreachable(t.name, f"cannot read known_hosts {t.known_hosts}: {e}") from e
        except FileRefused as e:
            raise HostUnreachable(t.name, f"known_hosts {e}") from None
        with self._connecting:
            try:
                conn.open()
            except paramiko.BadHostKeyException as e:
                raise HostUnreachable(t.name, f"host key mismatch: {e}") from None
            except paramiko.AuthenticationException as e:
                if "timeout" in str(e).lower():  # no answer in time, not a refusal
                    raise _Transient(t.name, f"authentication timed out: {e}") from None
                raise HostUnreachable(t.name, f"authentication failed: {e}") from None
            except paramiko.ssh_exception.NoValidConnectionsError as e:
                raise _Transient(t.name, f"connection refused: {e}") from None
            except paramiko.SSHException as e:
                msg = str(e)
                if "not found in known_hosts" in msg:
                    raise HostUnreachable(t.name, "unknown host key (not in "
                                          f"{t.known_hosts or 'known_hosts'}): {msg}") from None
                if "banner" in msg.lower() or isinstance(e.__cause__, _TRANSIENT) or \
                        isinstance(e.__context__, _TRANSIENT):
                    raise _Transient(t.name, msg, crowded=True) from None  # dropped
                raise HostUnreachable(t.name, msg) from None
            except _TRANSIENT as e:
                raise _Transient(t.name, f"{why(e)}",
                                 crowded=not isinstance(e, ConnectionRefusedError | TimeoutError)
                                 ) from None
            except OSError as e:  # no route, no such name: not something a retry mends
                raise HostUnreachable(t.name, f"{why(e)}") from None
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(30)  # a dead peer is noticed between checks, not at use
            # paramiko's reader thread wakes every 0.1 s to look for a close; a thousand
            # idle pooled connections did that 10,000 times a second (the GIL, the CPU).
            # Its close() does not wait for that wake-up (the packetizer closes at once).
            transport.sock.settimeout(IDLE_WAKE_S)
        return conn

    def _host_keys(self, client: Any, t: HostTarget) -> None:
        """This host's entries of its known_hosts, the file parsed once per pool (and
        again when it changes): a fleet's known_hosts lists every host, and parsing all
        of it for each connection made the first check grow with the square of hosts."""
        import paramiko

        assert t.known_hosts
        # a regular file within MAX_KNOWN_HOSTS_BYTES (a FIFO, /dev/zero or a huge file is
        # FileRefused, never read), and paramiko parses that very file (its descriptor)
        fd = open_regular(t.known_hosts, MAX_KNOWN_HOSTS_BYTES)
        try:
            st = os.fstat(fd)
            stamp = (st.st_mtime_ns, st.st_size)
            with self._guard:
                cached = self._known.get(t.known_hosts)
            if cached is None or cached[0] != stamp:
                cached = (stamp, paramiko.HostKeys(fd_path(fd)))
                with self._guard:
                    self._known[t.known_hosts] = cached
        finally:
            os.close(fd)
        name = t.address if t.port == 22 else f"[{t.address}]:{t.port}"
        mine = client.get_host_keys()
        for keytype, key in (cached[1].lookup(name) or {}).items():
            mine.add(name, keytype, key)

    def drop(self, t: HostTarget) -> None:
        with self._guard:
            e = self._entries.get(_key(t))
        if e is not None:
            self._close(e)

    @staticmethod
    def _close(e: _Entry) -> None:
        conn, e.conn = e.conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001, S110
                pass

    def _evict(self) -> None:
        """Close the least recently used connections beyond ``max_open`` (never one in
        use: its lock is held)."""
        while True:
            with self._guard:
                open_ = [e for e in self._entries.values() if e.conn is not None]
                if len(open_) <= self.max_open:
                    return
                victim = next((e for e in open_ if e.lock.acquire(blocking=False)), None)
                if victim is None:
                    return
            try:
                self._close(victim)
                with self._guard:
                    self.stats.evicted += 1
            finally:
                victim.lock.release()

    def close(self) -> None:
        with self._guard:
            entries = list(self._entries.values())
            self._entries.clear()
        for e in entries:
            self._close(e)


class FabricRunner:
    """``Runner`` over SSH with fabric; one connection per host, one thread at a time on it.

    ``host`` in ``run()`` is a configured host name or address. Connections open lazily
    and stay open until ``close()``: in ``pool`` (shared, left open for the next check)
    or in a pool of the runner's own (closed with it).
    """

    def __init__(self, hosts: Iterable[HostTarget], pool: SSHPool | None = None) -> None:
        self._targets: dict[str, HostTarget] = {}
        for h in hosts:
            self._targets[h.name] = h
            self._targets.setdefault(h.address, h)
        self._own = pool is None
        self.pool = pool if pool is not None else SSHPool()
        self._failed: dict[str, str] = {}

    @property
    def _conns(self) -> dict[str, Any]:
        """Host name -> its open connection (for tests)."""
        out = {}
        for name, t in self._targets.items():
            c = self.pool.conn(t)
            if c is not None and name == t.name:
                out[name] = c
        return out

    def _target(self, host: str) -> HostTarget:
        t = self._targets.get(host)
        if t is None:
            raise HostUnreachable(host, "not a configured host")
        return t

    def _lock(self, name: str) -> threading.Lock:
        return self.pool.lock(self._target(name))

    def _connect(self, t: HostTarget) -> Any:
        """Open (or reuse) the connection; unknown host keys and refusals raise."""
        return self.pool.connect(t)

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
                raise HostUnreachable(t.name, f"{why(e)}") from None
            except Exception as e:  # paramiko.SSHException mid-run  # noqa: BLE001
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{why(e)}") from None
        return CommandResult(t.name, tuple(argv), r.exited, r.stdout, r.stderr,
                             time.monotonic() - t0)

    def put(self, host: str, local_path: str, remote_path: str,
            timeout_s: float = 60.0) -> None:
        """Copy ``local_path`` to ``remote_path`` on the host, a new file there: its bytes
        go to the standard input of ``storage.hostscripts.put_argv`` (a constant script,
        never over a file that exists). A command like any other, so the restricted key
        (``stordoc-host``) allows it where the allowlist says and no SFTP is needed."""
        from storage.hostscripts import put_argv

        with open(local_path, "rb") as f:
            data = f.read()
        name, chan = self._session(host, put_argv(remote_path))
        try:
            chan.settimeout(timeout_s)
            chan.sendall(data)
            chan.shutdown_write()
            said = b""
            while chunk := chan.recv(65536):
                said += chunk[:4096 - len(said)]
            rc = int(chan.recv_exit_status())
        except Exception as e:  # noqa: BLE001  (a timeout, the connection gone)
            raise OSError(f"{name}: copy to {remote_path}: {why(e)}") from None
        finally:
            chan.close()
        if rc != 0:
            text = said.decode(errors="replace").strip().splitlines()
            raise OSError(f"{name}: copy to {remote_path} failed (rc {rc}): "
                          f"{text[-1] if text else 'no message'}")

    def spawn(self, host: str, argv: Sequence[str],
              on_line: Callable[[str, str], None] | None = None) -> Spawned:
        """Start argv on the host on a channel of its own (the connection is shared, its
        lock held only while the channel opens): several commands can run on one host at
        once, and ``run`` still works beside them (e.g. to signal them)."""
        name, chan = self._session(host, argv)
        return _ChannelSpawned(name, argv, on_line, chan)

    def _session(self, host: str, argv: Sequence[str]) -> tuple[str, Any]:
        """``argv`` started on a channel of its own, stderr with stdout (the host's lock
        held only while it opens); a host that cannot open one is HostUnreachable."""
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
            except Exception as e:  # noqa: BLE001  (OSError, EOFError, paramiko.SSHException)
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{why(e)}") from None
        return t.name, chan

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
        self.pool.drop(self._target(name))

    def close(self) -> None:
        """Close the connections, or leave them in a shared pool for the next check."""
        if self._own:
            self.pool.close()


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
