"""Pure functions from a snapshot (and findings) to the rows each screen shows.

Kept apart from the widgets so that they can be unit-tested without a terminal and so the
screens stay thin: a screen only turns these rows into a ``DataTable``. Nothing here does
I/O or looks at the clock (the caller passes ``now``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rich.text import Text

from checks import hostdiag
from checks.incidents import Incident
from checks.model import Finding, Severity
from runbooks.model import Outcome
from storage.audit import AuditRun
from storage.journal import CheckRun
from storage.model import (
    CephState,
    ClusterSnapshot,
    HostFacts,
    OsdState,
    RingDevice,
    RingState,
    SwiftState,
)
from storage.targets import ClusterTarget
from stordoc.fmt import human_age  # noqa: F401  (re-exported for the screens)

# --------------------------------------------------------------------------- formatting


def human_bytes(n: float | None) -> str:
    """Binary units, short: what ``ceph df`` shows."""
    if n is None:
        return "-"
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(v) < 1024 or unit == "PiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} PiB"  # pragma: no cover


def ratio_micro(v: int) -> str:
    return f"{v / 1_000_000:.2f}"


SEV_STYLE = {Severity.CRIT: "bold red", Severity.WARN: "yellow", Severity.INFO: "cyan"}


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Row:
    """One table row: a stable key (for the cursor), its cells and a style per cell.

    ``kind`` tells the screen what Enter on it means ("osd", "host", "finding", ...).
    ``search`` is the lower-cased text the ``/`` filter matches against.
    """

    key: str
    kind: str
    cells: tuple[str, ...]
    styles: tuple[str, ...] = ()
    search: str = ""
    ref: Any = None

    def matches(self, needle: str) -> bool:
        return not needle or needle.lower() in self.search

    @cached_property
    def texts(self) -> list[Text]:
        """The styled cells, built once (10,000 OSD rows are ~90,000 of them)."""
        st = self.styles
        return [Text(c, style=st[i] if i < len(st) else "", no_wrap=True, end="")
                for i, c in enumerate(self.cells)]


def _row(key: str, kind: str, cells: Sequence[str], styles: Sequence[str] = (),
         ref: Any = None) -> Row:
    return Row(key, kind, tuple(cells), tuple(styles), " ".join(cells).lower(), ref)


# --------------------------------------------------------------------------- overview


@dataclass(frozen=True)
class Overview:
    lines: tuple[tuple[str, str, str], ...]  # (label, value, style)


def overview(snap: ClusterSnapshot, findings: Sequence[Finding]) -> Overview:
    """Facts after the incidents: Ceph's health is one of them, not the verdict."""
    out: list[tuple[str, str, str]] = []
    ceph = snap.ceph
    counts = {s: sum(1 for f in findings if f.severity == s) for s in Severity}
    out.append(("Findings", f"{counts[Severity.CRIT]} crit, {counts[Severity.WARN]} warn, "
                f"{counts[Severity.INFO]} info",
                "bold red" if counts[Severity.CRIT] else
                "yellow" if counts[Severity.WARN] else "green"))
    if ceph is not None:
        hs = ceph.health_status
        out.append(("Ceph health", hs, {"HEALTH_OK": "green", "HEALTH_WARN": "yellow"}
                    .get(hs, "bold red")))
        out.append(("Ceph version", f"{ceph.version} ({ceph.release}), fsid {ceph.fsid}", ""))
        n = len([o for o in ceph.osds if o.exists])
        up = sum(1 for o in ceph.osds if o.up)
        inn = sum(1 for o in ceph.osds if o.in_)
        out.append(("OSDs", f"{n} total, {up} up, {inn} in",
                    "green" if up == n and inn == n else "bold red"))
        states = ", ".join(f"{c} {s}" for s, c in sorted(ceph.pgs.by_state.items(),
                                                          key=lambda x: -x[1]))
        clean = ceph.pgs.by_state.get("active+clean", 0) == ceph.pgs.num_pgs
        out.append(("PGs", f"{ceph.pgs.num_pgs}: {states or '-'}", "green" if clean
                    else "yellow"))
        if ceph.total_bytes:
            used = ceph.total_bytes - ceph.total_avail_bytes
            pct = 100.0 * used / ceph.total_bytes
            out.append(("Capacity", f"{human_bytes(used)} used of "
                        f"{human_bytes(ceph.total_bytes)} ({pct:.1f}%)",
                        "bold red" if pct >= 100 * ceph.nearfull_ratio else ""))
        out.append(("Pools", f"{len(ceph.pools)} ({sum(1 for p in ceph.pools if p.tier_of >= 0)}"
                    " cache tiers)", ""))
        if ceph.flags:
            out.append(("OSD map flags", ",".join(ceph.flags), ""))
    elif snap.ceph_error:
        out.append(("Ceph", f"unreachable: {snap.ceph_error}", "bold red"))
    sw = snap.swift
    if sw is not None:
        devs = sum(len(r.devices) for r in sw.rings)
        unmounted = sorted({f"{d}@{h.ip}" for h in sw.recon for d in h.unmounted})
        out.append(("Swift rings", f"{len(sw.rings)} rings, {devs} ring devices", ""))
        out.append(("Swift proxy", "healthy" if sw.proxy_healthy else
                    f"unhealthy: {sw.proxy_error or 'no answer'}",
                    "green" if sw.proxy_healthy else "bold red"))
        out.append(("Swift unmounted", ", ".join(unmounted) or "none",
                    "bold red" if unmounted else "green"))
    elif snap.swift_error:
        out.append(("Swift", f"unreachable: {snap.swift_error}", "bold red"))
    if snap.hosts:
        bad = [n for n, h in sorted(snap.hosts.items()) if h.error]
        out.append(("Hosts", f"{len(snap.hosts)} ({len(bad)} unreachable"
                    + (f": {', '.join(bad)}" if bad else "") + ")",
                    "bold red" if bad else ""))
    return Overview(tuple(out))


