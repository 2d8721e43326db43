"""Ceph's health codes, each replayed: one case per code of Ceph's list (Reef) and of the
codes added since, with the health-detail entry Ceph emits for it (summary and detail in
the shapes of ``src/mon/*.cc``, ``src/mgr/*``, ``src/os/bluestore``), injected into a
saved lab snapshot (``tests/fixtures/snapshots/reef/``) or, where a lab scenario made the
code for real, that snapshot as saved. ``measure`` replays the real check on it and
reads what stordoc printed: how many incidents carry the code, the incident's root, the
words that name the entity, the next step. ``tests/unit/test_ceph_code_coverage.py``
asserts on it, ``benchmarks/code_coverage.py`` counts it: nothing here says what stordoc
does, only what Ceph said and what must be true of stordoc's answer.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checks.incidents import Incident
from tests.support.fixture_snapshots import FIXTURES

REL = "reef"
# Ceph's list of health checks as its documentation of Reef has it (section by section,
# in its order); ``OSD_<crush type>_DOWN`` is listed as its two examples
REEF_SOURCE = "https://docs.ceph.com/en/reef/rados/operations/health-checks/"
REEF_CODES: tuple[str, ...] = (
    # Monitor
    "DAEMON_OLD_VERSION", "MON_DOWN", "MON_CLOCK_SKEW", "MON_MSGR2_NOT_ENABLED",
    "MON_DISK_LOW", "MON_DISK_CRIT", "MON_DISK_BIG", "AUTH_INSECURE_GLOBAL_ID_RECLAIM",
    "AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED",
    # Manager
    "MGR_DOWN", "MGR_MODULE_DEPENDENCY", "MGR_MODULE_ERROR",
    # OSDs
    "OSD_DOWN", "OSD_HOST_DOWN", "OSD_ROOT_DOWN", "OSD_ORPHAN", "OSD_OUT_OF_ORDER_FULL",
    "OSD_FULL", "OSD_BACKFILLFULL", "OSD_NEARFULL", "OSDMAP_FLAGS", "OSD_FLAGS",
    "OLD_CRUSH_TUNABLES", "OLD_CRUSH_STRAW_CALC_VERSION", "CACHE_POOL_NO_HIT_SET",
    "OSD_NO_SORTBITWISE", "OSD_FILESTORE", "POOL_FULL", "BLUEFS_SPILLOVER",
    "BLUEFS_AVAILABLE_SPACE", "BLUEFS_LOW_SPACE", "BLUESTORE_FRAGMENTATION",
    "BLUESTORE_LEGACY_STATFS", "BLUESTORE_NO_PER_POOL_OMAP", "BLUESTORE_NO_PER_PG_OMAP",
    "BLUESTORE_DISK_SIZE_MISMATCH", "BLUESTORE_NO_COMPRESSION",
    "BLUESTORE_SPURIOUS_READ_ERRORS",
    # Device health
    "DEVICE_HEALTH", "DEVICE_HEALTH_IN_USE", "DEVICE_HEALTH_TOOMANY",
    # Data health (pools & placement groups)
    "PG_AVAILABILITY", "PG_DEGRADED", "PG_RECOVERY_FULL", "PG_BACKFILL_FULL", "PG_DAMAGED",
    "OSD_SCRUB_ERRORS", "OSD_TOO_MANY_REPAIRS", "LARGE_OMAP_OBJECTS", "CACHE_POOL_NEAR_FULL",
    "TOO_FEW_PGS", "POOL_PG_NUM_NOT_POWER_OF_TWO", "POOL_TOO_FEW_PGS", "TOO_MANY_PGS",
    "POOL_TOO_MANY_PGS", "POOL_TARGET_SIZE_BYTES_OVERCOMMITTED",
    "POOL_HAS_TARGET_SIZE_BYTES_AND_RATIO", "TOO_FEW_OSDS", "SMALLER_PGP_NUM",
    "MANY_OBJECTS_PER_PG", "POOL_APP_NOT_ENABLED", "POOL_NEAR_FULL", "OBJECT_MISPLACED",
    "OBJECT_UNFOUND", "SLOW_OPS", "PG_NOT_SCRUBBED", "PG_NOT_DEEP_SCRUBBED",
    "PG_SLOW_SNAP_TRIMMING",
    # Miscellaneous
    "RECENT_CRASH", "RECENT_MGR_MODULE_CRASH", "TELEMETRY_CHANGED", "AUTH_BAD_CAPS",
    "OSD_NO_DOWN_OUT_INTERVAL", "DASHBOARD_DEBUG",
)
# added since Reef (Squid and later: the same page of ``/en/latest/``)
POST_REEF_CODES: tuple[str, ...] = (
    "MON_NETSPLIT", "OSD_UNREACHABLE", "BLOCK_DEVICE_STALLED_READ_ALERT",
    "WAL_DEVICE_STALLED_READ_ALERT", "DB_DEVICE_STALLED_READ_ALERT",
)
ALL_CODES = REEF_CODES + POST_REEF_CODES
# the CLIs whose commands a next step may print, and what makes a command inexact
_TOOLS = ("ceph", "rados", "radosgw-admin", "rbd", "stordoc", "ceph-bluestore-tool")
_CMD_RE = re.compile(r"`([^`]+)`")
_PLACEHOLDER_RE = re.compile(r"^[A-Z]+$|<|>|\.\.\.")

Edit = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    """Ceph's ``code`` as Ceph emits it; ``base``: the saved lab snapshot it goes into
    (``inject=False``: that lab scenario made the code for real, as saved); ``roots``: the
    causes its incident may have (``CEPH_HEALTH``: Ceph's code is the cause, nothing of
    stordoc's says more); ``names``: the words that name its entity (an OSD, a pool, a
    monitor, an object, a PG, an option), to be found in stordoc's words, not Ceph's."""

    code: str
    severity: str = "HEALTH_WARN"
    summary: str = ""
    detail: tuple[str, ...] = ()
    base: str = "healthy"
    edits: tuple[Edit, ...] = ()
    roots: tuple[str, ...] = ("CEPH_HEALTH",)
    names: tuple[str, ...] = ()
    inject: bool = True


@dataclass(frozen=True)
class Result:
    """What one replay printed for the code."""

    code: str
    carriers: int  # incidents that carry it (1: shown once)
    root: str | None  # its incident's root code
    root_ok: bool  # the root is one of the case's causes
    bare: bool  # the finding says Ceph's text and nothing else
    named: bool  # stordoc's words name the entity
    next_step: str | None  # the runbook command or an exact command printed
    message: str = ""
    manual: str = ""
    missing: tuple[str, ...] = field(default_factory=tuple)


def edit_json(d: Path, name: str, fn: Callable[[Any], Any]) -> None:
    p = d / "ceph" / name
    p.write_text(json.dumps(fn(json.loads(p.read_text()))))


def pool_edit(pool: str = "rbd", **kw: Any) -> Edit:
    def edit(d: Path) -> None:
        def pools(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
            for p in ps:
                if p["pool_name"] == pool:
                    p.update(kw)
            return ps
        edit_json(d, "osd_pool_ls_detail.json", pools)
    return edit


def flags_edit(*flags: str) -> Edit:
    def edit(d: Path) -> None:
        edit_json(d, "osd_dump.json", lambda o: {
            **o, "flags": ",".join([*o["flags"].split(","), *flags]),
            "flags_set": sorted([*o.get("flags_set", ()), *flags])})
    return edit


def osd_full_edit(osd: int, pct: float) -> Edit:
    """``osd df``: ``osd`` is ``pct`` % used."""
    def edit(d: Path) -> None:
        def df(o: dict[str, Any]) -> dict[str, Any]:
            for n in o["nodes"]:
                if n["id"] == osd:
                    n["utilization"] = pct
                    n["kb_used"] = int(n["kb"] * pct / 100)
                    n["kb_avail"] = n["kb"] - n["kb_used"]
            return o
        edit_json(d, "osd_df.json", df)
    return edit


def log_edit(*messages: str, who: str = "osd.1") -> Edit:
    """Cluster log lines (``ceph log last N info cluster``) a daemon wrote."""
    def edit(d: Path) -> None:
        p = d / "ceph" / "log_last_flaps.json"
        log = json.loads(p.read_text()) if p.exists() else []
        for n, m in enumerate(messages):
            log.append({"channel": "cluster", "message": m, "name": who, "priority": "[WRN]",
                        "rank": who, "seq": 900 + n,
                        "stamp": "2026-11-27T05:20:00.000000+0000"})
        p.write_text(json.dumps(log))

        def manifest(m: dict[str, Any]) -> dict[str, Any]:
            m["ceph"]["answers"]["ceph/log_last_flaps.json"] = "log last flaps"
            return m
        s = d / "snapshot.json"
        s.write_text(json.dumps(manifest(json.loads(s.read_text()))))
    return edit


def osd_alert(code: str, what: str, detail: str, osd: int = 1) -> Case:
    """BlueStore's alerts, raised by each OSD and summed by the manager (``PGMap``:
    ``N OSD(s) WHAT``, one detail line per OSD)."""
    return Case(code, summary=f"1 OSD(s) {what}", detail=(f"osd.{osd} {detail}",),
                names=(f"osd.{osd}",))


def _folding_cases() -> list[Case]:
    """The ten codes stordoc says itself (tests/unit/test_ceph_code_folding.py)."""
    from tests.unit.test_ceph_code_folding import TEN

    return [Case(code, sev, summary, tuple(detail), edits=tuple(edits), roots=(root,),
                 names=(entity.split()[-1],) if entity else ())
            for code, sev, summary, detail, edits, root, entity in TEN]


def _rbd_quota(pct: float) -> Edit:
    from tests.unit.test_ceph_code_folding import _rbd_quota as q

    return q(pct)


OSD_ROOTS = ("OSD_DAEMON_STOPPED", "OSD_DAEMON_CRASHED", "OSD_DAEMON_HUNG",
             "OSD_DAEMON_RESTART_LOOP", "OSD_DOWN_IN", "OSD_DOWN_OUT")
# on the cluster-nearfull base the ratios were lowered under the fill: that setting is the
# root (issue 38.2) unless an OSD is really over Ceph's default line
FULL_ROOTS = ("CLUSTER_DAYS_TO_FULL", "OSD_IS_FULL", "OSD_NEAR_FULL", "FULL_RATIO_LOWERED")
MDS_NOTE = ""


def cases() -> list[Case]:
    """One case per code of ``ALL_CODES``."""
    out = _folding_cases() + [
        Case("DAEMON_OLD_VERSION", summary="There are daemons running an older version of "
             "ceph", detail=("osd.1 osd.2 are running an older version of ceph: 17.2.7",),
             names=("osd.1",)),
        Case("MON_MSGR2_NOT_ENABLED", summary="1 monitors have not enabled msgr2",
             detail=("mon.a is not bound to a msgr2 port, only v1:127.0.0.1:6789/0",),
             names=("mon.a",)),
        Case("MON_DISK_LOW", base="mon-disk-low", inject=False, names=("mon.a",),
             roots=("CONFIG_OPTION_CAUSE",)),  # the lab raised the warning line (38.2)
        Case("MON_DISK_CRIT", "HEALTH_ERR", "mon a is very low on available space",
             ("mon.a has 4% avail",), names=("mon.a",)),
        Case("MON_DISK_BIG", summary="mon a is using a lot of disk space",
             detail=("mon.a is 16 GiB >= mon_data_size_warn (15 GiB)",), names=("mon.a",)),
        Case("AUTH_INSECURE_GLOBAL_ID_RECLAIM",
             summary="1 client(s) are using insecure global_id reclaim",
             detail=("client.lab at v1:127.0.0.1:0/3411424337 is using insecure global_id "
                     "reclaim",), names=("client.lab",)),
        Case("AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED",
             summary="mons are allowing insecure global_id reclaim",
             detail=("mon.a has auth_allow_insecure_global_id_reclaim set to true",),
             names=("auth_allow_insecure_global_id_reclaim",)),
        Case("MGR_DOWN", base="mgr-stopped", inject=False,
             roots=("DAEMON_STOPPED", "DAEMON_CRASHED", "MGR_NO_ACTIVE"), names=("mgr.",)),
        Case("MGR_MODULE_DEPENDENCY",
             summary="Module 'diskprediction_local' has failed dependency: No module "
             "named 'sklearn'", detail=("Module 'diskprediction_local' has failed "
                                        "dependency: No module named 'sklearn'",),
             names=("diskprediction_local",)),
        Case("MGR_MODULE_ERROR", "HEALTH_ERR", "Module 'balancer' has failed: ",
             ("Module 'balancer' has failed: division by zero",), names=("balancer",)),
        Case("OSD_DOWN", base="osd-killed", inject=False, roots=OSD_ROOTS, names=("osd.",)),
        Case("OSD_HOST_DOWN", base="osd-killed", inject=False, roots=OSD_ROOTS,
             names=("osd.",)),
        Case("OSD_ROOT_DOWN", summary="1 root (4 osds) down",
             detail=("root default (4 osds) is down",), names=("default",)),
        Case("OSD_ORPHAN", summary="1 osds exist in the crush map but not in the osdmap",
             detail=("osd.7 exists in crush map but not in osdmap",), names=("osd.7",)),
        Case("OSD_FULL", "HEALTH_ERR", "1 full osd(s)", ("osd.1 is full",),
             base="cluster-nearfull", edits=(osd_full_edit(1, 96.0),), roots=FULL_ROOTS,
             names=("osd.1",)),
        Case("OSD_BACKFILLFULL", summary="1 backfillfull osd(s)",
             detail=("osd.1 is backfill full",), base="cluster-nearfull", roots=FULL_ROOTS,
             names=("osd.1",)),
        Case("OSD_NEARFULL", base="cluster-nearfull", inject=False, roots=FULL_ROOTS,
             names=("osd.",)),
        Case("OSDMAP_FLAGS", summary="noout flag(s) set", edits=(flags_edit("noout"),),
             roots=("OSDMAP_FLAGS",), names=("noout",)),
        Case("OSD_FLAGS", base="maintenance-left", inject=False,
             roots=("OSDMAP_FLAGS",), names=("noout",)),
        Case("OLD_CRUSH_TUNABLES", summary="crush map has legacy tunables (require firefly, "
             "min is hammer)", names=("firefly",)),
        Case("OLD_CRUSH_STRAW_CALC_VERSION", summary="crush map has straw_calc_version=0",
             names=("straw_calc_version",)),
        Case("CACHE_POOL_NO_HIT_SET", base="cache-tier-misconfigured", inject=False,
             roots=("CACHE_NO_TARGET", "CACHE_NO_HIT_SET"), names=("lab-cache",)),
        Case("OSD_NO_SORTBITWISE", summary="'sortbitwise' flag is not set",
             names=("sortbitwise",)),
        Case("OSD_FILESTORE", summary="1 osd(s) are running Filestore",
             detail=("osd.1 is running Filestore",), names=("osd.1",)),
        Case("POOL_FULL", "HEALTH_ERR", "1 pools full",
             ("pool 'rbd' has 1.05 GiB (max 1.1 GiB)",), edits=(_rbd_quota(0.96),),
             roots=("POOL_QUOTA_CAUSE",), names=("rbd",)),  # the quota is the cause
        osd_alert("BLUEFS_SPILLOVER", "experiencing BlueFS spillover",
                  "spilled over 1.2 GiB metadata from 'db' device (3.1 GiB used of 30 GiB) "
                  "to slow device"),
        osd_alert("BLUEFS_AVAILABLE_SPACE", "experiencing BlueFS available space warning",
                  "BlueFS available space is 512 MiB; available_from_bluestore 0 B"),
        osd_alert("BLUEFS_LOW_SPACE", "experiencing low BlueFS space",
                  "BlueFS is low on free space: 96 MiB free, 0 B available from "
                  "bluestore"),
        osd_alert("BLUESTORE_FRAGMENTATION", "experiencing BlueStore fragmentation",
                  "BlueStore allocator fragmentation score 0.93 is above 0.8"),
        osd_alert("BLUESTORE_LEGACY_STATFS", "reporting legacy (not per-pool) BlueStore "
                  "stats", "legacy (not per-pool) statfs reporting detected, suggest to run "
                  "store repair to get consistent statistic reports"),
        osd_alert("BLUESTORE_NO_PER_POOL_OMAP", "reporting legacy (not per-pool) BlueStore "
                  "omap usage stats", "legacy (not per-pool) omap detected, suggest to run "
                  "store repair to benefit from per-pool omap usage statistics"),
        osd_alert("BLUESTORE_NO_PER_PG_OMAP", "reporting legacy (not per-pg) BlueStore omap",
                  "legacy (not per-pg) omap detected, suggest to run store repair to benefit "
                  "from faster PG removal"),
        osd_alert("BLUESTORE_DISK_SIZE_MISMATCH", "have dangerous mismatch between "
                  "BlueStore block device and free list sizes",
                  "bluestore free list size 0x3ffc00000 does not match device size "
                  "0x400000000"),
        osd_alert("BLUESTORE_NO_COMPRESSION", "have broken BlueStore compression",
                  "unable to load:snappy"),
        osd_alert("BLUESTORE_SPURIOUS_READ_ERRORS", "have spurious read errors",
                  "reads with retries: 3"),
        Case("DEVICE_HEALTH", summary="1 device(s) expected to fail soon",
             detail=("QEMU_HARDDISK_QM00002 (node2:sdb osd.1) is expected to fail soon",),
             names=("osd.1",)),
        Case("DEVICE_HEALTH_IN_USE", summary="1 daemon(s) expected to fail soon and still "
             "contain data", detail=("osd.1 is marked out but still has 12 PG(s)",),
             names=("osd.1",)),
        Case("DEVICE_HEALTH_TOOMANY", "HEALTH_WARN", "Too many daemons are expected to fail "
             "soon", ("osd.1 osd.2 are expected to fail soon",), names=("osd.1",)),
        Case("PG_AVAILABILITY", base="pg-stuck", inject=False, roots=OSD_ROOTS,
             names=("osd.",)),
        Case("PG_DEGRADED", base="osd-killed", inject=False, roots=OSD_ROOTS,
             names=("osd.",)),
        Case("PG_RECOVERY_FULL", "HEALTH_ERR", "Full OSDs blocking recovery: 1 pg "
             "recovery_toofull", ("pg 2.7 is active+recovery_toofull+degraded, acting [1,2]",),
             base="cluster-nearfull", roots=FULL_ROOTS, names=("osd.",)),
        Case("PG_BACKFILL_FULL", summary="Low space hindering backfill (add storage if this "
             "doesn't resolve itself): 1 pg backfill_toofull",
             detail=("pg 2.5 is active+remapped+backfill_toofull, acting [0,1,2]",),
             base="cluster-nearfull", roots=FULL_ROOTS, names=("osd.",)),
        Case("PG_DAMAGED", base="pg-inconsistent", inject=False, roots=("PG_INCONSISTENT",),
             names=("pg ",)),
        Case("OSD_SCRUB_ERRORS", base="pg-inconsistent", inject=False,
             roots=("PG_INCONSISTENT",), names=("pg ",)),
        Case("OSD_TOO_MANY_REPAIRS", base="osd-read-errors", inject=False,
             roots=("OSD_DEVICE_IO_ERRORS", "DEVICE_IO_ERRORS", "CEPH_HEALTH", "OSD_READ_ERRORS"),
             names=("osd.",)),
        Case("LARGE_OMAP_OBJECTS", summary="1 large omap objects",
             detail=("1 large objects found in pool 'rbd'",
                     "Search the cluster log for 'Large omap object found' for more "
                     "details."),
             edits=(log_edit("Large omap object found. Object: 2:5a3f0d67:::big-omap:head "
                             "PG: 2.e6b0fc5a (2.1a) Key count: 200001 Size (bytes): "
                             "3600018"),),
             names=("rbd", "big-omap")),
        Case("CACHE_POOL_NEAR_FULL", summary="1 cache pools at or near target size",
             detail=("cache pool 'lab-cache' with 9 objects at/near target max 10 objects",),
             base="cache-tier-misconfigured",
             roots=("CACHE_NO_TARGET", "CACHE_NEAR_TARGET", "CEPH_HEALTH"),
             names=("lab-cache",)),
        Case("POOL_TARGET_SIZE_BYTES_OVERCOMMITTED",
             summary="1 subtrees have overcommitted pool target_size_bytes",
             detail=("Pools ['rbd'] overcommit available storage by 5.120x due to "
                     "target_size_bytes  100T on pools ['rbd']",),
             edits=(pool_edit(target_size_bytes=100 << 40),), names=("rbd",)),
        Case("POOL_HAS_TARGET_SIZE_BYTES_AND_RATIO",
             summary="1 pools have both target_size_bytes and target_size_ratio set",
             detail=("Pool rbd has target_size_bytes and target_size_ratio set",),
             edits=(pool_edit(target_size_bytes=1 << 30, target_size_ratio=0.5),),
             names=("rbd",)),
        Case("TOO_FEW_OSDS", summary="OSD count 2 < osd_pool_default_size 3",
             names=("osd_pool_default_size",)),
        Case("MANY_OBJECTS_PER_PG", summary="1 pools have many more objects per pg than "
             "average", detail=("pool rbd objects per pg (1000) is more than 12.5 times "
                                "cluster average (80)",), names=("rbd",)),
        Case("POOL_APP_NOT_ENABLED", summary="1 pool(s) do not have an application enabled",
             detail=("application not enabled on pool 'rbd'",
                     "use 'ceph osd pool application enable <pool-name> <app-name>', where "
                     "<app-name> is 'cephfs', 'rbd', 'rgw', or freeform for custom "
                     "applications."),
             edits=(pool_edit(application_metadata={}),), names=("rbd",)),
        Case("OBJECT_MISPLACED", summary="12/300 objects misplaced (4.000%)",
             names=("misplaced",)),
        Case("OBJECT_UNFOUND", base="pg-unfound", inject=False,
             roots=(*OSD_ROOTS, "PG_UNFOUND", "OBJECT_UNFOUND"), names=("pg ",)),
        Case("SLOW_OPS", base="osd-slow-ops", inject=False,
             roots=("OSD_SLOW_OPS", "OSD_SLOW_PING"), names=("osd.",)),
        Case("PG_NOT_SCRUBBED", summary="1 pgs not scrubbed in time",
             detail=("pg 2.1f not scrubbed since 2026-11-01T00:00:00.000000+0000",),
             names=("2.1f",)),
        Case("PG_NOT_DEEP_SCRUBBED", summary="1 pgs not deep-scrubbed in time",
             detail=("pg 2.1f not deep-scrubbed since 2026-11-01T00:00:00.000000+0000",),
             names=("2.1f",)),
        Case("PG_SLOW_SNAP_TRIMMING", summary="snap trim queue for 1 pg(s) >= 32768 "
             "(mon_osd_snap_trim_queue_warn_on)",
             detail=("snap trim queue for pg 2.1f at 40000",), names=("2.1f",)),
        Case("RECENT_CRASH", base="osd-crash", inject=False, roots=OSD_ROOTS,
             names=("osd.",)),
        Case("RECENT_MGR_MODULE_CRASH", summary="1 mgr modules have recently crashed",
             detail=("mgr module balancer crashed in daemon mgr.x on host lab at "
                     "2026-11-27T05:00:00.000000Z",), names=("balancer",)),
        Case("TELEMETRY_CHANGED", summary="Telemetry requires re-opt-in",
             detail=("telemetry module includes new collections; please re-opt-in to new "
                     "collections with `ceph telemetry on`",), names=("telemetry",)),
        Case("AUTH_BAD_CAPS", "HEALTH_ERR", "1 auth entities have invalid capabilities",
             ("client.lab has invalid mon caps: allow rwx pool=x",), names=("client.lab",)),
        Case("OSD_NO_DOWN_OUT_INTERVAL", summary="mon_osd_down_out_interval is 0; this "
             "means down OSDs will not be marked out", names=("mon_osd_down_out_interval",)),
        Case("DASHBOARD_DEBUG", summary="Dashboard debug mode is enabled",
             names=("dashboard",)),
        Case("MON_NETSPLIT", summary="1 network partition detected",
             detail=("Netsplit detected between mon.a and mon.b",), names=("mon.b",)),
        Case("OSD_UNREACHABLE", "HEALTH_ERR", "1 osds(s) are not reachable",
             ("osd.1's public address is not in '10.0.0.0/24' subnet",), names=("osd.1",)),
        osd_alert("BLOCK_DEVICE_STALLED_READ_ALERT", "experiencing stalled read in block "
                  "device of BlueStore", "observed stalled read indications in main "
                  "device"),
        osd_alert("WAL_DEVICE_STALLED_READ_ALERT", "experiencing stalled read in wal device "
                  "of BlueFS", "observed stalled read indications in wal device"),
        osd_alert("DB_DEVICE_STALLED_READ_ALERT", "experiencing stalled read in db device "
                  "of BlueFS", "observed stalled read indications in db device"),
    ]
    by = {c.code: c for c in out}
    missing = [c for c in ALL_CODES if c not in by]
    assert not missing, missing
    return [by[c] for c in ALL_CODES]


def prepare(case: Case, tmp: Path) -> Path:
    """The snapshot directory with the case's code in it."""
    d = tmp / case.code
    shutil.copytree(FIXTURES / REL / case.base, d)
    if case.inject:
        def health(h: dict[str, Any]) -> dict[str, Any]:
            h["checks"][case.code] = {
                "severity": case.severity,
                "summary": {"message": case.summary, "count": len(case.detail) or 1},
                "detail": [{"message": m} for m in case.detail], "muted": False}
            sevs = [c["severity"] for c in h["checks"].values()]
            h["status"] = "HEALTH_ERR" if "HEALTH_ERR" in sevs else "HEALTH_WARN"
            return h
        edit_json(d, "health_detail.json", health)
    for e in case.edits:
        e(d)
    return d


