"""Have the manager's PG states been reported on the current osdmap?

After an osdmap change (an OSD up/down/in/out, a pg_temp, a pool's pg_num) the manager
keeps each PG's state as its primary last reported it, on the map before the change,
until the OSDs' next report (``mgr_stats_period``, 5 s): "65 active+clean" read 0.3 s
after an ``osd in`` is the picture before it (peering starts a second later).
``reported_epoch`` does not tell: a PG the change did not move goes on reporting the
epoch it last peered in. The map does: ``osdmaptool --test-map-pgs-dump-all`` computes
every PG's up and acting set (pg_temp, upmaps and primary affinity applied) on the current
map in milliseconds, and a PG whose reported up/acting set differs has not reported on
the map that moved it.

Pure parts: ``parse_osdmaptool_pgs`` (the tool's text), ``parse_pgs_brief`` (``pg dump
pgs_brief``, every shape met), ``compare`` and ``settle_from_raw`` (the raw answers ->
``PgSettle``). The collector ``read_osdmap_pgs`` gets the map straight from the monitor
(``osd getmap``, binary, through librados), runs the tool on a private temporary file
(0600, removed after) given as its stdin, and keeps only the computed mapping, as plain
JSON: snapshots store and replay that, never the binary, so the tool never runs on a map
that did not come from the monitor.

The tool must not be older than the monitors: Pacific's osdmaptool decodes a Reef map
but ignores Reef's pg-upmap-primary (the read balancer) and computes the wrong primary
for such PGs (captured: ``tests/fixtures/ceph-settle/reef-upmap-primary``); then the
stamp fallback is used, and said so.
"""

from __future__ import annotations

import functools
import math
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from storage.ceph.client import CephCommandError
from storage.ceph.parse import as_map, last_osd_change
from storage.ceph.parse_daemons import parse_version_string
from storage.model.ceph import PgSettle, SettleMethod, release_major, version_key

# the keys of ``raw`` (what snapshots save and replay)
PGS_BRIEF = "pg dump pgs_brief"
OSDMAP_PGS = "osdmap pgs"
# PGs named in ``PgSettle.unreported_pgids``
SAMPLE = 10


@dataclass(frozen=True)
class Placement:
    """Where a PG is: up and acting sets (order matters: erasure-coded shards, the
    primary first) and their primaries (None: the report does not say)."""

    up: tuple[int, ...]
    up_primary: int | None
    acting: tuple[int, ...]
    acting_primary: int | None

    def agrees(self, other: Placement) -> bool:
        """Same sets, and the same primaries where both say."""
        return (self.up == other.up and self.acting == other.acting
                and _same(self.up_primary, other.up_primary)
                and _same(self.acting_primary, other.acting_primary))


