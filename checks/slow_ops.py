"""Slow requests: which OSD holds them, since when, what kind, and where to look.

Ceph's ``SLOW_OPS`` names the daemons with ops blocked longer than
``osd_op_complaint_time``; every OSD of a PG whose replica is slow shows slow ops too
(its ops wait "for sub ops" or "for readable": the read lease of a laggy PG). The OSDs'
own ops (``storage.model.slowops``, read with ``ceph tell osd.N dump_ops_in_flight`` /
``dump_historic_slow_ops``) tell the two apart: an OSD whose ops all wait on other OSDs
is a victim, the others are where it happens. OSD_SLOW_OPS (entity ``osd.N``) is said of
those, with the op types and ages, the OSD's commit/apply latency (``osd perf``) and the
device under it (host facts): a slow disk when the latency says so, else the OSD itself
(a ``debug``/``inject`` option in the configuration database is named).

``OSD_SLOW_PING_TIME_BACK/FRONT`` list OSD pairs whose heartbeats are slow (ms, Ceph's 1
minute average over ``mon_warn_on_slow_ping_time``): OSD_SLOW_PING is said of the OSD in
most of those pairs (all pairs through one OSD: that OSD or its host's link; else the
slowest pair's link between the two hosts).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from checks.ceph_config import causing_options, option_is_fault, shown_value
from checks.disks import disks_of
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.model import CephState, ClusterSnapshot, ConfigSetting, HealthCheck
from storage.model.slowops import OsdOps, SlowPing

# commit latency above this (ms, ``osd perf``) says the disk is the slow part
SLOW_COMMIT_MS = 100.0
# where an op waits when the cause is another OSD, not this one
VICTIM_WAITS = frozenset({"waiting for sub ops", "waiting for readable",
                          "waiting for subops", "sub_op_sent"})
# options whose setting in the configuration database slows an OSD on purpose
_DEBUG_RE = re.compile(r"(debug_inject|inject_dispatch|_debug_.*(delay|sleep|drop))")
_OSD_RE = re.compile(r"\bosd\.(\d+)\b")
PING_CODES = ("OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT")

CODES = (
    CodeInfo("OSD_SLOW_OPS", Severity.WARN,
             "An OSD holds slow requests (Ceph's SLOW_OPS names it and its own ops wait "
             "inside it, not on other OSDs): the op types and ages, its commit/apply "
             "latency and the device under it say whether to look at the disk or the "
             "OSD."),
    CodeInfo("OSD_SLOW_PING", Severity.WARN,
             "Heartbeats between OSDs are slow (Ceph's OSD_SLOW_PING_TIME_BACK/FRONT): "
             "the OSD in most slow pairs, the pairs and their ms; its host's network link "
             "or the OSD itself is the place to look."),
)


def _health(st: CephState, code: str) -> HealthCheck | None:
    return next((h for h in st.health_checks if h.code == code), None)


def _named(hc: HealthCheck) -> list[int]:
    out: dict[int, None] = {}
    for text in (hc.summary, *hc.detail):
        for x in _OSD_RE.findall(text):
            out[int(x)] = None
    return list(out)


def _victim(ops: OsdOps | None) -> bool:
    """Every op it still holds (else every slow op it kept) waits on another OSD."""
    if ops is None or ops.error:
        return False
    pool = ops.in_flight or ops.historic
    return bool(pool) and all(o.flag_point in VICTIM_WAITS for o in pool)


def _device(snap: ClusterSnapshot, osd: int) -> tuple[str, str] | None:
    """(host, /dev/X) of the disk under the OSD's data (its ``block``, else its dir)."""
    for facts in snap.hosts.values():
        data = facts.osd_data.get(osd)
        if data is None:
            continue
        disks = disks_of(facts)
        if data.block and data.block.startswith("/dev/"):
            for d in disks.values():
                if osd in d.osds and data.block.startswith(d.device):
                    return facts.name, d.device
        for d in disks.values():
            if osd in d.osds:
                return facts.name, d.device
    return None


def _debug_settings(st: CephState, osd: int) -> list[str]:
    return [f"{c.name}={c.value}" for c in st.config_db
            if c.section in (f"osd.{osd}", "osd", "global") and _DEBUG_RE.search(c.name)
            and c.value not in ("0", "0.0", "0.000000", "false")]


