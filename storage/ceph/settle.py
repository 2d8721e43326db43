"""Have the manager's PG states been reported on the current osdmap? Getting the answer.

(The rule and the parsers are ``storage.ceph.parse_settle``.) ``read_osdmap_pgs`` gets
the map straight from the monitor (``osd getmap``, binary, through librados), runs
osdmaptool on a private temporary file (0600, removed after) given as its stdin, and
keeps only the computed mapping, as plain JSON: snapshots store and replay that, never
the binary, so the tool never runs on a map that did not come from the monitor.
``read_pg_settle`` adds the manager's ``pg dump pgs_brief`` and judges both.

The tool must not be older than the monitors: Pacific's osdmaptool decodes a Reef map
but ignores Reef's pg-upmap-primary (the read balancer) and computes the wrong primary
for such PGs (captured: ``tests/fixtures/ceph-settle/reef-upmap-primary``); then the
stamp fallback is used, and said so.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from collections.abc import Sequence
from typing import Any, Protocol

from storage.ceph.client import CephCommandError
from storage.ceph.parse import as_map
from storage.ceph.parse_daemons import parse_version_string
from storage.ceph.parse_settle import (
    EPOCH,
    OSDMAP_PGS,
    PGS_BRIEF,
    parse_osdmaptool_pgs,
    settle_from_raw,
)
from storage.model.ceph import PgSettle, release_major, version_key


class SettleUnavailable(Exception):
    """The map rule cannot be used this time; the message says why (in the result)."""


class MonSource(Protocol):
    """What ``read_osdmap_pgs`` needs of a connection (``CephClient`` has it)."""

    def mon(self, prefix: str, **args: Any) -> Any: ...

    def mon_bytes(self, prefix: str, **args: Any) -> tuple[bytes, str]: ...


DEBIAN_PACKAGE = "ceph-base"


@functools.lru_cache(maxsize=8)
def tool_version(tool: tuple[str, ...], timeout_s: float) -> tuple[str, str] | None:
    """``osdmaptool --version`` -> (version, release); None when it prints none. Raises
    ``SettleUnavailable`` when it cannot run. Asked once per tool and process."""
    try:
        p = subprocess.run([*tool, "--version"], capture_output=True, text=True,
                           timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SettleUnavailable(f"{tool[0]} not found (Debian/Ubuntu package "
                                f"{DEBIAN_PACKAGE})") from None
    except (OSError, subprocess.SubprocessError) as e:
        raise SettleUnavailable(f"{tool[0]} --version: {e}") from None
    return parse_version_string(p.stdout + "\n" + p.stderr)


def _older(tool: tuple[str, str] | None, mon: tuple[str, str] | None) -> bool:
    if tool is None or mon is None:
        return False  # cannot tell: the tool decoded the map, take what it computed
    t, m = release_major(tool[1]), release_major(mon[1])
    if t is not None and m is not None:
        return t < m
    return version_key(tool[0])[:1] < version_key(mon[0])[:1]


def read_osdmap_pgs(src: MonSource, tool: Sequence[str], timeout_s: float) -> dict[str, Any]:
    """The current osdmap, straight from the monitor, through osdmaptool: every PG's
    computed placement as plain JSON (``OsdmapPgs.to_json``). Raises ``SettleUnavailable``
    with the reason when it cannot (no tool, a tool older than the monitors, a map it
    does not decode); ``CephUnreachable`` passes through."""
    argv = tuple(tool)
    if not argv:
        raise SettleUnavailable("no osdmaptool configured ([clusters.NAME.ceph] osdmaptool)")
    have = tool_version(argv, timeout_s)
    try:
        mon = parse_version_string(str(as_map(src.mon("version")).get("version", "")))
    except CephCommandError:
        mon = None
    if _older(have, mon):
        assert have is not None and mon is not None
        raise SettleUnavailable(
            f"{argv[-1]} is {have[1]} {have[0]}, older than the monitors ({mon[1]} "
            f"{mon[0]}): an older osdmaptool decodes a newer map but ignores newer "
            "placement (Reef's pg-upmap-primary); set [clusters.NAME.ceph] osdmaptool to "
            f"an osdmaptool of {mon[1]} or newer")
    try:
        blob, status = src.mon_bytes("osd getmap")
    except CephCommandError as e:
        raise SettleUnavailable(f"osd getmap: {e}") from None
    em = EPOCH.search(status)
    mapped = parse_osdmaptool_pgs(_run_tool(argv, blob, timeout_s),
                                  int(em.group(1)) if em else None)
    why = mapped.incomplete()
    if why is not None:
        raise SettleUnavailable(why)
    return mapped.to_json()


def _run_tool(argv: tuple[str, ...], blob: bytes, timeout_s: float) -> str:
    """osdmaptool on ``blob``: a private temporary file (0600, removed after) given as
    its stdin, so that a tool run in a chroot (the lab's Reef) reads it too."""
    if not blob:
        raise SettleUnavailable("osd getmap returned no map")
    fd, path = tempfile.mkstemp(prefix="stordoc-osdmap-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        with open(path, "rb") as f:
            p = subprocess.run([*argv, "/dev/stdin", "--test-map-pgs-dump-all"], stdin=f,
                               capture_output=True, text=True, timeout=timeout_s,
                               check=False)
    except FileNotFoundError:
        raise SettleUnavailable(f"{argv[0]} not found (Debian/Ubuntu package "
                                f"{DEBIAN_PACKAGE})") from None
    except subprocess.TimeoutExpired:
        raise SettleUnavailable(f"osdmaptool did not finish within {timeout_s:g} s") from None
    except OSError as e:
        raise SettleUnavailable(f"osdmaptool: {e}") from None
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no message"])[-1]
        raise SettleUnavailable(f"osdmaptool exited {p.returncode}: {last[:200]}")
    return p.stdout


class SettleSource(MonSource, Protocol):
    """``MonSource`` and manager commands: what ``read_pg_settle`` needs."""

    def mgr(self, prefix: str, **args: Any) -> Any: ...


def read_pg_settle(src: SettleSource, tool: Sequence[str], timeout_s: float) -> PgSettle:
    """Everything ``PgSettle`` needs, read now: the monitor's stamps (``osd stat``, for
    the fallback), the manager's PG reports, then the map (read after the reports, a PG
    that agrees with it has reported on every change up to it). Command failures become
    the fallback and its reason; ``CephUnreachable`` passes through."""
    raw: dict[str, Any] = {}
    errors: dict[str, str] = {}
    try:
        raw["osd stat"] = src.mon("osd stat")
    except CephCommandError as e:
        errors["osd stat"] = str(e)
    try:
        raw[PGS_BRIEF] = src.mgr("pg dump", dumpcontents=["pgs_brief"])
    except CephCommandError as e:
        errors[PGS_BRIEF] = str(e)
    if PGS_BRIEF in raw:
        try:
            raw[OSDMAP_PGS] = read_osdmap_pgs(src, tool, timeout_s)
        except SettleUnavailable as e:
            errors[OSDMAP_PGS] = str(e)
    raw["errors"] = errors
    settle = settle_from_raw(raw)
    assert settle is not None  # PGS_BRIEF is in raw or in errors
    return settle
