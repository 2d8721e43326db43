"""The one door to a host's shell: a small runner protocol in front of fabric.

Commands are argv lists, never strings: each element is quoted with ``shlex.quote`` when
it has to cross SSH, so nothing a user typed is ever interpreted by a shell. Three
implementations: ``FabricRunner`` (storage.ssh, real SSH), ``DryRunRecorder`` (records,
runs nothing: the plan of a runbook) and ``LocalRunner`` (this machine, subprocess without
a shell; for tests and the lab).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from storage.why import why


@dataclass(frozen=True)
class CommandResult:
    host: str
    argv: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)


class HostUnreachable(Exception):
    """The host did not answer (connect refused, timeout, auth failure)."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason


class Runner(Protocol):
    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        """Run argv on host; raise HostUnreachable if the host cannot be reached."""
        ...

    def put(self, host: str, local_path: str, remote_path: str,
            timeout_s: float = 60.0) -> None:
        """Copy a local file to ``remote_path`` on host, a new file (never over one that
        exists); raise HostUnreachable if the host cannot be reached, OSError if the copy
        fails."""
        ...

    def close(self) -> None: ...


class Spawned:
    """A command started on a host that keeps running while we read what it prints.

    Its output (stdout and stderr together) is read by a thread of its own, line by line:
    ``on_line`` sees each line as it arrives, ``lines()`` holds them all. ``write`` feeds its
    standard input (the start barrier of the benchmark launcher); ``wait`` returns the exit
    status, or None while it runs. Implementations wrap a local ``Popen`` or an SSH
    channel: the same object either way."""

    def __init__(self, host: str, argv: Sequence[str],
                 on_line: Callable[[str, str], None] | None = None) -> None:
        self.host = host
        self.argv = tuple(argv)
        self._on_line = on_line
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.rc: int | None = None
        self.started = time.monotonic()

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    @property
    def output(self) -> str:
        return "".join(x + "\n" for x in self.lines())

    def _feed_lines(self, reader: Callable[[], bytes]) -> None:
        """Read chunks until EOF and split them into lines (the reader thread's body)."""
        buf = b""
        try:
            while True:
                chunk = reader()
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    self._line(raw.decode(errors="replace").rstrip("\r"))
        except Exception as e:  # noqa: BLE001  (a broken pipe ends the output, not us)
            self._line(f"stordoc: output lost: {why(e)}")
        if buf:
            self._line(buf.decode(errors="replace"))

    def _line(self, text: str) -> None:
        with self._lock:
            self._lines.append(text)
        if self._on_line is not None:
            try:
                self._on_line(self.host, text)
            except Exception:  # noqa: BLE001, S110  (a broken callback must not end the read)
                pass

    def _finish(self, rc: int) -> None:
        self.rc = rc
        self._done.set()

    def wait(self, timeout_s: float | None = None) -> int | None:
        self._done.wait(timeout_s)
        return self.rc

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    def write(self, data: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class Spawner(Runner, Protocol):
    """A runner that can also start long-running commands and read them as they go."""

    def spawn(self, host: str, argv: Sequence[str],
              on_line: Callable[[str, str], None] | None = None) -> Spawned:
        """Start argv on host; raise HostUnreachable if the host cannot be reached."""
        ...


class _LocalSpawned(Spawned):
    def __init__(self, host: str, argv: Sequence[str],
                 on_line: Callable[[str, str], None] | None) -> None:
        super().__init__(host, argv, on_line)
        self._proc: subprocess.Popen[bytes] = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        out = self._proc.stdout
        assert out is not None
        threading.Thread(target=self._run, args=(out,), daemon=True,
                         name=f"spawn-{host}").start()

    def _run(self, out: Any) -> None:
        self._feed_lines(lambda: out.read1(65536))
        self._finish(self._proc.wait())

    def write(self, data: str) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.write(data.encode())
            self._proc.stdin.flush()

    def close(self) -> None:
        if self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass


@dataclass
class DryRunRecorder:
    """Records what would run; returns rc 0 with empty output."""

    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        self.calls.append((host, tuple(argv)))
        return CommandResult(host, tuple(argv), 0, "", "", 0.0)

    def put(self, host: str, local_path: str, remote_path: str,
            timeout_s: float = 60.0) -> None:
        self.calls.append((host, ("put", local_path, remote_path)))

    def close(self) -> None:
        pass


@dataclass
class LocalRunner:
    """Runs argv on this machine without a shell, whatever the host name says."""

    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        t0 = time.monotonic()
        try:
            p = subprocess.run(
                list(argv), capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            return CommandResult(host, tuple(argv), -1, out, "timed out",
                                 time.monotonic() - t0, timed_out=True)
        except FileNotFoundError as e:
            return CommandResult(host, tuple(argv), 127, "", str(e), time.monotonic() - t0)
        return CommandResult(host, tuple(argv), p.returncode, p.stdout, p.stderr,
                             time.monotonic() - t0)

    def put(self, host: str, local_path: str, remote_path: str,
            timeout_s: float = 60.0) -> None:
        with open(local_path, "rb") as src, open(remote_path, "xb") as dst:
            shutil.copyfileobj(src, dst)

    def spawn(self, host: str, argv: Sequence[str],
              on_line: Callable[[str, str], None] | None = None) -> Spawned:
        return _LocalSpawned(host, argv, on_line)

    def close(self) -> None:
        pass
