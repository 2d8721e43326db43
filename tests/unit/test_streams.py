"""A reader that goes away (core.streams, core.terminal): ``| head -1``, ``| tee log``
and Ctrl-C, a dropped SSH session. On real pipes and a real pseudo-terminal; the CLI
itself on a replay snapshot (tests/fixtures/snapshots) with its stdout closed."""

from __future__ import annotations

import errno
import io
import os
import pty
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from core.service.task import Task
from core.streams import GuardedStream, guarded, reader_gone
from core.terminal import Terminal
from stordoc.commands.common import cancel_when_stdout_lost
from tests.conftest import ROOT
from tests.support.cli import cli_argv

SNAPSHOTS = ROOT / "tests" / "fixtures" / "snapshots" / "reef"


def _pipe_stream() -> tuple[io.TextIOWrapper, int]:
    """A text stream on a pipe's write end, and the read end's descriptor."""
    r, w = os.pipe()
    return io.TextIOWrapper(os.fdopen(w, "wb", buffering=0), write_through=True), r


def test_a_closed_pipe_is_lost_once_then_output_goes_nowhere() -> None:
    raw, r = _pipe_stream()
    s = GuardedStream(raw)
    calls: list[str] = []
    s.on_lost(lambda: calls.append("lost"))
    assert s.write("first\n") == 6
    assert os.read(r, 100) == b"first\n"
    os.close(r)  # the reader (head, tee) exits
    s.write("second\n")  # EPIPE: no exception
    s.flush()
    s.write("third\n")
    assert s.lost.is_set() and calls == ["lost"]
    # the descriptor now points at /dev/null: the interpreter's last flush succeeds
    assert os.path.samestat(os.fstat(raw.fileno()), os.stat(os.devnull))
    raw.write("what python flushes at exit\n")
    raw.close()
    # a listener that comes late hears at once
    s.on_lost(lambda: calls.append("late"))
    assert calls == ["lost", "late"]


def test_a_hung_up_terminal_is_lost_too() -> None:
    """A dropped SSH session: the pseudo-terminal's master goes, writes answer EIO."""
    master, slave = pty.openpty()
    raw = io.TextIOWrapper(os.fdopen(slave, "wb", buffering=0), write_through=True)
    s = GuardedStream(raw)
    s.write("before\n")
    os.close(master)
    for _ in range(3):
        s.write("after the hang-up\n" * 100)
    assert s.lost.is_set()
    raw.close()


@pytest.mark.parametrize("err", [OSError(errno.ENOSPC, "No space left on device"),
                                 ValueError("a bug, not a reader gone")])
def test_other_write_errors_still_raise(err: Exception) -> None:
    class Failing(io.StringIO):
        def write(self, text: str) -> int:
            raise err

    s = GuardedStream(Failing())
    with pytest.raises(type(err)):
        s.write("x")
    assert not s.lost.is_set()


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([errno.EPIPE, errno.EIO, errno.ENXIO, errno.EBADF,
                        errno.ECONNRESET, errno.ENOSPC, errno.EACCES, errno.EINTR,
                        errno.EAGAIN, errno.EFBIG]))
def test_only_a_gone_reader_is_a_gone_reader(code: int) -> None:
    gone = code in (errno.EPIPE, errno.EIO, errno.ENXIO, errno.EBADF, errno.ECONNRESET)
    assert reader_gone(OSError(code, os.strerror(code))) is gone


def test_guarding_twice_is_guarding_once() -> None:
    s = guarded(io.StringIO())
    assert isinstance(s, GuardedStream) and guarded(s) is s


class _Broken(io.StringIO):
    """stdout whose reader has gone: every write fails as a closed pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def _term() -> tuple[Terminal, io.StringIO]:
    err = io.StringIO()
    return Terminal(io.StringIO(), GuardedStream(_Broken()), err, width=200), err  # type: ignore[arg-type]


def test_rich_on_a_closed_stdout_neither_exits_nor_raises() -> None:
    """rich's own answer to EPIPE is SystemExit(1), from whichever thread printed."""
    term, err = _term()
    term.out.print("a line")
    term.wide.print("a table")
    term.line('{"json": true}')
    assert term.stdout_lost and err.getvalue() == ""


def test_tell_moves_to_stderr_from_the_line_that_found_stdout_gone() -> None:
    term, err = _term()
    term.tell(Text("cancelled: Done: 1. set noout, 5. clear noout"))
    term.tell("audit: stordoc audit --run 7")
    assert err.getvalue().splitlines() == ["cancelled: Done: 1. set noout, 5. clear noout",
                                           "audit: stordoc audit --run 7"]
    ok = Terminal.capture()
    ok.tell("on stdout")
    assert ok.stdout.getvalue() == "on stdout\n" and ok.stderr.getvalue() == ""  # type: ignore[attr-defined]


