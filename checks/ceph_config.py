"""Cheap checks on data already collected: settings that look fine until the day they
bite. Pools whose ``size`` equals ``min_size`` (one OSD down blocks their I/O), full
ratios raised above Ceph's defaults or out of order, ``require_osd_release`` behind the
running release (new features stay off; the upgrade is unfinished), OSDs without a device
class (CRUSH rules by class skip them).

Ratios in the osdmap are float32: compared with a tolerance.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.osd import cluster_entity
from storage.model import CephState, ClusterSnapshot

TOL = 1e-6
# Ceph's defaults (mon_osd_nearfull_ratio, mon_osd_backfillfull_ratio, mon_osd_full_ratio)
DEFAULT_RATIOS = {"nearfull": 0.85, "backfillfull": 0.90, "full": 0.95}
RELEASES = ("luminous", "mimic", "nautilus", "octopus", "pacific", "quincy", "reef",
            "squid", "tentacle")

CONFIG_CODES = (
    CodeInfo("POOL_SIZE_EQ_MIN_SIZE", Severity.WARN,
             "A replicated pool has size == min_size: one OSD down blocks its I/O."),
    CodeInfo("FULL_RATIOS_RAISED", Severity.WARN,
             "nearfull/backfillfull/full ratios are above Ceph's defaults: less headroom "
             "before writes stop."),
    CodeInfo("FULL_RATIOS_ORDER", Severity.CRIT,
             "The full ratios are out of order (nearfull <= backfillfull <= full fails)."),
    CodeInfo("REQUIRE_OSD_RELEASE_BEHIND", Severity.WARN,
             "require_osd_release is older than the release the OSDs run."),
    CodeInfo("OSD_NO_DEVICE_CLASS", Severity.WARN,
             "An OSD has no device class: CRUSH rules that select a class skip it."),
    CodeInfo("FULL_RATIO_LOWERED", Severity.WARN,
             "A nearfull/backfillfull/full ratio set below Ceph's default puts OSDs past "
             "it that Ceph's default would not: the setting is the cause (CRIT for the "
             "full ratio: writes stop).", "ratio-restore"),
    CodeInfo("CONFIG_OPTION_CAUSE", Severity.WARN,
             "An option set in the monitors' configuration database, changed from Ceph's "
             "default, raises a warning Ceph would not raise at the default (e.g. "
             "mon_warn_on_slow_ping_time lowered: OSD_SLOW_PING_TIME_*).", "config-restore"),
)


@check("ceph-config", codes=CONFIG_CODES, needs=("ceph",))
def check_config(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    for p in st.pools:
        if p.type == "replicated" and p.size > 1 and p.min_size >= p.size:
            yield Finding("POOL_SIZE_EQ_MIN_SIZE", Severity.WARN, f"pool {p.name}",
                          f"pool {p.name} has size {p.size} and min_size {p.min_size}: one "
                          f"OSD down blocks I/O to its PGs (use min_size {p.size - 1}: "
                          f"`ceph osd pool set {p.name} min_size {p.size - 1}`)",
                          {"pool": p.name, "size": p.size, "min_size": p.min_size})
    ratios = {"nearfull": st.nearfull_ratio, "backfillfull": st.backfillfull_ratio,
              "full": st.full_ratio}
    ent = f"{cluster_entity(snap)} full ratios"
    if all(ratios.values()):
        raised = {k: round(v, 4) for k, v in ratios.items() if v > DEFAULT_RATIOS[k] + TOL}
        if not (ratios["nearfull"] <= ratios["backfillfull"] + TOL
                and ratios["backfillfull"] <= ratios["full"] + TOL):
            yield Finding("FULL_RATIOS_ORDER", Severity.CRIT, ent,
                          "full ratios out of order: nearfull "
                          f"{ratios['nearfull']:.2f}, backfillfull {ratios['backfillfull']:.2f}"
                          f", full {ratios['full']:.2f} (must rise in that order): Ceph "
                          "blocks backfill or writes before it warns",
                          {k: round(v, 4) for k, v in ratios.items()})
        elif raised:
            yield Finding("FULL_RATIOS_RAISED", Severity.WARN, ent,
                          "full ratios raised above Ceph's defaults ("
                          + ", ".join(f"{k} {v:.2f} > {DEFAULT_RATIOS[k]:.2f}"
                                      for k, v in raised.items())
                          + "): fine for an emergency, lower them when space is back",
                          {"ratios": {k: round(v, 4) for k, v in ratios.items()},
                           "defaults": DEFAULT_RATIOS, "raised": raised})
    yield from _settings_as_causes(snap, st)
    req = st.require_osd_release
    if req in RELEASES and st.release in RELEASES and \
            RELEASES.index(req) < RELEASES.index(st.release):
        yield Finding("REQUIRE_OSD_RELEASE_BEHIND", Severity.WARN, cluster_entity(snap),
                      f"require_osd_release is {req} but the OSDs run {st.release}: the "
                      f"upgrade is unfinished (`ceph osd require-osd-release {st.release}` "
                      "once every OSD runs it)",
                      {"require_osd_release": req, "running": st.release,
                       "version": st.version})
    for o in st.osds:
        if o.exists and not o.destroyed and o.host and not o.device_class:
            yield Finding("OSD_NO_DEVICE_CLASS", Severity.WARN, o.name,
                          f"{o.name} on {o.host} has no device class: CRUSH rules that "
                          f"select hdd/ssd skip it (`ceph osd crush set-device-class CLASS "
                          f"{o.name}`)", {"osd": o.id, "host": o.host})


# ---------------------------------------------------------------- settings as causes
# (issue 38.2: a ratio or an option that raises a warning is the incident's root, named
# with its value, Ceph's default and what undoes it)

# a ratio is put back when it leaves at least this much room above the fullest OSD
RATIO_HEADROOM = 0.01
# the Ceph health codes a ratio below the OSDs' fill raises
RATIO_CODES = {"nearfull": ("OSD_NEARFULL", "POOL_NEARFULL"),
               "backfillfull": ("OSD_BACKFILLFULL", "POOL_BACKFILLFULL", "PG_BACKFILL_FULL",
                                "PG_RECOVERY_FULL"),
               "full": ("OSD_FULL", "POOL_FULL")}


@dataclass(frozen=True)
class LoweredRatio:
    """A full ratio set below Ceph's default that alone puts OSDs past it: the fullest
    OSD is past the value set but under Ceph's default for it."""

    name: str  # "nearfull" | "backfillfull" | "full"
    value: float
    default: float
    fullest: float  # 0..1
    fullest_osd: str
    past: tuple[str, ...]  # the OSDs past the value

    @property
    def command(self) -> str:
        return f"ceph osd set-{self.name}-ratio {self.default:g}"


