"""A plan's locks, held for a ``with`` block: taken in the plan's order, and every one
taken is released on the way out, whichever way that is (a return, a refusal, an error,
Ctrl-C, even while the locks are still being taken). Only SIGKILL leaves them; the next
command finds their process dead and frees them (``runbooks.leftovers.reconcile``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from runbooks.model import Refused
from storage.audit import Audit, LockHeld


@contextmanager
def locks_held(audit: Audit, cluster: str, keys: Iterable[str], owner: str,
               purpose: str) -> Iterator[None]:
    """Hold the lock on each key of ``cluster``; Refused (``locked by alice ...``) when
    another run holds one, after freeing those already taken."""
    held: list[int] = []
    try:
        try:
            for key in keys:
                held.append(audit.acquire(cluster, key, owner, purpose))
        except LockHeld as e:
            raise Refused(str(e)) from e
        yield
    finally:
        for lock_id in held:
            audit.release(lock_id)