# --------------------------------------------------------------------------- OSDs

OSD_COLUMNS = ("name", "status", "in/out", "weight", "reweight", "class", "use%",
               "data dir", "daemon")


@dataclass(frozen=True)
class OsdHostView:
    """What the host says about one OSD: its data dir mount, device and daemon."""

    data_dir: str | None
    mounted_from: str | None
    matching_device: str | None  # an unmounted device whose whoami/fsid name this OSD
    daemon: str  # "running (pid N)", "stopped", "unknown"
    host_error: str | None = None
    io_errors: tuple[str, ...] = ()
    fstab: str | None = None
    block: tuple[str, ...] = ()
    flavour: str | None = None  # "xfs", "ceph-volume raw", ... (checks.hostdiag.Flavour)
    flavour_evidence: tuple[str, ...] = ()
    state: str | None = None  # checks.hostdiag.OsdHostState value


def osd_data_dir(target: ClusterTarget | None, host: str | None, osd_id: int) -> str | None:
    if target is None or host is None:
        return None
    ht = _host_target(target, host)
    if ht is None:
        return None
    return ht.osd_data_dir.format(cluster=target.ceph_cluster_name, id=osd_id, fsid="{fsid}")


_HOST_CACHE: dict[tuple[int, str], object] = {}


def _host_target(target: ClusterTarget, host: str) -> Any:
    """``target.host(name)`` is a linear scan; 10,000 OSDs on 500 hosts make that count."""
    k = (id(target), host)
    if k not in _HOST_CACHE:
        if len(_HOST_CACHE) > 10_000:
            _HOST_CACHE.clear()
        _HOST_CACHE[k] = (target, target.host(host))
    cached = _HOST_CACHE[k]
    assert isinstance(cached, tuple)
    if cached[0] is not target:  # id() reused by a new object
        _HOST_CACHE[k] = (target, target.host(host))
        return target.host(host)
    return cached[1]


