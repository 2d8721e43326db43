"""Files that may hold secrets (the journal, its -wal/-shm/.lock, a config stordoc writes):
created 0600 in directories created 0700, and an existing journal that every user can
read, made by an older stordoc, tightened when it is opened.

The rule for existing files: only a file owned by the user running stordoc is touched,
and only its access for *other* users is removed (0644 -> 0640): a group share that an
administrator set on purpose (the bot's user and the on-call group sharing one journal)
keeps working. Each change is said once (``log`` warning, which the CLI prints), never done
silently. A file owned by someone else is left alone.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("stordoc.files")
FILE_MODE = 0o600
DIR_MODE = 0o700


def make_dirs(path: str | os.PathLike[str]) -> None:
    """``mkdir -p`` whose new directories are 0700 (existing ones are left as they are)."""
    p = Path(path)
    missing = []
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(d, DIR_MODE)  # mkdir's mode is masked by the umask


def create_private(path: str | os.PathLike[str]) -> bool:
    """Create ``path`` empty with mode 0600 if it does not exist (no symlink followed);
    True if it was created now."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                     os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600 (an existing file of ours is made 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 FILE_MODE)
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            fd = -1
            f.write(text)
    finally:
        if fd >= 0:
            os.close(fd)


def tighten(path: str | os.PathLike[str], what: str) -> str | None:
    """Remove other users' access to ``path`` if it is ours and grants any; the message
    said (logged as a warning) or None when nothing was changed."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        return None
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o007:
        return None
    new = mode & ~0o007
    try:
        os.chmod(path, new, follow_symlinks=False)
    except (OSError, NotImplementedError):
        return None
    msg = (f"stordoc: {what} {os.fspath(path)} was readable by every user "
           f"({mode:04o}); now {new:04o} (made by an older stordoc; group access kept)")
    log.warning("%s", msg)
    return msg
