"""Ceph access over python-rados and the parsers that turn its JSON into ``CephState``.

One connection per cluster per collection; every call is bounded in time: librados gets
``client_mount_timeout`` / ``rados_mon_op_timeout`` / ``rados_osd_op_timeout``, and the
connect itself also runs in a thread with a deadline so that a wedged monitor can never
hang the caller. Parsers are pure functions of the JSON and accept both Pacific (16.2,
the lab) and Octopus (15.2) layouts.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Self, TypeVar

from storage.model import (
    CephState,
    CrushHost,
    HealthCheck,
    OsdState,
    OsdUsage,
    PgSummary,
    PoolState,
)
from storage.targets import CephTarget

T = TypeVar("T")

DEFAULT_MON_MAX_PG_PER_OSD = 250
# Pools that hold a few objects of Ceph's own (device health, mgr): never sized for data.
SYSTEM_POOLS = frozenset({"device_health_metrics", ".mgr"})
# States ``pg dump_stuck`` can report; one call fetches all, the state names sort them.
STUCK_OPS = ("inactive", "unclean", "stale", "undersized", "degraded")


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
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller)
            box["error"] = e

    th = threading.Thread(target=run, name=f"ceph-{what}", daemon=True)
    th.start()
    th.join(seconds)
    if th.is_alive():
        raise CephUnreachable(f"{what}: no answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


class CephClient:
    """A short-lived connection to one cluster: ``with CephClient(t) as c: c.mon("osd dump")``."""

    def __init__(self, target: CephTarget) -> None:
        self.target = target
        self._rados: Any = None

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
        if self._rados is not None:
            _safe_shutdown(self._rados)
            self._rados = None

    def _cmd(self, to_mgr: bool, prefix: str, args: Mapping[str, Any]) -> Any:
        if self._rados is None:
            raise CephUnreachable("not connected")
        import rados

        body = {k: v for k, v in args.items() if v is not None}
        body.update(prefix=prefix, format="json")
        cmd = json.dumps(body)
        secs = max(1, math.ceil(self.target.timeout_s))
        call = self._rados.mgr_command if to_mgr else self._rados.mon_command

        def run() -> tuple[int, bytes, str]:
            rc, out, outs = call(cmd, b"", timeout=secs)
            return int(rc), out, outs

        try:
            rc, out, outs = _with_deadline(run, secs + 2.0, prefix)
        except rados.Error as e:
            code = getattr(e, "errno", None)
            raise CephCommandError(prefix, -abs(code) if isinstance(code, int) else -1,
                                   str(e)) from e
        if rc != 0:
            raise CephCommandError(prefix, rc, outs if isinstance(outs, str) else str(outs))
        text = out.decode() if isinstance(out, (bytes, bytearray)) else str(out)
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            return text.strip()

    def mon(self, prefix: str, **args: Any) -> Any:
        """A monitor command; JSON in, parsed JSON out (None when Ceph printed nothing)."""
        return self._cmd(False, prefix, args)

    def mgr(self, prefix: str, **args: Any) -> Any:
        """A manager command (``pg ...``, ``osd df``); same contract as :meth:`mon`."""
        return self._cmd(True, prefix, args)


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


# --------------------------------------------------------------------------- parsers


def parse_stamp(value: Any) -> float | None:
    """Ceph stamps: ISO with ``+0000`` (Octopus+), or ``"0.000000"`` meaning never."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) or None
    s = str(value).strip()
    if not s or s.startswith("0.0"):
        return None
    try:
        return datetime.fromisoformat(s).timestamp()
    except ValueError:
        pass
    try:
        f = float(s)  # "1644484759.134352" (older releases)
    except ValueError:
        return None
    return f or None


def _flags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(f for f in value.split(",") if f)
    if isinstance(value, list):
        return tuple(str(f) for f in value)
    return ()