def osd_host_view(snap: ClusterSnapshot, target: ClusterTarget | None,
                  osd: OsdState) -> OsdHostView | None:
    """Join an OSD with its host's facts. None when no facts were collected for its host."""
    facts: HostFacts | None = snap.hosts.get(osd.host or "") if osd.host else None
    if facts is None:
        return None
    ddir = facts.osd_dirs.get(osd.id) or osd_data_dir(target, osd.host, osd.id)
    if facts.error:
        return OsdHostView(ddir, None, None, "unknown", host_error=facts.error)
    mount = facts.mount_at(ddir) if ddir else None
    fsid = snap.ceph.fsid if snap.ceph else ""
    # the one host diagnosis the checks and runbooks use (flavour, device, I/O errors)
    dg = hostdiag.diagnose_osd(facts, osd, fsid, snap.taken_at)
    match = dg.matches[0].device if dg and dg.matches else None
    daemon = next((d for d in facts.daemons if d.kind == "ceph-osd"
                   and d.ident == str(osd.id)), None)
    dstate = "unknown" if daemon is None else (
        f"running (pid {daemon.pid})" if daemon.running else "stopped")
    devs = set(dg.devices) if dg else ({mount.source} if mount else set())
    io = tuple(e.line for e in dg.io_errors) if dg else ()
    fst = next((f for f in facts.fstab if ddir and f.mountpoint.rstrip("/") ==
                ddir.rstrip("/")), None)
    fstab = None if fst is None else (("# disabled: " if fst.commented else "") +
                                      f"{fst.device} {fst.mountpoint} {fst.fstype}")
    block = tuple(f"{b.path} {b.type} {human_bytes(b.size)}"
                  + (f" -> {b.backing_file}" if b.backing_file else "")
                  for b in facts.block_devices if b.path in devs)
    data = facts.osd_data.get(osd.id)
    if data is not None and data.block:
        block += (f"{data.path.rstrip('/')}/block -> {data.block}",)
    return OsdHostView(ddir, mount.source if mount else None, match, dstate,
                       io_errors=io, fstab=fstab, block=block,
                       flavour=dg.flavour.value if dg else None,
                       flavour_evidence=dg.evidence if dg else (),
                       state=dg.state.value if dg else None)


def _osd_cells(o: OsdState, use: float | None, hv: OsdHostView | None
               ) -> tuple[list[str], list[str]]:
    status = "destroyed" if o.destroyed else ("up" if o.up else "down")
    inout = "in" if o.in_ else "out"
    if hv is None:
        ddir, daemon, dstyle, mstyle = "-", "-", "dim", "dim"
    elif hv.host_error:
        ddir, daemon, dstyle, mstyle = "host unreachable", "?", "yellow", "yellow"
    elif hv.mounted_from:
        ddir, mstyle = f"mounted {hv.mounted_from}", "green"
        daemon, dstyle = hv.daemon, ("green" if hv.daemon.startswith("running") else "red")
    else:
        word = "NOT ACTIVATED" if hv.state == hostdiag.OsdHostState.NOT_ACTIVATED.value \
            else "NOT MOUNTED"
        ddir = word + (f" ({hv.matching_device})" if hv.matching_device else "")
        mstyle = "bold red"
        daemon, dstyle = hv.daemon, ("green" if hv.daemon.startswith("running") else "red")
    cells = [f"  {o.name}", status, inout, f"{o.crush_weight:.3f}", f"{o.reweight:.3f}",
             o.device_class or "-", "-" if use is None else f"{use:.1f}", ddir, daemon]
    styles = ["", "green" if o.up else "bold red", "green" if o.in_ else "bold red",
              "", "" if o.reweight > 0 else "red", "", "", mstyle, dstyle]
    return cells, styles


STATE_FILTERS = ("all", "down", "out", "up", "in")
"""The ``state`` filter cycles through these (``down`` = not up, ``out`` = not in)."""


def _state_ok(o: OsdState, state: str) -> bool:
    return {"all": True, "down": not o.up, "out": not o.in_, "up": o.up,
            "in": o.in_}.get(state, True)


OsdGroup = tuple[Row, list[tuple[OsdState, Row]]]
_OSD_CACHE: list[tuple[ClusterSnapshot, ClusterTarget | None, list[OsdGroup]]] = []
_OSD_LOCK = threading.Lock()


