"""The incident rules: which root cause explains which findings, in priority order.

A rule names a root cause code, the scope it lives in (an OSD, a Swift device, a Swift
server, a pool) and the codes that are its consequences on the *same* entity of that
scope; OSD roots that take their OSD down also take Ceph's own codes naming that OSD or its
host (``OSD_DOWN``, ``OSD_HOST_DOWN``) and the cluster-wide PG findings (PGs undersized,
peering, stuck, Ceph's ``PG_DEGRADED``/``PG_AVAILABILITY``). To add a rule for a new cause,
add one line to ``RULES``; ``checks.incidents.correlate`` applies them.
"""

from __future__ import annotations

from dataclasses import dataclass

# Consequences of an OSD being down, on that OSD.
OSD_DOWN_CODES = ("OSD_DOWN_IN", "OSD_DOWN_OUT", "OSD_NEVER_UP", "OSD_HOST_DOWN")
# Ceph health codes that name OSDs or hosts in their detail lines.
CEPH_OSD_CODES = ("OSD_DOWN", "OSD_HOST_DOWN", "OSD_ROOT_DOWN", "OSD_FLAPPING",
                  "SLOW_OPS", "RECENT_CRASH")
CEPH_FULL_CODES = ("OSD_NEARFULL", "OSD_BACKFILLFULL", "OSD_FULL", "POOL_NEARFULL",
                   "POOL_BACKFILLFULL", "POOL_FULL", "POOL_NEAR_FULL")
# Ceph's PGs that wait for space: the fullness incident's, never a down OSD's
CEPH_PG_FULL_CODES = ("PG_BACKFILL_FULL", "PG_RECOVERY_FULL")
# Ceph health codes about PGs: a consequence of OSDs that are down (or just came back).
# (SLOW_OPS names its OSDs: it joins the incident of the OSD it names, CEPH_OSD_CODES;
# PGs waiting for space are the fullness incident's, CEPH_PG_FULL_CODES)
CEPH_PG_CODES = ("PG_DEGRADED", "PG_AVAILABILITY", "PG_NOT_SCRUBBED",
                 "PG_NOT_DEEP_SCRUBBED", "OBJECT_MISPLACED", "OBJECT_UNFOUND")
# Ceph's codes of a failing disk under an OSD (enriched in checks/ceph_codes.py)
CEPH_DISK_CODES = ("DEVICE_HEALTH", "DEVICE_HEALTH_IN_USE", "DEVICE_HEALTH_TOOMANY",
                   "OSD_TOO_MANY_REPAIRS", "BLUESTORE_SPURIOUS_READ_ERRORS",
                   "BLUESTORE_SLOW_OP_ALERT",
                   # stalled reads (Squid on): the disk under that OSD (checks/ceph_codes_rest)
                   "BLOCK_DEVICE_STALLED_READ_ALERT", "WAL_DEVICE_STALLED_READ_ALERT",
                   "DB_DEVICE_STALLED_READ_ALERT")
# No manager answers (checks.managers), and Ceph's late word on it.
MGR_FOLD = ("MGR_NO_ACTIVE", "MGR_NOT_ANSWERING", "PGS_STATS_STALE", "MGR_DOWN")
# Ceph's codes of slow requests and heartbeats (checks.slow_ops explains them per OSD)
SLOW_CEPH_CODES = ("SLOW_OPS", "OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT")
# Our cluster-wide PG findings.
PG_CODES = ("PGS_NOT_ACTIVE_CLEAN", "PGS_STUCK", "PGS_SETTLING", "PG_STUCK")


