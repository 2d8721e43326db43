"""Flapping OSDs and stuck PGs, traced to what blocks them.

OSD_FLAPPING (entity ``osd.N``): the cluster log (``storage.ceph.parse_osdlog``) shows the
OSD marked down while it ran and back up, at least FLAP_MIN times in FLAP_WINDOW_S; tied
to the interface error/drop counters of its host (host facts, ``/proc/net/dev``), said
when they were not collected. Ceph's own OSD_FLAPPING for that OSD folds into it.

PG_STUCK (entity ``pg 2.5``): a stuck PG (down, incomplete, stale, peering, inactive)
summarised from its ``pg query`` (``storage.ceph.parse_pgquery``): what peering waits
for and the OSDs that block it. Unfound objects are Ceph's OBJECT_UNFOUND, explained by
:func:`explain_unfound` with the options and their cost.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.osd import fmt_duration
from storage.model import ClusterSnapshot
from storage.model.ceph import CephState
from storage.model.pgquery import PgBlock

if TYPE_CHECKING:
    from checks.ceph_explained import Explained
    from storage.model import HealthCheck

FLAP_WINDOW_S = 3600.0
FLAP_MIN = 3
UNFOUND_RUNBOOK = "pg-mark-unfound-lost"

PGBLOCK_CODES = (
    CodeInfo("OSD_FLAPPING", Severity.WARN,
             "An OSD was marked down while it ran and came back, again and again (lost "
             "heartbeats: network, or a stalled process); PGs re-peer at every flap."),
    CodeInfo("PG_STUCK", Severity.CRIT,
             "A PG is stuck down, incomplete, stale or peering: `pg query` names the OSDs "
             "it waits for."),
)


@check("ceph-pg-blocks", codes=PGBLOCK_CODES, needs=("ceph",))
def check_pg_blocks(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    yield from _flaps(snap, st)
    for b in st.pg_blocks:
        f = _stuck(st, b)
        if f is not None:
            yield f


def _host_of(st: CephState, osd: int) -> str | None:
    o = st.osd(osd)
    return o.host if o else None


def net_errors(snap: ClusterSnapshot, host: str | None) -> tuple[str, dict[str, object]]:
    """What the host facts say of ``host``'s interface errors and drops (since boot)."""
    facts = snap.hosts.get(host) if host else None
    if facts is None or not facts.reachable:
        return ("its host's interface counters are unknown (no host facts for "
                f"{host or 'its host'})", {"net_counters": None})
    if facts.net_counters is None:
        return (f"interface error counters of {host} were not collected",
                {"net_counters": None})
    bad = {n: c for n, c in facts.net_counters.items() if c.bad}
    ev: dict[str, object] = {"net_counters": {
        n: {"rx_errs": c.rx_errs, "rx_drop": c.rx_drop, "tx_errs": c.tx_errs,
            "tx_drop": c.tx_drop} for n, c in facts.net_counters.items()}}
    if not bad:
        return (f"no interface errors or drops on {host} "
                f"({', '.join(sorted(facts.net_counters))}): look at the process "
                f"(stalls, memory) and the switch side", ev)
    worst = max(bad.items(), key=lambda kv: kv[1].bad)
    c = worst[1]
    ev["net_bad"] = sorted(bad)
    return (f"{host} {worst[0]} has rx errs {c.rx_errs} drop {c.rx_drop}, tx errs "
            f"{c.tx_errs} drop {c.tx_drop} since boot: check the link (`ip -s link show "
            f"{worst[0]}`, cable, switch port)", ev)


def _flaps(snap: ClusterSnapshot, st: CephState) -> Iterator[Finding]:
    now = st.collected_at
    for fl in st.osd_flaps:
        n = fl.within(now, FLAP_WINDOW_S)
        if n < FLAP_MIN:
            continue
        window = min(FLAP_WINDOW_S, fl.window_s) if fl.window_s else FLAP_WINDOW_S
        host = _host_of(st, fl.osd)
        o = st.osd(fl.osd)
        where = f"{host}" + (f" ({o.public_addr.split('/')[0]})" if o and o.public_addr else "") \
            if host else "its host"
        net, ev = net_errors(snap, host)
        how = (f"{fl.failed_reports} after its peers reported it failed (missed "
               f"heartbeats)" if fl.failed_reports else
               "none reported failed by its peers (marked down by hand or by the monitor)")
        ev.update(osd=fl.osd, host=host, flaps=n, window_s=round(window),
                  failed_reports=fl.failed_reports, last=fl.last,
                  stamps=list(fl.stamps), log_window_s=round(fl.window_s))
        sev = Severity.CRIT if o is not None and not o.up else Severity.WARN
        yield Finding(
            "OSD_FLAPPING", sev, f"osd.{fl.osd}",
            f"osd.{fl.osd} flapped {n} times in the last {fmt_duration(window)} (marked "
            f"down while running, then back up; {how}); {net}; next: look at osd.{fl.osd} "
            f"on {where}: `ceph daemon osd.{fl.osd} dump_osd_network` and its log for "
            f"'wrongly marked me down'",
            ev, since=fl.first)