def _osd_groups(snap: ClusterSnapshot, target: ClusterTarget | None) -> list[OsdGroup]:
    """Every host row with its OSD rows, built once per snapshot (the refresh worker warms
    it off the event loop; filters then only pick rows)."""
    with _OSD_LOCK:
        for s, t, g in _OSD_CACHE:
            if s is snap and t is target:
                return g
    ceph = snap.ceph
    out: list[OsdGroup] = []
    if ceph is None:
        return out
    use = {u.id: u.utilization for u in ceph.osd_usage}
    by_id = {o.id: o for o in ceph.osds}
    seen: set[int] = set()
    groups: list[tuple[str | None, list[OsdState]]] = []
    for h in ceph.hosts:
        groups.append((h.name, [by_id[i] for i in h.osd_ids if i in by_id]))
        seen.update(h.osd_ids)
    orphans = [o for o in ceph.osds if o.id not in seen]
    if orphans:
        groups.append((None, orphans))
    yield_gil = threading.current_thread() is not threading.main_thread()
    for n, (hname, osds) in enumerate(groups):
        if yield_gil and n % 8 == 0:
            time.sleep(0)  # in a worker: let the UI thread take the GIL between hosts
        kids = []
        for o in osds:
            hv = osd_host_view(snap, target, o)
            cells, styles = _osd_cells(o, use.get(o.id), hv)
            kids.append((o, Row(o.name, "osd", tuple(cells), tuple(styles),
                                f"{' '.join(cells)} {hname or ''}".lower(), o.id)))
        up = sum(1 for o in osds if o.up)
        facts = snap.hosts.get(hname or "")
        hstyle = "bold red" if up == 0 and osds else ("yellow" if up < len(osds) else "bold")
        label = f"▾ {hname}" if hname else "▾ (no CRUSH host)"
        extra = f" {facts.address}" if facts else ""
        hcells = (label, f"{up}/{len(osds)} up", f"{sum(1 for o in osds if o.in_)} in", "",
                  "", "", "", f"host{extra}" + (" UNREACHABLE" if facts and facts.error
                                                else ""), "")
        out.append((Row(f"host:{hname}", "host", hcells,
                        (hstyle, hstyle, "", "", "", "", "", "dim", ""), label.lower(), hname),
                    kids))
    with _OSD_LOCK:
        _OSD_CACHE.insert(0, (snap, target, out))
        del _OSD_CACHE[2:]  # the shown snapshot and the one arriving
    return out


def osd_rows(snap: ClusterSnapshot, target: ClusterTarget | None = None, state: str = "all",
             host: str | None = None, needle: str = "") -> list[Row]:
    """The CRUSH tree by host: a host row followed by its OSDs, then OSDs with no host."""
    rows: list[Row] = []
    ndl = needle.lower()
    filtering = state != "all" or bool(ndl)
    for hrow, kids in _osd_groups(snap, target):
        if host and hrow.ref != host:
            continue
        if not filtering:
            rows.append(hrow)
            rows.extend(r for _, r in kids)
            continue
        kept = [r for o, r in kids if _state_ok(o, state) and r.matches(ndl)]
        if kept:
            rows.append(hrow)
            rows.extend(kept)
    return rows


def prepare(snap: ClusterSnapshot, target: ClusterTarget | None) -> None:
    """Heavy view work for a new snapshot, done in the refresh worker thread."""
    for hrow, kids in _osd_groups(snap, target):
        hrow.texts  # noqa: B018  (cached_property: builds the cells now)
        for _, r in kids:
            r.texts  # noqa: B018