def parse_pool(d: Mapping[str, Any]) -> PoolState:
    """One pool of ``osd pool ls detail`` (``pool_id``) or ``osd dump`` (``pool``)."""
    pid = d.get("pool_id", d.get("pool"))
    opts = d.get("options") or {}
    ptype = d.get("type")
    type_name = {1: "replicated", 3: "erasure"}.get(ptype, str(ptype)) if isinstance(
        ptype, int) else str(ptype or "replicated")
    hsp = d.get("hit_set_params") or {}
    return PoolState(
        id=int(pid if pid is not None else -1),
        name=str(d.get("pool_name", "")),
        size=int(d.get("size", 0)),
        min_size=int(d.get("min_size", 0)),
        pg_num=int(d.get("pg_num", 0)),
        pgp_num=int(d.get("pg_placement_num", d.get("pgp_num", 0))),
        pg_num_target=int(d.get("pg_num_target", d.get("pg_num", 0))),
        crush_rule=int(d.get("crush_rule", 0)),
        type=type_name,
        application=tuple(sorted((d.get("application_metadata") or {}).keys())),
        pg_autoscale_mode=str(d.get("pg_autoscale_mode", "off")),
        target_size_ratio=float(opts.get("target_size_ratio", 0.0) or 0.0),
        target_size_bytes=int(opts.get("target_size_bytes", 0) or 0),
        tier_of=int(d.get("tier_of", -1)),
        tiers=tuple(int(x) for x in d.get("tiers", ())),
        read_tier=int(d.get("read_tier", -1)),
        write_tier=int(d.get("write_tier", -1)),
        cache_mode=str(d.get("cache_mode", "none")),
        target_max_bytes=int(d.get("target_max_bytes", 0)),
        target_max_objects=int(d.get("target_max_objects", 0)),
        cache_target_dirty_ratio_micro=int(d.get("cache_target_dirty_ratio_micro", 400000)),
        cache_target_dirty_high_ratio_micro=int(
            d.get("cache_target_dirty_high_ratio_micro", 600000)),
        cache_target_full_ratio_micro=int(d.get("cache_target_full_ratio_micro", 800000)),
        hit_set_type=str(hsp.get("type", "none")),
        hit_set_count=int(d.get("hit_set_count", 0)),
        hit_set_period=int(d.get("hit_set_period", 0)),
        min_read_recency_for_promote=int(d.get("min_read_recency_for_promote", 0)),
        min_write_recency_for_promote=int(d.get("min_write_recency_for_promote", 0)),
        quota_max_bytes=int(d.get("quota_max_bytes", 0)),
        quota_max_objects=int(d.get("quota_max_objects", 0)),
    )


def parse_pool_ls_detail(data: Iterable[Mapping[str, Any]]) -> tuple[PoolState, ...]:
    return tuple(parse_pool(p) for p in data)


def parse_osd_dump(d: Mapping[str, Any]) -> dict[str, Any]:
    """The osdmap: fsid, epoch, flags, full ratios, OSDs (without CRUSH facts), pools."""
    xinfo = {int(x["osd"]): x for x in d.get("osd_xinfo", ())}
    osds: list[OsdState] = []
    for o in d.get("osds", ()):
        oid = int(o["osd"])
        state = tuple(str(s) for s in o.get("state", ()))
        up = bool(o.get("up", 0))
        down_since = None
        if not up:
            down_since = parse_stamp(xinfo.get(oid, {}).get("down_stamp"))
        osds.append(OsdState(
            id=oid,
            uuid=str(o.get("uuid", "")),
            up=up,
            in_=bool(o.get("in", 0)),
            exists="exists" in state or not state,
            host=None,
            crush_weight=0.0,
            reweight=float(o.get("weight", 0.0)),
            state=state,
            up_from=int(o.get("up_from", 0)),
            up_thru=int(o.get("up_thru", 0)),
            down_at=int(o.get("down_at", 0)),
            down_since=down_since,
            public_addr=o.get("public_addr"),
            destroyed="destroyed" in state,
            new="new" in state or (int(o.get("up_from", 0)) == 0 and not up),
        ))
    return {
        "fsid": str(d.get("fsid", "")),
        "epoch": int(d.get("epoch", 0)),
        "flags": _flags(d.get("flags_set", d.get("flags", ""))),
        "full_ratio": float(d.get("full_ratio", 0.95)),
        "backfillfull_ratio": float(d.get("backfillfull_ratio", 0.90)),
        "nearfull_ratio": float(d.get("nearfull_ratio", 0.85)),
        "osds": tuple(osds),
        "pools": tuple(parse_pool(p) for p in d.get("pools", ())),
        "last_up_change": parse_stamp(d.get("last_up_change")),
        "last_in_change": parse_stamp(d.get("last_in_change")),
        "require_osd_release": str(d.get("require_osd_release", "")),
    }