def test_a_task_is_cancelled_when_stdout_goes() -> None:
    """``fix ... | tee log``: the first line that cannot be written cancels the run,
    whose cleanup still runs; outside the block nothing is cancelled any more."""
    term, _ = _term()
    printed = threading.Event()
    log: list[str] = []

    def work(cancel: threading.Event) -> str:
        log.append("step 1")
        term.out.print("  -> 1. set noout")  # the pipe is closed: this finds it
        printed.set()
        if cancel.is_set():
            log.append("cleanup")
            return "cancelled"
        log.append("step 2")
        return "done"

    task: Task[str] = Task(work)
    with cancel_when_stdout_lost(term, task.cancel):
        assert task.wait(poll_s=0.05) == "cancelled"
    assert log == ["step 1", "cleanup"]
    later: Task[str] = Task(lambda c: "ran")
    assert later.wait() == "ran" and not later.cancelled


def test_the_default_runs_only_when_nobody_listens() -> None:
    heard: list[str] = []
    s = GuardedStream(_Broken())
    s.default = lambda: heard.append("default")
    forget = s.on_lost(lambda: heard.append("fix"))
    forget()  # the fix is over: nobody listens any more
    s.write("x")
    assert heard == ["default"]
    s2 = GuardedStream(_Broken())
    s2.default = lambda: heard.append("default2")
    s2.on_lost(lambda: heard.append("fix2"))
    s2.write("x")
    assert heard == ["default", "fix2"]


def test_stdout_gone_stops_only_a_command_that_stops_on_sigterm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``watch`` (its SIGTERM handler ends the loop) stops; ``check`` finishes."""
    from stordoc.cli import stdout_gone

    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
    old = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        stdout_gone()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stdout_gone()  # no handler of the command's: nothing is sent
    finally:
        signal.signal(signal.SIGTERM, old)
    assert sent == [(os.getpid(), signal.SIGTERM)]


# ---------------------------------------------------------------- the real CLI

def _cli(*argv: str, stdout: int | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cli_argv(None, *argv), cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL, stdout=stdout or subprocess.PIPE,
                            stderr=subprocess.PIPE)


@pytest.mark.parametrize("scenario", ["osd-unmounted-in", "healthy"])
def test_check_with_a_closed_stdout_exits_with_the_checks_status(
        scenario: str, tmp_path: Path) -> None:
    """``stordoc check | head -1``: once exit 1 (rich's SystemExit), whatever the check
    said; now the check's own status (2 crit, 0 ok), nothing on stderr."""
    snap = str(SNAPSHOTS / scenario)
    with open(tmp_path / "out.txt", "wb") as f:
        p = _cli("check", "--from", snap, stdout=f.fileno())
        _, err0 = p.communicate(timeout=120)
    expected = p.returncode
    assert expected == (0 if scenario == "healthy" else 2), err0
    assert (tmp_path / "out.txt").read_text().strip()
    p = _cli("check", "--from", snap)
    assert p.stdout is not None
    p.stdout.close()  # the reader is gone before the first line
    _, err = p.communicate(timeout=120)
    assert p.returncode == expected, err
    assert err == err0, err  # no traceback, no "Exception ignored", no BrokenPipeError


def test_check_piped_to_head_keeps_its_status() -> None:
    snap = str(SNAPSHOTS / "osd-unmounted-in")
    sh = (f"{sys.executable} -m stordoc check --from {snap} | head -1; "
          "echo \"status=${PIPESTATUS[0]}\"")
    p = subprocess.run(["bash", "-c", sh], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
                       stdin=subprocess.DEVNULL)
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and lines[-1] == "status=2", p.stdout + p.stderr
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr


def test_help_into_a_closed_pipe_exits_0() -> None:
    p = _cli("--help")
    assert p.stdout is not None
    p.stdout.close()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0 and err == b"", err


def test_watch_into_a_closed_pipe_stops(tmp_path: Path) -> None:
    """``stordoc watch | grep NEW`` and grep exits: watch stops as for SIGTERM (exit 0)
    instead of a BrokenPipeError traceback (exit 1). A cluster that does not answer
    (monitor on port 1) still gives it a line to print every check."""
    (tmp_path / "ceph.conf").write_text("[global]\nmon_host = 127.0.0.1:1\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   f'[clusters.lab.ceph]\nconf = "{tmp_path / "ceph.conf"}"\ntimeout = 1\n')
    p = _cli("-c", str(cfg), "watch", "--every", "5s", "--no-slack")
    assert p.stdout is not None
    p.stdout.close()
    try:
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0 and err == b"", err
