"""The connection to one Ceph cluster over python-rados, and the errors it raises.

One connection per cluster per collection; every call is bounded in time: librados gets
``client_mount_timeout`` / ``rados_mon_op_timeout`` / ``rados_osd_op_timeout``, and the
connect and each command also run in a thread with a deadline, so that a wedged monitor
can never hang the caller (a bot, the TUI).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Mapping
from typing import Any, Self, TypeVar

from storage.safefile import MAX_CEPH_CONF_BYTES, MAX_KEYRING_BYTES, FileRefused, check_named
from storage.targets import CephTarget

T = TypeVar("T")
# librados' errno for a command that ran out of time (the monitor or manager is silent)
ETIMEDOUT = 110


def ceph_files(t: CephTarget) -> list[tuple[str, str | None, int]]:
    """The files librados opens itself and reads whole (a FIFO would block it for good, a
    device never end): for ``safefile.check_named`` before they are handed to it."""
    return [("ceph config", t.conf, MAX_CEPH_CONF_BYTES),
            ("keyring", t.keyring, MAX_KEYRING_BYTES)]


class CephError(Exception):
    """Base of everything this module raises."""


class CephUnreachable(CephError):
    """The monitors did not answer (connect failed or timed out)."""


class CephCommandError(CephError):
    """A command returned a non-zero status."""

    def __init__(self, prefix: str, rc: int, outs: str) -> None:
        self.prefix = prefix
        self.rc = rc
        self.outs = outs
        super().__init__(f"'{prefix}' failed (rc={rc}): {outs.strip() or 'no message'}")


def _with_deadline(fn: Callable[[], T], seconds: float, what: str) -> T:
    """Run ``fn`` in a daemon thread; give up after ``seconds`` (the thread is left behind).

    librados honours its own timeouts in every case tried, but a monitor that accepts the
    TCP connection and then says nothing must not be able to hang a bot or the TUI.
    """
    value: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            value.append(fn())
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller)
            error.append(e)

    th = threading.Thread(target=run, name=f"ceph-{what}", daemon=True)
    th.start()
    th.join(seconds)
    if th.is_alive():
        raise CephUnreachable(f"{what}: no answer within {seconds:g} s")
    if error:
        raise error[0]
    return value[0]


class CephClient:
    """A short-lived connection to one cluster: ``with CephClient(t) as c: c.mon("osd dump")``."""

    def __init__(self, target: CephTarget) -> None:
        self.target = target
        self._rados: Any = None
        self._owned = True

    @classmethod
    def over(cls, target: CephTarget, handle: Any) -> CephClient:
        """Commands over a ``rados.Rados`` someone else connected (and closes): the
        benchmarks' ``RadosIO``."""
        c = cls(target)
        c._rados, c._owned = handle, False
        return c

    def __enter__(self) -> Self:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        return self._rados is not None

    def connect(self) -> None:
        """Connect or raise ``CephUnreachable`` within about ``target.timeout_s``."""
        import rados  # imported here so that parsers and unit tests need no librados

        t = self.target
        secs = max(1, math.ceil(t.timeout_s))
        conf = {
            "client_mount_timeout": str(secs),
            "rados_mon_op_timeout": str(secs),
            "rados_osd_op_timeout": str(secs),
        }
        if t.keyring:
            conf["keyring"] = t.keyring
        try:
            check_named(ceph_files(t))
        except FileRefused as e:
            raise CephUnreachable(str(e)) from None
        try:
            handle = rados.Rados(conffile=t.conf, conf=conf, name=t.client)
        except rados.Error as e:
            raise CephUnreachable(f"cannot read ceph config {t.conf}: {e}") from e

        def do_connect() -> None:
            handle.connect(timeout=secs)

        try:
            _with_deadline(do_connect, secs + 2.0, "connect")
        except CephUnreachable:
            raise
        except rados.Error as e:
            _safe_shutdown(handle)
            raise CephUnreachable(_rados_msg(e, t)) from e
        self._rados = handle

    def close(self) -> None:
        if self._rados is not None and self._owned:
            _safe_shutdown(self._rados)
        self._rados = None

    def _call(self, to_mgr: bool, prefix: str, args: Mapping[str, Any],
              mon: str | None = None, inbuf: bytes = b"",
              osd: int | None = None) -> tuple[bytes, str]:
        """One command: (output buffer, status text); raises CephCommandError. ``mon``:
        sent to that monitor by name (``ceph tell mon.a ...``), not to the quorum;
        ``osd``: to that OSD (``ceph tell osd.N ...``)."""
        if self._rados is None:
            raise CephUnreachable("not connected")
        import rados

        body = {k: v for k, v in args.items() if v is not None}
        body.update(prefix=prefix, format="json")
        cmd = json.dumps(body)
        secs = max(1, math.ceil(self.target.timeout_s))
        call = self._rados.mgr_command if to_mgr else self._rados.mon_command

        def run() -> tuple[int, bytes, str]:
            if osd is not None:
                rc, out, outs = self._rados.osd_command(osd, cmd, inbuf, timeout=secs)
            elif mon is not None:
                rc, out, outs = self._rados.mon_command(cmd, inbuf, timeout=secs, target=mon)
            else:
                rc, out, outs = call(cmd, inbuf, timeout=secs)
            return int(rc), out, outs

        try:
            rc, out, outs = _with_deadline(run, secs + 2.0, prefix)
        except rados.Error as e:
            code = getattr(e, "errno", None)
            raise CephCommandError(prefix, -abs(code) if isinstance(code, int) else -1,
                                   str(e)) from e
        status = outs if isinstance(outs, str) else str(outs)
        if rc != 0:
            raise CephCommandError(prefix, rc, status)
        return (bytes(out) if isinstance(out, (bytes, bytearray)) else str(out).encode(),
                status)

    def _cmd(self, to_mgr: bool, prefix: str, args: Mapping[str, Any],
             mon: str | None = None, inbuf: bytes = b"", osd: int | None = None) -> Any:
        out, _ = self._call(to_mgr, prefix, args, mon, inbuf, osd)
        text = out.decode(errors="replace")
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            return text.strip()

    def mon(self, prefix: str, **args: Any) -> Any:
        """A monitor command; JSON in, parsed JSON out (None when Ceph printed nothing)."""
        return self._cmd(False, prefix, args)

    def tell_mon(self, mon: str, prefix: str, **args: Any) -> Any:
        """A command to one monitor by name (``ceph tell mon.a config get mon_data``)."""
        return self._cmd(False, prefix, args, mon)

    def tell_osd(self, osd: int, prefix: str, **args: Any) -> Any:
        """A command to one OSD (``ceph tell osd.2 dump_historic_slow_ops``)."""
        return self._cmd(False, prefix, args, osd=osd)

    def mgr(self, prefix: str, **args: Any) -> Any:
        """A manager command (``pg ...``, ``osd df``); same contract as :meth:`mon`."""
        return self._cmd(True, prefix, args)

    def mon_input(self, prefix: str, inbuf: bytes, **args: Any) -> Any:
        """A monitor command that reads an input buffer (``osd new`` with its secrets, the
        ``-i FILE`` of the ceph CLI); same contract as :meth:`mon`."""
        return self._cmd(False, prefix, args, inbuf=inbuf)

    def pg(self, pgid: str, prefix: str, timeout: float | None = None, **args: Any) -> Any:
        """A command to a PG's primary OSD (``ceph pg 2.5 query``); same contract as
        :meth:`mon`, the target's timeout bounds it (a PG whose OSDs are all down never
        answers; ``timeout`` shortens it)."""
        if self._rados is None:
            raise CephUnreachable("not connected")
        import rados

        body = {k: v for k, v in args.items() if v is not None}
        body.update(prefix=prefix, pgid=pgid, format="json")
        cmd = json.dumps(body)
        secs = max(1, math.ceil(min(self.target.timeout_s, timeout or self.target.timeout_s)))
        handle = self._rados

        def run() -> tuple[int, bytes, str]:
            rc, out, outs = handle.pg_command(pgid, cmd, b"", timeout=secs)
            return int(rc), out, outs

        try:
            rc, out, outs = _with_deadline(run, secs + 2.0, f"pg {pgid} {prefix}")
        except rados.Error as e:
            code = getattr(e, "errno", None)
            raise CephCommandError(f"pg {pgid} {prefix}",
                                   -abs(code) if isinstance(code, int) else -1, str(e)) from e
        if rc != 0:
            raise CephCommandError(f"pg {pgid} {prefix}", rc, str(outs))
        text = bytes(out).decode(errors="replace") if isinstance(out, (bytes, bytearray)) \
            else str(out)
        try:
            return json.loads(text) if text.strip() else None
        except ValueError:
            return text.strip()

    def mon_bytes(self, prefix: str, **args: Any) -> tuple[bytes, str]:
        """A monitor command whose answer is binary (``osd getmap``): the output buffer
        as it came, and the status text (``got osdmap epoch 40``)."""
        return self._call(False, prefix, args)


def _safe_shutdown(handle: Any) -> None:
    try:
        _with_deadline(handle.shutdown, 5.0, "shutdown")
    except Exception:  # noqa: BLE001, S110  (closing a dead handle must not raise)
        pass


def _rados_msg(e: Exception, t: CephTarget) -> str:
    msg = str(e)
    if "timed out" in msg.lower() or "errno 110" in msg:
        return f"no monitor answered within {t.timeout_s:g} s ({t.conf})"
    return f"cannot connect as {t.client} with {t.conf}: {msg}"
