"""The one place stordoc imports Swift's own library (rings and builders).

Why a module of its own: importing ``swift.common.utils`` (any ring import does) sets
``logging.threading`` to eventlet's green module and replaces logging's module lock with a
green one. Every logging handler created afterwards then gets a green lock, and OS threads
that log through it deadlock (``greenlet.error: cannot switch to a different thread``):
the HTTP bot wedged for good under four concurrent requests. stordoc runs OS threads
everywhere (bot workers, TUI workers, parallel SSH), never eventlet, so right after the
import the real primitives are put back. ``restore_real_threading`` is idempotent and is
also called by every entry point after its imports, whatever they pulled in.
"""

from __future__ import annotations

import _thread
import logging
import os
import threading
import weakref

# eventlet's green DNS (dnspython: a third of this import's CPU time, more than the ring
# code itself) serves only green sockets, which stordoc never uses: eventlet reads
# EVENTLET_NO_GREENDNS once, when it is first imported. Put back at once, so that the
# processes stordoc starts (the lab's Swift servers) see the environment unchanged.
_NO_GREENDNS = os.environ.get("EVENTLET_NO_GREENDNS")
os.environ["EVENTLET_NO_GREENDNS"] = "yes"
try:
    from swift.common.ring import RingBuilder, RingData
finally:
    if _NO_GREENDNS is None:
        del os.environ["EVENTLET_NO_GREENDNS"]
    else:
        os.environ["EVENTLET_NO_GREENDNS"] = _NO_GREENDNS

__all__ = ["RingBuilder", "RingData", "is_real_lock", "restore_real_threading"]

_REAL_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def is_real_lock(lock: object) -> bool:
    """True for an OS-thread lock (``_thread.lock``/``_thread.RLock``), not a green one."""
    return isinstance(lock, _REAL_LOCK_TYPES)


def restore_real_threading() -> None:
    """Undo what ``swift.common.utils`` does to :mod:`logging`: real threading module,
    real module lock, real locks in every existing handler."""
    mod = logging.__dict__
    if mod.get("threading") is not threading:
        mod["threading"] = threading
    if "thread" in mod and mod["thread"] is not _thread:
        mod["thread"] = _thread
    if not is_real_lock(mod.get("_lock")):
        mod["_lock"] = threading.RLock()
    for ref in list(mod.get("_handlerList", [])):
        handler = ref() if isinstance(ref, weakref.ref) else ref
        lock = getattr(handler, "lock", None)  # None: a NullHandler never locks
        if handler is not None and lock is not None and not is_real_lock(lock):
            handler.lock = threading.RLock()


restore_real_threading()
