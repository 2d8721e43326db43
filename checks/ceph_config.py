"""Cheap checks on data already collected: settings that look fine until the day they
bite. Pools whose ``size`` equals ``min_size`` (one OSD down blocks their I/O), full
ratios raised above Ceph's defaults or out of order, ``require_osd_release`` behind the
running release (new features stay off; the upgrade is unfinished), OSDs without a device
class (CRUSH rules by class skip them).

Ratios in the osdmap are float32: compared with a tolerance.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

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
             "mon_warn_on_slow_ping_time lowered: OSD_SLOW_PING_TIME_*; "
             "osd_scrub_max_interval, osd_deep_scrub_interval or mon_max_pg_per_osd "
             "lowered for the manager: PG_NOT_SCRUBBED, PG_NOT_DEEP_SCRUBBED, "
             "TOO_MANY_PGS), or a monitor's mon_data_avail_warn raised at runtime "
             "(ceph tell) above the value it overrides: MON_DISK_LOW.", "config-restore"),
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
                          {**{k: round(v, 4) for k, v in ratios.items()},
                           "manual": _order_fix(ratios)})
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


def _order_fix(r: dict[str, float]) -> str:
    """The one command that puts the full ratios back in order (the lower one lowered to
    the next, never above Ceph's default), as a person runs it."""
    if r["nearfull"] > r["backfillfull"] + TOL:
        v = min(DEFAULT_RATIOS["nearfull"], r["backfillfull"])
        return f"`ceph osd set-nearfull-ratio {v:.2f}` puts nearfull under backfillfull"
    v = min(DEFAULT_RATIOS["backfillfull"], r["full"])
    return f"`ceph osd set-backfillfull-ratio {v:.2f}` puts backfillfull under full"


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


# ---------------------------------------------------------------- warning lines
# (issue 38.2: an option that sets the line a Ceph warning is raised at, moved so that
# Ceph warns where its line would not: the scrub stamps' age lines and the PGs per OSD the
# manager's PGMap judges by its own value of them, a monitor's free-space line)


@dataclass(frozen=True)
class LineRule:
    """An option that draws the line of one Ceph health warning. ``default`` is Ceph's
    (``ceph config help NAME``, the same on Pacific 16.2 and Reef 18.2); ``raised``: the
    warning comes sooner when the value goes up (else when it goes down); ``sections``: the
    configuration database sections the daemon that raises the warning reads, most
    specific first (the manager computes PG_NOT_SCRUBBED, PG_NOT_DEEP_SCRUBBED and
    TOO_MANY_PGS in its PGMap: an OSD's own scrub schedule is not changed by them)."""

    name: str
    default: float
    code: str
    sections: tuple[str, ...]
    raised: bool = False
    also: tuple[str, ...] = ()  # stordoc's own findings of the same warning


# PG_NOT_SCRUBBED: a PG's last scrub older than osd_scrub_max_interval x (1 +
# mon_warn_pg_not_scrubbed_ratio 0.5); PG_NOT_DEEP_SCRUBBED: osd_deep_scrub_interval x
# (1 + mon_warn_pg_not_deep_scrubbed_ratio 0.75) (src/mon/PGMap.cc, run in the manager)
SCRUB_WARN_RATIO = {"PG_NOT_SCRUBBED": 0.5, "PG_NOT_DEEP_SCRUBBED": 0.75}
LINE_RULES = {r.name: r for r in (
    LineRule("osd_scrub_max_interval", 604800.0, "PG_NOT_SCRUBBED", ("mgr", "global")),
    LineRule("osd_deep_scrub_interval", 604800.0, "PG_NOT_DEEP_SCRUBBED", ("mgr", "global")),
    LineRule("mon_max_pg_per_osd", 250.0, "TOO_MANY_PGS", ("mgr", "global"),
             also=("PGS_PER_OSD_HIGH",)),
    LineRule("mon_data_avail_warn", 30.0, "MON_DISK_LOW", ("mon", "global"), raised=True),
)}
_SINCE_RE = re.compile(r"\bnot (?:deep-)?scrubbed since (\S+)")
_PER_OSD_RE = re.compile(r"\((\d+) > max (\d+)\)")
_AVAIL_RE = re.compile(r"\bmon\.(\S+) has (\d+)% avail")
# the sources ``config show`` names, most binding first: the value a runtime override hides
_UNDER_OVERRIDE = ("cmdline", "env", "mon", "file")


@dataclass(frozen=True)
class LineOption:
    """An option whose value moves a Ceph warning's line so that Ceph warns where its
    line at ``base`` would not. ``who`` is the configuration database section (``mgr``,
    ``global``), or the daemon (``mon.a``) for a value set at runtime (``ceph tell``:
    ``config show`` source ``override``), which goes back to ``base``: the value it
    overrides (ceph.conf, the database), else Ceph's default."""

    who: str
    name: str
    value: str
    default: float
    base: str
    code: str  # the Ceph code it raises
    folds: tuple[str, ...]  # the codes, Ceph's and stordoc's, it explains
    runtime: bool = False
    why: str = ""  # what proves Ceph would not warn at ``base``

    @property
    def command(self) -> str:
        if self.runtime:
            return f"ceph tell {self.who} config set {self.name} {self.base}"
        return f"ceph config rm {self.who} {self.name}"


def _stamp(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("+0000", "+00:00")).timestamp()
    except ValueError:
        return None


def _line_not_crossed(rule: LineRule, st: CephState, base: float, now: float | None
                      ) -> str | None:
    """Why Ceph, with this line at ``base``, would not raise ``rule.code`` (None: it
    would, or that is not known)."""
    hc = next((h for h in st.health_checks if h.code == rule.code and not h.muted), None)
    if hc is None:
        return None
    if rule.code in SCRUB_WARN_RATIO:
        line = base * (1 + SCRUB_WARN_RATIO[rule.code])
        stamps = [t for d in hc.detail if (m := _SINCE_RE.search(d))
                  and (t := _stamp(m.group(1))) is not None]
        if not stamps or not now:
            return None
        age = now - min(stamps)
        if age >= line:
            return None
        return (f"the oldest {'deep-' if 'DEEP' in rule.code else ''}scrub is "
                f"{_age(age)} old; at {base:g} s Ceph warns after {_age(line)}")
    if rule.code == "TOO_MANY_PGS":
        m = _PER_OSD_RE.search(hc.summary)
        if m is None or int(m.group(1)) > base:
            return None
        return f"{m.group(1)} PGs per OSD, not above {base:g}"
    if rule.code == "MON_DISK_LOW":
        avail = [int(m.group(2)) for d in hc.detail if (m := _AVAIL_RE.search(d))]
        # Ceph warns at avail <= mon_data_avail_warn (src/mon/HealthMonitor.cc)
        if not avail or min(avail) <= base:
            return None
        return f"{min(avail)}% free, above {base:g} %"
    return None


def _age(s: float) -> str:
    if s >= 2 * 86400:
        return f"{s / 86400:.0f} d"
    if s >= 2 * 3600:
        return f"{s / 3600:.0f} h"
    return f"{s:.0f} s"


def line_options(st: CephState, now: float | None = None) -> list[LineOption]:
    """Options set in the configuration database for the section the warning's daemon
    reads (the most specific one it has), or at runtime on a monitor, that move a
    warning's line past Ceph's default so that Ceph warns now where the default (the
    value a runtime override hides) would not."""
    out: list[LineOption] = []
    db = {(c.section, c.name): c for c in st.config_db if not c.mask}
    for rule in LINE_RULES.values():
        base = rule.default
        for section in rule.sections:
            c = db.get((section, rule.name))
            if c is None:
                continue
            v = _num(c.value)
            moved = v is not None and (v > base + TOL if rule.raised else v < base - TOL)
            why = _line_not_crossed(rule, st, base, now) if moved else None
            if why:
                out.append(LineOption(section, rule.name, c.value, rule.default,
                                      f"{rule.default:g}", rule.code,
                                      (rule.code, *rule.also), why=why))
            break  # the most specific section set is what the daemon runs
    for mon, info in sorted(st.mon_data.items()):
        for rule in LINE_RULES.values():
            if "mon" not in rule.sections or info.get(f"{rule.name}.source") != "override":
                continue
            under = next((info[k] for s in _UNDER_OVERRIDE
                          if (k := f"{rule.name}.{s}") in info), f"{rule.default:g}")
            v, b = _num(info.get(rule.name, "")), _num(under)
            if v is None or b is None:
                continue
            moved = v > b + TOL if rule.raised else v < b - TOL
            why = _line_not_crossed(rule, st, b, now) if moved else None
            if why and any(f"mon.{mon} " in f"{d} " for h in st.health_checks
                           if h.code == rule.code for d in h.detail):
                out.append(LineOption(f"mon.{mon}", rule.name, info.get(rule.name, ""),
                                      rule.default, shown_value(under), rule.code,
                                      (rule.code, *rule.also), runtime=True, why=why))
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
    by_who_line: dict[str, list[LineOption]] = {}
    for lo in line_options(st, snap.taken_at):
        by_who_line.setdefault(lo.who, []).append(lo)
    for who, los in by_who_line.items():
        codes = sorted({lo.code for lo in los})
        folds = sorted({c for lo in los for c in lo.folds})
        how = "at runtime on" if los[0].runtime else "for"
        yield Finding(
            "CONFIG_OPTION_CAUSE", Severity.WARN, f"config {who}",
            ", ".join(f"{lo.name} {shown_value(lo.value)} ("
                      + (f"overriding {lo.base}, Ceph's default {lo.default:g}"
                         if lo.runtime else f"Ceph's default {lo.default:g}") + ")"
                      for lo in los)
            + f" set {how} {who} raises Ceph's {', '.join(codes)}, which "
            + ("the value it overrides" if los[0].runtime else "Ceph's default")
            + " would not (" + "; ".join(lo.why for lo in los) + "); put it back: "
            + " and ".join(f"`{lo.command}`" for lo in los),
            {"who": who, "options": {lo.name: lo.value for lo in los},
             "defaults": {lo.name: lo.default for lo in los},
             "back_to": {lo.name: lo.base for lo in los},
             "runtime": los[0].runtime, "ceph_codes": codes, "folds": folds,
             "explains": "warn-line", "commands": [lo.command for lo in los]},
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
    # warning lines (LINE_RULES): scrub stamp ages and PGs per OSD lowered, a monitor's
    # free-space line raised
    "osd_scrub_max_interval": (604800.0, "below"),
    "osd_deep_scrub_interval": (604800.0, "below"),
    "mon_max_pg_per_osd": (250.0, "below"),
    "mon_data_avail_warn": (30.0, "above"),
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