def ratio_causes(value: float, default: float, fullest: float) -> bool:
    """Does a ratio of ``value`` put OSDs past it where Ceph's default would not (or
    leave less than RATIO_HEADROOM above the fullest OSD)?"""
    return value < default - TOL and fullest >= value - RATIO_HEADROOM and fullest < default


def lowered_ratios(st: CephState) -> list[LoweredRatio]:
    usage = [u for u in st.osd_usage if u.kb > 0]
    if not usage:
        return []
    top = max(usage, key=lambda u: u.utilization)
    fullest = top.utilization / 100.0
    out = []
    for name, value in (("nearfull", st.nearfull_ratio),
                        ("backfillfull", st.backfillfull_ratio), ("full", st.full_ratio)):
        default = DEFAULT_RATIOS[name]
        if value and ratio_causes(value, default, fullest):
            past = tuple(f"osd.{u.id}" for u in sorted(usage, key=lambda u: u.id)
                         if u.utilization / 100.0 >= value - TOL)
            out.append(LoweredRatio(name, round(value, 4), default, round(fullest, 4),
                                    f"osd.{top.id}", past))
    return out


@dataclass(frozen=True)
class OptionRule:
    """An option whose value, changed from Ceph's default, raises a warning Ceph would not
    raise at the default. ``default`` is Ceph's (``ceph config help NAME``, the same on
    Pacific and Reef); ``codes`` the health codes it raises."""

    name: str
    default: float
    codes: tuple[str, ...]
    what: str  # what the option does, for people


PING_CODES = ("OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT")
# Ceph's slow heartbeat line at its defaults: osd_heartbeat_grace (20 s) x
# mon_warn_on_slow_ping_ratio (0.05) = 1000 ms, used while mon_warn_on_slow_ping_time is 0
DEFAULT_PING_WARN_MS = 1000.0
OPTION_RULES = {r.name: r for r in (
    OptionRule("mon_warn_on_slow_ping_time", 0.0, PING_CODES,
               "the slow heartbeat warning line in ms (0: osd_heartbeat_grace x "
               "mon_warn_on_slow_ping_ratio = 1000 ms)"),
    OptionRule("mon_warn_on_slow_ping_ratio", 0.05, PING_CODES,
               "the slow heartbeat warning line as a share of osd_heartbeat_grace"),
)}


def ping_warn_ms(values: dict[str, float]) -> float:
    """The slow heartbeat line (ms) these option values give (Ceph's defaults else)."""
    t = values.get("mon_warn_on_slow_ping_time", 0.0)
    if t > 0:
        return t
    return 20_000.0 * values.get("mon_warn_on_slow_ping_ratio", 0.05)


@dataclass(frozen=True)
class CausingOption:
    who: str  # the config db section: global, mon, osd, osd.3
    name: str
    value: str
    default: float
    codes: tuple[str, ...]  # the Ceph codes present that it raises

    @property
    def command(self) -> str:
        return f"ceph config rm {self.who} {self.name}"


