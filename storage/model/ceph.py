"""The Ceph part of the snapshot: what the monitors and the manager said, parsed once.

Every field is typed; checks never read the raw JSON (``CephState.raw`` is kept only to
write captures and for evidence). Release names compare through :func:`release_major`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.model.mgrmon import CrushPlacement, MgrState
from storage.model.pgquery import LargeOmapObject, OsdFlaps, PgBlock
from storage.model.scrub import ScrubState
from storage.model.slowops import SlowState

# Ceph's release names by major version; Ceph prints the name in ``ceph version ...``
# and keeps it in the osdmap's ``require_osd_release``.
RELEASES: Mapping[str, int] = {
    "jewel": 10, "kraken": 11, "luminous": 12, "mimic": 13, "nautilus": 14,
    "octopus": 15, "pacific": 16, "quincy": 17, "reef": 18, "squid": 19, "tentacle": 20,
}


def release_major(name: str) -> int | None:
    """``"reef"`` -> 18; None for a name this table does not know (a newer release)."""
    return RELEASES.get(name.strip().lower())


def release_name(major: int) -> str | None:
    return next((n for n, m in RELEASES.items() if m == major), None)


@dataclass(frozen=True)
class PoolAutoscale:
    """One pool of ``osd pool autoscale-status`` (pg_autoscaler, a manager module): what
    the autoscaler computes for it and whether it would change pg_num."""

    pg_num_final: int  # where it would take pg_num
    would_adjust: bool  # its threshold (3x by default) is crossed: it would act (mode on)
    mode: str  # "on" | "warn" | "off", as the autoscaler read it
    pg_num_ideal: int = 0
    target_ratio: float = 0.0
    effective_target_ratio: float = 0.0
    capacity_ratio: float = 0.0
    bias: float = 1.0
    bulk: bool = False

@dataclass(frozen=True)
class OsdState:
    """One OSD as ``osd dump`` and ``osd tree`` describe it together.

    ``up``/``in_`` come from ``osd dump`` (0/1); ``host`` is the CRUSH host bucket from
    ``osd tree``; ``reweight`` 0 means out. ``down_since`` / ``out_since`` are epoch
    seconds when known (from ``osd dump``'s ``down_stamp`` / xinfo), used for "how long".
    """

    id: int
    uuid: str
    up: bool
    in_: bool
    exists: bool
    host: str | None
    crush_weight: float
    reweight: float
    device_class: str | None = None
    state: tuple[str, ...] = ()  # e.g. ("exists", "up") from osd dump
    up_from: int = 0
    up_thru: int = 0
    down_at: int = 0
    lost_at: int = 0  # the epoch `ceph osd lost N` marked it lost (0: never)
    down_since: float | None = None
    public_addr: str | None = None
    destroyed: bool = False
    new: bool = False  # created but never booted ("new" state)

    @property
    def name(self) -> str:
        return f"osd.{self.id}"


@dataclass(frozen=True)
class CrushHost:
    name: str
    osd_ids: tuple[int, ...]


@dataclass(frozen=True)
class PoolState:
    """One pool from ``osd pool ls detail`` (id key ``pool_id``) / ``osd dump`` (``pool``)."""

    id: int
    name: str
    size: int
    min_size: int
    pg_num: int
    pgp_num: int
    pg_num_target: int
    crush_rule: int
    type: str  # "replicated" | "erasure"
    application: tuple[str, ...] = ()
    pg_autoscale_mode: str = "off"  # "on" | "warn" | "off"
    pgp_num_target: int | None = None  # None: the release does not say (Octopus: = pgp_num)
    autoscale: PoolAutoscale | None = None  # what the autoscaler would do (mgr), when read
    target_size_ratio: float = 0.0
    target_size_bytes: int = 0
    # cache tiering
    tier_of: int = -1
    tiers: tuple[int, ...] = ()
    read_tier: int = -1
    write_tier: int = -1
    cache_mode: str = "none"
    target_max_bytes: int = 0
    target_max_objects: int = 0
    cache_target_dirty_ratio_micro: int = 400000
    cache_target_dirty_high_ratio_micro: int = 600000
    cache_target_full_ratio_micro: int = 800000
    hit_set_type: str = "none"
    hit_set_count: int = 0
    hit_set_period: int = 0
    min_read_recency_for_promote: int = 0
    min_write_recency_for_promote: int = 0
    quota_max_bytes: int = 0
    quota_max_objects: int = 0
    # usage from ``df``
    stored_bytes: int = 0
    objects: int = 0
    max_avail_bytes: int = 0
    percent_used: float = 0.0


@dataclass(frozen=True)
class PgSummary:
    num_pgs: int
    by_state: Mapping[str, int]  # "active+clean" -> 69
    stuck: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # "inactive" -> pgids


class SettleMethod(enum.StrEnum):
    """How ``PgSettle`` tells whether the PG states were reported on the current map."""

    OSDMAP = "osdmap"  # each PG's reported up/acting compared with the map's (osdmaptool)
    STAMP = "stamp"  # fallback: the monitor's osd_up_since/osd_in_since (a timer)
    UNKNOWN = "unknown"  # neither could be read


@dataclass(frozen=True)
class PgSettle:
    """Have the manager's PG states been reported on the current osdmap?

    After a map change (an OSD up/down/in/out, pg_temp, pg_num) the manager keeps each
    PG's state as its primary last reported it, on the map before, until the OSDs' next
    report: "65 active+clean" read 0.3 s after an ``osd in`` is the picture before it. With
    ``method`` OSDMAP, ``unreported`` counts the PGs whose reported up or acting set (and
    primaries) differ from what the map of ``epoch`` computes for them, or that only one
    side has (a new PG, a deleted pool); ``by_state`` are the states of that same dump.
    STAMP and UNKNOWN are fallbacks, and ``error`` says why the map could not be used.
    Which states count is ``checks.settle``'s rule, not this record's."""

    method: SettleMethod
    epoch: int | None = None  # the osdmap epoch the mapping was computed on
    num_pgs: int = 0  # PGs compared (the map's and the dump's, together)
    unreported: int = 0
    unreported_pgids: tuple[str, ...] = ()  # the first few, for evidence
    by_state: Mapping[str, int] = field(default_factory=dict)  # from the dump compared
    last_change: float | None = None  # osd_up_since/osd_in_since (the stamp fallback)
    error: str | None = None  # why not the map rule (None with method OSDMAP)


@dataclass(frozen=True)
class HealthMute:
    """One entry of ``health detail``'s ``mutes`` (``ceph health mute CODE [TTL]
    [--sticky]``). A mute that is not sticky is lifted by Ceph itself when its check gets
    worse (its count grows: one more nearfull OSD, one more flag) or clears."""

    code: str
    sticky: bool = False
    until: float | None = None  # the TTL's end (epoch seconds), None: until unmuted
    count: int = 0  # the check's count when muted (Ceph compares the count with it)


@dataclass(frozen=True)
class HealthCheck:
    """One entry of ``health detail``: Ceph's own code, severity, summary and details."""

    code: str
    severity: str  # "HEALTH_WARN" | "HEALTH_ERR"
    summary: str
    detail: tuple[str, ...] = ()
    muted: bool = False
    mute: HealthMute | None = None  # the mute's terms when ``muted``