@dataclass(frozen=True)
class Rule:
    """``cause`` is a root; ``consequences`` on the same entity of ``scope`` fold into it;
    ``fold_any`` codes (ours or Ceph's own) fold in from anywhere in the cluster (the
    first incident of a rule with them takes them: PGs are cluster-wide). ``when`` limits
    the rule to roots whose evidence has that (key, value).

    Scopes: ``osd`` (the OSD ids a finding names, its host's OSDs, Ceph's detail lines),
    ``swift-device`` (ip, device), ``osdmap-flag`` (the flag: stordoc's finding and
    the flags Ceph's OSDMAP_FLAGS summary names), ``mon`` (a monitor: ``mon.b``, and Ceph's
    codes whose detail names it), ``swift-server`` (server kind and port: one process per
    kind and port, a stopped kind is one cause on every node), ``pool`` (the pool, and
    Ceph's codes whose detail names it), ``entity`` (the same entity string).
    """

    cause: str
    scope: str
    consequences: tuple[str, ...] = ()
    fold_any: tuple[str, ...] = ()
    when: tuple[str, str] | None = None
    ceph: tuple[str, ...] = ()  # Ceph's own codes that fold in when they name the entity
    # fold_any only the codes the root's evidence lists under ``folds`` (one section's
    # lowered warning lines explain its own warnings, not another section's)
    named_only: bool = False


OSD_FOLD = (*PG_CODES, *CEPH_PG_CODES)
CACHE_CODES = ("CACHE_NO_TARGET", "CACHE_RATIO_ORDER", "CACHE_NO_HIT_SET",
               "CACHE_PROMOTE_RECENCY", "CACHE_TARGET_TOO_BIG", "CACHE_NEAR_TARGET")
RING_CODES = ("SWIFT_REPLICAS_EXCEED_DEVICES", "SWIFT_REPLICAS_EXCEED_ZONES",
              "SWIFT_BUILDER_RING_MISMATCH", "SWIFT_BUILDER_NEWER_THAN_RING",
              "SWIFT_RING_UNBALANCED", "SWIFT_DISPERSION_HIGH")
SWIFT_REPL_FOLD = ("SWIFT_REPLICATION_FAILURES",)
# a pool's PG numbers (checks.pgs), worst first, and Ceph's codes of the same
POOL_PG_CODES = ("POOL_PG_NUM_LOW", "POOL_PGP_BELOW_PG", "POOL_PG_NUM_HIGH",
                 "POOL_PG_NOT_POWER_OF_TWO")
POOL_PG_CEPH_CODES = ("POOL_TOO_FEW_PGS", "SMALLER_PGP_NUM", "POOL_TOO_MANY_PGS",
                      "POOL_PG_NUM_NOT_POWER_OF_TWO")
SERVER_CODES = ("SWIFT_SERVER_DOWN", "SWIFT_SERVER_TIMEOUT", "SWIFT_SERVER_HTTP_ERROR",
                "SWIFT_REPLICATION_STALE", "SWIFT_REPLICATION_FAILURES")


# checks/disks.py, worst cause first: one physical device is one incident
DISK_CODES = ("FS_SHUTDOWN", "DEVICE_IO_ERRORS", "DEVICE_FAILING", "FS_READONLY",
              "FS_WRITE_FAILED", "FS_FULL")
# what a failing disk explains on the OSDs and Swift devices it holds
ON_DISK_CODES = ("OSD_DEVICE_IO_ERRORS", "OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED",
                 "OSD_FSTAB_DISABLED", "OSD_UNIT_FAILED", "OSD_IS_FULL", "OSD_NEAR_FULL",
                 *OSD_DOWN_CODES, "SWIFT_DEVICE_IO_ERRORS", "SWIFT_DEVICE_UNMOUNTED",
                 "SWIFT_DEVICE_NO_DIR", "SWIFT_FSTAB_DISABLED", "SWIFT_DEVICE_FULL")


def _after(codes: tuple[str, ...], code: str) -> tuple[str, ...]:
    """The codes a root of ``code`` explains: those listed after it (worse ones first)."""
    return codes[codes.index(code) + 1:]


