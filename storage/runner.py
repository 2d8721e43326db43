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
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


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
        """Copy a local file to ``remote_path`` on host (SFTP over the same connection);
        raise HostUnreachable if the host cannot be reached, OSError if the copy fails."""
        ...

    def close(self) -> None: ...


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
        shutil.copyfile(local_path, remote_path)

    def close(self) -> None:
        pass