def _same(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


@dataclass(frozen=True)
class PgReport:
    """One PG as the manager last heard of it (``pg dump pgs_brief``)."""

    pgid: str
    state: str
    placement: Placement


@dataclass(frozen=True)
class OsdmapPgs:
    """Every PG of one osdmap as osdmaptool computed it."""

    epoch: int | None
    pgs: Mapping[str, Placement]
    pools: Mapping[int, int]  # pool id -> pg_num, as the tool printed it

    def incomplete(self) -> str | None:
        """Why this is not every PG of the map, None when it is (each pool's pg_num
        lines, no PG of a pool the tool did not announce)."""
        per_pool: dict[int, int] = {}
        for pgid in self.pgs:
            pool = int(pgid.split(".", 1)[0])
            per_pool[pool] = per_pool.get(pool, 0) + 1
        stray = sorted(set(per_pool) - set(self.pools))
        if stray:
            return f"osdmaptool printed PGs of pool(s) {stray} without their pool line"
        short = {p: (per_pool.get(p, 0), n) for p, n in self.pools.items()
                 if per_pool.get(p, 0) != n}
        if short:
            p, (got, want) = sorted(short.items())[0]
            return f"osdmaptool printed {got} of pool {p}'s {want} PGs"
        return None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for ``raw`` (PG -> [up, up_primary, acting, acting_primary])."""
        return {"epoch": self.epoch,
                "pools": {str(p): n for p, n in sorted(self.pools.items())},
                "pgs": {pgid: [list(pl.up), pl.up_primary, list(pl.acting),
                               pl.acting_primary] for pgid, pl in self.pgs.items()}}


# --------------------------------------------------------------------------- parsers

_PGID = re.compile(r"^(\d+)\.([0-9a-fA-F]+)$")
_LIST = r"\[(-?\d+(?:,-?\d+)*)?\]"
_PG_LINE = re.compile(
    rf"^(\S+) raw \({_LIST}, p(-?\d+)\) up \({_LIST}, p(-?\d+)\) "
    rf"acting \({_LIST}, p(-?\d+)\)$")
_POOL_LINE = re.compile(r"^pool (\d+) pg_num (\d+)$")
_EPOCH = re.compile(r"\bepoch (\d+)\b")
# a PG id or an OSD id this long is junk, not a cluster
_MAX_DIGITS = 12


def canonical_pgid(v: Any) -> str | None:
    """``"2.3f"`` as Ceph prints a pg_t (pool, ``.``, hex seed without leading zeros);
    None for anything else."""
    if not isinstance(v, str):
        return None
    m = _PGID.match(v.strip())
    if m is None or len(m.group(1)) > _MAX_DIGITS or len(m.group(2)) > _MAX_DIGITS:
        return None
    return f"{int(m.group(1))}.{int(m.group(2), 16):x}"


def _ints(text: str | None) -> tuple[int, ...] | None:
    parts = [x for x in (text or "").split(",") if x]
    if any(len(x.lstrip("-")) > _MAX_DIGITS for x in parts):
        return None
    return tuple(int(x) for x in parts)


def parse_osdmaptool_pgs(text: str, epoch: int | None = None) -> OsdmapPgs:
    """``osdmaptool MAP --test-map-pgs-dump-all``: ``pool N pg_num M`` before each pool's
    lines ``PGID raw ([..], pN) up ([..], pN) acting ([..], pN)``; everything else (the
    per-OSD table after them, messages) is ignored, and so is a line that is not exactly
    that shape. ``--test-map-pgs-dump`` (without -all) prints only the acting set: not
    read here."""
    pgs: dict[str, Placement] = {}
    pools: dict[int, int] = {}
    for line in text.splitlines():
        line = line.strip()
        pm = _POOL_LINE.match(line)
        if pm is not None and len(pm.group(1)) <= _MAX_DIGITS \
                and len(pm.group(2)) <= _MAX_DIGITS:
            pools[int(pm.group(1))] = int(pm.group(2))
            continue
        m = _PG_LINE.match(line)
        if m is None:
            continue
        pgid = canonical_pgid(m.group(1))
        up, acting = _ints(m.group(4)), _ints(m.group(6))
        if pgid is None or up is None or acting is None or any(
                len(m.group(i).lstrip("-")) > _MAX_DIGITS for i in (5, 7)):
            continue
        pgs[pgid] = Placement(up, int(m.group(5)), acting, int(m.group(7)))
    return OsdmapPgs(epoch, pgs, pools)


def _int(v: Any) -> int | None:
    """A JSON integer (not a bool, not a float); None otherwise."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _osd_list(v: Any) -> tuple[int, ...] | None:
    if not isinstance(v, list):
        return None
    out = tuple(_int(x) for x in v)
    return None if any(x is None for x in out) else tuple(x for x in out if x is not None)


def osdmap_pgs_from_json(d: Any) -> OsdmapPgs | None:
    """``OsdmapPgs.to_json`` read back (a replayed snapshot); None when it is not that
    shape. An entry that is not well-formed is left out (``incomplete`` then says so)."""
    m = as_map(d)
    if not isinstance(m.get("pgs"), Mapping) or not isinstance(m.get("pools"), Mapping):
        return None
    pools: dict[int, int] = {}
    for k, n in m["pools"].items():
        if str(k).isdigit() and len(str(k)) <= _MAX_DIGITS and _int(n) is not None:
            pools[int(k)] = int(n)
    pgs: dict[str, Placement] = {}
    for k, v in m["pgs"].items():
        pgid = canonical_pgid(k)
        if pgid is None or not isinstance(v, list) or len(v) != 4:
            continue
        up, acting = _osd_list(v[0]), _osd_list(v[2])
        if up is None or acting is None:
            continue
        pgs[pgid] = Placement(up, _int(v[1]), acting, _int(v[3]))
    return OsdmapPgs(_int(m.get("epoch")), pgs, pools)


def _brief_entries(d: Any) -> list[Any] | None:
    """The entries of every shape ``pg dump pgs_brief`` was met in: a bare list (Nautilus
    and older), ``{"pg_ready": true, "pg_stats": [...]}`` (Octopus to Reef), a full
    ``pg dump``'s ``{"pg_map": {"pg_stats": [...]}}``. None: not known (``pg_ready``
    false, a manager that has just started and reports every PG unknown; junk)."""
    if isinstance(d, list):
        return d
    m = as_map(d)
    if m.get("pg_ready") is False:
        return None
    for node in (m, as_map(m.get("pg_map"))):
        for key in ("pg_stats", "pg_stats_brief"):
            if isinstance(node.get(key), list):
                return list(node[key])
    return None


def parse_pgs_brief(d: Any) -> tuple[PgReport, ...] | None:
    """``pg dump pgs_brief`` -> one report per PG (None: the states are not known). An
    entry without a PG id or with sets that are not lists of integers is left out: that
    PG then counts as not reported."""
    entries = _brief_entries(d)
    if entries is None:
        return None
    out = []
    for e in entries:
        if not isinstance(e, Mapping):
            continue
        pgid = canonical_pgid(e.get("pgid"))
        up, acting = _osd_list(e.get("up")), _osd_list(e.get("acting"))
        if pgid is None or up is None or acting is None:
            continue
        state = e.get("state")
        out.append(PgReport(pgid, state if isinstance(state, str) and state else "unknown",
                            Placement(up, _int(e.get("up_primary")), acting,
                                      _int(e.get("acting_primary")))))
    return tuple(out)


def _pg_order(pgid: str) -> tuple[int, int]:
    pool, seed = pgid.split(".", 1)
    return int(pool), int(seed, 16)


def compare(mapped: OsdmapPgs, reports: Iterable[PgReport]) -> tuple[int, tuple[str, ...]]:
    """(PGs compared, the PGs that have not reported on this map, in PG order): a PG of
    the map whose reported placement differs or that the manager does not list (a new
    PG), and a PG the manager lists that the map does not have (a deleted pool)."""
    by_id = {r.pgid: r for r in reports}
    bad = [pgid for pgid, pl in mapped.pgs.items()
           if pgid not in by_id or not by_id[pgid].placement.agrees(pl)]
    bad += [pgid for pgid in by_id if pgid not in mapped.pgs]
    return len(set(mapped.pgs) | set(by_id)), tuple(sorted(bad, key=_pg_order))


def settle_from_raw(raw: Mapping[str, Any]) -> PgSettle | None:
    """The raw answers (``PGS_BRIEF``, ``OSDMAP_PGS``, their ``errors``, and ``osd stat``
    or ``status`` for the stamps) -> ``PgSettle``; None when none of it was read."""
    errors = as_map(raw.get("errors"))
    keys = (PGS_BRIEF, OSDMAP_PGS)
    if not any(k in raw or k in errors for k in keys):
        return None
    stamp = last_osd_change(raw.get("osd stat")) or last_osd_change(raw.get("status"))
    reports = parse_pgs_brief(raw.get(PGS_BRIEF)) if PGS_BRIEF in raw else None
    by_state: dict[str, int] = {}
    for r in reports or ():
        by_state[r.state] = by_state.get(r.state, 0) + 1
    why: str | None = None
    mapped = osdmap_pgs_from_json(raw.get(OSDMAP_PGS))
    if reports is None:
        if PGS_BRIEF not in raw:
            why = str(errors.get(PGS_BRIEF) or errors.get(OSDMAP_PGS)
                      or "pg dump pgs_brief not read")
        elif as_map(raw[PGS_BRIEF]).get("pg_ready") is False:
            why = "the manager's PG states are not ready (pg_ready false)"
        else:
            why = "pg dump pgs_brief: an answer of a shape not known"
    elif OSDMAP_PGS in errors:
        why = str(errors[OSDMAP_PGS])
    elif mapped is None:
        why = "no mapping computed from the osdmap"
    else:
        why = mapped.incomplete()
    if why is not None or mapped is None or reports is None:
        return PgSettle(SettleMethod.STAMP if stamp is not None else SettleMethod.UNKNOWN,
                        by_state=by_state, last_change=stamp,
                        error=why or "no mapping computed from the osdmap")
    total, bad = compare(mapped, reports)
    return PgSettle(SettleMethod.OSDMAP, epoch=mapped.epoch, num_pgs=total,
                    unreported=len(bad), unreported_pgids=bad[:SAMPLE], by_state=by_state,
                    last_change=stamp)


def worth_comparing(by_state: Mapping[str, int]) -> bool:
    """Whether comparing the PGs with the map can change what their states say: only when
    every PG reads active+clean (a cheap ``pg stat`` tells). Otherwise the states already
    say "not clean", stale or not, and the dump and the map are not worth reading. Looser
    than ``checks.osd.pg_state_is_clean`` on purpose: it only saves work."""
    return bool(by_state) and all({"active", "clean"} <= set(str(st).split("+"))
                                  for st, n in by_state.items() if n)


# --------------------------------------------------------------------------- collector


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
    em = _EPOCH.search(status)
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


def settle_to_json(s: PgSettle) -> dict[str, Any]:
    """``PgSettle`` as plain JSON (a benchmark result's stored cluster state)."""
    return {"method": s.method.value, "epoch": s.epoch, "num_pgs": s.num_pgs,
            "unreported": s.unreported, "unreported_pgids": list(s.unreported_pgids),
            "by_state": dict(s.by_state), "last_change": s.last_change, "error": s.error}


def settle_from_json(d: Any) -> PgSettle | None:
    """``settle_to_json`` read back; None when it is not that (a result stored before
    there was one, junk)."""
    m = as_map(d)
    try:
        method = SettleMethod(str(m.get("method")))
    except ValueError:
        return None
    lc = m.get("last_change")
    last = float(lc) if isinstance(lc, (int, float)) and not isinstance(lc, bool) \
        and math.isfinite(lc) else None
    pgids = m.get("unreported_pgids")
    by_state = {str(k): v for k, v in as_map(m.get("by_state")).items()
                if _int(v) is not None and v >= 0}
    err = m.get("error")
    return PgSettle(method, epoch=_int(m.get("epoch")), num_pgs=max(0, _int(m.get("num_pgs")) or 0),
                    unreported=max(0, _int(m.get("unreported")) or 0),
                    unreported_pgids=tuple(str(x) for x in pgids)
                    if isinstance(pgids, list) else (),
                    by_state=by_state, last_change=last,
                    error=str(err) if err is not None else None)
