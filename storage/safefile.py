"""Reading a file someone named (a config, a secret file, a ring, a keyring), bounded.

``read_regular`` refuses what is not a regular file before reading a byte (a FIFO would
block forever, ``/dev/zero`` or ``/dev/urandom`` never end), opens without blocking and
checks again on the open descriptor (the path may have changed), and reads at most
``max_bytes`` (a file that grows past it while read is refused too). Refusals are
``FileRefused``, a ValueError with a one-line message naming the path.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

MiB = 1 << 20


class FileRefused(ValueError):
    """Not a regular file, or larger than the limit: one line, naming the path."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: str | os.PathLike[str], max_bytes: int) -> int:
    """The size of ``path`` (symlinks followed) if it is a regular file within the limit,
    else ``FileRefused``; nothing is opened. OSError (missing, permission) passes through."""
    st = os.stat(path)
    _check(path, st, max_bytes)
    return st.st_size


def check_named(named: Iterable[tuple[str, str | None, int]]) -> None:
    """Each ``(what, path, max_bytes)`` whose path exists is a regular file within its
    limit, else ``FileRefused`` "WHAT PATH: why" (nothing opened), also for a path that
    cannot be looked at (a symlink loop, a name too long). A missing file passes (whoever
    opens it says so); PermissionError passes through."""
    for what, path, limit in named:
        if not path:
            continue
        try:
            check_regular(path, limit)
        except FileRefused as e:
            raise FileRefused(f"{what} {e}") from None
        except FileNotFoundError:
            continue
        except PermissionError:
            raise
        except OSError as e:  # a symlink loop, a name too long, a file used as a directory
            raise FileRefused(f"{what} {os.fspath(path)}: "
                              f"{(e.strerror or 'cannot be read').lower()}: refused") from None


def _check(path: str | os.PathLike[str], st: os.stat_result, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{os.fspath(path)}: is {_kind(st.st_mode)}, not a regular file: "
                          "refused")
    if st.st_size > max_bytes:
        raise FileRefused(f"{os.fspath(path)}: {st.st_size} bytes, more than the "
                          f"{_human(max_bytes)} allowed: refused")


def _human(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n} bytes"


# per kind of file a config names: far above any real one, far below what hurts
MAX_CEPH_CONF_BYTES = 4 * MiB
MAX_KEYRING_BYTES = 1 * MiB
MAX_SSH_KEY_BYTES = 1 * MiB
MAX_KNOWN_HOSTS_BYTES = 16 * MiB  # a fleet's: ~10,000 hosts with a few keys each


def open_regular(path: str | os.PathLike[str], max_bytes: int) -> int:
    """A read-only descriptor (close-on-exec) of a regular file of at most ``max_bytes``,
    checked on the descriptor itself after a non-blocking open (a FIFO swapped in after
    the first check does not block), else ``FileRefused``. The caller closes it; a library
    that wants a path can be given ``fd_path(fd)``, the very file checked."""
    check_regular(path, max_bytes)  # a FIFO or device is refused before any open()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        _check(path, os.fstat(fd), max_bytes)  # the same file, not a swapped-in one
    except BaseException:
        os.close(fd)
        raise
    return fd


def fd_path(fd: int) -> str:
    """A path that opens the file behind ``fd`` again (Linux's /proc/self/fd)."""
    return f"/proc/self/fd/{fd}"


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (else ``FileRefused``)."""
    fd = open_regular(path, max_bytes)
    try:
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            b = os.read(fd, min(left, MiB))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise FileRefused(f"{os.fspath(path)}: grew past {_human(max_bytes)} while read: "
                          "refused")
    return data


def read_text(path: str | os.PathLike[str], max_bytes: int) -> str:
    """``read_regular`` decoded as UTF-8 (UnicodeDecodeError passes through)."""
    return read_regular(path, max_bytes).decode("utf-8")