def osd_detail(snap: ClusterSnapshot, target: ClusterTarget | None, osd_id: int,
               findings: Sequence[Finding]) -> list[tuple[str, str, str]]:
    """(label, value, style) lines for one OSD, host facts included."""
    ceph = snap.ceph
    o = ceph.osd(osd_id) if ceph else None
    if o is None:
        return [("OSD", f"osd.{osd_id} is not in the OSD map", "bold red")]
    lines = [
        ("OSD", o.name, "bold"),
        ("uuid", o.uuid, ""),
        ("status", ("up" if o.up else "down") + ", " + ("in" if o.in_ else "out"),
         "green" if o.up and o.in_ else "bold red"),
        ("CRUSH host", o.host or "-", ""),
        ("weight / reweight", f"{o.crush_weight:.3f} / {o.reweight:.3f}", ""),
        ("device class", o.device_class or "-", ""),
        ("state", ",".join(o.state) or "-", ""),
        ("up_from / up_thru / down_at", f"{o.up_from} / {o.up_thru} / {o.down_at}", ""),
        ("address", o.public_addr or "-", ""),
    ]
    hv = osd_host_view(snap, target, o)
    if hv is None:
        lines.append(("host facts", "not collected for this host", "dim"))
    elif hv.host_error:
        lines.append(("host facts", f"host unreachable: {hv.host_error}", "yellow"))
    else:
        lines.append(("data dir", hv.data_dir or "-", ""))
        if hv.flavour:
            lines.append(("deployment", hv.flavour, ""))
            for ev in hv.flavour_evidence:
                lines.append(("  because", ev, "dim"))
        not_act = hv.state == hostdiag.OsdHostState.NOT_ACTIVATED.value
        lines.append(("mount", f"mounted from {hv.mounted_from}" if hv.mounted_from
                      else ("NOT ACTIVATED (tmpfs missing)" if not_act else "NOT MOUNTED"),
                      "green" if hv.mounted_from else "bold red"))
        if not hv.mounted_from:
            lines.append(("matching device", hv.matching_device or
                          "no matching device found", "yellow"))
        lines.append(("daemon", hv.daemon, "green" if hv.daemon.startswith("running")
                      else "red"))
        for b in hv.block:
            lines.append(("block device", b, ""))
        if hv.fstab:
            lines.append(("fstab", hv.fstab, "yellow" if hv.fstab.startswith("#") else ""))
        for e in hv.io_errors[:5]:
            lines.append(("I/O error", e, "bold red"))
    for f in findings_for(findings, o.name):
        lines.append((f"{f.severity.label} {f.code}", f.message
                      + (f"  [fix: {f.runbook} {f.target}]" if f.runbook else ""),
                      SEV_STYLE[f.severity]))
    return lines


def findings_for(findings: Iterable[Finding], entity: str) -> list[Finding]:
    return [f for f in findings if f.entity == entity or f.target == entity]


# --------------------------------------------------------------------------- pools / PGs

POOL_COLUMNS = ("pool", "id", "type", "size", "pg_num", "pgp_num", "suggested", "autoscale",
                "stored", "objects", "%used", "application")


def suggested_pg_nums(ceph: CephState, per_osd: int = 100) -> dict[str, int]:
    """The seed heuristic as ``checks.pgs`` computes it (one rule for checks, runbooks and
    this screen): (in OSDs * per_osd) / replicas up to a power of two, times the pool's
    expected share of the data. System and cache pools get no suggestion."""
    from checks.pgs import data_pools, ideal_pg_num, in_osd_count, pool_shares

    pools = data_pools(ceph)
    shares, _rule = pool_shares(pools)
    n_in = in_osd_count(ceph)
    return {p.name: ideal_pg_num(n_in, p.size, shares.get(p.id, 0.0), per_osd)
            for p in pools}


def pool_rows(ceph: CephState | None, per_osd: int = 100, low_factor: float = 4.0,
              high_factor: float = 4.0, needle: str = "") -> list[Row]:
    if ceph is None:
        return []
    sugg = suggested_pg_nums(ceph, per_osd)
    rows = []
    for p in sorted(ceph.pools, key=lambda p: p.id):
        s = sugg.get(p.name)
        low = bool(s) and p.pg_num < (s or 0) / low_factor  # the rule of checks.pgs
        high = bool(s) and p.pg_num > max(s or 0, 32) * high_factor
        pow2 = p.pg_num & (p.pg_num - 1) == 0
        cells = [p.name, str(p.id), p.type + (" (cache)" if p.tier_of >= 0 else ""),
                 f"{p.size}/{p.min_size}", str(p.pg_num), str(p.pgp_num), "-" if s is None else str(s),
                 p.pg_autoscale_mode, human_bytes(p.stored_bytes), str(p.objects),
                 f"{p.percent_used * (100 if p.percent_used <= 1 else 1):.1f}",
                 ",".join(p.application) or "-"]
        styles = ["bold", "", "", "", "bold red" if low or high or not pow2 else "green",
                  "bold red" if p.pgp_num < p.pg_num else "", "", "", "", "", "", ""]
        r = _row(f"pool:{p.name}", "pool", cells, styles, p.name)
        if r.matches(needle):
            rows.append(r)
    return rows


