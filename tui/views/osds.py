"""The OSD screen: the CRUSH tree by host joined with each host's facts (data dir mount,
daemon, deployment flavour), its filters, and one OSD's detail lines."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from checks import daemons, hostdiag
from checks.model import Finding
from storage.model import ClusterSnapshot, DaemonLife, HostFacts, OsdState
from storage.targets import ClusterTarget
from tui.views.common import SEV_STYLE, Row, human_bytes
from tui.views.findings import findings_for

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
    life = daemons.status_on(facts, osd.name)  # the check's judgement of its life
    if life is not None and life.life is not DaemonLife.RUNNING:
        dstate = life.life.value + (f" ({life.signal})" if life.signal else "")
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
        hrow.widths  # noqa: B018  (cached_property: measures the cells now)
        for _, r in kids:
            r.widths  # noqa: B018


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
