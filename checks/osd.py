"""OSD state checks: down+in, down+out, up+out, never-up, destroyed, host down, osdmap flags.

Ceph's own ``OSD_DOWN`` counts only OSDs that are still *in*; once an OSD has been down
for ``mon_osd_down_out_interval`` it is marked out, the warning clears and the cluster can
report HEALTH_OK with a dead disk. These checks keep reporting such OSDs, say for how long
and on which host, and name the runbook that brings them back.
"""

from __future__ import annotations

from collections.abc import Iterator

from checks.hostdiag import diagnose_osd
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import CephState, ClusterSnapshot, OsdState

# What each osdmap flag does to the cluster, in the words an on-call engineer needs.
FLAG_EFFECTS: dict[str, str] = {
    "noout": "down OSDs are never marked out, so their data is not re-replicated",
    "noin": "booting OSDs are not marked in and take no data",
    "nodown": "failed OSDs are not marked down; clients may hang on them",
    "noup": "OSDs cannot boot (they are not marked up)",
    "pause": "all client reads and writes are blocked",
    "pauserd": "all client reads are blocked",
    "pausewr": "all client writes are blocked",
    "norebalance": "data is not rebalanced after changes",
    "norecover": "recovery is disabled: degraded data stays degraded",
    "nobackfill": "backfill is disabled: misplaced/degraded data is not moved",
    "noscrub": "scrubbing is disabled",
    "nodeep-scrub": "deep scrubbing is disabled",
    "notieragent": "the cache tiering agent is stopped (no flush/evict)",
    "nosnaptrim": "snapshot trimming is disabled",
}
# Flags that block I/O or recovery outright are critical, the rest are warnings.
CRIT_FLAGS = frozenset({"pause", "pauserd", "pausewr", "noup", "norecover"})
# The flag names ``ceph osd set|unset`` takes (Pacific, Reef: its EINVAL lists them).
# ``osd dump`` spells ``pause`` as two bits, ``pauserd,pausewr``: Ceph refuses
# ``ceph osd unset pauserd``; ``ceph osd unset pause`` clears both.
CEPH_SET_FLAGS = ("full", "pause", "noup", "nodown", "noout", "noin", "nobackfill",
                  "norebalance", "norecover", "noscrub", "nodeep-scrub", "notieragent",
                  "nosnaptrim", "pglog_hardlimit")
_OSDMAP_SPELLING = {"pauserd": "pause", "pausewr": "pause"}


def ceph_flag_name(flag: str) -> str:
    """The name ``ceph osd unset`` takes for a flag as ``osd dump`` spells it
    (``pauserd`` -> ``pause``)."""
    return _OSDMAP_SPELLING.get(flag, flag)


