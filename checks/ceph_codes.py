"""Ceph's own health codes, explained: what Ceph does not say in ``health detail``.

Each ``health detail`` check becomes one ``CEPH_HEALTH`` finding (entity ``ceph CODE``,
Ceph's code and severity kept). For the codes an on-call engineer meets most, an
explainer adds which OSDs and hosts, since when, what to read next, and a runbook where
a safe one exists (archive a reviewed crash); inconsistent PGs point to PG_INCONSISTENT
(checks/scrub.py) and its ``pg-repair``. A code muted in Ceph (``ceph health mute``) is an info finding that says so, not
dropped. The explainers are pure functions of the snapshot, in one table (``EXPLAIN``).

Ceph's message formats (Pacific): ``SLOW_OPS`` lists its daemons only in the summary
(``12 slow ops, oldest one blocked for 174 sec, daemons [osd.2,osd.3] have slow ops.``);
``RECENT_CRASH`` details are ``osd.1 crashed on host node2 at 2026-...``; ``PG_DAMAGED``
details are ``pg 2.5 is active+clean+inconsistent, acting [0,1,2]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from checks.ceph_explained import (
    CLUSTER,
    Explained,
    _large_omap,
    _old_version,
    _osd_hosts,
    _where,
    daemons_named,
)
from checks.model import CheckContext, Finding, Severity
from checks.osd import fmt_duration
from storage.model import CephState, HealthCheck, HealthMute

MAX_DETAIL = 20
_PG_RE = re.compile(r"\bpg (\d+\.[0-9a-f]+) is ([a-z+_]+)(?:, acting \[([\d,]*)\])?")
_BLOCKED_RE = re.compile(r"oldest one blocked for (\d+) sec")


def _slow_ops(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = daemons_named(hc)
    m = _BLOCKED_RE.search(hc.summary)
    blocked = int(m.group(1)) if m else None
    first = next((d for d in ds if d.startswith("osd.")), None)
    read = (f"read `ceph daemon {first} dump_ops_in_flight` / `dump_historic_slow_ops` on "
            f"its host, and `ceph osd perf` for a slow disk" if first else
            "read `ceph daemon DAEMON dump_ops_in_flight` on the daemon's host")
    ev: dict[str, Any] = {"daemons": ds, "hosts": _osd_hosts(st, ds),
                          "oldest_blocked_s": blocked}
    read_ops = {f"osd.{o.osd}": o for o in st.slow.ops}
    if read_ops:
        # what each OSD said of its ops (storage.model.slowops; OSD_SLOW_OPS judges them)
        said = []
        for d in ds:
            o = read_ops.get(d)
            if o is None:
                continue
            if o.error:
                said.append(f"{d}: not read")
                continue
            waits = sorted(o.waits().items(), key=lambda kv: -kv[1])
            said.append(f"{d}: {o.in_flight_total} in flight"
                        + (f", waiting at {waits[0][0]}" if waits else ""))
        ev["ops_read"] = said
        read = "; ".join(said) + " (OSD_SLOW_OPS says where they wait)"
    return Explained(
        f"slow ops on {_where(st, ds) or 'unnamed daemons'}"
        + (f", oldest blocked {blocked} s" if blocked is not None else "") + f": {read}",
        ev, since=(ctx.now - blocked) if blocked is not None and ctx.now else None)


def _slow_ping(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """OSD_SLOW_PING_TIME_BACK/FRONT: heartbeats between OSD pairs slower than
    ``mon_warn_on_slow_ping_time`` (or a share of ``osd_heartbeat_grace``), Ceph's 1 min
    average; back is the cluster network, front the public one."""
    from storage.ceph.parse_ops import parse_ping_lines

    pings = sorted(parse_ping_lines(hc.detail), key=lambda p: -p.ms)
    net = "cluster (back)" if hc.code.endswith("BACK") else "public (front)"
    pairs = [f"osd.{p.osd}->osd.{p.peer} {p.ms:g} ms" for p in pings]
    hosts = {o.id: o.host for o in st.osds}
    worst = pings[0] if pings else None
    where = (f"; slowest osd.{worst.osd} ({hosts.get(worst.osd) or '?'}) to osd.{worst.peer}"
             f" ({hosts.get(worst.peer) or '?'})" if worst else "")
    return Explained(
        f"slow heartbeats on the {net} network between {len(pings)} OSD pair(s): "
        f"{', '.join(pairs[:4]) or hc.summary}{' ...' if len(pairs) > 4 else ''}{where}; "
        "OSD_SLOW_PING names the OSD or link to look at",
        {"pairs": [{"from": p.osd, "to": p.peer, "ms": p.ms} for p in pings[:20]],
         "network": net})


def _recent_crash(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    crashes = st.crashes or ()
    ds = daemons_named(hc) or [c.entity for c in crashes]
    ids = [c.crash_id for c in crashes]
    stamps = [c.when for c in crashes if c.when]
    newest = crashes[-1] if crashes else None
    what = ""
    if newest is not None:
        sig = newest.assert_msg or newest.assert_condition or next(
            (f.split("+0x")[0].strip("( ") for f in newest.backtrace if "::" in f), None)
        what = (f"; last: {newest.entity} at {newest.timestamp} "
                f"({newest.process or 'daemon'} {newest.ceph_version or ''}"
                .rstrip() + (f", in {str(sig).strip()[:80]}" if sig else "") + ")")
    return Explained(
        f"{len(ids) or len(ds)} new crash report(s) from {_where(st, ds) or 'daemons'}{what}:"
        f" read `ceph crash info {ids[-1] if ids else 'ID'}`, then archive it",
        {"daemons": ds, "crash_ids": ids[:20], "hosts": _osd_hosts(st, ds)},
        runbook="crash-archive" if ids else None, target=ids[-1] if ids else None,
        since=min(stamps) if stamps else None)


_UNFOUND_STATES = frozenset({"recovery_unfound", "backfill_unfound"})
_UNFOUND_N_RE = re.compile(r", (\d+) unfound\b")


def _pg_damaged(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """Inconsistent PGs point to PG_INCONSISTENT and pg-repair; PGs damaged because
    objects are unfound (``pg 3.0 is active+recovery_unfound+..., acting [1], 8 unfound``,
    seen on the Reef and Pacific labs) are OBJECT_UNFOUND's: pg-repair cannot help them,
    and the finding folds into the incident that explains the unfound objects."""
    pgs = []
    unfound = []
    osds: dict[int, None] = {}
    for line in hc.detail:
        m = _PG_RE.search(line)
        if m:
            pg = {"pgid": m.group(1), "state": m.group(2)}
            if _UNFOUND_STATES & set(m.group(2).split("+")):
                n = _UNFOUND_N_RE.search(line)
                unfound.append({**pg, "unfound": int(n.group(1)) if n else None})
                continue
            pgs.append(pg)
            for x in (m.group(3) or "").split(","):
                if x.strip().isdigit():
                    osds[int(x)] = None
    names = [f"osd.{i}" for i in osds]
    lost = ("; ".join(f"pg {u['pgid']} has "
                      + (f"{u['unfound']} unfound objects" if u["unfound"] is not None
                         else "unfound objects") + f" ({u['state']})" for u in unfound)
            + ": not a bad copy (pg-repair cannot help); see OBJECT_UNFOUND for where they "
            "might be and the options") if unfound else ""
    if unfound and not pgs:
        return Explained(f"{hc.summary}: {lost}",
                         {"pgs": [], "unfound_pgs": unfound[:50], "manual": lost,
                          "fold_as": "OBJECT_UNFOUND"})
    first = pgs[0]["pgid"] if pgs else "PGID"
    manual = (f"PG_INCONSISTENT names each PG's bad copy (from `rados list-inconsistent-obj "
              f"{first}`); `stordoc fix pg-repair {first}` repairs it where one copy is bad "
              "and the others agree")
    return Explained(
        f"{len(pgs)} damaged PG(s) on {_where(st, names) or 'unknown OSDs'}: {manual}"
        + (f"; {lost}" if lost else ""),
        {"pgs": pgs[:50], "osds": sorted(osds), "hosts": _osd_hosts(st, names),
         "manual": manual, **({"unfound_pgs": unfound[:50]} if unfound else {})})


def _scrub_errors(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    pgs = [p.pgid for p in st.scrub.pgs] if st.scrub is not None else []
    manual = (f"the inconsistent PG(s) {', '.join(pgs[:8])}: see PG_INCONSISTENT for the bad "
              f"copy, then `stordoc fix pg-repair {pgs[0]}`" if pgs else
              "`ceph health detail` names the inconsistent PGs (PG_DAMAGED); read "
              "`rados list-inconsistent-obj PGID`, then `stordoc fix pg-repair PGID`")
    return Explained(f"{hc.summary}: {manual}", {"manual": manual, "pgs": pgs[:50]})


_OVERDUE_RE = re.compile(r"\bpg (\d+)\.([0-9a-f]+) not (deep-)?scrubbed since (\S+)")


def _overdue_scrubs(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """PG_NOT_SCRUBBED / PG_NOT_DEEP_SCRUBBED: which PGs of which pools, since when, what
    stops the scrubs (the noscrub flags), and the command that scrubs them now."""
    deep = hc.code == "PG_NOT_DEEP_SCRUBBED"
    kind = "deep-scrub" if deep else "scrub"
    names = {str(p.id): p.name for p in st.pools}
    pgs: list[str] = []
    by_pool: dict[str, int] = {}
    oldest: str | None = None
    for line in hc.detail:
        m = _OVERDUE_RE.search(line)
        if m:
            pgs.append(f"{m.group(1)}.{m.group(2)}")
            pool = names.get(m.group(1), f"pool {m.group(1)}")
            by_pool[pool] = by_pool.get(pool, 0) + 1
            oldest = m.group(4) if oldest is None or m.group(4) < oldest else oldest
    flags = [f for f in st.flags if f in ("noscrub", "nodeep-scrub")]
    why = (f"the cluster has {'/'.join(flags)} set: `ceph osd unset {flags[0]}`" if flags
           else "usually too few scrub slots for the PGs (osd_max_scrubs), a narrow "
           "osd_scrub_begin_hour/end_hour window or a busy cluster "
           "(osd_scrub_load_threshold)")
    pools = ", ".join(f"{p} ({n})" for p, n in sorted(by_pool.items()))
    cmd = (f"`ceph pg {kind} {pgs[0]}` for each PG" if pgs else f"`ceph pg {kind} PGID`")
    if len(by_pool) == 1:
        cmd += f", or `ceph osd pool {kind} {next(iter(by_pool))}` for the whole pool"
    return Explained(
        f"{hc.summary}" + (f" in {pools}" if pools else "")
        + (f", oldest since {oldest}" if oldest else "") + f": {why}; to catch up: {cmd}",
        {"pgs": pgs[:50], "pools": by_pool, "oldest": oldest, "flags": flags,
         "manual": cmd})


def _mgr_down(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    stale = sorted(k for k, v in st.errors.items() if "manager" in v)
    return Explained(
        "no active ceph-mgr: PG states, `osd df` and pool usage are stale or missing"
        + (f" ({', '.join(stale)} not collected)" if stale else "")
        + "; start a ceph-mgr (its log says why it stopped)",
        {"stale": stale, "manual": "start ceph-mgr on a manager host"})


def _full(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = daemons_named(hc)
    pools = sorted({p for line in hc.detail for p in re.findall(r"pool '([^']+)'", line)})
    usage = {f"osd.{u.id}": round(u.utilization, 1) for u in st.osd_usage}
    ratios = (f"nearfull {st.nearfull_ratio:.2f}, backfillfull {st.backfillfull_ratio:.2f},"
              f" full {st.full_ratio:.2f}")
    what = _where(st, ds) if ds else ("pool(s) " + ", ".join(pools) if pools else "")
    use = ", ".join(f"{d} {usage[d]}%" for d in ds if d in usage)
    if _quota(hc) and pools:
        # a pool at its quota (``pool 'x' has 9 objects (max 10)``, ``pool 'x' is full
        # (running out of quota)``): the quota is the limit, not the OSDs' space
        quotas = {p.name: (p.quota_max_bytes, p.quota_max_objects) for p in st.pools}
        fix = "; ".join(f"`ceph osd pool set-quota {p} max_bytes N` / `max_objects N`"
                        for p in pools)
        return Explained(
            f"{hc.summary} ({what}, at or near its quota): raise the quota ({fix}) or "
            "delete data from the pool; the OSDs have space",
            {"pools": pools, "quota": True,
             "quotas": {p: {"max_bytes": quotas[p][0], "max_objects": quotas[p][1]}
                        for p in pools if p in quotas},
             # the pool's own incident (POOL_NEAR_FULL), not the cluster filling
             "fold_as": "POOL_QUOTA_NEAR_FULL"})
    return Explained(
        f"{hc.summary} ({what}{'; ' + use if use else ''}; ratios {ratios}): add capacity "
        "or delete data; raising the ratios only buys time",
        {"osds": ds, "pools": pools, "hosts": _osd_hosts(st, ds),
         "utilization": {d: usage[d] for d in ds if d in usage}})


def _quota(hc: HealthCheck) -> bool:
    """Ceph's pool-quota codes: POOL_NEAR_FULL is only ever a quota (``src/mon/PGMap.cc``);
    POOL_FULL is one when its detail says ``(max N)`` or ``running out of quota``."""
    return hc.code == "POOL_NEAR_FULL" or any(
        "(max " in line or "running out of quota" in line for line in hc.detail)


_MODULE_RE = re.compile(r"Module '([^']+)' has failed dependency: (.*)")
# mgr modules whose loss changes what the cluster does by itself, not just a dashboard
_MODULES_THAT_ACT = ("pg_autoscaler", "progress", "balancer", "devicehealth", "crash",
                     "rbd_support", "volumes", "status", "orchestrator")


def _mgr_module_dependency(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    failed = {m.group(1): m.group(2) for line in hc.detail
              if (m := _MODULE_RE.search(line))}
    acting = [m for m in _MODULES_THAT_ACT if m in failed]
    pyo3 = sorted(m for m, why in failed.items() if "PyO3" in why)
    msg = f"{hc.summary}: {', '.join(sorted(failed)) or 'see health detail'}"
    if acting:
        msg += (f"; not running: {', '.join(acting)}"
                + (" (no pg autoscaling, no balancing, no crash reports)"
                   if {"pg_autoscaler", "balancer", "crash"} & set(acting) else ""))
    first = sorted(failed)[0] if failed else None
    if first and first not in _MODULES_THAT_ACT:
        msg += (f"; if {first} is not needed here: `ceph mgr module disable {first}`")
    if pyo3:
        msg += ("; the cause is a Python package built with PyO3 (bcrypt or cryptography) "
                "that refuses ceph-mgr's subinterpreters, a known packaging problem of "
                "Ceph on newer distributions (Ceph tracker 64213): install the Ceph "
                "release's own packages of those modules or a fixed Ceph, then restart the "
                "manager")
    else:
        msg += "; install the missing Python packages on the manager hosts and restart it"
    return Explained(msg, {"modules": failed, "acting": acting, "pyo3": pyo3,
                           "manual": "`ceph mgr module ls` shows which modules run; "
                                     "install the missing Python packages on the manager "
                                     "hosts and restart it, or disable a module not needed"})


def _spillover(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = daemons_named(hc)
    first = ds[0] if ds else "osd.N"
    return Explained(
        f"BlueFS metadata spilled from the fast DB device to the slow device on "
        f"{_where(st, ds) or 'some OSDs'}: slower metadata I/O; read `ceph tell {first} "
        f"bluefs stats`, compact it (`ceph tell {first} compact`) or give it a larger DB",
        {"osds": ds, "hosts": _osd_hosts(st, ds),
         "manual": f"`ceph tell {first} bluefs stats` shows what spilled; compact it "
                   f"(`ceph tell {first} compact`) or give it a larger DB"})


def _osd_codes(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = daemons_named(hc)
    return Explained(f"Ceph {hc.code}: {hc.summary}" + (f" ({_where(st, ds)})" if ds else ""),
                     {"daemons": ds, "hosts": _osd_hosts(st, ds)})


# Ceph's failing-disk family: what each means and what to do (checks/disks.py judges the
# disk itself from the host; the incident rule of scope ``disk`` folds these into it)
_DISK_ADVICE: Mapping[str, tuple[str, str]] = {  # code -> (what it means, what to do)
    "DEVICE_HEALTH": (
        "Ceph's devicehealth expects the disk under {osds} to fail soon",
        "mark {out} while the disk still reads, let the data move, then replace the disk "
        "(osd-replace-disk)"),
    "DEVICE_HEALTH_IN_USE": (
        "disks expected to fail are marked out but still hold data under {osds}",
        "wait until their PGs moved (`ceph osd safe-to-destroy {first}` says when), then "
        "replace the disk (osd-replace-disk)"),
    "DEVICE_HEALTH_TOOMANY": (
        "more disks expected to fail than Ceph may mark out (mon_osd_min_in_ratio) under "
        "{osds}", "`ceph device ls` lists them with their life expectancy; add capacity or "
        "replace disks now (osd-replace-disk)"),
    "OSD_TOO_MANY_REPAIRS": (
        "the disk under {osds} returned bad data that Ceph repaired from other copies",
        "`ceph device ls-by-daemon {first}` names it; read its SMART and the kernel log on {hosts}; replace the disk if it keeps "
        "happening (osd-replace-disk); the count is kept until the OSD restarts"),
    "BLUESTORE_SPURIOUS_READ_ERRORS": (
        "BlueStore on {osds} had to retry reads that failed once (an early sign of a "
        "failing disk)", "`ceph device ls-by-daemon {first}` names the disk; read its SMART "
        "and the kernel log on {hosts}"),
    "BLUESTORE_SLOW_OP_ALERT": (
        "BlueStore on {osds} saw slow disk operations",
        "read `ceph daemon {first} dump_historic_slow_ops` and the disk's latency "
        "(iostat, SMART) on {hosts}"),
}


def _disk_family(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = [d for d in daemons_named(hc) if d.startswith("osd.")]
    hosts = _osd_hosts(st, ds)
    where = sorted({h for h in hosts.values() if h})
    words = {"osds": _where(st, ds) or "some OSDs", "first": ds[0] if ds else "osd.N",
             "out": (f"`ceph osd out {' '.join(d[4:] for d in ds)}`" if ds else "them out"),
             "hosts": ", ".join(where) or "their hosts"}
    meaning, todo = (x.format(**words) for x in _DISK_ADVICE[hc.code])
    return Explained(f"{hc.summary}: {meaning}",
                     {"daemons": ds, "osds": [int(d[4:]) for d in ds], "hosts": hosts,
                      "manual": todo})
def _mgrmon(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """The manager's and monitors' own codes: ``checks.mgrmon_codes`` (imported here, it
    imports ``Explained`` from this module)."""
    from checks import mgrmon_codes

    return mgrmon_codes.explain(hc, st, ctx)


def _rest(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """The rest of Ceph's list: ``checks.ceph_codes_rest`` (imported here: it imports
    ``Explained``)."""
    from checks import ceph_codes_rest

    return ceph_codes_rest.explain(hc, st, ctx)


# the codes ``checks.ceph_codes_rest`` explains
REST_CODES = (
    "MON_MSGR2_NOT_ENABLED", "AUTH_INSECURE_GLOBAL_ID_RECLAIM",
    "AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED", "AUTH_BAD_CAPS", "MON_NETSPLIT",
    "OSD_ROOT_DOWN", "OSD_ORPHAN", "OLD_CRUSH_TUNABLES", "OLD_CRUSH_STRAW_CALC_VERSION",
    "OSD_NO_SORTBITWISE", "OSD_FILESTORE", "OSD_UNREACHABLE", "BLUEFS_AVAILABLE_SPACE",
    "BLUEFS_LOW_SPACE", "BLUESTORE_FRAGMENTATION", "BLUESTORE_LEGACY_STATFS",
    "BLUESTORE_NO_PER_POOL_OMAP", "BLUESTORE_NO_PER_PG_OMAP", "BLUESTORE_DISK_SIZE_MISMATCH",
    "BLUESTORE_NO_COMPRESSION", "BLOCK_DEVICE_STALLED_READ_ALERT",
    "WAL_DEVICE_STALLED_READ_ALERT", "DB_DEVICE_STALLED_READ_ALERT", "TOO_FEW_OSDS",
    "OSD_NO_DOWN_OUT_INTERVAL", "POOL_APP_NOT_ENABLED", "MANY_OBJECTS_PER_PG",
    "POOL_TARGET_SIZE_BYTES_OVERCOMMITTED", "POOL_HAS_TARGET_SIZE_BYTES_AND_RATIO",
    "OBJECT_MISPLACED", "PG_SLOW_SNAP_TRIMMING", "LARGE_OMAP_OBJECTS", "TELEMETRY_CHANGED",
    "DASHBOARD_DEBUG", "DAEMON_OLD_VERSION",
)


def _unfound(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """OBJECT_UNFOUND: ``checks.pgblocks`` (imported here: it imports ``Explained``)."""
    from checks import pgblocks

    return pgblocks.explain_unfound(hc, st)


Explainer = Callable[[HealthCheck, CephState, CheckContext], Explained]
EXPLAIN: Mapping[str, Explainer] = {
    "MGR_MODULE_ERROR": _mgrmon, "RECENT_MGR_MODULE_CRASH": _mgrmon,
    "MON_DISK_LOW": _mgrmon, "MON_DISK_CRIT": _mgrmon, "MON_DISK_BIG": _mgrmon,
    "SLOW_OPS": _slow_ops,
    "OSD_SLOW_PING_TIME_BACK": _slow_ping, "OSD_SLOW_PING_TIME_FRONT": _slow_ping,
    "RECENT_CRASH": _recent_crash,
    "PG_DAMAGED": _pg_damaged,
    "OSD_SCRUB_ERRORS": _scrub_errors,
    "PG_NOT_SCRUBBED": _overdue_scrubs, "PG_NOT_DEEP_SCRUBBED": _overdue_scrubs,
    "LARGE_OMAP_OBJECTS": _large_omap,
    "MGR_DOWN": _mgr_down,
    "OSD_NEARFULL": _full, "OSD_BACKFILLFULL": _full, "OSD_FULL": _full,
    "POOL_NEARFULL": _full, "POOL_FULL": _full, "POOL_BACKFILLFULL": _full,
    "POOL_NEAR_FULL": _full,
    "DAEMON_OLD_VERSION": _old_version,
    "MGR_MODULE_DEPENDENCY": _mgr_module_dependency,
    "BLUEFS_SPILLOVER": _spillover,
    "OSD_DOWN": _osd_codes, "OSD_HOST_DOWN": _osd_codes, "OSD_FLAPPING": _osd_codes,
    "BLUESTORE_DISK_SIZE_MISMATCH": _osd_codes,  # CephOSDInternalDiskSizeMismatch: which OSDs
    "OBJECT_UNFOUND": _unfound,
    **{code: _disk_family for code in _DISK_ADVICE},
    **{code: _rest for code in REST_CODES},  # after the entries above: it wins for these
}


def mute_terms(m: HealthMute | None, now: float) -> str:
    """What on-call must know of a mute in Ceph: how long, and whether Ceph lifts it by
    itself when the check gets worse (not ``--sticky``: one more nearfull OSD ends it)."""
    if m is None:
        return ""
    out = []
    if m.until is not None:
        out.append(f"for {fmt_duration(m.until - now)} more" if m.until > now
                   else "expired")
    out.append("sticky" if m.sticky else "lifted by Ceph if it gets worse")
    return ", " + ", ".join(out)


def ceph_health_finding(hc: HealthCheck, st: CephState, ctx: CheckContext,
                        cluster: str = "") -> Finding:
    """One of Ceph's own checks as a finding, explained when an explainer exists."""
    sev = Severity.CRIT if hc.severity == "HEALTH_ERR" else Severity.WARN
    ev: dict[str, Any] = {"ceph_code": hc.code, "ceph_severity": hc.severity,
                          "summary": hc.summary, "detail": list(hc.detail[:MAX_DETAIL]),
                          "detail_count": len(hc.detail)}
    msg = f"Ceph {hc.code}: {hc.summary}"
    runbook = target = None
    since = None
    fn = EXPLAIN.get(hc.code)
    if fn is not None:
        ex = fn(hc, st, ctx)
        msg = ex.message if ex.message.startswith("Ceph ") else f"Ceph {hc.code}: {ex.message}"
        ev.update(ex.evidence)
        runbook, target, since = ex.runbook, ex.target, ex.since
        if target == CLUSTER:
            target = cluster or None
    if hc.muted:
        ev["muted_in_ceph"] = True
        terms = mute_terms(hc.mute, ctx.now)
        if hc.mute is not None:
            ev.update(mute_sticky=hc.mute.sticky, mute_until=hc.mute.until,
                      mute_count=hc.mute.count)
        return Finding("CEPH_HEALTH", Severity.INFO, f"ceph {hc.code}",
                       f"muted in Ceph (ceph health mute{terms}): {msg}", ev, since=since)
    return Finding("CEPH_HEALTH", sev, f"ceph {hc.code}", msg, ev, runbook=runbook,
                   target=target, since=since)