def _num(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


def shown_value(v: str) -> str:
    """``20.000000`` (as ``config dump`` says it) -> ``20``."""
    n = _num(v)
    return f"{n:g}" if n is not None else v


def causing_options(st: CephState) -> list[CausingOption]:
    """Options of the monitors' configuration database (``config dump``) that differ
    from Ceph's default and raise a warning Ceph raises now but would not at the default
    (the slow heartbeats of OSD_SLOW_PING_TIME_* all under Ceph's default line)."""
    present = {h.code for h in st.health_checks if not h.muted}
    out: list[CausingOption] = []
    ping = [c for c in st.config_db if c.name in OPTION_RULES and not c.mask
            and c.section in ("global", "mon", "mgr", "osd")]
    if ping and present & set(PING_CODES) and st.slow.pings:
        set_vals = {c.name: v for c in ping if (v := _num(c.value)) is not None}
        worst = max(p.ms for p in st.slow.pings)
        if ping_warn_ms(set_vals) < DEFAULT_PING_WARN_MS - TOL and \
                worst < DEFAULT_PING_WARN_MS:
            for c in ping:
                v = _num(c.value)
                rule = OPTION_RULES[c.name]
                if v is None or abs(v - rule.default) <= TOL:
                    continue
                out.append(CausingOption(c.section, c.name, c.value, rule.default,
                                         tuple(k for k in PING_CODES if k in present)))
    return out


def _settings_as_causes(snap: ClusterSnapshot, st: CephState) -> Iterator[Finding]:
    low = lowered_ratios(st)
    if low:
        worst = low[-1]  # full before backfillfull before nearfull
        codes = [c for r in low for c in RATIO_CODES[r.name]
                 if any(h.code == c for h in st.health_checks)]
        yield Finding(
            "FULL_RATIO_LOWERED", Severity.CRIT if worst.name == "full" else Severity.WARN,
            f"{cluster_entity(snap)} full ratios",
            "; ".join(f"{r.name} ratio {r.value:g} is below Ceph's default {r.default:g}"
                      for r in low)
            + f": it alone puts {len(worst.past)} OSD(s) past it (fullest "
            f"{worst.fullest_osd} {worst.fullest:.1%}, under {worst.default:g})"
            + (f", Ceph's {', '.join(codes)}" if codes else "")
            + "; put it back: " + " and ".join(f"`{r.command}`" for r in reversed(low)),
            {"ratios": {r.name: r.value for r in low},
             "defaults": {r.name: r.default for r in low},
             "fullest": worst.fullest, "fullest_osd": worst.fullest_osd,
             "past": list(worst.past), "ceph_codes": codes, "explains": "fill",
             "commands": [r.command for r in reversed(low)]},
            runbook="ratio-restore", target=snap.cluster)
    by_who: dict[str, list[CausingOption]] = {}
    for o in causing_options(st):
        by_who.setdefault(o.who, []).append(o)
    for who, opts in by_who.items():
        codes = sorted({c for o in opts for c in o.codes})
        yield Finding(
            "CONFIG_OPTION_CAUSE", Severity.WARN, f"config {who}",
            ", ".join(f"{o.name} {shown_value(o.value)} (Ceph's default {o.default:g})"
                      for o in opts)
            + f" set for {who} raises Ceph's {', '.join(codes)}, which Ceph's default "
            "would not (every slow heartbeat is under "
            f"{DEFAULT_PING_WARN_MS:g} ms); put it back: "
            + " and ".join(f"`{o.command}`" for o in opts),
            {"who": who, "options": {o.name: o.value for o in opts},
             "defaults": {o.name: o.default for o in opts}, "ceph_codes": codes,
             "explains": "slow-ping", "commands": [o.command for o in opts]},
            runbook="config-restore", target=who)


# Ceph's defaults of the options a fault is made of (``ceph config help NAME``, read on
# the lab's Pacific 16.2 and Reef 18.2 alike), and which way a value is a fault: a
# warning line lowered (raises warnings Ceph's default would not), a debug injection on
FAULT_DEFAULTS: dict[str, tuple[float, str]] = {
    "mon_warn_on_slow_ping_time": (0.0, "ping"),  # 0: 1000 ms from the grace and ratio
    "mon_warn_on_slow_ping_ratio": (0.05, "below"),
    "osd_op_complaint_time": (30.0, "below"),  # SLOW_OPS after this many seconds
    "osd_op_history_slow_op_threshold": (10.0, "below"),
    "osd_debug_inject_dispatch_delay_probability": (0.0, "above"),
    "osd_debug_inject_dispatch_delay_duration": (0.1, "other"),
}


def option_default(name: str) -> float | None:
    got = FAULT_DEFAULTS.get(name)
    return got[0] if got else None


def option_is_fault(name: str, value: str) -> bool:
    """Is ``value`` of ``name`` (set in the configuration database) a fault: a warning
    line under Ceph's default, or a debug injection switched on?"""
    v = _num(value)
    got = FAULT_DEFAULTS.get(name)
    if got is None:
        return "debug_inject" in name and value.strip().lower() not in (
            "", "0", "0.0", "0.000000", "false")
    if v is None:
        return False
    default, how = got
    if how == "ping":
        return 0 < v < DEFAULT_PING_WARN_MS
    if how == "below":
        return v < default - TOL
    if how == "above":
        return v > default + TOL
    return abs(v - default) > TOL