def cluster_flags(flags: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    """The cluster's problem flags by the name Ceph takes, each with its osdmap
    spellings: ``pauserd,pausewr`` is one ``pause``. Feature bits are left out."""
    out: dict[str, list[str]] = {}
    for flag in flags:
        if flag in FLAG_EFFECTS:
            out.setdefault(ceph_flag_name(flag), []).append(flag)
    return out


def fmt_duration(seconds: float) -> str:
    """``3725`` -> ``"1h 2m"``: short, for a message read on a phone."""
    s = max(0, int(seconds))
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    if d:
        return f"{d}d {h}h"
    if h:
        return f"{h}h {m}m"
    if m:
        return f"{m}m {sec}s" if m < 10 else f"{m}m"
    return f"{sec}s"


def cluster_entity(snap: ClusterSnapshot) -> str:
    return f"cluster {snap.cluster}"


def _where(o: OsdState, hosts_osd_count: dict[str, int]) -> str:
    if not o.host:
        return "not in the CRUSH map"
    if hosts_osd_count.get(o.host, 0) == 1:
        return f"on host {o.host} (its only OSD)"
    return f"on host {o.host}"


def _down_for(o: OsdState, now: float) -> str:
    if o.down_since is None:
        return "down since an unknown time"
    return f"down for {fmt_duration(now - o.down_since)}"


# Parts of a PG state that mean "not fully clean" even next to active+clean. "remapped":
# acting is a pg_temp, not the up set; the PG re-peers onto its up set when the monitor
# drops it (seen on the lab after backfill: active+clean+remapped, then peering).
# laggy/wait (Octopus+): the PG's read lease lapsed or is not yet held, so it does not
# serve I/O though it reads active+clean (checks.pgs: PGS_LAGGY)
LAGGY_PARTS = frozenset({"laggy", "wait"})
UNCLEAN_PARTS = frozenset({"inconsistent", "degraded", "undersized", "stale", "down",
                           "incomplete", "peering", "remapped", *LAGGY_PARTS})


def pg_state_is_clean(state: str) -> bool:
    """``active+clean`` (+scrubbing, +snaptrim, ...) and nothing that says otherwise.
    Whether a state read right after an osdmap change counts at all: ``checks.settle``."""
    parts = set(state.split("+"))
    return {"active", "clean"} <= parts and not parts & UNCLEAN_PARTS


def _redundancy(st: CephState) -> str:
    """What being out did to the data: re-replicated, or still short of copies."""
    short = sum(n for state, n in st.pgs.by_state.items()
                if {"degraded", "undersized"} & set(state.split("+")))
    if short:
        return f"{short} PGs are still degraded/undersized without it"
    unclean = sum(n for state, n in st.pgs.by_state.items() if not pg_state_is_clean(state))
    if unclean:
        return f"{unclean} PGs are not active+clean yet"
    if st.pgs.by_state:
        return "its data has been re-replicated elsewhere"
    return "PG states unknown"


def _evidence(o: OsdState, state: CephState, snap: ClusterSnapshot) -> dict[str, object]:
    ev: dict[str, object] = {
        "osd": o.id, "host": o.host, "up": o.up, "in": o.in_, "reweight": o.reweight,
        "state": list(o.state), "down_at_epoch": o.down_at, "up_from_epoch": o.up_from,
        "down_since": o.down_since, "device_class": o.device_class,
    }
    if o.host and o.host in snap.hosts and snap.hosts[o.host].error:
        ev["host_error"] = snap.hosts[o.host].error
    return ev


def _repair(o: OsdState, st: CephState, snap: ClusterSnapshot,
            ctx: CheckContext) -> tuple[str, str]:
    """The runbook that will actually run for a down OSD (from its host's diagnosis when
    host facts were collected: remount, activate or start) and the words for it."""
    f = snap.hosts.get(o.host or "")
    if f is not None and f.reachable:
        dg = diagnose_osd(f, o, st.fsid, ctx.now, ctx.thresholds.io_error_window_s)
        rb = dg.runbook() if dg is not None else None
        if rb == "osd-remount":
            return rb, "mount its data dir and start it"
        if rb == "osd-activate":
            return rb, "activate it (ceph-volume) and start it"
    return "osd-start", "start it"


def _down_out_interval(state: CephState) -> float | None:
    try:
        return float(state.config["mon_osd_down_out_interval"])
    except (KeyError, ValueError):
        return None


OSD_CODES = (
    CodeInfo("OSD_DOWN_IN", Severity.CRIT,
             "An OSD is down but still in: its PGs are degraded until it returns or is "
             "marked out.", "osd-start"),
    CodeInfo("OSD_DOWN_OUT", Severity.WARN,
             "An OSD is down and out; Ceph's OSD_DOWN no longer reports it and the cluster "
             "may look healthy with one disk fewer.", "osd-start"),
    CodeInfo("OSD_UP_OUT", Severity.WARN,
             "An OSD is running but out (reweight 0): it holds no data.", "osd-in"),
    CodeInfo("OSD_NEVER_UP", Severity.WARN,
             "An OSD exists in the osdmap but has never booted."),
    CodeInfo("OSD_DESTROYED", Severity.WARN,
             "An OSD is marked destroyed: its id is reserved for a replacement disk."),
    CodeInfo("OSD_HOST_DOWN", Severity.CRIT,
             "Every OSD of a CRUSH host (with two or more OSDs) is down: look at the host "
             "first."),
    CodeInfo("OSDMAP_FLAGS", Severity.WARN,
             "Cluster-wide or per-OSD osdmap flags (noout, noin, pause, ...) are set."),
)


@check("ceph-osds", codes=OSD_CODES, needs=("ceph",))
def check_osds(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    """Per-OSD state, then whole hosts, then flags. One pass over the OSDs (O(n))."""
    st = snap.ceph
    assert st is not None
    now = ctx.now
    per_host = {h.name: len(h.osd_ids) for h in st.hosts}
    interval = _down_out_interval(st)
    for o in st.osds:
        if not o.exists:
            continue
        name = o.name
        where = _where(o, per_host)
        if o.destroyed:
            yield Finding("OSD_DESTROYED", Severity.WARN, name,
                          f"{name} {where} is destroyed: waiting for a replacement disk "
                          f"(recreate it with the same id, or purge it)",
                          _evidence(o, st, snap))
            continue
        if not o.up and o.up_from == 0:
            yield Finding("OSD_NEVER_UP", Severity.WARN, name,
                          f"{name} {where} was created but has never booted: check its "
                          f"deployment (keyring, data directory, daemon log)",
                          _evidence(o, st, snap))
            continue
        if not o.up and o.in_:
            msg = (f"{name} {where} is down but still in ({_down_for(o, now)}): its PGs "
                   f"are degraded")
            if interval and o.down_since is not None:
                left = o.down_since + interval - now
                if left > 0:
                    msg += f"; Ceph marks it out in about {fmt_duration(left)}"
            rb, how = _repair(o, st, snap, ctx)
            yield Finding("OSD_DOWN_IN", Severity.CRIT, name, msg + f"; {how}",
                          _evidence(o, st, snap), runbook=rb, target=name,
                          since=o.down_since)
        elif not o.up:
            rb, how = _repair(o, st, snap, ctx)
            yield Finding("OSD_DOWN_OUT", Severity.WARN, name,
                          f"{name} {where} is down and out ({_down_for(o, now)}); Ceph's "
                          f"OSD_DOWN no longer shows it; {_redundancy(st)}: {how}, or "
                          f"remove it for good",
                          _evidence(o, st, snap), runbook=rb, target=name,
                          since=o.down_since)
        elif not o.in_:
            yield Finding("OSD_UP_OUT", Severity.WARN, name,
                          f"{name} {where} is up but out (reweight {o.reweight:g}): it holds "
                          f"no data; mark it in unless it is being drained on purpose",
                          _evidence(o, st, snap), runbook="osd-in", target=name)
    yield from _hosts_down(snap, st, now)
    yield from _flags(snap, st)


def _hosts_down(snap: ClusterSnapshot, st: CephState, now: float) -> Iterator[Finding]:
    by_id = {o.id: o for o in st.osds}
    for h in st.hosts:
        osds = [by_id[i] for i in h.osd_ids if i in by_id and by_id[i].exists
                and not by_id[i].destroyed]
        # A one-OSD host is already fully described by that OSD's own finding.
        if len(osds) < 2 or any(o.up for o in osds):
            continue
        since = [o.down_since for o in osds if o.down_since is not None]
        first = min(since) if since else None
        how_long = f" for {fmt_duration(now - first)}" if first is not None else ""
        n_in = sum(1 for o in osds if o.in_)
        ev: dict[str, object] = {"host": h.name, "osds": [o.id for o in osds],
                                 "in": n_in, "down_since": first}
        facts = snap.hosts.get(h.name)
        if facts is not None and facts.error:
            ev["host_error"] = facts.error
            hint = f"; the host does not answer over SSH either ({facts.error})"
        else:
            hint = ": check the host (power, network, disks) before the OSDs"
        yield Finding("OSD_HOST_DOWN", Severity.CRIT if n_in else Severity.WARN,
                      f"host {h.name}",
                      f"all {len(osds)} OSDs of host {h.name} are down{how_long} "
                      f"({n_in} still in){hint}", ev, since=first)


def set_by(snap: ClusterSnapshot, flag: str, osd: str | None = None) -> str:
    """Who set a flag, from the journal (``snap.changes``: a maintenance window's;
    ``snap.runs``: a runbook run's), else "not set by stordoc"."""
    import time

    def at(ts: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts))

    for c in snap.changes:
        if c.kind == "osd-flag" and c.key == flag and (osd is None or osd in c.entities):
            late = snap.taken_at - c.deadline
            return (f"set by {c.by} through stordoc at {at(c.created_at)}"
                    + (f" ({c.reason})" if c.reason else "")
                    + (f"; its window ended {fmt_duration(late)} ago: stordoc unsets it "
                       f"on its next run" if late > 0 else f", until {at(c.deadline)}"))
    if osd is None:
        for r in snap.runs:
            if flag in r.flags_held:
                return f"held by stordoc {r.name}"
    return "not set by stordoc"


def _flags(snap: ClusterSnapshot, st: CephState) -> Iterator[Finding]:
    # sortbitwise, recovery_deletes, ...: normal feature bits, left out; pauserd and
    # pausewr are one flag, pause: one finding, with the name Ceph takes
    for flag, spelt in cluster_flags(st.flags).items():
        sev = Severity.CRIT if flag in CRIT_FLAGS else Severity.WARN
        who = set_by(snap, flag)
        effect = FLAG_EFFECTS[flag if len(spelt) != 1 else spelt[0]]
        shown = flag if spelt == [flag] else f"{flag} ({','.join(spelt)} in the osdmap)"
        yield Finding("OSDMAP_FLAGS", sev, f"{cluster_entity(snap)} flag {flag}",
                      f"osdmap flag {shown} is set ({who}): {effect}; unset it "
                      f"when the maintenance is over (ceph osd unset {flag})",
                      {"flag": flag, "osdmap_flags": spelt, "all_flags": list(st.flags),
                       "set_by": who}, runbook="flag-unset", target=flag)
    for o in st.osds:
        for flag in o.state:
            if flag in FLAG_EFFECTS:
                who = set_by(snap, flag, o.name)
                # noout on a host's OSDs is a maintenance window: maintenance-end ends it
                rb = "maintenance-end" if flag == "noout" and o.host else None
                yield Finding("OSDMAP_FLAGS", Severity.WARN, f"{o.name} flag {flag}",
                              f"{o.name} has flag {flag} ({who}): {FLAG_EFFECTS[flag]}",
                              {"flag": flag, "osd": o.id, "state": list(o.state),
                               "set_by": who}, runbook=rb, target=o.host if rb else None)