def pg_state_rows(ceph: CephState | None) -> list[Row]:
    if ceph is None:
        return []
    rows = [_row(f"pg:{s}", "pgstate", [s, str(c)],
                 ["green" if s == "active+clean" else "yellow", ""])
            for s, c in sorted(ceph.pgs.by_state.items(), key=lambda x: -x[1])]
    for kind, pgids in sorted(ceph.pgs.stuck.items()):
        rows.append(_row(f"stuck:{kind}", "stuck", [f"stuck {kind}", str(len(pgids))],
                         ["bold red", ""]))
    return rows


# --------------------------------------------------------------------------- cache tiers

CACHE_COLUMNS = ("cache pool", "base pool", "mode", "target bytes", "target objects",
                 "dirty", "dirty high", "full", "hit set", "promote recency", "fill")


def cache_rows(ceph: CephState | None, needle: str = "") -> list[Row]:
    if ceph is None:
        return []
    by_id = {p.id: p for p in ceph.pools}
    rows = []
    for p in ceph.pools:
        if p.tier_of < 0:
            continue
        base = by_id.get(p.tier_of)
        d, dh, full = (p.cache_target_dirty_ratio_micro, p.cache_target_dirty_high_ratio_micro,
                       p.cache_target_full_ratio_micro)
        order_ok = d <= dh <= full
        no_target = p.target_max_bytes == 0 and p.target_max_objects == 0
        fill = "-"
        if p.target_max_bytes:
            fill = f"{100.0 * p.stored_bytes / p.target_max_bytes:.0f}%"
        elif p.target_max_objects:
            fill = f"{100.0 * p.objects / p.target_max_objects:.0f}%"
        hs = (f"{p.hit_set_type} x{p.hit_set_count} / {p.hit_set_period}s"
              if p.hit_set_type != "none" else "none")
        cells = [p.name, base.name if base else str(p.tier_of), p.cache_mode,
                 human_bytes(p.target_max_bytes) if p.target_max_bytes else "0",
                 str(p.target_max_objects), ratio_micro(d), ratio_micro(dh), ratio_micro(full),
                 hs, f"r{p.min_read_recency_for_promote}/w{p.min_write_recency_for_promote}",
                 fill]
        bad_order = "" if order_ok else "bold red"
        styles = ["bold", "", "", "bold red" if no_target else "",
                  "bold red" if no_target else "", bad_order, bad_order, bad_order,
                  "bold red" if hs == "none" and p.cache_mode == "writeback" else "", "", ""]
        r = _row(f"cache:{p.name}", "cache", cells, styles, p.name)
        if r.matches(needle):
            rows.append(r)
    return rows


# --------------------------------------------------------------------------- Swift

RING_COLUMNS = ("ring / device", "region", "zone", "ip:port", "weight", "parts", "wanted",
                "balance", "recon")


def device_balance(d: RingDevice) -> float | None:
    if not d.parts_wanted:
        return None
    return 100.0 * (d.parts - d.parts_wanted) / d.parts_wanted


def _recon_state(sw: SwiftState, ring: RingState, d: RingDevice) -> tuple[str, str]:
    server = "object" if ring.kind.startswith("object") else ring.kind
    host = next((h for h in sw.recon if h.ip == d.ip and h.port == d.port
                 and h.server == server), None)
    if host is None:
        host = next((h for h in sw.recon if h.ip == d.ip and h.server == server), None)
    if host is None:
        return "no recon", "dim"
    if host.error:
        return f"recon error: {host.error}"[:40], "yellow"
    if d.device in host.unmounted:
        return "UNMOUNTED", "bold red"
    du = next((u for u in host.diskusage if u.get("device") == d.device), None)
    if du is None:
        return "MISSING", "bold red"
    if du.get("mounted") is False:
        return "UNMOUNTED", "bold red"
    size, used = du.get("size") or 0, du.get("used") or 0
    return (f"mounted {100.0 * used / size:.0f}%" if size else "mounted"), "green"


