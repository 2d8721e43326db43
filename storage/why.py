"""One line for a person out of an exception: what went wrong, in words, never Python's
class names (``ConnectionError``, ``FileNotFoundError``) nor urllib3's nested repr
(``HTTPConnectionPool(host=..., port=9): Max retries exceeded ... NewConnectionError(...)``).

Why here: every message that says a part could not be reached or read is built from an
exception in ``storage``; one rule keeps them alike (issue 37's hostile run found class
names in 45 user-facing lines)."""

from __future__ import annotations

import errno
import os
import re

# the words for exceptions whose text says nothing of its own
_PLAIN = {
    "TimeoutError": "timed out", "timeout": "timed out", "ReadTimeout": "timed out",
    "ConnectTimeout": "timed out connecting", "Timeout": "timed out",
    "ConnectionError": "cannot connect", "ConnectionRefusedError": "connection refused",
    "ConnectionResetError": "connection reset", "BrokenPipeError": "connection closed",
    "FileNotFoundError": "not found", "PermissionError": "permission denied",
    "IsADirectoryError": "is a directory", "NotADirectoryError": "not a directory",
    "JSONDecodeError": "not valid JSON", "UnicodeDecodeError": "not valid UTF-8 text",
    "EOFError": "ended early", "gaierror": "name not known",
    "SSLError": "TLS handshake failed", "ChunkedEncodingError": "answer cut off",
    "ContentDecodingError": "answer cut off", "TooManyRedirects": "too many redirects",
    "InvalidURL": "not a valid URL", "MissingSchema": "not a valid URL",
}
_ERRNO_PREFIX = re.compile(r"^\[Errno [^\]]*\]\s*")
_MAX = 300


def _errno_of(e: BaseException) -> tuple[int, str] | None:
    """The innermost OS error number in ``e``'s chain, urllib3's ``reason`` and the
    exceptions in its args (requests wraps urllib3 wraps socket errors)."""
    seen: set[int] = set()
    todo: list[BaseException] = [e]
    found: tuple[int, str] | None = None
    while todo:
        x = todo.pop(0)
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, OSError) and isinstance(x.errno, int) and x.errno > 0:
            found = (x.errno, os.strerror(x.errno))
        for nxt in (x.__cause__, x.__context__, getattr(x, "reason", None),
                    *(a for a in getattr(x, "args", ()) if isinstance(a, BaseException))):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return found


def why(e: BaseException) -> str:
    """``e`` as one short line of words: its own message when it has one that is not a
    library's repr, else the OS error it comes from, else a plain word for its kind."""
    name = type(e).__name__
    hit = _errno_of(e)
    if hit is not None and hit[0] in (errno.ECONNREFUSED, errno.ECONNRESET, errno.ETIMEDOUT,
                                      errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EPIPE):
        return hit[1].lower()
    text = str(e).strip()
    if isinstance(e, OSError) and e.strerror and e.filename is not None:
        text = f"{e.filename}: {e.strerror.lower()}"
    text = _ERRNO_PREFIX.sub("", text)
    looks_repr = ("HTTPConnectionPool" in text or "HTTPSConnectionPool" in text
                  or "object at 0x" in text or "Max retries exceeded" in text)
    if looks_repr or not text:
        if hit is not None:
            return hit[1].lower()
        if "Read timed out" in text or "timed out" in text:
            return "timed out"
        return _PLAIN.get(name, "failed")
    line = text.splitlines()[0] if text.splitlines() else text
    return line[:_MAX]
