"""``build_state``: the JSON of every command (``raw``, keyed by command) -> one typed
``CephState``. Pure: the unit tests feed it captures of each release."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from storage.ceph.parse import (
    CrushTree,
    DfTotals,
    as_map,
    parse_autoscale_status,
    parse_df,
    parse_osd_df,
    parse_osd_dump,
    parse_osd_tree,
    parse_pg_dump_stuck,
    parse_pg_stat,
    parse_pool_ls_detail,
    parse_stamp,
)
from storage.ceph.parse_config import parse_config_dump, parse_config_show, parse_config_value
from storage.ceph.parse_daemons import (
    DAEMON_KINDS,
    Quorum,
    parse_crashes,
    parse_health,
    parse_metadata,
    parse_osd_perf,
    parse_status,
    parse_time_sync,
    parse_versions,
)
from storage.ceph.parse_devices import parse_device_ls
from storage.ceph.parse_mgrmon import parse_crush, parse_mgr_dump, parse_mon_data
from storage.ceph.parse_ops import PING_CODES, parse_laggy, parse_slow
from storage.ceph.parse_osdlog import (
    LOG_FLAPS,
    MAP_FLAPS,
    parse_flaps,
    parse_large_omap,
    parse_map_flaps,
)
from storage.ceph.parse_pgquery import parse_pg_blocks
from storage.ceph.parse_scrub import SCRUB_KEY, parse_scrub
from storage.ceph.parse_settle import PGS_BRIEF, settle_from_raw
from storage.ceph.quota_history import QUOTA_HISTORY, parse_quota_history
from storage.model import (
    CephState,
    CephVersions,
    HealthCheck,
    OsdState,
    PgSummary,
    RunningConfig,
)
from storage.model.mgrmon import MgrState
from storage.model.slowops import SlowState

DEFAULT_MON_MAX_PG_PER_OSD = 250


def _osds(dump_osds: tuple[OsdState, ...], tree: CrushTree,
          stamps: Mapping[int, float | None]) -> tuple[OsdState, ...]:
    out = []
    for o in dump_osds:
        t = tree.osds.get(o.id)
        down_since = o.down_since if o.down_since is not None or o.up \
            else stamps.get(o.down_at)
        out.append(replace(
            o, host=t.host if t else None, crush_weight=t.crush_weight if t else 0.0,
            device_class=t.device_class if t else None, down_since=down_since,
            destroyed=o.destroyed or (t is not None and t.status == "destroyed")))
    return tuple(out)


def _versions(raw: Mapping[str, Any]) -> CephVersions:
    v = parse_versions(raw.get("versions"))
    daemons = tuple(d for kind in DAEMON_KINDS
                    for d in parse_metadata(kind, raw.get(f"{kind} metadata")))
    return replace(v, daemons=daemons) if daemons else v


def _osd_config(raw: Mapping[str, Any]) -> RunningConfig | None:
    shown = as_map(raw.get("config show"))
    for daemon, value in shown.items():
        return parse_config_show(str(daemon), value)
    return None


def build_state(raw: Mapping[str, Any], collected_at: float | None = None) -> CephState:
    """Assemble ``CephState`` from the raw JSON of each command (keys = command prefix).

    Only ``osd dump`` is required; every other part is optional and its absence leaves
    the defaults, so a manager that does not answer still gives an OSD/pool picture.
    """
    dump = parse_osd_dump(as_map(raw["osd dump"]))
    stamps = {int(k): parse_stamp(v) for k, v in as_map(raw.get("osdmap_stamps")).items()
              if str(k).isdigit()}
    tree = parse_osd_tree(as_map(raw["osd tree"])) if raw.get("osd tree") else CrushTree()
    pools = list(parse_pool_ls_detail(raw["osd pool ls detail"])) if raw.get(
        "osd pool ls detail") else list(dump.pools)
    df = parse_df(as_map(raw["df"])) if raw.get("df") else DfTotals()
    autoscale = parse_autoscale_status(raw.get("osd pool autoscale-status"))
    merged = []
    for p in pools:
        u = df.pools.get(p.id)
        if u is not None:
            p = replace(p, stored_bytes=u.stored_bytes, objects=u.objects,
                        max_avail_bytes=u.max_avail_bytes, percent_used=u.percent_used)
        if p.id in autoscale:
            p = replace(p, autoscale=autoscale[p.id])
        merged.append(p)
    num_pgs, by_state = parse_pg_stat(raw["pg stat"]) if raw.get("pg stat") else (
        sum(p.pg_num for p in merged), {})
    stuck = parse_pg_dump_stuck(raw.get("pg dump_stuck"))
    settle = settle_from_raw(raw)
    if settle is not None and settle.by_state:
        # ``pg dump pgs_brief`` was read after ``pg stat``: its states are the newer, and
        # the ones whose placement was compared with the map
        num_pgs, by_state = sum(settle.by_state.values()), dict(settle.by_state)
    health_status, checks = parse_health(as_map(raw["health detail"])) if raw.get(
        "health detail") else ("HEALTH_UNKNOWN", ())
    st = parse_status(as_map(raw["status"])) if raw.get("status") else Quorum()
    qs = parse_status(as_map(raw["quorum_status"])) if raw.get("quorum_status") else st
    versions = _versions(raw)
    lowest = versions.lowest()
    version, release = (lowest.version, lowest.release) if lowest else ("", "")
    if not release:
        release = dump.require_osd_release
    config: dict[str, str] = {}
    for key, val in as_map(raw.get("config")).items():
        pv = parse_config_value(val)
        if pv is not None:
            config[key] = pv
    config.setdefault("mon_max_pg_per_osd", str(DEFAULT_MON_MAX_PG_PER_OSD))
    usage = parse_osd_df(as_map(raw["osd df"])) if raw.get("osd df") else ()
    errors = {str(k): str(v) for k, v in as_map(raw.get("errors")).items()}
    return CephState(
        fsid=dump.fsid, version=version, release=release, epoch=dump.epoch,
        flags=dump.flags, osds=_osds(dump.osds, tree, stamps), hosts=tree.hosts,
        pools=tuple(merged),
        pgs=PgSummary(num_pgs=num_pgs, by_state=by_state, stuck=stuck),
        health_status=health_status, health_checks=checks,
        full_ratio=dump.full_ratio, backfillfull_ratio=dump.backfillfull_ratio,
        nearfull_ratio=dump.nearfull_ratio, osd_usage=usage,
        mon_quorum=st.quorum or qs.quorum,
        mon_names=qs.mon_names or st.mon_names,
        config=config, total_bytes=df.total_bytes,
        total_avail_bytes=df.total_avail_bytes,
        collected_at=collected_at if collected_at is not None else time.time(),
        require_osd_release=dump.require_osd_release,
        versions=versions,
        crashes=parse_crashes(raw.get("crash ls-new")),
        mon_time_skew=parse_time_sync(raw.get("time-sync-status")),
        config_db=parse_config_dump(raw.get("config dump")),
        osd_config=_osd_config(raw),
        pg_settle=settle,
        osd_up_since=_osd_stamp(raw, "osd_up_since"),
        osd_in_since=_osd_stamp(raw, "osd_in_since"),
        errors=errors,
        raw=dict(raw),
        mgr=_mgr(raw, errors, release),
        crush=parse_crush(raw.get("osd tree"), raw.get("osd crush rule dump"))
        if raw.get("osd crush rule dump") is not None and raw.get("osd tree") else None,
        mon_data=parse_mon_data(raw.get("mon data")),
        devices=parse_device_ls(raw.get("device ls")),
        slow=_slow(raw, checks),
        scrub=parse_scrub(raw.get(SCRUB_KEY)),
        pg_blocks=parse_pg_blocks(raw.get("pg query"), raw.get("pg dump_stuck")),
        large_omap=parse_large_omap(raw.get(LOG_FLAPS)),
        quota_history=parse_quota_history(raw.get(QUOTA_HISTORY)),
        **_flaps(raw, collected_at))


def _slow(raw: Mapping[str, Any], checks: tuple[HealthCheck, ...]) -> SlowState:
    """Slow ops of the OSDs Ceph names, ``osd perf``, the slow heartbeats, and the PGs
    Ceph calls laggy or wait (``storage.ceph.parse_ops``)."""
    lines = [d for hc in checks if hc.code in PING_CODES for d in hc.detail]
    return parse_slow(raw.get("osd slow ops"), parse_osd_perf(raw.get("osd perf")), lines,
                      laggy=parse_laggy(raw.get(PGS_BRIEF)))


def _flaps(raw: Mapping[str, Any], collected_at: float | None) -> dict[str, Any]:
    """``osd_flaps`` and ``log_window_s``: the osdmap's history (both releases) and the
    cluster log (as far back as it reaches), the larger count per OSD."""
    log = raw.get(LOG_FLAPS)
    boots = raw.get(MAP_FLAPS)
    if log is None and boots is None:
        return {}
    now = collected_at if collected_at is not None else time.time()
    by_osd = {f.osd: f for f in parse_map_flaps(boots, now)}
    for f in parse_flaps(log, now):
        m = by_osd.get(f.osd)
        by_osd[f.osd] = f if m is None or f.flaps >= m.flaps else replace(
            m, failed_reports=f.failed_reports)
    stamps = [t for t in (parse_stamp(as_map(e).get("stamp")) for e in log
                          if isinstance(e, Mapping)) if t is not None] \
        if isinstance(log, list) else []
    return {"osd_flaps": tuple(by_osd[k] for k in sorted(by_osd)),
            "log_window_s": max(0.0, now - min(stamps)) if stamps else None}


# the commands sent to the manager itself (``storage.ceph.collect``)
_MGR_KEYS = ("pg stat", "osd df", "pg dump_stuck", "crash ls-new")


def _mgr(raw: Mapping[str, Any], errors: Mapping[str, str], release: str) -> MgrState | None:
    """``mgr dump`` and whether the manager answered this collection (None: not read)."""
    if raw.get("mgr dump") is None:
        return None
    m = parse_mgr_dump(raw["mgr dump"], raw.get("log last"), release)
    dead = next((errors[k] for k in _MGR_KEYS if "manager did not answer" in errors.get(k, "")),
                None)
    answered = False if dead else (True if any(raw.get(k) is not None for k in _MGR_KEYS)
                                   else None)
    return replace(m, answered=answered, error=dead)


def _osd_stamp(raw: Mapping[str, Any], key: str) -> float | None:
    """``osd_up_since``/``osd_in_since`` of ``osd stat`` or ``status``'s osdmap (the
    monitor's clock, epoch seconds); None when neither says."""
    for src in (raw.get("osd stat"), raw.get("status")):
        m = as_map(src)
        m = as_map(m.get("osdmap", m))
        m = as_map(m.get("osdmap", m))  # pre-Octopus ``status`` nests it twice
        v = m.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 \
                and math.isfinite(v):
            return float(v)
    return None