def swift_note(sw: SwiftState | None, swift_error: str | None) -> str:
    """The line under the rings: the proxy's health and the dispersion figures."""
    from checks.swift_dispersion import dispersion_summary

    if sw is None:
        return swift_error or "no Swift configured for this cluster"
    parts = []
    if sw.proxy_url:
        parts.append(f"proxy {sw.proxy_url}: " + ("healthy" if sw.proxy_healthy else
                                                  f"UNHEALTHY {sw.proxy_error or ''}"))
    if sw.dispersion is not None:
        parts.append(dispersion_summary(sw).line())
    return "\n".join(parts)


SERVER_COLUMNS = ("server", "ip:port", "state", "replicated", "async", "quarantined",
                  "fill max")


def server_rows(sw: SwiftState | None, now: float, needle: str = "") -> list[Row]:
    """One row per storage server: replication age, async pendings, quarantines, fill."""
    from checks.swift_recon import server_summaries

    if sw is None:
        return []
    rows: list[Row] = []
    ndl = needle.lower()
    for s in server_summaries(sw, now):
        ok = s.state == "ok"
        cells = (s.server, s.endpoint, s.state if ok else s.state.upper(),
                 "-" if s.replication_age_s is None else human_age(s.replication_age_s) + " ago",
                 "-" if s.async_pending is None else f"{s.async_pending:.0f}",
                 "-" if s.quarantined is None else f"{s.quarantined:.0f}",
                 "-" if s.fill_max is None else f"{s.fill_max:.0%}")
        styles = ("", "", "green" if ok else "bold red", "", "", "",
                  "bold red" if (s.fill_max or 0) >= 0.9 else
                  "yellow" if (s.fill_max or 0) >= 0.8 else "")
        r = Row(f"srv:{s.server}:{s.endpoint}", "server", cells, styles,
                " ".join(cells).lower(), s)
        if r.matches(ndl):
            rows.append(r)
    return rows


def ring_rows(sw: SwiftState | None, needle: str = "") -> list[Row]:
    """Each ring (part power, replicas, balance) then its devices by region and zone."""
    if sw is None:
        return []
    rows: list[Row] = []
    ndl = needle.lower()
    for ring in sw.rings:
        devs: list[Row] = []
        for d in sorted(ring.devices, key=lambda d: (d.region, d.zone, d.ip, d.port, d.device)):
            bal = device_balance(d)
            recon, rstyle = _recon_state(sw, ring, d)
            cells = [f"  {d.device} (id {d.id})", str(d.region), str(d.zone), f"{d.ip}:{d.port}",
                     f"{d.weight:g}", str(d.parts), str(d.parts_wanted or "-"),
                     "-" if bal is None else f"{bal:+.1f}%", recon]
            styles = ["", "", "", "", "red" if d.weight == 0 else "",
                      "red" if d.parts == 0 else "", "",
                      "yellow" if bal is not None and abs(bal) > 5 else "", rstyle]
            r = Row(f"dev:{ring.kind}:{d.id}", "device", tuple(cells), tuple(styles),
                    f"{' '.join(cells)} {ring.kind}".lower(), (ring.kind, d))
            if r.matches(ndl):
                devs.append(r)
        if not devs and ndl:
            continue
        rbal = "-" if ring.balance is None else f"{ring.balance:.2f}%"
        disp = "" if ring.dispersion is None else f" disp {ring.dispersion:.1f}%"
        label = f"▾ {ring.kind} ring"
        cells2 = (label, "", "", f"2^{ring.part_power} parts x{ring.replicas:g}",
                  f"{sum(d.weight for d in ring.devices):g}",
                  str(sum(d.parts for d in ring.devices)), f"mph {ring.min_part_hours}h",
                  rbal + disp, ring.error or ("builder != ring" if ring.builder_matches_ring
                                             is False else ""))
        rows.append(Row(f"ring:{ring.kind}", "ring", cells2,
                        ("bold", "", "", "", "", "", "", "", "bold red"), label.lower(),
                        ring.kind))
        rows.extend(devs)
    return rows


