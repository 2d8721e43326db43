"""A snapshot directory on disk, read as hostile input and written atomically.

Reading: every file is opened relative to the directory's own descriptor with
``O_NOFOLLOW`` at each step (a symlink anywhere inside is refused, so nothing outside the
directory is ever read), must be a regular file no larger than ``MAX_FILE_BYTES`` (checked
on the open descriptor before a byte is read), the whole read stays under
``MAX_TOTAL_BYTES``, and its text must be standard JSON (no NaN or Infinity, no nesting
deeper than Python's parser takes). Any failure is one :class:`SnapshotError` line.

Writing: into a fresh sibling directory (mode 0700, files 0600) renamed into place at the
end, so a save killed mid-way never leaves a half snapshot under the name asked for; a
name that already exists is refused (stordoc never overwrites what it did not create).
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import stat
from typing import Any

MAX_FILE_BYTES = 64 * 1024 * 1024  # the largest answer of a large cluster fits easily
MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_FILES = 10_000
_SAFE_PART = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class SnapshotError(Exception):
    """A snapshot that cannot be read or written: one line for the user, nothing done."""


class SnapshotMissing(SnapshotError):
    """A file the snapshot should hold is not there."""


def safe_relpath(rel: str) -> tuple[str, ...]:
    """``rel`` split into parts that are plain names (no ``..``, no absolute path, only
    ASCII letters, digits, ``.``, ``_``, ``-``); SnapshotError otherwise."""
    parts = tuple(rel.split("/"))
    if not rel or len(rel) > 255 or any(
            not p or p in (".", "..") or p.startswith(".") or not set(p) <= _SAFE_PART
            for p in parts):
        raise SnapshotError(f"names a file it may not: {rel[:80]!r}")
    return parts


class Reader:
    """Reads files of one snapshot directory, bounded; use as a context manager."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.total = 0
        self.files = 0
        try:
            self.fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise SnapshotError(f"no such directory: {directory}") from None
        except NotADirectoryError:
            raise SnapshotError(f"not a directory: {directory}") from None
        except PermissionError:
            raise
        except OSError as e:
            raise SnapshotError(f"cannot open {directory}: {e.strerror}") from None

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _open(self, rel: str) -> int:
        parts = safe_relpath(rel)
        dfd = self.fd
        opened: list[int] = []
        try:
            for p in parts[:-1]:
                try:
                    dfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |
                                  os.O_CLOEXEC, dir_fd=dfd)
                except OSError as e:
                    raise self._why(rel, e) from None
                opened.append(dfd)
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC |
                             os.O_NONBLOCK, dir_fd=dfd)
            except OSError as e:
                raise self._why(rel, e) from None
            return fd
        finally:
            for d in opened:
                os.close(d)

    def _why(self, rel: str, e: OSError) -> Exception:
        if e.errno == errno.ENOENT:
            return SnapshotMissing(f"{rel} is missing (an incomplete snapshot)")
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            return SnapshotError(f"{rel} is a symlink or not where a file should be: "
                                 "refused (nothing outside the snapshot is read)")
        if e.errno == errno.EACCES:
            return PermissionError(e.errno, e.strerror, os.path.join(self.directory, rel))
        return SnapshotError(f"cannot open {rel}: {e.strerror}")

    def exists(self, rel: str) -> bool:
        """Whether ``rel`` is there; a symlink or other refusal is raised, not hidden."""
        try:
            fd = self._open(rel)
        except SnapshotMissing:
            return False
        os.close(fd)
        return True

    def read_bytes(self, rel: str) -> bytes:
        fd = self._open(rel)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SnapshotError(f"{rel} is not a regular file: refused")
            if st.st_size > MAX_FILE_BYTES:
                raise SnapshotError(f"{rel} is {st.st_size} bytes, more than a snapshot file "
                                    f"may hold ({MAX_FILE_BYTES // 2**20} MiB): refused")
            self.files += 1
            if self.files > MAX_FILES:
                raise SnapshotError(f"more than {MAX_FILES} files: refused")
            chunks = []
            left = MAX_FILE_BYTES + 1
            while left > 0:
                b = os.read(fd, min(left, 1 << 20))
                if not b:
                    break
                chunks.append(b)
                left -= len(b)
            data = b"".join(chunks)
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:  # grew while read
            raise SnapshotError(f"{rel} is larger than a snapshot file may be: refused")
        self.total += len(data)
        if self.total > MAX_TOTAL_BYTES:
            raise SnapshotError(f"more than {MAX_TOTAL_BYTES // 2**20} MiB in all: refused")
        return data

    def read_json(self, rel: str) -> Any:
        return parse_json(self.read_bytes(rel), rel)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):  # 1e400: valid JSON text, but no number stordoc can use
        raise ValueError(f"{text[:24]} is too large a number")
    return v