def parse_osd_tree(d: Mapping[str, Any]) -> dict[str, Any]:
    """CRUSH hosts and per-OSD CRUSH facts: host, device class, crush weight, reweight.

    Works on ``osd tree`` and ``osd df tree`` alike (same node layout).
    """
    nodes = list(d.get("nodes", ()))
    by_id = {int(n["id"]): n for n in nodes}
    hosts: list[CrushHost] = []
    osd_host: dict[int, str] = {}
    for n in nodes:
        if n.get("type") == "host":
            ids = tuple(sorted(int(c) for c in n.get("children", ()) if int(c) >= 0))
            hosts.append(CrushHost(str(n["name"]), ids))
            for i in ids:
                osd_host[i] = str(n["name"])
    info: dict[int, dict[str, Any]] = {}
    for n in list(nodes) + list(d.get("stray", ())):
        if int(n.get("id", -1)) < 0:
            continue
        oid = int(n["id"])
        info[oid] = {
            "host": osd_host.get(oid),
            "device_class": n.get("device_class"),
            "crush_weight": float(n.get("crush_weight", 0.0)),
            "reweight": float(n.get("reweight", 0.0)),
            "status": n.get("status"),
        }
    del by_id
    return {"hosts": tuple(hosts), "osds": info}


def parse_df(d: Mapping[str, Any]) -> dict[str, Any]:
    """Cluster totals and per-pool usage by pool id."""
    stats = d.get("stats") or {}
    pools: dict[int, dict[str, Any]] = {}
    for p in d.get("pools", ()):
        s = p.get("stats") or {}
        pools[int(p["id"])] = {
            "stored_bytes": int(s.get("stored", s.get("bytes_used", 0)) or 0),
            "objects": int(s.get("objects", 0) or 0),
            "max_avail_bytes": int(s.get("max_avail", 0) or 0),
            "percent_used": float(s.get("percent_used", 0.0) or 0.0),
        }
    return {
        "total_bytes": int(stats.get("total_bytes", 0) or 0),
        "total_avail_bytes": int(stats.get("total_avail_bytes", 0) or 0),
        "pools": pools,
    }


