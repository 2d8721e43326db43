"""Every alert of Ceph's own Prometheus rules (``checks.alert_rules``), by name: what in
stordoc explains it, and how its labels name the entity.

An alert's name says what fired; stordoc's incidents say why. ``MAP`` gives each rule:

- ``ceph``: the Ceph health codes it fires on or stands for (``ceph_health_detail{name=X}``
  is Ceph's code X, which ``checks.ceph_codes`` turns into a ``CEPH_HEALTH`` finding
  ``ceph X``; its explainer names the OSDs, pools or daemons, and the incident rules fold
  it into its cause: ``ceph OSD_DOWN`` into ``OSD_DATA_UNMOUNTED osd.1``);
- ``codes``: stordoc's own finding codes that are its cause or the same condition seen by
  stordoc (``OSD_NEAR_FULL`` for ``CephOSDNearFull``);
- ``labels``: how the alert's labels name the entity (``osd``: ``ceph_daemon`` ``osd.N``;
  ``daemon``: any ``ceph_daemon``; ``pool``: the pool's ``name``; ``host``: ``hostname``,
  ``nodename`` or node_exporter's ``instance``); ``names``: the kind of entity the
  diagnosis names (``""`` when it names none);
- ``runbooks``: the runbooks that fix a cause it maps to (the incident's Fix button);
- ``no_data``: why this deployment cannot explain it (no CephFS, no NVMe-oF gateway):
  mapped, but not diagnosed.

``select`` is the webhook's diagnosis: the incidents an alert names by code, narrowed to
the entity its labels name. ``coverage`` counts what ``benchmarks/alert_coverage.py`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from checks.alert_rules import BY_NAME, RULES
from checks.incidents import Incident
from checks.model import Finding, Severity

LabelKind = Literal["", "osd", "daemon", "pool", "host"]

# codes and runbooks other work of issue #29 adds (slow requests, scrub errors, filling
# up, flapping and stuck PGs): named here already; a test checks each exists once merged
PENDING_CODES: tuple[str, ...] = ()
PENDING_RUNBOOKS: tuple[str, ...] = ()


@dataclass(frozen=True)
class AlertMapping:
    """What explains one alert rule (see the module's docstring)."""

    ceph: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    labels: LabelKind = ""
    names: str = ""
    runbooks: tuple[str, ...] = ()
    no_data: str = ""
    any_incident: bool = False  # CephHealthError/Warning: whatever stordoc finds

    @property
    def diagnosed(self) -> bool:
        """An incident of stordoc's names the entity (an OSD, a pool, a host, a PG)."""
        return not self.no_data and bool(self.names)


# ---------------------------------------------------------------- the causes, by family
_OSD_DOWN_ROOTS = (
    "OSD_DOWN_IN", "OSD_DOWN_OUT", "OSD_NEVER_UP", "OSD_HOST_DOWN", "OSD_DATA_UNMOUNTED",
    "OSD_NOT_ACTIVATED", "OSD_FSTAB_DISABLED", "OSD_DEVICE_IO_ERRORS", "OSD_DAEMON_STOPPED",
    "OSD_DAEMON_CRASHED", "OSD_DAEMON_HUNG", "OSD_DAEMON_RESTART_LOOP", "OSD_UNIT_FAILED",
    "OSD_LV_INACTIVE", "FS_SHUTDOWN", "DEVICE_IO_ERRORS", "DEVICE_FAILING", "HOST_UNREACHABLE")
# only runbooks some check attaches to a finding (its Fix button); osd-replace-disk,
# balancer-upmap and full-ratio-raise are named in findings' text, attached to none
# (tests/unit/test_alert_posts.py: test_every_listed_runbook_is_attached_to_a_finding)
_OSD_DOWN_FIX = ("osd-remount", "osd-activate", "osd-start", "daemon-restart")
_MON_ROOTS = ("MON_OUT_OF_QUORUM", "DAEMON_STOPPED", "DAEMON_CRASHED", "DAEMON_HUNG",
              "DAEMON_RESTART_LOOP", "HOST_UNREACHABLE")
_DISK = ("DEVICE_FAILING", "DEVICE_IO_ERRORS", "OSD_DEVICE_IO_ERRORS", "FS_SHUTDOWN",
         "FS_READONLY")
# FULL_RATIO_LOWERED: a ratio set under the OSDs' fill is the warning's cause (issue 38.2)
_FULL = ("OSD_IS_FULL", "OSD_NEAR_FULL", "OSD_FILL_SPREAD", "CLUSTER_DAYS_TO_FULL",
         "POOL_NEAR_FULL", "FULL_RATIO_LOWERED")
_FULL_FIX = ("osd-reweight-by-utilization", "ratio-restore")
# POOL_QUOTA_CAUSE: a pool quota at its use is the cause of POOL_FULL / POOL_NEAR_FULL
_QUOTA = ("POOL_QUOTA_CAUSE",)
_QUOTA_FIX = ("quota-restore",)
_PGS = ("PGS_NOT_ACTIVE_CLEAN", "PGS_STUCK", "PG_STUCK", "PGS_LAGGY")
_NET = ("OSD_SLOW_PING", "OSD_FLAPPING")
# CONFIG_OPTION_CAUSE: a lowered warning line (mon_warn_on_slow_ping_time) is the cause
_PING = (*_NET, "CONFIG_OPTION_CAUSE")
_SLOW = ("OSD_SLOW_OPS", "PGS_LAGGY", "CONFIG_OPTION_CAUSE")
_MGR = ("MGR_NO_ACTIVE", "MGR_NOT_ANSWERING", "DAEMON_STOPPED", "DAEMON_CRASHED",
        "DAEMON_HUNG", "DAEMON_RESTART_LOOP")
_NO_MDS = ("stordoc reads no MDS or file system map and the lab runs no CephFS: Ceph's own "
           "health detail is shown as 'ceph {code}', naming no entity of stordoc's")
_NO_RBD_MIRROR = "no rbd-mirror daemon in this deployment: stordoc reads no mirroring status"
_NO_NVMEOF = "no NVMe-oF gateway in this deployment: stordoc reads none of its metrics"
_NO_REDFISH = ("cephadm's node-proxy (Redfish) reports it; this deployment runs no cephadm "
               "and stordoc reads no BMC")


def _mds(code: str) -> AlertMapping:
    return AlertMapping(ceph=(code,), no_data=_NO_MDS.format(code=code))


def _hw(code: str) -> AlertMapping:
    return AlertMapping(ceph=(code,), no_data=_NO_REDFISH)


MAP: Mapping[str, AlertMapping] = {
    # cluster health: whatever stordoc finds is the diagnosis
    "CephHealthError": AlertMapping(any_incident=True, names="incident"),
    "CephHealthWarning": AlertMapping(any_incident=True, names="incident"),
    # monitors
    "CephMonDownQuorumAtRisk": AlertMapping(("MON_DOWN",), _MON_ROOTS, "", "mon",
                                            ("daemon-restart", "daemon-start")),
    "CephMonDown": AlertMapping(("MON_DOWN",), _MON_ROOTS, "", "mon",
                                ("daemon-restart", "daemon-start")),
    "CephMonDiskspaceCritical": AlertMapping(("MON_DISK_CRIT",), ("FS_FULL",), "", "mon"),
    # a free-space line raised at runtime (ceph tell) is the cause (issue 38.2)
    "CephMonDiskspaceLow": AlertMapping(("MON_DISK_LOW",), ("FS_FULL",), "", "mon",
                                        ("config-restore",)),
    "CephMonClockSkew": AlertMapping(("MON_CLOCK_SKEW",), ("MON_CLOCK_SKEW",), "", "mon"),
    # OSDs
    "CephOSDDownHigh": AlertMapping(("OSD_DOWN",), _OSD_DOWN_ROOTS, "", "osd", _OSD_DOWN_FIX),
    "CephOSDHostDown": AlertMapping(("OSD_HOST_DOWN", "OSD_DOWN"), _OSD_DOWN_ROOTS, "", "osd",
                                    _OSD_DOWN_FIX),
    "CephOSDDown": AlertMapping(("OSD_DOWN",), _OSD_DOWN_ROOTS, "", "osd", _OSD_DOWN_FIX),
    "CephOSDNearFull": AlertMapping(("OSD_NEARFULL",), _FULL, "", "osd", _FULL_FIX),
    "CephOSDFull": AlertMapping(("OSD_FULL",), _FULL, "", "osd", _FULL_FIX),
    "CephOSDBackfillFull": AlertMapping(("OSD_BACKFILLFULL",), _FULL, "", "osd", _FULL_FIX),
    "CephOSDTooManyRepairs": AlertMapping(("OSD_TOO_MANY_REPAIRS",), _DISK, "", "osd",
                                          ()),
    "CephOSDTimeoutsPublicNetwork": AlertMapping(("OSD_SLOW_PING_TIME_FRONT",), _PING, "",
                                                 "osd", ("config-restore",)),
    "CephOSDTimeoutsClusterNetwork": AlertMapping(("OSD_SLOW_PING_TIME_BACK",), _PING, "",
                                                  "osd", ("config-restore",)),
    "CephOSDInternalDiskSizeMismatch": AlertMapping(("BLUESTORE_DISK_SIZE_MISMATCH",), (), "",
                                                    "osd"),
    "CephDeviceFailurePredicted": AlertMapping(("DEVICE_HEALTH",), _DISK, "", "disk",
                                               ()),
    "CephDeviceFailurePredictionTooHigh": AlertMapping(("DEVICE_HEALTH_TOOMANY",), _DISK, "",
                                                       "disk", ()),
    "CephDeviceFailureRelocationIncomplete": AlertMapping(("DEVICE_HEALTH_IN_USE",), _DISK, "",
                                                          "disk", ()),
    "CephOSDFlapping": AlertMapping(("OSD_FLAPPING",), ("OSD_FLAPPING", "OSD_SLOW_PING",
                                                        "OSD_DAEMON_RESTART_LOOP"), "osd", "osd"),
    "CephOSDReadErrors": AlertMapping(("BLUESTORE_SPURIOUS_READ_ERRORS",), _DISK, "", "osd",
                                      ()),
    # an OSD out holds no PGs (cluster-full-out): OSD_UP_OUT is the imbalance's cause
    "CephPGImbalance": AlertMapping((), ("OSD_FILL_SPREAD", "OSD_BELOW_SHARE", "OSD_NO_DATA",
                                         "PGS_PER_OSD_HIGH", "OSD_UP_OUT"), "osd", "osd",
                                    ("osd-reweight-by-utilization", "osd-in")),
    # CephFS
    "CephFilesystemDamaged": _mds("MDS_DAMAGE"),
    "CephFilesystemOffline": _mds("MDS_ALL_DOWN"),
    "CephFilesystemDegraded": _mds("FS_DEGRADED"),
    "CephFilesystemMDSRanksLow": _mds("MDS_UP_LESS_THAN_MAX"),
    "CephFilesystemInsufficientStandby": _mds("MDS_INSUFFICIENT_STANDBY"),
    "CephFilesystemFailureNoStandby": _mds("FS_WITH_FAILED_MDS"),
    "CephFilesystemReadOnly": _mds("MDS_HEALTH_READ_ONLY"),
    # managers
    "CephMgrModuleCrash": AlertMapping(("RECENT_MGR_MODULE_CRASH",), (), "", "mgr",
                                       ("crash-archive",)),
    "CephMgrPrometheusModuleInactive": AlertMapping(("MGR_DOWN",), _MGR, "", "mgr",
                                                    ("mgr-failover", "daemon-restart",
                                                     "daemon-start")),
    # PGs: the pool is in the labels; the cause is what took the OSDs away
    "CephPGsInactive": AlertMapping(("PG_AVAILABILITY",), (*_PGS, *_OSD_DOWN_ROOTS), "pool",
                                    "osd", _OSD_DOWN_FIX),
    "CephPGsUnclean": AlertMapping(("PG_DEGRADED", "OBJECT_MISPLACED"),
                                   (*_PGS, *_OSD_DOWN_ROOTS, "OSD_UP_OUT", "PGS_SETTLING"),
                                   "pool", "osd", (*_OSD_DOWN_FIX, "osd-in")),
    # damaged: an inconsistent PG, or objects unfound (their newest copies on an OSD that
    # is down: pg-unfound), explained by that OSD (checks.ceph_codes folds it in there)
    "CephPGsDamaged": AlertMapping(("PG_DAMAGED", "OSD_SCRUB_ERRORS"),
                                   ("PG_INCONSISTENT", *_OSD_DOWN_ROOTS), "", "pg",
                                   ("pg-repair", *_OSD_DOWN_FIX)),
    "CephPGRecoveryAtRisk": AlertMapping(("PG_RECOVERY_FULL",), _FULL, "", "osd", _FULL_FIX),
    "CephPGUnavilableBlockingIO": AlertMapping(("PG_AVAILABILITY",),
                                               (*_PGS, *_OSD_DOWN_ROOTS), "", "pg",
                                               _OSD_DOWN_FIX),
    "CephPGBackfillAtRisk": AlertMapping(("PG_BACKFILL_FULL",), _FULL, "", "osd", _FULL_FIX),
    # the scrub lines or mon_max_pg_per_osd lowered for the manager are the cause (38.2:
    # CONFIG_OPTION_CAUSE's incident holds Ceph's code, which selects it)
    "CephPGNotScrubbed": AlertMapping(("PG_NOT_SCRUBBED",), (), "", "pg",
                                      ("config-restore",)),
    "CephPGsHighPerOSD": AlertMapping(("TOO_MANY_PGS",), ("PGS_PER_OSD_HIGH",
                                                          "POOL_PG_NUM_HIGH"), "", "pool",
                                      ("config-restore",)),
    "CephPGNotDeepScrubbed": AlertMapping(("PG_NOT_DEEP_SCRUBBED",), (), "", "pg",
                                          ("config-restore",)),
    # nodes (node_exporter): the host is in the labels; stordoc's host facts say what lives
    # there and suffers (its OSDs' slow pings and flaps, a full or failing disk)
    "CephNodeRootFilesystemFull": AlertMapping(("MON_DISK_CRIT", "MON_DISK_LOW"), ("FS_FULL",),
                                               "host", "host"),
    "CephNodeNetworkPacketDrops": AlertMapping((), _NET, "host", "host"),
    "CephNodeNetworkPacketErrors": AlertMapping((), _NET, "host", "host"),
    "CephNodeNetworkBondDegraded": AlertMapping((), _NET, "host", "host"),
    "CephNodeDiskspaceWarning": AlertMapping(("MON_DISK_LOW",), ("FS_FULL", "OSD_NEAR_FULL"),
                                             "host", "host"),
    "CephNodeInconsistentMTU": AlertMapping((), _NET, "host", "host"),
    # pools
    "CephPoolGrowthWarning": AlertMapping((), ("POOL_NEAR_FULL", "CLUSTER_DAYS_TO_FULL",
                                               "OSD_NEAR_FULL"), "pool", "pool"),
    "CephPoolBackfillFull": AlertMapping(("POOL_BACKFILLFULL",), _FULL, "", "pool", _FULL_FIX),
    "CephPoolFull": AlertMapping(("POOL_FULL",), (*_FULL, *_QUOTA), "", "pool",
                                 (*_FULL_FIX, *_QUOTA_FIX)),
    # the rule's expression asks for POOL_NEAR_FULL: Ceph's code of a pool near its quota
    # (with mon_pool_quota_warn_threshold set: pool-quota-near), not POOL_NEARFULL (the
    # OSDs' nearfull ratio); mapped to both
    "CephPoolNearFull": AlertMapping(("POOL_NEAR_FULL", "POOL_NEARFULL"), (*_FULL, *_QUOTA),
                                     "", "pool", (*_FULL_FIX, *_QUOTA_FIX)),
    # slow requests
    "CephSlowOps": AlertMapping(("SLOW_OPS",), _SLOW, "", "osd", ("config-restore",)),
    "CephDaemonSlowOps": AlertMapping(("SLOW_OPS",), _SLOW, "daemon", "osd",
                                      ("config-restore",)),
    # cephadm
    "CephadmUpgradeFailed": AlertMapping(("UPGRADE_EXCEPTION", "DAEMON_OLD_VERSION"),
                                         ("CEPH_VERSIONS_MIXED",), "", "daemon"),
    "CephadmDaemonFailed": AlertMapping(("CEPHADM_FAILED_DAEMON",),
                                        (*_OSD_DOWN_ROOTS, *_MGR, "MON_OUT_OF_QUORUM"), "",
                                        "daemon", (*_OSD_DOWN_FIX, "mgr-failover", "daemon-start")),
    "CephadmPaused": AlertMapping(("CEPHADM_PAUSED",), no_data=(
        "the cephadm orchestrator was paused by hand (`ceph orch resume`); this deployment "
        "runs no cephadm")),
    # hardware (Reef's node-proxy); a failing disk stordoc sees through SMART and the kernel
    "HardwareStorageError": AlertMapping(("HARDWARE_STORAGE",), _DISK, "", "disk",
                                         ()),
    "HardwareMemoryError": _hw("HARDWARE_MEMORY"),
    "HardwareProcessorError": _hw("HARDWARE_PROCESSOR"),
    "HardwareNetworkError": _hw("HARDWARE_NETWORK"),
    "HardwarePowerError": _hw("HARDWARE_POWER"),
    "HardwareFanError": _hw("HARDWARE_FANS"),
    "PrometheusJobMissing": AlertMapping(no_data=(
        "Prometheus has no scrape job 'ceph': its own configuration, nothing in the cluster "
        "explains it")),
    "CephObjectMissing": AlertMapping(("OBJECT_UNFOUND",), ("PG_STUCK", *_OSD_DOWN_ROOTS),
                                      "", "pg", ("pg-mark-unfound-lost", *_OSD_DOWN_FIX)),
    "CephDaemonCrash": AlertMapping(("RECENT_CRASH",), ("OSD_DAEMON_CRASHED", "DAEMON_CRASHED"),
                                    "", "daemon", ("crash-archive", "daemon-restart")),
    # RBD mirroring, NVMe-oF gateways (Reef)
    **{n: AlertMapping(no_data=_NO_RBD_MIRROR) for n in (
        "CephRBDMirrorImagesPerDaemonHigh", "CephRBDMirrorImagesNotInSync",
        "CephRBDMirrorImagesNotInSyncVeryHigh", "CephRBDMirrorImageTransferBandwidthHigh")},
    **{r.name: AlertMapping(no_data=_NO_NVMEOF) for r in RULES if r.group == "nvmeof"},
}


# ---------------------------------------------------------------- labels -> entity

def _host(v: str) -> str:
    """``node2:9100`` or ``node2.example.org`` -> ``node2``; an address stays whole."""
    v = v.strip()
    if v.startswith("["):  # [::1]:9100
        return v[1:].split("]")[0]
    if v.count(":") == 1:
        v = v.split(":")[0]
    return v if v.replace(".", "").isdigit() or ":" in v else v.split(".")[0]


def label_entities(name: str, labels: Mapping[str, str]) -> set[str]:
    """The entities an alert of rule ``name`` names in its labels, spelled as stordoc's
    findings spell them (``osd.3``, ``mon.a``, ``pool rbd``, ``host node2``)."""
    m = MAP.get(name)
    kind = m.labels if m else ""
    out: set[str] = set()
    daemon = labels.get("ceph_daemon", "")[:120]
    if kind in ("osd", "daemon") and daemon:
        if kind == "daemon" or daemon.startswith("osd."):
            out.add(daemon)
    if kind == "pool" and labels.get("name"):
        out.add(f"pool {labels['name'][:120]}")
    if kind in ("host", "osd", "daemon"):
        for key in ("hostname", "nodename", "host"):
            if labels.get(key):
                out.add(f"host {_host(labels[key][:120])}")
        if kind == "host" and labels.get("instance") and not out:
            out.add(f"host {_host(labels['instance'][:120])}")
    return out


def _evidence_names(f: Finding) -> set[str]:
    """OSDs, daemons, pools and hosts a finding's evidence names."""
    ev: Mapping[str, Any] = f.evidence
    out: set[str] = set()
    for key in ("daemons", "osds"):
        for x in ev.get(key) or ():
            out.add(f"osd.{x}" if isinstance(x, int) else str(x))
    for x in ev.get("pools") or ():
        out.add(f"pool {x}")
    hosts = ev.get("hosts")
    if isinstance(hosts, Mapping):
        out |= {f"host {h}" for h in hosts.values() if h}
    elif isinstance(hosts, (list, tuple)):
        out |= {f"host {h}" for h in hosts if h}
    if isinstance(ev.get("host"), str):
        out.add(f"host {ev['host']}")
    return out


def incident_names(inc: Incident) -> set[str]:
    """Everything an incident names: its findings' entities and targets (``pool X`` for a
    pool target), the hosts of disk entities (``disk /dev/sdb@node2``), and what their
    evidence names."""
    out: set[str] = set()
    for f in inc.findings:
        out.add(f.entity)
        if f.target:
            out.add(f.target)
        if "@" in f.entity:
            out.add(f"host {f.entity.rsplit('@', 1)[1]}")
        if f.entity.startswith("host "):
            out.add(f.entity)
        out |= _evidence_names(f)
    return out


def explains(m: AlertMapping, inc: Incident) -> bool:
    """The incident holds a finding the mapping names: one of its codes, or Ceph's own
    code as ``ceph X`` (root or folded in)."""
    ceph = {f"ceph {c}" for c in m.ceph}
    return any(f.code in m.codes or (f.code == "CEPH_HEALTH" and f.entity in ceph)
               for f in inc.findings)


@dataclass(frozen=True)
class Selection:
    incidents: tuple[Incident, ...]
    how: str  # "code+entity", "code", "entity", "all", "none"


def _narrow(incidents: Sequence[Incident], tiers: Sequence[set[str]]) -> list[Incident]:
    """Those naming the first tier's entities that any names (the OSD before its host)."""
    for ents in tiers:
        hit = [i for i in incidents if ents and incident_names(i) & ents]
        if hit:
            return hit
    return []


def select_one(name: str, labels: Mapping[str, str], incidents: Sequence[Incident],
               extra_entities: Iterable[str] = ()) -> Selection:
    """The incidents that explain one alert: by its mapping's codes, then the entity its
    labels name (the OSD or pool before the host); with no code match, those naming its
    entity; else none."""
    m = MAP.get(name)
    named = label_entities(name, labels)
    tiers = [{e for e in named if not e.startswith("host ")},
             {e for e in named if e.startswith("host ")}, set(extra_entities)]
    if m is not None and m.any_incident:  # what Ceph warns of: stordoc's problems, not INFO
        bad = tuple(i for i in incidents if i.severity >= Severity.WARN)
        return Selection(bad or tuple(incidents), "all")
    coded = [i for i in incidents if m is not None and explains(m, i)]
    hit = _narrow(coded, tiers)
    if hit:
        return Selection(tuple(hit), "code+entity")
    if coded:
        return Selection(tuple(coded), "code")
    hit = _narrow(incidents, tiers)
    if hit:
        return Selection(tuple(hit), "entity")
    return Selection((), "none")


def select(alerts: Iterable[tuple[str, Mapping[str, str]]], incidents: Sequence[Incident],
           ) -> list[Incident]:
    """The incidents a group of alerts (name, labels) is about, in the check's order."""
    ids: set[str] = set()
    for name, labels in alerts:
        ids |= {i.id for i in select_one(name, labels, incidents).incidents}
    return [i for i in incidents if i.id in ids]


# ---------------------------------------------------------------- coverage

@dataclass(frozen=True)
class Coverage:
    release: str
    total: int
    mapped: int
    diagnosed: int
    with_fix: int
    no_data: tuple[str, ...]
    unmapped: tuple[str, ...]


def coverage(release: str | None = None) -> Coverage:
    """Counts over the rules of ``release`` (None: every rule of any release)."""
    rules = [r for r in RULES if release is None or release in r.releases]
    mapped = [r for r in rules if r.name in MAP]
    return Coverage(
        release or "all", len(rules), len(mapped),
        sum(MAP[r.name].diagnosed for r in mapped),
        sum(bool(MAP[r.name].runbooks) and not MAP[r.name].no_data for r in mapped),
        tuple(r.name for r in mapped if MAP[r.name].no_data),
        tuple(r.name for r in rules if r.name not in MAP))


def rule_codes(name: str) -> tuple[str, ...]:
    """The Ceph health codes rule ``name`` fires on (from the rule file)."""
    r = BY_NAME.get(RENAMED.get(name, name))
    return r.health_codes if r else ()


# Rules renamed in a later release than checks.alert_rules holds (generated from Pacific's
# and Reef's files): Squid's ceph-mixin spells CephPGUnavilableBlockingIO right. Its
# alerts are the old rule's, mapped the same.
RENAMED: Mapping[str, str] = {"CephPGUnavailableBlockingIO": "CephPGUnavilableBlockingIO"}
MAP = {**MAP, **{new: MAP[old] for new, old in RENAMED.items()}}