def parse_json(data: bytes, rel: str) -> Any:
    """Standard JSON only, every number finite; SnapshotError naming the file otherwise."""
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constant,
                          parse_float=_finite_float)
    except UnicodeDecodeError:
        raise SnapshotError(f"{rel} is not UTF-8 text: not a snapshot file") from None
    except RecursionError:
        raise SnapshotError(f"{rel} nests too deeply: refused") from None
    except ValueError as e:
        raise SnapshotError(f"{rel} is not valid JSON ({str(e)[:120]})") from None


# the documented ranges of a snapshot's own values (docs/snapshots.md): a time is seconds
# since 1970 up to the end of the year 9999 (the last a date can show), a duration or a
# window at most ten years
MAX_EPOCH = 253402300799
MAX_SECONDS = 10 * 366 * 86400


def number(v: Any, what: str, lo: float, hi: float, meaning: str = "") -> float:
    """``v`` as a float when it is a JSON number within ``lo..hi`` (compared before any
    conversion: a 400-digit integer is refused, not an OverflowError), else one line."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SnapshotError(f"{what} is not a number")
    if not lo <= v <= hi:
        raise SnapshotError(f"{what} is out of range{meaning}: {str(v)[:24]}")
    return float(v)


def epoch(v: Any, what: str) -> float:
    """A time in a snapshot: seconds since 1970 (0: not known), up to the year 9999."""
    return number(v, what, 0, MAX_EPOCH, " (a time: seconds since 1970, up to the year 9999)")


def seconds(v: Any, what: str) -> float:
    """A duration or window in a snapshot: 0 up to ten years."""
    return number(v, what, 0, MAX_SECONDS, " (seconds: 0 up to ten years)")


def finite(obj: Any) -> Any:
    """``obj`` with non-finite floats replaced by None (the files are standard JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def check_new_directory(directory: str) -> str:
    """``directory``'s absolute path when a snapshot may be written there (it does not
    exist, or is an empty directory, in an existing directory); else the one line that
    says what is wrong. Asked again by the ``Writer``: a save checks before it collects."""
    if not directory.strip():
        raise SnapshotError("no directory given: name a new directory to write the "
                            "snapshot to")
    final = os.path.abspath(directory)
    parent = os.path.dirname(final)
    if os.path.lexists(final):
        if not os.path.isdir(final) or os.path.islink(final) or os.listdir(final):
            raise SnapshotError(f"{directory} already exists: give a new directory "
                                "(stordoc never overwrites what it did not create)")
    # the nearest part of the path that exists says what is wrong with it
    up = parent
    while not os.path.lexists(up) and os.path.dirname(up) != up:
        up = os.path.dirname(up)
    if not os.path.isdir(up):
        raise SnapshotError(f"{up} is not a directory: {directory} cannot be made under it")
    if up != parent:
        raise SnapshotError(f"{parent} does not exist: create it first")
    return final


class Writer:
    """Writes one snapshot into ``directory`` (which must not exist, or be empty) through
    a temporary sibling renamed at :meth:`commit`; :meth:`abort` removes only that sibling."""

    def __init__(self, directory: str) -> None:
        self.final = check_new_directory(directory)
        parent = os.path.dirname(self.final)
        self.tmp = os.path.join(parent, f".{os.path.basename(self.final)}.stordoc-part-"
                                        f"{os.getpid()}")
        if os.path.lexists(self.tmp):
            shutil.rmtree(self.tmp)  # ours: a save of this pid that died mid-way
        try:
            os.mkdir(self.tmp, 0o700)
        except PermissionError:
            raise  # the CLI's "permission denied: FILE" (exit 77)
        except OSError as e:  # a name too long for the filesystem, a read-only one...
            raise SnapshotError(f"cannot create {directory}: {e.strerror}") from None

    def write_json(self, rel: str, doc: Any) -> None:
        parts = safe_relpath(rel)
        d = self.tmp
        for p in parts[:-1]:
            d = os.path.join(d, p)
            os.makedirs(d, mode=0o700, exist_ok=True)
        path = os.path.join(d, parts[-1])
        text = json.dumps(finite(doc), indent=1, sort_keys=True, allow_nan=False) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)

    def commit(self) -> None:
        """Move the finished snapshot to its name; if another save (or anyone) filled that
        name meanwhile, theirs stays and this one is refused (the caller aborts)."""
        try:
            if os.path.isdir(self.final) and not os.path.islink(self.final):
                os.rmdir(self.final)  # the empty directory the user made for it
            os.rename(self.tmp, self.final)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise
            raise SnapshotError(f"{self.final} was created meanwhile (another save?): "
                                "left as it is, nothing written") from None

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