def parse_pg_stat(d: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    """``pg stat``: Octopus/Pacific nest it under ``pg_summary``; older ones do not.

    ``pg_ready: false`` (a manager that has just started) reports every PG as
    ``unknown``; that says nothing about the PGs, so the states are dropped.
    """
    s = d.get("pg_summary", d) if isinstance(d, Mapping) else {}
    by_state = {str(e["name"]): int(e["num"]) for e in s.get("num_pg_by_state", ())}
    num = int(s.get("num_pgs", sum(by_state.values())))
    if isinstance(d, Mapping) and d.get("pg_ready") is False:
        return num, {}
    return num, by_state


def parse_pg_dump_stuck(d: Any) -> dict[str, tuple[str, ...]]:
    """``pg dump_stuck`` for all STUCK_OPS at once, sorted into kinds by each PG's state.

    Pacific answers ``{"stuck_pg_stats": [...]}``, older releases a bare list, and an
    empty answer (nothing stuck) is None.
    """
    if not d:
        return {}
    entries = d.get("stuck_pg_stats", ()) if isinstance(d, Mapping) else d
    out: dict[str, list[str]] = {}
    for e in entries or ():
        state = str(e.get("state", ""))
        parts = set(state.split("+"))
        pgid = str(e.get("pgid", "?"))
        kinds = []
        if "stale" in parts:
            kinds.append("stale")
        if "active" not in parts:
            kinds.append("inactive")
        if "undersized" in parts:
            kinds.append("undersized")
        if "degraded" in parts:
            kinds.append("degraded")
        if "clean" not in parts:
            kinds.append("unclean")
        for k in kinds:
            out.setdefault(k, []).append(pgid)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def parse_health(d: Mapping[str, Any]) -> tuple[str, tuple[HealthCheck, ...]]:
    """``health detail``: overall status and each of Ceph's own checks."""
    checks: list[HealthCheck] = []
    raw = d.get("checks") or {}
    items: Iterable[tuple[str, Any]]
    if isinstance(raw, Mapping):
        items = raw.items()
    else:  # very old layout: a list with "code"
        items = ((str(c.get("code", "?")), c) for c in raw)
    for code, c in items:
        summ = c.get("summary")
        summary = summ.get("message", "") if isinstance(summ, Mapping) else str(summ or "")
        detail = tuple(
            str(x.get("message", "")) if isinstance(x, Mapping) else str(x)
            for x in c.get("detail", ()))
        checks.append(HealthCheck(code=str(code), severity=str(c.get("severity", "")),
                                  summary=summary, detail=detail,
                                  muted=bool(c.get("muted", False))))
    return str(d.get("status", d.get("overall_status", "HEALTH_UNKNOWN"))), tuple(checks)


def parse_status(d: Mapping[str, Any]) -> dict[str, Any]:
    """Quorum and monitor names from ``status`` (or ``quorum_status``).

    Octopus dropped the mon list from ``status.monmap`` (only ``num_mons``), so the names
    may need ``quorum_status``; both put the quorum in ``quorum_names``.
    """
    monmap = d.get("monmap") or {}
    names = tuple(str(m["name"]) for m in monmap.get("mons", ()) if "name" in m)
    return {
        "quorum": tuple(str(n) for n in d.get("quorum_names", ())),
        "mon_names": names,
        "num_mons": int(monmap.get("num_mons", len(names)) or len(names)),
    }


_VER_RE = re.compile(r"ceph version (\S+) \([0-9a-f]+\) (\w+)")


def parse_versions(d: Mapping[str, Any]) -> tuple[str, str]:
    """Lowest daemon version running (the one that limits the cluster) and its release."""
    pool = d.get("overall") or d.get("mon") or {}
    found: list[tuple[tuple[int, ...], str, str]] = []
    for key in pool:
        m = _VER_RE.search(str(key))
        if m:
            nums = tuple(int(x) for x in re.findall(r"\d+", m.group(1))[:3])
            found.append((nums, m.group(1), m.group(2)))
    if not found:
        return "", ""
    _, ver, rel = min(found)
    return ver, rel


def parse_osd_df(d: Mapping[str, Any]) -> tuple[OsdUsage, ...]:
    """``osd df`` or ``osd df tree``: per-OSD utilization (percent) and sizes."""
    out = []
    for n in d.get("nodes", ()):
        if int(n.get("id", -1)) < 0 or n.get("type", "osd") != "osd":
            continue
        out.append(OsdUsage(id=int(n["id"]), utilization=float(n.get("utilization", 0.0)),
                            kb=int(n.get("kb", 0)), kb_avail=int(n.get("kb_avail", 0))))
    return tuple(out)


def parse_osd_perf(d: Any) -> dict[int, tuple[float, float]]:
    """``osd perf``: per OSD (commit, apply) latency in ms, as the manager last averaged
    them. Octopus+ wrap the list in ``osdstats``; earlier releases do not. Entries with no
    id or no numbers are skipped (an OSD that never reported)."""
    if not isinstance(d, Mapping):
        return {}
    infos = (d.get("osdstats") or {}).get("osd_perf_infos") \
        if isinstance(d.get("osdstats"), Mapping) else d.get("osd_perf_infos")
    out: dict[int, tuple[float, float]] = {}
    if not isinstance(infos, list):
        return out
    for e in infos:
        if not isinstance(e, Mapping) or not isinstance(e.get("perf_stats"), Mapping):
            continue
        ps = e["perf_stats"]
        try:
            osd = int(e["id"])
            commit = float(ps.get("commit_latency_ms", 0))
            apply = float(ps.get("apply_latency_ms", 0))
        except (KeyError, TypeError, ValueError):
            continue
        if osd >= 0 and math.isfinite(commit) and math.isfinite(apply):
            out[osd] = (commit, apply)
    return out


def parse_config_value(v: Any) -> str | None:
    """``config get`` answers a bare value, a string, or ``{"name": value}``."""
    if v is None:
        return None
    if isinstance(v, Mapping):
        if len(v) == 1:
            return str(next(iter(v.values())))
        return None
    return str(v).strip()


def parse_time_sync(d: Any) -> dict[str, float]:
    """``time-sync-status``: skew in seconds per monitor (empty with one monitor)."""
    out: dict[str, float] = {}
    if not isinstance(d, Mapping):
        return out
    for name, s in (d.get("time_skew_status") or {}).items():
        try:
            out[str(name)] = abs(float(s.get("skew", 0.0)))
        except (TypeError, ValueError, AttributeError):
            continue
    return out


def build_state(raw: Mapping[str, Any], collected_at: float | None = None) -> CephState:
    """Assemble ``CephState`` from the raw JSON of each command (keys = command prefix).

    Only ``osd dump`` is required; every other part is optional and its absence leaves
    the defaults, so a manager that does not answer still gives an OSD/pool picture.
    """
    dump = parse_osd_dump(raw["osd dump"])
    stamps = {int(k): parse_stamp(v) for k, v in (raw.get("osdmap_stamps") or {}).items()}
    tree = parse_osd_tree(raw["osd tree"]) if raw.get("osd tree") else {"hosts": (), "osds": {}}
    tinfo: Mapping[int, Mapping[str, Any]] = tree["osds"]
    osds = []
    for o in dump["osds"]:
        t = tinfo.get(o.id, {})
        osds.append(OsdState(
            id=o.id, uuid=o.uuid, up=o.up, in_=o.in_, exists=o.exists,
            host=t.get("host"), crush_weight=float(t.get("crush_weight", 0.0)),
            reweight=o.reweight, device_class=t.get("device_class"), state=o.state,
            up_from=o.up_from, up_thru=o.up_thru, down_at=o.down_at,
            down_since=o.down_since if o.down_since is not None or o.up
            else stamps.get(o.down_at),
            public_addr=o.public_addr,
            destroyed=o.destroyed or t.get("status") == "destroyed", new=o.new))
    pools = list(parse_pool_ls_detail(raw["osd pool ls detail"])) if raw.get(
        "osd pool ls detail") else list(dump["pools"])
    df: dict[str, Any] = parse_df(raw["df"]) if raw.get("df") else {
        "pools": {}, "total_bytes": 0, "total_avail_bytes": 0}
    merged = []
    for p in pools:
        u = df["pools"].get(p.id)
        if u:
            p = _replace_pool(p, u)
        merged.append(p)
    num_pgs, by_state = parse_pg_stat(raw["pg stat"]) if raw.get("pg stat") else (
        sum(p.pg_num for p in merged), {})
    stuck = parse_pg_dump_stuck(raw.get("pg dump_stuck"))
    health_status, checks = parse_health(raw["health detail"]) if raw.get(
        "health detail") else ("HEALTH_UNKNOWN", ())
    st = parse_status(raw["status"]) if raw.get("status") else {"quorum": (), "mon_names": ()}
    qs = parse_status(raw["quorum_status"]) if raw.get("quorum_status") else st
    version, release = parse_versions(raw["versions"]) if raw.get("versions") else ("", "")
    if not release:
        release = dump["require_osd_release"]
    config: dict[str, str] = {}
    for key, val in (raw.get("config") or {}).items():
        pv = parse_config_value(val)
        if pv is not None:
            config[key] = pv
    config.setdefault("mon_max_pg_per_osd", str(DEFAULT_MON_MAX_PG_PER_OSD))
    usage = parse_osd_df(raw["osd df"]) if raw.get("osd df") else ()
    return CephState(
        fsid=dump["fsid"], version=version, release=release, epoch=dump["epoch"],
        flags=dump["flags"], osds=tuple(osds), hosts=tree["hosts"], pools=tuple(merged),
        pgs=PgSummary(num_pgs=num_pgs, by_state=by_state, stuck=stuck),
        health_status=health_status, health_checks=checks,
        full_ratio=dump["full_ratio"], backfillfull_ratio=dump["backfillfull_ratio"],
        nearfull_ratio=dump["nearfull_ratio"], osd_usage=usage,
        mon_quorum=tuple(st["quorum"]) or tuple(qs["quorum"]),
        mon_names=tuple(qs["mon_names"]) or tuple(st["mon_names"]),
        config=config, total_bytes=df["total_bytes"],
        total_avail_bytes=df["total_avail_bytes"],
        collected_at=collected_at if collected_at is not None else time.time(),
        raw=dict(raw))


def _replace_pool(p: PoolState, usage: Mapping[str, Any]) -> PoolState:
    from dataclasses import replace

    return replace(p, **usage)


# --------------------------------------------------------------------------- collection

# (key in raw, mgr?, prefix, args). Required ones first; a failure there aborts.
_Cmd = tuple[str, bool, str, dict[str, Any]]
_REQUIRED: tuple[_Cmd, ...] = (
    ("osd dump", False, "osd dump", {}),
    ("osd tree", False, "osd tree", {}),
)
_OPTIONAL: tuple[_Cmd, ...] = (
    ("osd pool ls detail", False, "osd pool ls", {"detail": "detail"}),
    ("df", False, "df", {}),
    ("health detail", False, "health", {"detail": "detail"}),
    ("status", False, "status", {}),
    ("quorum_status", False, "quorum_status", {}),
    ("versions", False, "versions", {}),
    ("time-sync-status", False, "time-sync-status", {}),
    ("pg stat", True, "pg stat", {}),
    ("pg dump_stuck", True, "pg dump_stuck", {"stuckops": list(STUCK_OPS)}),
    ("osd df", True, "osd df", {}),
    ("crash ls-new", True, "crash ls-new", {}),  # RECENT_CRASH explained
)
CONFIG_KEYS = ("mon_max_pg_per_osd", "mon_osd_down_out_interval")
ETIMEDOUT = 110
# At most this many old osdmaps are fetched to date down OSDs (one per distinct epoch).
MAX_EPOCH_LOOKUPS = 16


def collect_raw(client: CephClient) -> dict[str, Any]:
    """Run every command once; optional failures land in ``raw["errors"]``.

    A monitor timeout anywhere aborts (the cluster is unreachable); a manager that does
    not answer costs one timeout, not one per manager command.
    """
    raw: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, to_mgr, prefix, args in _REQUIRED:
        raw[key] = client.mgr(prefix, **args) if to_mgr else client.mon(prefix, **args)
    raw["osdmap_stamps"] = _down_epoch_stamps(client, raw["osd dump"], errors)
    mgr_dead: str | None = None
    for key, to_mgr, prefix, args in _OPTIONAL:
        if to_mgr and mgr_dead:
            errors[key] = f"skipped: {mgr_dead}"
            continue
        try:
            raw[key] = client.mgr(prefix, **args) if to_mgr else client.mon(prefix, **args)
        except CephUnreachable as e:
            if not to_mgr:
                raise
            errors[key] = mgr_dead = f"manager did not answer: {e}"
        except CephCommandError as e:
            if abs(e.rc) == ETIMEDOUT:
                if not to_mgr:
                    raise CephUnreachable(str(e)) from e
                errors[key] = mgr_dead = f"manager did not answer: {e}"
            else:
                errors[key] = str(e)
    cfg: dict[str, Any] = {}
    for name in CONFIG_KEYS:
        try:
            cfg[name] = client.mon("config get", who="mon", key=name)
        except CephCommandError as e:
            if abs(e.rc) == ETIMEDOUT:
                raise CephUnreachable(str(e)) from e
            errors[f"config {name}"] = str(e)
    raw["config"] = cfg
    raw["errors"] = errors
    return raw


def down_epochs(dump: Mapping[str, Any]) -> list[int]:
    """The ``down_at`` epochs of down OSDs whose ``down_stamp`` is unset, newest first.

    Pacific leaves ``down_stamp`` at 0 when an OSD shuts down cleanly or is marked down
    by hand; the osdmap of its ``down_at`` epoch still says when that happened.
    """
    xinfo = {int(x["osd"]): x for x in dump.get("osd_xinfo", ())}
    epochs = {int(o.get("down_at", 0)) for o in dump.get("osds", ())
              if not o.get("up") and int(o.get("down_at", 0)) > 0
              and parse_stamp(xinfo.get(int(o["osd"]), {}).get("down_stamp")) is None}
    return sorted(epochs, reverse=True)[:MAX_EPOCH_LOOKUPS]


def _down_epoch_stamps(client: CephClient, dump: Mapping[str, Any],
                       errors: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for ep in down_epochs(dump):
        try:
            old = client.mon("osd dump", epoch=ep)
        except CephCommandError as e:  # trimmed from the monitor's store: unknown
            errors[f"osd dump {ep}"] = str(e)
            continue
        if isinstance(old, Mapping) and old.get("modified"):
            out[str(ep)] = str(old["modified"])
    return out


def collect_ceph(target: CephTarget) -> tuple[CephState | None, str | None]:
    """One connection, every command, one ``CephState``; never raises.

    An unreachable monitor gives ``(None, message)`` within about ``target.timeout_s``.
    """
    t0 = time.time()
    client = CephClient(target)
    try:
        client.connect()
        raw = collect_raw(client)
        return build_state(raw, collected_at=t0), None
    except CephUnreachable as e:
        return None, str(e)
    except CephCommandError as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001  (a parser surprise must not abort the run)
        return None, f"{type(e).__name__}: {e}"
    finally:
        client.close()


# --------------------------------------------------------------------------- captures

RAW_FILE_NAMES = {
    "osd dump": "osd_dump", "osd tree": "osd_tree", "osd pool ls detail": "osd_pool_ls_detail",
    "df": "df", "health detail": "health_detail", "status": "status",
    "quorum_status": "quorum_status", "versions": "versions",
    "time-sync-status": "time-sync-status", "pg stat": "pg_stat",
    "pg dump_stuck": "pg_dump_stuck", "osd df": "osd_df", "config": "config",
    "osdmap_stamps": "osdmap_stamps", "errors": "errors",
}


def save_raw_dir(raw: Mapping[str, Any], directory: str) -> None:
    """Write each command's JSON to ``directory/<name>.json`` (fixtures, bug reports)."""
    import pathlib

    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for key, value in raw.items():
        name = RAW_FILE_NAMES.get(key, key.replace(" ", "_"))
        (out / f"{name}.json").write_text(json.dumps(value, indent=1, sort_keys=True) + "\n")


def load_raw_dir(directory: str) -> dict[str, Any]:
    """Read a directory written by :func:`save_raw_dir` back into ``raw`` for ``build_state``."""
    import pathlib

    back = {v: k for k, v in RAW_FILE_NAMES.items()}
    raw: dict[str, Any] = {}
    for f in sorted(pathlib.Path(directory).glob("*.json")):
        raw[back.get(f.stem, f.stem.replace("_", " "))] = json.loads(f.read_text())
    return raw
