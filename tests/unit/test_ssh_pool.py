"""``storage.ssh.SSHPool`` against a real sshd on 127.0.0.1 (started here, stopped by pid)
behind a small TCP relay that can drop a connection unanswered (what sshd's MaxStartups
does) or cut the live ones (a connection that died between checks). Proven: a dropped
handshake is tried once more and then works; twice dropped is a host error naming both;
a host key mismatch and an auth failure are never retried (one connection each); a
second runner on the same pool reuses the connection; a dead pooled connection is
reopened before the next command; the pool stays within its bound."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from storage.runner import HostUnreachable
from storage.ssh import FabricRunner, SSHPool, tried
from storage.targets import HostTarget

SSHD = "/usr/sbin/sshd"
pytestmark = pytest.mark.skipif(not os.path.exists(SSHD) or os.geteuid() != 0
                                or not shutil.which("ssh-keygen"),
                                reason="needs sshd, ssh-keygen and root")


def _port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = int(s.getsockname()[1])
    s.close()
    return p


@dataclass
class Sshd:
    d: Path
    port: int


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    d = tmp_path_factory.mktemp("sshd")
    for key in ("host", "client", "other"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)],
                       check=True)
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    port = _port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\n"
        f"PidFile {d / 'sshd.pid'}\nAuthorizedKeysFile {d / 'authorized_keys'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "AllowUsers root@127.*\nLogLevel ERROR\nUseDNS no\nSetEnv SHLVL=1\n")
    Path("/run/sshd").mkdir(exist_ok=True)
    subprocess.run([SSHD, "-f", str(d / "sshd_config"), "-E", str(d / "log")], check=True)
    for _ in range(100):
        if (d / "sshd.pid").exists() and (d / "sshd.pid").read_text().strip():
            break
        time.sleep(0.05)
    pid = int((d / "sshd.pid").read_text())
    try:
        yield Sshd(d, port)
    finally:
        os.kill(pid, signal.SIGTERM)


class Relay:
    """127.0.0.1:port -> the sshd; the first ``drop`` connections closed unanswered."""

    def __init__(self, to: int, drop: int = 0) -> None:
        self.to, self.drop, self.accepted = to, drop, 0
        self.live: list[socket.socket] = []
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.port = int(self.s.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.accepted += 1
            if self.accepted <= self.drop:
                c.close()  # as sshd's MaxStartups drops one: no banner, closed
                continue
            u = socket.create_connection(("127.0.0.1", self.to))
            self.live += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """End every relayed connection (the host rebooted, a firewall forgot it)."""
        for s in self.live:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.live.clear()

    def close(self) -> None:
        self.cut()
        self.s.close()


def _known(sshd: Sshd, port: int, key: str = "host", name: str = "known_hosts") -> str:
    pub = " ".join((sshd.d / f"{key}.pub").read_text().split()[:2])
    p = sshd.d / f"{name}-{port}"
    p.write_text(f"[127.0.0.1]:{port} {pub}\n")
    return str(p)


def _host(sshd: Sshd, relay: Relay, **kw: object) -> HostTarget:
    h = HostTarget("h1", "127.0.0.1", port=relay.port, key_file=str(sshd.d / "client"),
                   known_hosts=_known(sshd, relay.port), timeout_s=5)
    return replace(h, **kw)  # type: ignore[arg-type]


FAST = (0.01, 0.05)  # the retry's pause, short for the test


def test_a_dropped_handshake_is_retried_once(sshd: Sshd) -> None:
    relay = Relay(sshd.port, drop=1)
    pool = SSHPool(retry_pause_s=FAST)
    try:
        h = _host(sshd, relay)
        r = FabricRunner([h], pool=pool).run("h1", ["echo", "ok"])
        assert r.ok and r.stdout == "ok\n"
        assert relay.accepted == 2 and pool.stats.retried == 1
    finally:
        pool.close()
        relay.close()


def test_dropped_twice_is_a_host_error_and_no_retry_means_no_second_try(sshd: Sshd) -> None:
    relay = Relay(sshd.port, drop=2)
    pool = SSHPool(retry_pause_s=FAST)
    try:
        with pytest.raises(HostUnreachable) as e:
            FabricRunner([_host(sshd, relay)], pool=pool).run("h1", ["true"])
        assert "tried twice" in e.value.reason and relay.accepted == 2
        # paramiko words a dropped handshake two ways (no banner; a reset while reading
        # it) by timing: the wording of alike and unlike attempts is
        # test_the_one_retry_says_what_each_attempt_met's
        assert "(tried twice" in e.value.reason
        assert pool.stats.retried == 1
    finally:
        pool.close()
        relay.close()
    relay = Relay(sshd.port, drop=1)
    pool = SSHPool(retry=False)
    try:
        with pytest.raises(HostUnreachable) as e:
            FabricRunner([_host(sshd, relay)], pool=pool).run("h1", ["true"])
        assert relay.accepted == 1
        assert "tried" not in e.value.reason and pool.stats.retried == 0
    finally:
        pool.close()
        relay.close()


@pytest.mark.parametrize("reasons, said", [
    (["connection refused"], "connection refused"),
    (["timed out", "timed out"], "timed out (tried twice)"),
    (["connection reset", "connection refused"],
     "connection refused (tried twice; first: connection reset)"),
])
def test_the_one_retry_says_what_each_attempt_met(reasons: list[str], said: str) -> None:
    """The wording of ``SSHPool.connect``'s one retry loop (storage.ssh.tried)."""
    assert tried(reasons) == said