# Order is priority: a finding that is a consequence of an earlier rule's root is never a
# root itself. The OSD layouts issue adds its OSD_NOT_ACTIVATED with one line here.
RULES: tuple[Rule, ...] = (
    # a disk that holds OSDs takes their PGs along; one that holds only Swift devices the
    # replication failures towards them
    *(Rule(c, "disk", (*_after(DISK_CODES, c), *ON_DISK_CODES), fold, when=("has_osds", w),
           ceph=(*CEPH_OSD_CODES, *CEPH_DISK_CODES))
      for c in DISK_CODES for w, fold in (("True", OSD_FOLD), ("False", SWIFT_REPL_FOLD))),
    Rule("OSD_DEVICE_IO_ERRORS", "osd",
         ("OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", "OSD_FSTAB_DISABLED",
          *OSD_DOWN_CODES), OSD_FOLD, ceph=(*CEPH_OSD_CODES, *CEPH_DISK_CODES)),
    Rule("OSD_FSTAB_DISABLED", "osd",
         ("OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", *OSD_DOWN_CODES), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_NOT_ACTIVATED", "osd",
         ("OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", *OSD_DOWN_CODES), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_DATA_UNMOUNTED", "osd", ("OSD_DAEMON_STOPPED", *OSD_DOWN_CODES), OSD_FOLD, ceph=CEPH_OSD_CODES),
    # a daemon's life (checks/daemons.py): crashed, looping or hung explains the OSD down
    Rule("OSD_DAEMON_RESTART_LOOP", "osd", ("OSD_DAEMON_STOPPED", *OSD_DOWN_CODES), OSD_FOLD,
         ceph=CEPH_OSD_CODES),
    Rule("OSD_DAEMON_CRASHED", "osd", ("OSD_DAEMON_STOPPED", *OSD_DOWN_CODES), OSD_FOLD,
         ceph=CEPH_OSD_CODES),
    Rule("OSD_DAEMON_HUNG", "osd", OSD_DOWN_CODES, OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_DAEMON_STOPPED", "osd", OSD_DOWN_CODES, OSD_FOLD, ceph=CEPH_OSD_CODES),
    # marked down while it ran, again and again (checks/pgblocks.py)
    Rule("OSD_FLAPPING", "osd", OSD_DOWN_CODES, OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_HOST_DOWN", "osd", OSD_DOWN_CODES, OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_DOWN_IN", "osd", (), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_DOWN_OUT", "osd", (), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_NEVER_UP", "osd", (), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_UP_OUT", "osd", (), OSD_FOLD, ceph=CEPH_OSD_CODES),
    # a filling cluster (checks/fill.py): the OSDs past nearfull, the uneven spread and
    # Ceph's nearfull codes are one incident (a full OSD stays one of its own: CRIT)
    # (a pool near its quota is not the cluster filling: its POOL_NEAR_FULL, stordoc's and
    # Ceph's, fold in as POOL_QUOTA_NEAR_FULL, the pool's own incident below)
    # a setting that raises the warning is its cause (checks.ceph_config, issue 38.2): a
    # full ratio set below Ceph's default under the OSDs' fill takes the fill warnings
    Rule("FULL_RATIO_LOWERED", "entity", (),
         ("OSD_NEAR_FULL", "OSD_IS_FULL", "OSD_NEARFULL", "OSD_BACKFILLFULL", "OSD_FULL",
          "POOL_NEARFULL", "POOL_BACKFILLFULL", *CEPH_PG_FULL_CODES,
          # a quota's POOL_FULL / POOL_NEAR_FULL fold as POOL_QUOTA_NEAR_FULL, never here
          "POOL_FULL", "POOL_NEAR_FULL"),
         when=("explains", "fill")),
    Rule("CLUSTER_DAYS_TO_FULL", "entity", (),
         ("OSD_NEAR_FULL", "POOL_NEAR_FULL", "OSD_FILL_SPREAD", "OSD_NEARFULL",
          "POOL_NEARFULL", "OSD_BACKFILLFULL", "POOL_BACKFILLFULL", *CEPH_PG_FULL_CODES)),
    Rule("OSD_IS_FULL", "osd", ("OSD_NEAR_FULL",), CEPH_PG_FULL_CODES, ceph=CEPH_FULL_CODES),
    Rule("OSD_NEAR_FULL", "osd", (), CEPH_PG_FULL_CODES, ceph=CEPH_FULL_CODES),
    # a pool quota under the pool's use is the cause (checks.pool_quota, issue 38.2):
    # stordoc's POOL_NEAR_FULL of that pool and Ceph's quota codes naming it
    Rule("POOL_QUOTA_CAUSE", "pool", ("POOL_NEAR_FULL",), ceph=("POOL_FULL", "POOL_NEAR_FULL")),
    Rule("POOL_NEAR_FULL", "pool", (), ceph=CEPH_FULL_CODES),
    *(Rule(c, "pool", _after(CACHE_CODES, c) + ("CACHE_TIER_DEPRECATED",),
           ceph=("CACHE_POOL_NO_HIT_SET", "CACHE_POOL_NEAR_FULL"))
      for c in CACHE_CODES),
    # a device that answers 507 fails every other node's replication pass towards it
    Rule("SWIFT_DEVICE_IO_ERRORS", "swift-device",
         ("SWIFT_DEVICE_UNMOUNTED", "SWIFT_DEVICE_NO_DIR", "SWIFT_FSTAB_DISABLED"),
         SWIFT_REPL_FOLD),
    Rule("SWIFT_FSTAB_DISABLED", "swift-device",
         ("SWIFT_DEVICE_UNMOUNTED", "SWIFT_DEVICE_NO_DIR"), SWIFT_REPL_FOLD),
    Rule("SWIFT_DEVICE_NO_DIR", "swift-device", (), SWIFT_REPL_FOLD),
    Rule("SWIFT_DEVICE_UNMOUNTED", "swift-device", (), SWIFT_REPL_FOLD),
    Rule("SWIFT_DEVICE_FULL", "swift-device", (), ("SWIFT_FILL_SPREAD", *SWIFT_REPL_FOLD)),
    # container servers down: object servers queue their container updates
    Rule("SWIFT_SERVER_DOWN", "swift-server", SERVER_CODES, ("SWIFT_ASYNC_PENDING",),
         when=("server", "container")),
    *(Rule(c, "swift-server", SERVER_CODES) for c in SERVER_CODES),
    # one stale ring file on every server of a kind: one push fixes them all
    Rule("SWIFT_RING_MD5_MISMATCH", "swift-ring", ()),
    *(Rule(c, "entity", _after(RING_CODES, c)) for c in RING_CODES),
    # one osdmap flag is one incident: stordoc's finding explains Ceph's OSDMAP_FLAGS
    Rule("OSDMAP_FLAGS", "osdmap-flag", (), ceph=("OSDMAP_FLAGS", "OSD_FLAGS")),
    # a manager daemon that crashed, hangs, loops or was stopped (checks.daemons) is why no
    # manager answers: the manager findings and the stale PG statistics fold into it
    *(Rule(c, "entity", (), MGR_FOLD, when=("kind", "mgr"))
      for c in ("DAEMON_CRASHED", "DAEMON_HUNG", "DAEMON_RESTART_LOOP", "DAEMON_STOPPED")),
    # the Swift proxy's daemon stopped, crashed, hangs or loops (checks.daemons): that is
    # why its /healthcheck fails (checks.swift_rings): one incident
    *(Rule(c, "entity", (), ("SWIFT_PROXY_UNHEALTHY",), when=("kind", "proxy-server"))
      for c in ("DAEMON_CRASHED", "DAEMON_HUNG", "DAEMON_RESTART_LOOP", "DAEMON_STOPPED")),
    # a monitor daemon that stopped or crashed: the monitors not answering this check is
    # its consequence (the one mon of a small cluster; a quorum of others still answers)
    *(Rule(c, "entity", (), ("CEPH_UNREACHABLE",), when=("kind", "mon"))
      for c in ("DAEMON_CRASHED", "DAEMON_HUNG", "DAEMON_RESTART_LOOP", "DAEMON_STOPPED")),
    # no manager (checks.managers): the PG statistics are stale, Ceph's MGR_DOWN says it late
    *(Rule(c, "entity", (), ("PGS_STATS_STALE", "MGR_DOWN"))
      for c in ("MGR_NO_ACTIVE", "MGR_NOT_ANSWERING")),
    # slow requests (checks.slow_ops): the OSD where ops wait takes Ceph's SLOW_OPS and
    # slow heartbeats naming it, and the laggy PGs waiting on it
    # (issue 38.2: with Ceph's slow heartbeat line lowered under its default, the
    # heartbeat warnings are the lowered option's, CONFIG_OPTION_CAUSE, not the OSD's)
    Rule("OSD_SLOW_OPS", "osd", (), ("PGS_LAGGY",), ceph=("SLOW_OPS",),
         when=("ping_line_lowered", "True")),
    Rule("OSD_SLOW_OPS", "osd", ("OSD_SLOW_PING",), ("PGS_LAGGY",), ceph=SLOW_CEPH_CODES),
    Rule("CONFIG_OPTION_CAUSE", "entity", (),
         ("OSD_SLOW_PING", "OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT"),
         when=("explains", "slow-ping")),
    Rule("OSD_SLOW_PING", "osd", (), ("PGS_LAGGY",), ceph=SLOW_CEPH_CODES),
    # a warning line moved (checks.ceph_config.LINE_RULES: scrub intervals and
    # mon_max_pg_per_osd lowered for the manager, a monitor's mon_data_avail_warn raised
    # at runtime): Ceph's warning, and stordoc's finding of the same, are that option's
    Rule("CONFIG_OPTION_CAUSE", "entity", (),
         ("PG_NOT_SCRUBBED", "PG_NOT_DEEP_SCRUBBED", "TOO_MANY_PGS", "PGS_PER_OSD_HIGH",
          "MON_DISK_LOW"), when=("explains", "warn-line"), named_only=True),
    # an inconsistent PG (checks/scrub.py): Ceph's PG_DAMAGED and OSD_SCRUB_ERRORS say it
    # (and the PGs read unclean: +inconsistent is not active+clean)
    Rule("PG_INCONSISTENT", "entity", (), ("PG_DAMAGED", "OSD_SCRUB_ERRORS",
                                           "PGS_NOT_ACTIVE_CLEAN")),
    # PGs settling after a change (checks.settle): INFO, Ceph's word on them folds in
    Rule("PGS_SETTLING", "entity", (), OSD_FOLD),
    # PGs in trouble with no OSD cause found (peering after a restart, recovery, ...): one
    Rule("PGS_NOT_ACTIVE_CLEAN", "entity", (), OSD_FOLD),
    Rule("PGS_STUCK", "entity", (), OSD_FOLD),
    # one stuck PG whose blocking OSD has no cause of its own found (checks/pgblocks.py)
    Rule("PG_STUCK", "entity", (), OSD_FOLD),
    # stordoc's findings that Ceph says too (last: they rank as before, after the causes
    # above; they claim only their own codes and Ceph's word on the same thing)
    # the full ratios out of order (checks.ceph_config): Ceph's OSD_OUT_OF_ORDER_FULL says it
    Rule("FULL_RATIOS_ORDER", "entity", (), ("OSD_OUT_OF_ORDER_FULL",)),
    # a pool's PG numbers (checks.pgs): one incident per pool, Ceph's codes naming it in it
    *(Rule(c, "pool", _after(POOL_PG_CODES, c), ("TOO_FEW_PGS",) if c == "POOL_PG_NUM_LOW"
           else (), ceph=POOL_PG_CEPH_CODES) for c in POOL_PG_CODES),
    Rule("PGS_PER_OSD_HIGH", "entity", (), ("TOO_MANY_PGS",)),
    # a monitor out of quorum or off the leader's clock (checks.cluster): Ceph's MON_DOWN /
    # MON_CLOCK_SKEW naming that monitor
    Rule("MON_OUT_OF_QUORUM", "mon", (), ceph=("MON_DOWN",)),
    Rule("MON_CLOCK_SKEW", "mon", (), ceph=("MON_CLOCK_SKEW",)),
)
