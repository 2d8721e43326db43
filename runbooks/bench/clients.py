"""Load from many hosts: the benchmark clients, reached over SSH.

A multi-client benchmark runs the stock engines on each client (``rados bench``, a
``fio --server`` driven by our ``fio --client``, the Swift mix agent) and adds up what
they report. This module is what every engine shares:

- **which clients**: names typed by a person are checked against the cluster's configured
  hosts (exact names, so a Unicode look-alike is an unknown host, never a new address;
  ``runbooks.bench.client_hosts``, with the Ceph files a client needs);
- **are they there**: every client is connected to in parallel and asked for the tools the
  engine needs *before anything is started or written*; one unreachable client refuses the
  whole run in one line;
- **what they need**: a private directory per client (``mktemp -d``, mode 0700) holding a
  minimal ``ceph.conf`` and the one key of the configured Ceph client (or the Swift token),
  copied over SSH (a new file, never over one), never on a command line, never logged, removed after the run;
- **a common start**: each command is started through ``LAUNCH``, a constant ``sh`` script
  that prints its pid, waits for one ``go`` line on its standard input, then ``exec``\\ s the
  engine under ``timeout`` (so a dead orchestrator leaves nothing running past the run's
  cap). The orchestrator writes ``go`` to every client back to back: the start barrier;
- **stopping**: ``SIGNAL`` signals a pid only while its command line still names this run's
  private directory (a recycled pid is left alone).

Nothing typed reaches a shell as text: the scripts are constants, every input is a
positional argument, and argv lists are joined with ``shlex.join`` by the runner.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from runbooks.bench.client_hosts import ceph_client_files, resolve_clients, spawner
from runbooks.model import Refused, RunContext
from storage.runner import HostUnreachable, Spawned, Spawner
from storage.ssh_forward import SocketForward
from storage.targets import HostTarget

__all__ = ["ALIVE", "LAUNCH", "READY_TIMEOUT_S", "SIGNAL", "STAGE_RE", "STAGE_TEMPLATE",
           "Fleet", "Launched", "ceph_client_files", "fleet_for", "resolve_clients"]

# $1.. = timeout seconds, then the engine's argv. Prints the pid, waits for "go".
LAUNCH = ('echo "stordoc-ready $$"; read -r go || exit 97; [ "$go" = go ] || exit 97; '
          'exec timeout --foreground -s INT -k 20 "$@"')
# $1 pid, $2 a string its command line must contain (this run's directory), $3 signal
SIGNAL = ('c=$(tr "\\000" " " < "/proc/$1/cmdline" 2>/dev/null) || exit 3; '
          'case "$c" in *"$2"*) kill -s "$3" "$1";; *) exit 3;; esac')
# $1 pid, $2 marker: exit 0 while that process still runs our command
ALIVE = ('c=$(tr "\\000" " " < "/proc/$1/cmdline" 2>/dev/null) || exit 1; '
         'case "$c" in *"$2"*) exit 0;; *) exit 1;; esac')
STAGE_TEMPLATE = "/tmp/stordoc-bench.XXXXXXXXXX"
STAGE_RE = re.compile(r"\A/tmp/stordoc-bench\.[A-Za-z0-9]{10}\Z")
_READY_RE = re.compile(r"\Astordoc-ready ([0-9]{1,9})\Z")
READY_TIMEOUT_S = 30.0


@dataclass
class Launched:
    """One engine command started on a client through ``LAUNCH``."""

    client: str
    proc: Spawned
    pid: int | None = None
    released_at: float | None = None  # time.time() of its "go"

    @property
    def running(self) -> bool:
        return self.proc.running


@dataclass
class Fleet:
    """The clients of one run: their runner, private directories and launched commands.

    Use as a context manager: leaving it stops whatever still runs and removes every
    private directory, also after a failure or a cancel."""

    hosts: list[HostTarget]
    runner: Spawner
    owns_runner: bool = True
    on_step: Callable[[str, str, str, int], None] | None = None
    dirs: dict[str, str] = field(default_factory=dict)
    launched: list[Launched] = field(default_factory=list)
    forwards: list[SocketForward] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [h.name for h in self.hosts]

    def host(self, name: str) -> HostTarget:
        return next(h for h in self.hosts if h.name == name)

    def _step(self, title: str, command: str, output: str = "", rc: int = 0) -> None:
        if self.on_step is not None:
            self.on_step(title, command, output, rc)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ checks

    def each(self, fn: Callable[[HostTarget], Any]) -> dict[str, Any]:
        """``fn`` on every client in parallel; host name -> result (or the exception)."""
        def one(h: HostTarget) -> tuple[str, Any]:
            try:
                return h.name, fn(h)
            except Exception as e:  # noqa: BLE001  (returned, judged by the caller)
                return h.name, e

        with ThreadPoolExecutor(max_workers=max(1, min(16, len(self.hosts)))) as pool:
            return dict(pool.map(one, self.hosts))

    def probe(self, tools: Sequence[Sequence[str]]) -> dict[str, list[str]]:
        """Connect to every client in parallel and run each tool's version command. One
        client unreachable, or a tool missing, refuses the run (one line, nothing started).
        Returns host -> first line of each tool's answer."""
        opener = getattr(self.runner, "open_all", None)
        failed: dict[str, str] = opener() if callable(opener) else {}
        failed = {n: r for n, r in failed.items() if n in self.names}
        if failed:
            n = sorted(failed)[0]
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            raise Refused(f"client {n} is unreachable: {failed[n][:200]}{more}; nothing "
                          "was started")

        def ask(h: HostTarget) -> list[str]:
            out = []
            for argv in tools:
                r = self.runner.run(h.name, argv, timeout_s=h.timeout_s + 5)
                if not r.ok:
                    what = (r.stderr or r.stdout).strip().splitlines()
                    raise Refused(f"client {h.name} cannot run {argv[0]} (rc {r.rc}"
                                  f"{': ' + what[-1][:160] if what else ''}); nothing was "
                                  "started")
                out.append((r.stdout or r.stderr).strip().splitlines()[0:1][0]
                           if (r.stdout or r.stderr).strip() else "")
            return out

        got = self.each(ask)
        for name in self.names:
            v = got[name]
            if isinstance(v, Refused):
                raise v
            if isinstance(v, HostUnreachable):
                raise Refused(f"client {name} is unreachable: {v.reason[:200]}; nothing was "
                              "started")
            if isinstance(v, Exception):
                raise Refused(f"client {name}: {type(v).__name__}: {str(v)[:200]}; nothing "
                              "was started")
        return {n: got[n] for n in self.names}

    # ------------------------------------------------------------------ staging

    def stage(self, files: Mapping[str, bytes] | Callable[[str], Mapping[str, bytes]]
              ) -> None:
        """A private directory on every client with ``files`` in it (a mapping, or a
        function of the client's directory giving one), each a new file there
        (``Runner.put``)."""
        def one(h: HostTarget) -> str:
            r = self.runner.run(h.name, ["mktemp", "-d", STAGE_TEMPLATE], timeout_s=30)
            d = r.stdout.strip()
            if not r.ok or not STAGE_RE.match(d):
                raise Refused(f"client {h.name}: cannot make a private directory "
                              f"(mktemp rc {r.rc}: {(r.stderr or d)[:120]!r})")
            self.dirs[h.name] = d
            content = files(d) if callable(files) else files
            for name, data in content.items():
                fd, local = tempfile.mkstemp(prefix="stordoc-stage-")
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                    self.runner.put(h.name, local, f"{d}/{name}", timeout_s=60)
                finally:
                    os.unlink(local)
            return d

        got = self.each(one)
        for name in self.names:
            v = got[name]
            if isinstance(v, Exception):
                if isinstance(v, Refused):
                    raise v
                raise Refused(f"client {name}: cannot stage the run's files: "
                              f"{type(v).__name__}: {str(v)[:200]}")
        self._step("stage client files", "mktemp -d " + STAGE_TEMPLATE + "; put "
                   "ceph.conf/keyring (or token)",
                   ", ".join(f"{n}:{self.dirs[n]}" for n in self.names))

    # ------------------------------------------------------------------ launching

    def launch(self, argv_by_client: Mapping[str, Sequence[str]], max_s: float,
               on_line: Callable[[str, str], None] | None = None,
               release: bool = True) -> list[Launched]:
        """Start every client's command through ``LAUNCH``, wait until all are ready,
        then (``release``) send ``go`` to all back to back: the common start. A client
        that does not come up stops the others before they start."""
        limit = str(int(max(1, max_s)))
        batch: list[Launched] = []
        ready = threading.Event()
        pids: dict[str, int] = {}
        lock = threading.Lock()

        def line_cb(host: str, text: str) -> None:
            m = _READY_RE.match(text)
            if m and host not in pids:
                with lock:
                    pids[host] = int(m.group(1))
                    if len(pids) == len(argv_by_client):
                        ready.set()
                return
            if on_line is not None:
                on_line(host, text)

        try:
            for name, argv in argv_by_client.items():
                full = ["sh", "-c", LAUNCH, "stordoc-launch", limit, *argv]
                proc = self.runner.spawn(name, full, on_line=line_cb)
                batch.append(Launched(name, proc))
                self.launched.append(batch[-1])
        except HostUnreachable as e:
            self._abort(batch)
            raise Refused(f"client {e.host} is unreachable: {e.reason[:200]}") from None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not ready.wait(0.1):
            dead = [b for b in batch if not b.running]
            if dead or time.monotonic() > deadline:
                self._abort(batch)
                b = dead[0] if dead else next(x for x in batch if x.client not in pids)
                why = " | ".join(b.proc.lines()[-3:])[:240] or "no answer"
                raise Refused(f"client {b.client} did not start {argv_by_client[b.client][0]}"
                              f": {why}")
        for b in batch:
            b.pid = pids.get(b.client)
        if release:
            self.release(batch)
        return batch

    def release(self, batch: Sequence[Launched]) -> float:
        """The start barrier: ``go`` to every client back to back."""
        t = time.time()
        for b in batch:
            b.proc.write("go\n")
            b.released_at = time.time()
        self.timings.setdefault("first_release", t)
        return t

    def _abort(self, batch: Sequence[Launched]) -> None:
        for b in batch:
            try:
                b.proc.write("no\n")  # the launcher exits 97 without starting anything
            except OSError:
                pass
            b.proc.close()
        for b in batch:
            b.proc.wait(10)

    def signal(self, batch: Sequence[Launched], sig: str = "INT") -> None:
        """Signal every still-running command of ``batch`` (by pid, only while its
        command line names this run's directory)."""
        def one(b: Launched) -> None:
            if b.pid is None or not b.running:
                return
            marker = self.dirs.get(b.client) or b.client
            try:
                self.runner.run(b.client, ["sh", "-c", SIGNAL, "stordoc-signal",
                                           str(b.pid), marker, sig], timeout_s=15)
            except HostUnreachable:
                pass

        with ThreadPoolExecutor(max_workers=max(1, min(16, len(batch)))) as pool:
            list(pool.map(one, batch))

    def wait_all(self, batch: Sequence[Launched], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        for b in batch:
            left = deadline - time.monotonic()
            if left <= 0 or b.proc.wait(left) is None:
                return False
        return True

    def stop(self, batch: Sequence[Launched], grace_s: float = 30.0) -> None:
        """SIGINT, then SIGTERM, then SIGKILL what still runs, waiting between."""
        for sig, wait in (("INT", grace_s), ("TERM", 10.0), ("KILL", 10.0)):
            if not any(b.running for b in batch):
                return
            self.signal(batch, sig)
            self.wait_all(batch, wait)

    def still_running(self, batch: Sequence[Launched]) -> list[str]:
        """Clients whose launched command is still alive (asked on the host itself)."""
        out = []
        for b in batch:
            if b.pid is None:
                continue
            marker = self.dirs.get(b.client) or b.client
            try:
                r = self.runner.run(b.client, ["sh", "-c", ALIVE, "stordoc-alive",
                                               str(b.pid), marker], timeout_s=15)
            except HostUnreachable:
                continue
            if r.rc == 0:
                out.append(b.client)
        return out

    # ------------------------------------------------------------------ sockets

    def forward(self, name: str, remote_path: str, local_path: str) -> SocketForward:
        """The Unix socket ``remote_path`` on client ``name``, reachable at ``local_path``
        here through the client's SSH connection (``storage.ssh_forward``); closed with
        the fleet."""
        fwd = getattr(self.runner, "forward_socket", None)
        if not callable(fwd):
            raise Refused(f"client {name}: this runner cannot forward a socket over SSH")
        try:
            f: SocketForward = fwd(name, remote_path, local_path)
        except HostUnreachable as e:
            raise Refused(f"client {e.host} is unreachable: {e.reason[:200]}") from None
        self.forwards.append(f)
        return f

    def unforward(self, f: SocketForward) -> None:
        f.close()
        if f in self.forwards:
            self.forwards.remove(f)

    # ------------------------------------------------------------------ the end

    def close(self) -> None:
        """Stop what still runs, remove the private directories, close the runner."""
        try:
            live = [b for b in self.launched if b.running]
            if live:
                self.stop(live, grace_s=15.0)
                self._step("stop client commands", "kill -INT/-TERM/-KILL <pid> (only "
                           "this run's)", ", ".join(b.client for b in live))
            for b in self.launched:
                b.proc.close()
            for f in list(self.forwards):
                self.unforward(f)
            removed = []
            for name, d in list(self.dirs.items()):
                if not STAGE_RE.match(d):
                    continue
                try:
                    r = self.runner.run(name, ["rm", "-rf", "--", d], timeout_s=30)
                    if r.ok:
                        removed.append(f"{name}:{d}")
                        del self.dirs[name]
                except HostUnreachable:
                    pass
            if removed:
                self._step("remove client files", "rm -rf -- <private dir>",
                           ", ".join(removed))
        finally:
            if self.owns_runner:
                self.runner.close()


def fleet_for(ctx: RunContext, names: Sequence[str], default: Sequence[str] = (),
              on_step: Callable[[str, str, str, int], None] | None = None) -> Fleet:
    hosts = resolve_clients(ctx, names, default)
    runner, owns = spawner(ctx, hosts)
    return Fleet(hosts, runner, owns, on_step)