def _osd_words(st: CephState, osds: tuple[int, ...]) -> str:
    out = []
    for i in osds:
        o = st.osd(i)
        if o is None:
            out.append(f"osd.{i} (not in the map)")
            continue
        out.append(f"osd.{i} ({'up' if o.up else 'down'}"
                   f"{', ' + o.host if o.host else ''})")
    return ", ".join(out)


def _stuck(st: CephState, b: PgBlock) -> Finding | None:
    parts = set(b.state.split("+")) if b.state else set()
    if "active" in parts and not b.blocking_osds:
        return None  # active: unfound objects are OBJECT_UNFOUND's (explain_unfound)
    osds = b.blocking_osds
    if not ({"down", "incomplete", "stale"} & parts) and not b.error and not any(
            (o := st.osd(i)) is None or not o.up for i in osds):
        return None  # peering or recovering with its OSDs up: settling (checks.settle)
    ev: dict[str, object] = {
        "pgid": b.pgid, "state": b.state, "up": list(b.up), "acting": list(b.acting),
        "blocking_osds": list(osds), "blocked": b.blocked,
        "down_osds_we_would_probe": list(b.down_osds_we_would_probe),
        "peering_blocked_by": [{"osd": p.osd, "comment": p.comment}
                               for p in b.peering_blocked_by],
        "recovery_state": list(b.recovery_states), "num_unfound": b.num_unfound,
        "queried": b.queried, "error": b.error}
    if osds:
        down = [i for i in osds if (o := st.osd(i)) is None or not o.up]
        why = b.blocked or "it waits for"
        comment = next((p.comment for p in b.peering_blocked_by if p.comment), "")
        todo = (f"start {', '.join(f'osd.{i}' for i in down)}; only if its disk is gone "
                f"for good, `ceph osd lost {down[0]}` lets it go on without the writes "
                f"only it had" if down else
                f"look at {', '.join(f'osd.{i}' for i in osds)}")
        msg = (f"pg {b.pgid} is {b.state or 'stuck'}: {why}; blocked by "
               f"{_osd_words(st, osds)}" + (f" (Ceph: {comment})" if comment else "") +
               f"; next: {todo}")
    elif b.error:
        msg = (f"pg {b.pgid} is {b.state or 'stuck'} (acting {list(b.acting)}); its query "
               f"did not answer ({b.error}): its OSDs "
               f"{_osd_words(st, b.acting or b.up) or 'are unknown'} are the place to look")
    else:
        msg = (f"pg {b.pgid} is {b.state or 'stuck'} "
               f"({' < '.join(b.recovery_states[:2]) or 'no recovery state'})")
    return Finding("PG_STUCK", Severity.CRIT, f"pg {b.pgid}", msg, ev)


def explain_unfound(hc: HealthCheck, st: CephState) -> Explained:
    """Ceph's OBJECT_UNFOUND: per queried PG, where the objects might be, and the options
    with their cost; the runbook only when one PG holds them and every OSD that might have
    them was asked or is down."""
    from checks.ceph_explained import Explained

    pgs = [b for b in st.pg_blocks if b.num_unfound]
    if not pgs:
        return Explained(f"{hc.summary}: query the PG (`ceph pg P list_unfound`)",
                         {"unfound_pgs": []})
    def lost(i: int) -> bool:
        return bool((o := st.osd(i)) is not None and o.lost_at)

    def where(osd: int, status: str) -> str:
        if status == "osd is down":
            return f"osd.{osd} (down" + (", marked lost)" if lost(osd) else ")")
        return f"osd.{osd} ({status})"

    lines = []
    for b in pgs:
        might = ", ".join(where(m.osd, m.status) for m in b.might_have_unfound) or \
            "no other OSD"
        lines.append(f"pg {b.pgid}: {b.num_unfound} unfound, might be on {might}")
    down = sorted({m.osd for b in pgs for m in b.might_have_unfound
                   if m.status == "osd is down"})
    names = ", ".join(f"osd.{i}" for i in down)
    if down and all(lost(i) for i in down):  # Ceph has given up on it: it may still start
        wait = (f"start {names} if its disk can still be read (costs nothing but time: the "
                f"objects come back)")
    elif down:
        wait = (f"start {names} (costs nothing but time: the objects come back; Ceph will "
                f"not mark them lost before that OSD is started or marked lost with `ceph "
                f"osd lost N`)")
    else:
        wait = "no OSD left to wait for"
    options = (f"options: {wait}; `ceph pg P mark_unfound_lost revert` (each object rolls "
               f"back to its previous version, newer writes are lost; a new object is "
               f"forgotten) or `... delete` (the objects are gone); both need two people "
               f"(stordoc fix {UNFOUND_RUNBOOK})")
    ev: dict[str, object] = {"unfound_pgs": [
        {"pgid": b.pgid, "num_unfound": b.num_unfound, "all_probed": b.all_probed,
         "might_have_unfound": [{"osd": m.osd, "status": m.status}
                                for m in b.might_have_unfound]} for b in pgs],
        "osds_down_might_have": down}
    ready = [b for b in pgs if b.all_probed and all(
        (o := st.osd(m.osd)) is not None and o.lost_at
        for m in b.might_have_unfound if m.status == "osd is down")]
    one = ready[0].pgid if len(pgs) == 1 and ready else None
    return Explained(f"{hc.summary}: {'; '.join(lines)}; {options}", ev,
                     runbook=UNFOUND_RUNBOOK if one else None, target=one)