def exact_command(text: str) -> str | None:
    """The first command in backticks that a person can paste as it is: one of the Ceph
    or stordoc CLIs, with no placeholder (``ID``, ``<pool>``, ``...``)."""
    for m in _CMD_RE.finditer(text):
        words = m.group(1).split()
        if not words or words[0] not in _TOOLS or len(words) < 2:
            continue
        if any(_PLACEHOLDER_RE.search(w) for w in words[1:]):
            continue
        return m.group(1)
    return None


def next_step(inc: Incident) -> str | None:
    """The incident's step as every front end prints it (``core.service.fixes.
    incident_step``: the runbook, the exact command of its first step by hand, or nothing
    to do); None when that is a sentence (``by hand: ...``), counted from what is printed,
    not from a command found anywhere in the text."""
    from core.service.fixes import incident_step

    step = incident_step(inc)
    return None if step.startswith("by hand") else step


def judge(case: Case, incidents: tuple[Incident, ...]) -> Result:
    carriers = [i for i in incidents
                if any(f.evidence.get("ceph_code") == case.code for f in i.findings)]
    if not carriers:
        return Result(case.code, 0, None, False, True, False, None)
    inc = carriers[0]
    f = next(f for f in inc.findings if f.evidence.get("ceph_code") == case.code)
    summary = str(f.evidence.get("summary") or "")
    # Ceph's text alone: the code is its own incident and stordoc added no word to it
    bare = f is inc.root and f.message == f"Ceph {case.code}: {summary}"
    step = next_step(inc)
    # stordoc's words: its message without Ceph's summary, the root, the next step
    words = " ".join([f.message.replace(summary, ""), inc.root.entity,
                      inc.root.message.replace(summary, ""), inc.manual or "",
                      step or ""])
    missing = tuple(n for n in case.names if n not in words)
    return Result(case.code, len(carriers), inc.root.code, inc.root.code in case.roots,
                  bare, not missing, step, f.message, inc.manual or "", missing)


def measure(case: Case, tmp: Path) -> Result:
    from core.service.snapshots import load

    return judge(case, load(str(prepare(case, tmp))).outcome.incidents)
