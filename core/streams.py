"""Output streams whose reader may go away: ``stordoc check | head -1``, ``stordoc fix
... | tee log`` and Ctrl-C (the whole pipeline gets SIGINT: tee exits first), a dropped SSH
session (the terminal answers EIO). Python ignores SIGPIPE, so such a write fails with
EPIPE (BrokenPipeError), which rich turns into ``SystemExit(1)`` from whichever thread
printed: a fix then died mid-run with ``noout`` set.

A ``GuardedStream``'s first failed write points the file descriptor at ``/dev/null``
(Python's recipe in the ``signal`` module's note on SIGPIPE, so the interpreter's last
flush does not fail either), drops what follows and runs its ``on_lost`` callbacks once: a
running fix cancels (its cleanup still runs). Light on purpose: ``stordoc.cli.main`` guards
the process's streams before argparse prints anything.
"""

from __future__ import annotations

import errno
import io
import os
import threading
from collections.abc import Callable
from typing import Any, TextIO

# what a write returns when nobody reads any more: the pipe's reader exited (EPIPE), the
# terminal hung up (EIO, ENXIO), the descriptor was closed (EBADF)
_GONE_ERRNOS = frozenset({errno.EPIPE, errno.EIO, errno.ENXIO, errno.EBADF,
                          errno.ECONNRESET})


def reader_gone(e: BaseException) -> bool:
    """Whether a write failed because the stream's reader went away (not a full disk)."""
    if isinstance(e, BrokenPipeError):
        return True
    if isinstance(e, ValueError):  # "I/O operation on closed file"
        return "closed file" in str(e)
    return isinstance(e, OSError) and e.errno in _GONE_ERRNOS


class GuardedStream:
    """A text stream (``sys.stdout``) whose writes never fail because the reader went
    away: the first such failure sends the descriptor to /dev/null, later output is
    dropped, and the ``on_lost`` callbacks run once (in the thread that wrote). Anything
    else (reading its attributes, other errors) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream
        self.lost = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        # run instead when nobody listens at that moment (stordoc.cli: stop like SIGTERM)
        self.default: Callable[[], None] | None = None

    def write(self, text: str) -> int:
        if not self.lost.is_set():
            try:
                return int(self.wrapped.write(text) or 0)
            except (OSError, ValueError) as e:
                if not reader_gone(e):
                    raise
                self._lose()
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.lost.is_set():
            return
        try:
            self.wrapped.flush()
        except (OSError, ValueError) as e:
            if not reader_gone(e):
                raise
            self._lose()

    def on_lost(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` when the reader goes away (at once if it has); returns the
        function that forgets it."""
        with self._lock:
            self._callbacks.append(callback)
            gone = self.lost.is_set()
        if gone:
            callback()

        def forget() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)
        return forget

    def _lose(self) -> None:
        with self._lock:
            if self.lost.is_set():
                return
            self.lost.set()
            callbacks = list(self._callbacks) or ([self.default] if self.default else [])
        try:  # the interpreter's last flush of what is still buffered goes there too
            fd = self.wrapped.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, fd)
            finally:
                os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass  # no descriptor of its own (a StringIO, pytest's capture)
        for cb in callbacks:
            try:
                cb()
            except Exception:  # a listener's failure must not fail the write
                pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def guarded(stream: TextIO) -> TextIO:
    """``stream`` behind a GuardedStream (the same one if it is already)."""
    if isinstance(stream, GuardedStream) or stream is None:
        return stream
    return GuardedStream(stream)  # type: ignore[return-value]
