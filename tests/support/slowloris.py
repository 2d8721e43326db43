"""Slow HTTP clients (slowloris) for tests and benchmarks: N connections to a loopback
server that each send the start of a request, then one byte every ``every_s``, never
finishing, until the server answers or hangs up. One thread drives them all."""

from __future__ import annotations

import select
import socket
import threading
import time
from dataclasses import dataclass, field

HEAD = (b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n")


@dataclass
class Slow:
    sock: socket.socket
    sent: int = 0
    answer: bytes = b""
    closed_at: float | None = None  # time.monotonic() when the server answered or closed
    opened_at: float = field(default_factory=time.monotonic)


class SlowClients:
    """``n`` connections to ``port`` that send ``HEAD`` (headers never finished), or with
    ``in_body`` complete headers announcing a body they send one byte at a time."""

    def __init__(self, port: int, n: int, every_s: float = 5.0, in_body: bool = False,
                 host: str = "127.0.0.1") -> None:
        self.every_s = every_s
        self.clients: list[Slow] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        for _ in range(n):
            s = socket.create_connection((host, port), timeout=30)
            s.sendall(HEAD + (b"Content-Length: 100000\r\n\r\ntext=" if in_body else b""))
            s.setblocking(False)
            self.clients.append(Slow(s))
        self._t = threading.Thread(target=self._drive, name="slowloris", daemon=True)
        self._t.start()

    def _drive(self) -> None:
        next_byte = time.monotonic() + self.every_s
        while not self._stop.is_set():
            with self._lock:
                open_ = [c for c in self.clients if c.closed_at is None]
            if not open_:
                return
            wait = max(0.0, min(0.1, next_byte - time.monotonic()))
            readable, _, _ = select.select([c.sock for c in open_], [], [], wait)
            for c in open_:
                if c.sock in readable:
                    self._read(c)
            if time.monotonic() >= next_byte:
                next_byte = time.monotonic() + self.every_s
                for c in open_:
                    if c.closed_at is None:
                        try:
                            c.sock.send(b"x" if c.sent % 2 else b"X")
                            c.sent += 1
                        except OSError:  # the server hung up: what it said is read next
                            self._read(c)

    def _read(self, c: Slow) -> None:
        try:
            while chunk := c.sock.recv(4096):
                c.answer += chunk
        except BlockingIOError:
            if not c.answer:
                return  # nothing yet: still open
        except OSError:
            pass
        with self._lock:
            c.closed_at = time.monotonic()

    def open_count(self) -> int:
        with self._lock:
            return sum(1 for c in self.clients if c.closed_at is None)

    def wait_all_closed(self, timeout: float) -> bool:
        """True once the server answered or closed every connection (hang guard)."""
        end = time.monotonic() + timeout
        while self.open_count() and time.monotonic() < end:
            time.sleep(0.05)
        return self.open_count() == 0

    def close(self) -> None:
        self._stop.set()
        self._t.join(10)
        for c in self.clients:
            c.sock.close()