DEFAULT_COMPLAINT_S = 30.0  # Ceph's osd_op_complaint_time (Pacific, Reef)


def _lowered_complaint(st: CephState, osd: int, ops: OsdOps | None) -> ConfigSetting | None:
    """The osd_op_complaint_time the OSD runs with (its most specific section of the
    configuration database) when it is under Ceph's default and every op it holds is
    younger than the default: Ceph warns only because of it (issue 38.2)."""
    mine = {c.section: c for c in st.config_db
            if c.name == "osd_op_complaint_time" and not c.mask}
    eff = next((mine[s] for s in (f"osd.{osd}", "osd", "global") if s in mine), None)
    oldest = ops.oldest_s if ops is not None and not ops.error else None
    if eff is None or oldest is None or oldest >= DEFAULT_COMPLAINT_S or \
            not option_is_fault(eff.name, eff.value):
        return None
    return eff


def _fmt_s(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f} s"


def _top(d: Mapping[str, int], n: int = 3) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:n])


@check("ceph-slow-ops", codes=CODES, needs=("ceph",))
def check_slow_ops(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    yield from _slow_ops(snap, st, ctx.now)
    yield from _slow_pings(snap, st)


def _slow_ops(snap: ClusterSnapshot, st: CephState, now: float) -> Iterator[Finding]:
    hc = _health(st, "SLOW_OPS")
    if hc is None or hc.muted:
        return
    named = _named(hc)
    by_osd = {o.osd: o for o in st.slow.ops}
    victims = [n for n in named if _victim(by_osd.get(n))]
    culprits = [n for n in named if n not in victims] or named
    hosts = {o.id: o.host for o in st.osds}
    for osd in culprits:
        ops = by_osd.get(osd)
        host = hosts.get(osd)
        where = f"osd.{osd}" + (f" ({host})" if host else "")
        perf = st.slow.perf.get(osd)
        dev = _device(snap, osd)
        debug = _debug_settings(st, osd)
        others = [f"osd.{v}" for v in victims if v != osd]
        ev: dict[str, object] = {
            "osd": osd, "host": host, "ceph_summary": hc.summary,
            "commit_latency_ms": perf[0] if perf else None,
            "apply_latency_ms": perf[1] if perf else None,
            "device": f"{dev[1]}@{dev[0]}" if dev else None,
            "waiting_on_it": others, "debug_settings": debug,
            # Ceph's slow heartbeat line lowered (checks.ceph_config): its warnings are
            # that option's incident, not this OSD's
            "ping_line_lowered": bool(causing_options(st))}
        parts = [f"{where} has slow requests:"]
        if ops is None:
            parts.append(" its ops were not read")
        elif ops.error:
            parts.append(f" its ops could not be read ({ops.error})")
            ev["read_error"] = ops.error
        else:
            parts.append(f" {ops.in_flight_total} op(s) in flight, oldest "
                         f"{_fmt_s(ops.oldest_s)}; {_top(ops.kinds()) or 'no op named'}"
                         + (f"; waiting at {_top(ops.waits())}" if ops.waits() else ""))
            ev.update(in_flight=ops.in_flight_total, oldest_s=ops.oldest_s,
                      kinds=ops.kinds(), waits=ops.waits(),
                      historic=len(ops.historic),
                      ops=[{"what": o.what, "pg": o.pg, "age_s": round(o.age_s, 1),
                            "duration_s": o.duration_s, "flag_point": o.flag_point,
                            "in_flight": o.in_flight} for o in
                           (*ops.in_flight, *ops.historic)][:10])
        if others:
            parts.append(f"; {', '.join(others)} wait{'s' if len(others) == 1 else ''} "
                         "on it")
        complaint = _lowered_complaint(st, osd, ops)
        lat = (f"commit/apply latency {perf[0]:g}/{perf[1]:g} ms" if perf
               else "commit latency unknown")
        disk = f"disk {dev[1]}@{dev[0]}" if dev else "its disk"
        if perf and perf[0] >= SLOW_COMMIT_MS:
            verdict = f"{lat} on {disk}: the disk is slow"
            todo = (f"look at {disk}: `iostat -x`, SMART and the kernel log on "
                    f"{host or 'its host'}; `ceph osd set noout` before replacing it")
        elif complaint is not None and not debug:
            verdict = (f"{lat} on {disk}; every op is under Ceph's default complaint time "
                       f"{DEFAULT_COMPLAINT_S:g} s: Ceph warns because "
                       f"osd_op_complaint_time is {shown_value(complaint.value)} for "
                       f"{complaint.section}")
            todo = f"`ceph config rm {complaint.section} osd_op_complaint_time`"
        elif debug:
            verdict = f"{lat} on {disk}, not the disk; {', '.join(debug)} set for it"
            todo = (f"remove the debug setting from osd.{osd}: "
                    + " and ".join(f"`ceph config rm osd.{osd} {d.split('=')[0]}`"
                                   for d in debug[:3]))
        else:
            verdict = f"{lat} on {disk}: not the disk, the ops wait inside osd.{osd}"
            todo = (f"look at osd.{osd}: `ceph tell osd.{osd} dump_ops_in_flight` and its "
                    f"log on {host or 'its host'} (CPU, memory, a busy PG)")
        msg = parts[0] + "".join(parts[1:]) + f"; {verdict}"
        ev["manual"] = todo
        oldest = ops.oldest_s if ops is not None else None
        # a debug injection set for it is the cause: config-restore puts it back
        sections = sorted({c.section for c in st.config_db if f"{c.name}={c.value}" in debug
                           and c.section in (f"osd.{osd}", "osd", "global")})
        if complaint is not None and not debug:
            sections = [complaint.section]
        fix = ("config-restore", sections[0]) if len(sections) == 1 and not (
            perf and perf[0] >= SLOW_COMMIT_MS) else (None, None)
        yield Finding("OSD_SLOW_OPS", Severity.WARN, f"osd.{osd}", msg, ev,
                      since=(now - oldest) if oldest is not None and now else None,
                      runbook=fix[0], target=fix[1])


def _slow_pings(snap: ClusterSnapshot, st: CephState) -> Iterator[Finding]:
    pings = [p for p in st.slow.pings]
    hcs = [h for c in PING_CODES if (h := _health(st, c)) is not None and not h.muted]
    if not hcs or not pings:
        return
    count: dict[int, int] = {}
    for p in pings:
        for o in {p.osd, p.peer}:
            count[o] = count.get(o, 0) + 1
    hub = max(count, key=lambda o: (count[o], max(p.ms for p in pings
                                                  if o in (p.osd, p.peer))))
    mine = sorted((p for p in pings if hub in (p.osd, p.peer)), key=lambda p: -p.ms)
    worst = max(pings, key=lambda p: p.ms)
    hosts = {o.id: o.host for o in st.osds}

    def pair(p: SlowPing) -> str:
        return (f"osd.{p.osd}->osd.{p.peer} {p.iface} {p.ms:g} ms"
                + (" (improving)" if p.trend else ""))

    host = hosts.get(hub)
    if len(mine) == len(pings):
        where = (f"every slow pair goes through osd.{hub}: look at osd.{hub} itself and "
                 f"its host {host or '?'}'s network link (`ip -s link`: errors, drops; "
                 f"MTU)")
    else:
        ha, hb = hosts.get(worst.osd), hosts.get(worst.peer)
        where = (f"the slowest link is osd.{worst.osd} ({ha or '?'}) to osd.{worst.peer} "
                 f"({hb or '?'}): look at the network between {ha or '?'} and "
                 f"{hb or '?'}")
    lowered = causing_options(st)
    if lowered:  # issue 38.2: the warning line, not a link, is why Ceph warns
        where = ("every one is under Ceph's default line of 1000 ms: Ceph warns because "
                 + ", ".join(f"{o.name} is {shown_value(o.value)} for {o.who}"
                             for o in lowered)
                 + " (" + " and ".join(f"`{o.command}`" for o in lowered) + ")")
    shown = "; ".join(pair(p) for p in mine[:4]) + (" ..." if len(mine) > 4 else "")
    yield Finding(
        "OSD_SLOW_PING", Severity.WARN, f"osd.{hub}",
        f"slow OSD heartbeats through osd.{hub}" + (f" ({host})" if host else "")
        + f": {shown}; {where}",
        {"osd": hub, "host": host, "pairs": [
            {"from": p.osd, "to": p.peer, "iface": p.iface, "ms": p.ms} for p in mine[:20]],
         "all_pairs": len(pings), "worst_ms": worst.ms,
         "ceph_codes": [h.code for h in hcs], "manual": where})