# --------------------------------------------------------------------------- findings

FINDING_COLUMNS = ("severity", "code", "entity", "message", "runbook")
INCIDENT_COLUMNS = ("sev", "cause", "entity", "next step", "impact")


def incident_rows(incidents: Sequence[Incident], new: Iterable[tuple[str, str]] = ()
                  ) -> list[Row]:
    """One row per incident, worst first: the cause, the one next step, the impact."""
    new_set = set(new)
    rows = []
    for inc in incidents:
        step = inc.next_step
        nxt = f"{step.runbook} {step.target}" if step else "by hand"
        mark = " *new*" if inc.root.key in new_set else ""
        rows.append(_row(f"incident:{inc.id}", "incident",
                         [inc.severity.label, inc.root.code, inc.root.entity, nxt,
                          inc.impact + mark],
                         [SEV_STYLE[inc.severity], "bold", "", "cyan" if step else "dim", ""],
                         inc))
    return rows


def finding_rows(findings: Sequence[Finding], needle: str = "",
                 new: Iterable[tuple[str, str]] = ()) -> list[Row]:
    """Grouped by severity (crit first), a header row per group."""
    new_set = set(new)
    rows: list[Row] = []
    for sev in (Severity.CRIT, Severity.WARN, Severity.INFO):
        group = [f for f in findings if f.severity == sev]
        kept = []
        for f in sorted(group, key=lambda f: (f.code, f.entity)):
            mark = " *new*" if f.key in new_set else ""
            cells = ["  " + sev.label, f.code, f.entity, f.message + mark,
                     f"{f.runbook} {f.target}" if f.runbook else "-"]
            r = _row(f"finding:{f.code}:{f.entity}", "finding", cells,
                     [SEV_STYLE[sev], "bold", "", "", "cyan" if f.runbook else "dim"], f)
            if r.matches(needle):
                kept.append(r)
        if not group or (needle and not kept):
            continue
        rows.append(Row(f"sev:{sev.label}", "severity",
                        (f"▾ {sev.label.upper()} ({len(group)})", "", "", "", ""),
                        (SEV_STYLE[sev],), sev.label, sev))
        rows.extend(kept)
    return rows


def evidence_text(evidence: Mapping[str, Any]) -> str:
    try:
        return json.dumps(dict(evidence), indent=2, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(dict(evidence))


# --------------------------------------------------------------------------- history

HISTORY_COLUMNS = ("run", "when", "source", "worst", "findings", "exit", "took")
AUDIT_COLUMNS = ("run", "when", "runbook", "target", "confirmed by", "outcome", "message")


def _when(ts: Any, now: float) -> str:
    try:
        return human_age(now - float(ts)) + " ago"
    except (TypeError, ValueError):
        return str(ts or "-")


def history_rows(runs: Sequence[CheckRun], now: float) -> list[Row]:
    out = []
    for r in runs:
        cells = [str(r.id), _when(r.started_at, now), r.source or "-", r.worst,
                 str(r.n_findings), str(r.exit_code), f"{r.duration_s:.1f}s"]
        out.append(_row(f"run:{r.id}", "run", cells,
                        ["", "", "", {"crit": "bold red", "warn": "yellow"}.get(r.worst, "green"),
                         "", "", ""], r))
    return out


def audit_rows(runs: Sequence[AuditRun], now: float) -> list[Row]:
    out = []
    for r in runs:
        cells = [str(r.id), _when(r.started_at, now), r.runbook, r.target,
                 r.confirmed_by or r.user or "-", r.outcome or "-", r.message[:80]]
        ok = r.outcome == Outcome.SUCCESS
        out.append(_row(f"audit:{r.id}", "audit", cells,
                        ["", "", "bold", "", "", "green" if ok else "bold red", ""], r))
    return out


@dataclass
class FilterState:
    """Per-screen filter: free text plus the OSD screen's state/host choices."""

    needle: str = ""
    state: str = "all"
    host: str | None = None
    hosts: list[str] = field(default_factory=list)