def test_host_key_mismatch_and_auth_failure_are_not_retried(sshd: Sshd) -> None:
    for kw, said in (({"known_hosts": None}, "mismatch"),
                     ({"key_file": str(sshd.d / "other")}, "authentication failed")):
        relay = Relay(sshd.port)
        pool = SSHPool(retry_pause_s=FAST)
        h = _host(sshd, relay)
        if said == "mismatch":
            kw = {"known_hosts": _known(sshd, relay.port, key="other", name="wrong")}
        try:
            with pytest.raises(HostUnreachable) as e:
                FabricRunner([replace(h, **kw)], pool=pool).run(  # type: ignore[arg-type]
                    "h1", ["true"])
            assert said in e.value.reason
            assert relay.accepted == 1 and pool.stats.retried == 0
        finally:
            pool.close()
            relay.close()


def test_the_pool_outlives_a_check_and_reopens_a_dead_connection(sshd: Sshd) -> None:
    relay = Relay(sshd.port)
    pool = SSHPool(retry_pause_s=FAST)
    try:
        h = _host(sshd, relay)
        first = FabricRunner([h], pool=pool)
        assert first.run("h1", ["echo", "1"]).stdout == "1\n"
        conn = first._conns["h1"]
        first.close()  # the check ends: its connection stays in the shared pool
        second = FabricRunner([h], pool=pool)
        assert second.run("h1", ["echo", "2"]).stdout == "2\n"
        assert second._conns["h1"] is conn and relay.accepted == 1
        assert pool.stats.opened == 1 and pool.stats.reused >= 1
        relay.cut()  # the connection dies between two checks
        for _ in range(50):  # paramiko's reader sees the end of the stream
            if not conn.is_connected:
                break
            time.sleep(0.05)
        third = FabricRunner([h], pool=pool)
        assert third.run("h1", ["echo", "3"]).stdout == "3\n"
        assert pool.stats.reconnected == 1 and relay.accepted == 2
        assert third._conns["h1"] is not conn
    finally:
        pool.close()
        relay.close()


def test_an_idle_connection_is_probed_before_use(sshd: Sshd) -> None:
    relay = Relay(sshd.port)
    pool = SSHPool(retry_pause_s=FAST, probe_idle_s=0.0)
    try:
        h = _host(sshd, relay)
        r = FabricRunner([h], pool=pool)
        assert r.run("h1", ["echo", "a"]).ok and r.run("h1", ["echo", "b"]).ok
        assert pool.stats.opened == 1 and relay.accepted == 1  # the probe passed
    finally:
        pool.close()
        relay.close()


def test_the_pool_keeps_within_its_bound(sshd: Sshd) -> None:
    relay = Relay(sshd.port)
    pool = SSHPool(max_open=2, retry_pause_s=FAST)
    try:
        base = _host(sshd, relay)
        hosts = [replace(base, name=f"h{i}", known_hosts=_known(sshd, relay.port,
                                                                 name=f"kh{i}"))
                 for i in range(3)]
        r = FabricRunner(hosts, pool=pool)
        for h in hosts:
            assert r.run(h.name, ["true"]).ok
        assert len(pool) == 2 and pool.stats.evicted == 1
        assert "h0" not in r._conns  # the least recently used went first
    finally:
        pool.close()
        relay.close()


def test_the_handshake_gate_halves_on_a_drop_and_grows_back() -> None:
    from storage.ssh import HandshakeGate

    g = HandshakeGate(24)
    g.dropped()
    assert g.limit == 12
    for _ in range(3):
        g.dropped()
    assert g.limit == 4  # never below its floor
    for _ in range(4):  # a limit's worth of handshakes in a row: one more at once
        g.passed()
    assert g.limit == 5
    got: list[int] = []
    held = threading.Event()

    def hold() -> None:
        with g:
            got.append(g.active)
            held.wait(5)

    ths = [threading.Thread(target=hold) for _ in range(8)]
    for th in ths:
        th.start()
    for _ in range(100):
        if g.active == 5:
            break
        time.sleep(0.05)
    time.sleep(0.1)
    assert g.active == 5  # the others wait at the gate
    held.set()
    for th in ths:
        th.join(5)
    assert len(got) == 8 and max(got) <= 5


def test_put_copies_any_bytes_to_a_new_file_and_never_over_one(sshd: Sshd,
                                                              tmp_path: Path) -> None:
    """``FabricRunner.put`` through a real sshd (the copy goes to the put script's standard
    input, no SFTP): the file there holds the same bytes; a file already there is left as
    it was and the copy is an OSError that says so; a host that does not answer is
    HostUnreachable."""
    relay = Relay(sshd.port)
    pool = SSHPool(retry_pause_s=FAST)
    try:
        runner = FabricRunner([_host(sshd, relay)], pool=pool)
        local = tmp_path / "local.ring.gz"
        data = os.urandom(300_000) + b"\0" * 10
        local.write_bytes(data)
        dest = tmp_path / "remote" / "object.ring.gz.tmp"
        dest.parent.mkdir()
        runner.put("h1", str(local), str(dest))
        assert dest.read_bytes() == data and oct(dest.stat().st_mode & 0o777) == "0o644"
        dest.write_bytes(b"not ours")
        with pytest.raises(OSError, match="exists: stordoc does not write over it"):
            runner.put("h1", str(local), str(dest))
        assert dest.read_bytes() == b"not ours"
        with pytest.raises(OSError, match="cannot create it"):
            runner.put("h1", str(local), str(tmp_path / "no-dir" / "x"))
        assert not (tmp_path / "no-dir").exists()
    finally:
        pool.close()
        relay.close()
    gone = HostTarget("h2", "127.0.0.1", port=_port(), key_file=str(sshd.d / "client"),
                      timeout_s=2)
    with pytest.raises(HostUnreachable):
        FabricRunner([gone]).put("h2", str(local), str(tmp_path / "y"))