@dataclass(frozen=True)
class OsdUsage:
    id: int
    utilization: float  # percent
    kb: int = 0
    kb_avail: int = 0
    pgs: int | None = None  # PG replicas on it (``osd df``'s ``pgs``); None: not reported



@dataclass(frozen=True)
class VersionCount:
    """How many daemons run one Ceph version (``versions``)."""

    version: str  # "18.2.7"
    release: str  # "reef"
    count: int

    @property
    def key(self) -> tuple[int, ...]:
        """Numeric order: (18, 2, 7); a version without numbers sorts first."""
        return version_key(self.version)


def version_key(version: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in version.replace("-", ".").split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


@dataclass(frozen=True)
class DaemonVersion:
    """One daemon's version from ``mon|mgr|osd metadata`` (read only when versions are
    mixed, to name the daemons that are behind)."""

    kind: str  # "mon" | "mgr" | "osd" | "mds"
    name: str  # "osd.3", "mon.a", "mgr.x"
    version: str
    release: str
    host: str | None = None


@dataclass(frozen=True)
class CephVersions:
    """``versions``: per daemon kind, the versions running and how many of each."""

    by_kind: Mapping[str, tuple[VersionCount, ...]] = field(default_factory=dict)
    daemons: tuple[DaemonVersion, ...] = ()  # filled only when more than one version runs

    def all(self) -> tuple[VersionCount, ...]:
        """Every version over all kinds (counts summed), oldest first."""
        merged: dict[tuple[str, str], int] = {}
        for counts in self.by_kind.values():
            for c in counts:
                merged[(c.version, c.release)] = merged.get((c.version, c.release), 0) + c.count
        return tuple(sorted((VersionCount(v, r, n) for (v, r), n in merged.items()),
                            key=lambda c: c.key))

    def lowest(self, kind: str | None = None) -> VersionCount | None:
        counts = self.all() if kind is None else tuple(
            sorted(self.by_kind.get(kind, ()), key=lambda c: c.key))
        return counts[0] if counts else None

    def newest(self, kind: str | None = None) -> VersionCount | None:
        counts = self.all() if kind is None else tuple(
            sorted(self.by_kind.get(kind, ()), key=lambda c: c.key))
        return counts[-1] if counts else None

    @property
    def mixed(self) -> bool:
        return len({c.version for c in self.all()}) > 1


@dataclass(frozen=True)
class CrashReport:
    """One entry of ``crash ls-new`` (a crash nobody has archived yet)."""

    crash_id: str
    entity: str  # "osd.1"
    timestamp: str  # as Ceph printed it
    when: float | None = None  # epoch seconds
    process: str | None = None
    ceph_version: str | None = None
    assert_msg: str | None = None
    assert_condition: str | None = None
    backtrace: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfigSetting:
    """One option someone set: in the monitors' configuration database (``config dump``:
    ``section`` global/osd/osd.3, ``source`` "mon") or as a daemon runs it (``config show
    osd.N``: ``source`` "file" for ceph.conf, "mon", "cmdline", "override" ...)."""

    name: str
    value: str
    section: str = ""
    source: str = "mon"
    mask: str = ""  # "class:ssd", "host:node1" ... ("" none)
    # values this one overrides, (source, value): a ceph.conf value the daemon replaced
    overrides: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RunningConfig:
    """The non-default settings one OSD runs with (``config show osd.N``), read from one up
    OSD: the scheduler it runs and the recovery options set on it, with where each came
    from. A setting only another OSD's ceph.conf carries is not seen."""

    daemon: str  # "osd.0"
    settings: Mapping[str, ConfigSetting] = field(default_factory=dict)

    def get(self, name: str) -> ConfigSetting | None:
        return self.settings.get(name)


@dataclass(frozen=True)
class CephDevice:
    """One device of ``ceph device ls`` (the manager's device table; the devicehealth
    module's prediction when it made one). Stamps are epoch seconds; None: not said."""

    devid: str
    location: tuple[tuple[str, str], ...] = ()  # (host, dev) e.g. ("node1", "sdb")
    daemons: tuple[str, ...] = ()  # "osd.1", "mon.a"
    life_expectancy_min: float | None = None
    life_expectancy_max: float | None = None
    life_expectancy_stamp: float | None = None
    wear_level: float | None = None  # 0..1, 1 = worn out


@dataclass(frozen=True)
class QuotaPrevious:
    """A pool quota's previous value from the osdmap history (``osd dump EPOCH``): the
    value it had in the last epoch it differed (0: no quota), or None and why not
    (trimmed, the pool had it since it was created, not found within the look-back)."""

    value: int | None
    epoch: int | None = None
    why: str = ""


@dataclass(frozen=True)
class CephState:
    """What the monitors and the manager said, every fact in a typed field.

    ``raw`` keeps each command's JSON to write captures (``storage.ceph.save_raw_dir``);
    checks and runbooks read the typed fields only.
    """

    fsid: str
    version: str  # lowest running, e.g. "16.2.15"
    release: str  # its name, e.g. "pacific"; require_osd_release when versions are unknown
    epoch: int
    flags: tuple[str, ...]
    osds: tuple[OsdState, ...]
    hosts: tuple[CrushHost, ...]
    pools: tuple[PoolState, ...]
    pgs: PgSummary
    health_status: str
    health_checks: tuple[HealthCheck, ...]
    full_ratio: float
    backfillfull_ratio: float
    nearfull_ratio: float
    osd_usage: tuple[OsdUsage, ...] = ()
    mon_quorum: tuple[str, ...] = ()
    mon_names: tuple[str, ...] = ()
    # ``config get mon KEY``: mon_max_pg_per_osd, mon_osd_down_out_interval,
    # osd_pool_default_pg_autoscale_mode, osd_failsafe_full_ratio (CONFIG_KEYS in
    # storage.ceph.collect)
    config: Mapping[str, str] = field(default_factory=dict)
    total_bytes: int = 0
    total_avail_bytes: int = 0
    collected_at: float = 0.0
    require_osd_release: str = ""  # the osdmap's, e.g. "pacific"
    versions: CephVersions = field(default_factory=CephVersions)
    crashes: tuple[CrashReport, ...] | None = None  # None: ``crash ls-new`` not read
    mon_time_skew: Mapping[str, float] = field(default_factory=dict)  # mon -> |skew| s
    config_db: tuple[ConfigSetting, ...] = ()  # ``config dump``
    osd_config: RunningConfig | None = None  # ``config show osd.N`` of one up OSD
    # have the PG states been reported on the current map (None: not read, e.g. because
    # the PGs read unclean anyway; ``storage.ceph.settle``)
    pg_settle: PgSettle | None = None
    # when the count of up (in) OSDs last changed: the monitor's ``osd_up_since``
    # (``osd_in_since``) of ``osd stat``/``status``, None when not said
    osd_up_since: float | None = None
    osd_in_since: float | None = None
    # command (``raw`` key) -> why it gave nothing; the others were read
    errors: Mapping[str, str] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict)
    # the manager (``mgr dump``; None: not read) and CRUSH placement (``osd crush rule
    # dump`` with ``osd tree``; None: not read): storage.model.mgrmon
    mgr: MgrState | None = None
    crush: CrushPlacement | None = None
    # mon name -> what it runs with: mon_data (its data directory), mon_data_avail_warn,
    # mon_data_avail_crit, mon_data_size_warn (``tell mon.X config get``), read only when
    # Ceph raises MON_DISK_LOW/CRIT/BIG
    mon_data: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # ``device ls`` (a manager command; empty: not read, or a snapshot from before)
    devices: tuple[CephDevice, ...] = ()
    # slow requests (``storage.model.slowops``): read only when Ceph names slow OSDs
    slow: SlowState = field(default_factory=SlowState)
    # inconsistent PGs and their bad copies (``storage.model.scrub``), read only when Ceph
    # reports scrub errors (None: not read)
    scrub: ScrubState | None = None
    # stuck PGs summarised from ``pg query`` (at most a few) and OSD flaps from the
    # cluster log (storage.model.pgquery; empty: none, not read, or an older snapshot)
    pg_blocks: tuple[PgBlock, ...] = ()
    osd_flaps: tuple[OsdFlaps, ...] = ()
    log_window_s: float | None = None  # how far back the cluster log read reaches
    # the large omap objects the cluster log names (LARGE_OMAP_OBJECTS), newest last
    large_omap: tuple[LargeOmapObject, ...] = ()
    # pool -> quota field (max_objects, max_bytes) -> its previous value, read only for a
    # quota at or near its pool's use (storage.ceph.quota_history)
    quota_history: Mapping[str, Mapping[str, QuotaPrevious]] = field(default_factory=dict)

    def osd(self, osd_id: int) -> OsdState | None:
        for o in self.osds:
            if o.id == osd_id:
                return o
        return None

    def pool(self, name: str) -> PoolState | None:
        for p in self.pools:
            if p.name == name:
                return p
        return None

    def pool_by_id(self, pool_id: int) -> PoolState | None:
        for p in self.pools:
            if p.id == pool_id:
                return p
        return None
