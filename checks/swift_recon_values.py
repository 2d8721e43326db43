"""What recon's numbers say, before any judgement: the replication pass, the sweeps, the
samples kept for history, and the per-server summary the TUI and Slack show. Pure reads
of ``ReconHost``'s typed fields (parsed once in ``storage.swift_recon_parse``; the names
that moved there stay importable from here).
"""

from __future__ import annotations

from dataclasses import dataclass

from checks.swift_servers import server_entity
from storage.model import QUARANTINE_KINDS as QUARANTINE_KINDS
from storage.model import ReconHost, RingDevice, SwiftState
from storage.model import Replication as Replication
from storage.swift_recon_parse import num as num


def recon_samples(sw: SwiftState) -> list[tuple[str, str, float]]:
    """The numbers kept in the journal for history: (entity, metric, value)."""
    out: list[tuple[str, str, float]] = []
    for r in sw.recon:
        if r.error_kind is not None:
            continue
        ent = server_entity(r.server, r.ip, r.port)
        if r.quarantined is not None:
            for k, v in r.quarantined.by_kind():
                if v is not None:
                    out.append((ent, f"quarantined_{k}", v))
        if r.async_pending is not None:
            out.append((ent, "async_pending", r.async_pending))
    return out


def age_h(s: float) -> str:
    return f"{s / 3600:.1f} h"


def replication(r: ReconHost) -> Replication | None:
    """last completed (epoch), duration (s), failures of the last pass, or None."""
    return r.replication


def sweeps(r: ReconHost) -> list[tuple[str, float]]:
    """(daemon, seconds of the last sweep/pass) that recon reports for this server."""
    t = r.sweep_times
    named = ((f"{r.server}-updater", t.updater_s), (f"{r.server}-auditor", t.auditor_s),
             ("object-auditor (ALL)", t.object_auditor_all_s),
             ("object-auditor (ZBF)", t.object_auditor_zbf_s),
             ("object-expirer", t.expirer_s))
    return [(daemon, v) for daemon, v in named if v is not None]


SERVER_PREF = {"object": 0, "container": 1, "account": 2}


@dataclass(frozen=True)
class ServerSummary:
    """One storage server's state for the TUI's Swift screen and Slack's ``ring``."""

    server: str
    ip: str
    port: int
    state: str  # "ok" or the error kind (refused, timeout, http, no-recon, ...)
    replication_age_s: float | None = None
    async_pending: float | None = None
    quarantined: float | None = None
    fill_max: float | None = None  # the fullest of its mounted devices, 0..1

    @property
    def endpoint(self) -> str:
        return f"{self.ip}:{self.port}"


def server_summaries(sw: SwiftState, now: float) -> list[ServerSummary]:
    """Replication age, async pendings, quarantines and fill per storage server (pure)."""
    ring_devs: dict[tuple[str, int], set[str]] = {}
    for ring in sw.rings:
        for d in ring.devices:
            ring_devs.setdefault((d.ip, d.port), set()).add(d.device)
    out: list[ServerSummary] = []
    for r in sorted(sw.recon, key=lambda h: (SERVER_PREF.get(h.server, 3), h.ip, h.port)):
        if r.error_kind is not None:
            out.append(ServerSummary(r.server, r.ip, r.port, r.error_kind))
            continue
        rep = replication(r)
        last = rep["last"] if rep else None
        q = r.quarantined
        mine = ring_devs.get((r.ip, r.port), set())
        fills = [f for du in r.diskusage
                 if (f := du.fill) is not None and du.device in mine]
        out.append(ServerSummary(
            r.server, r.ip, r.port, "ok",
            replication_age_s=max(0.0, now - last) if isinstance(last, float) else None,
            async_pending=r.async_pending,
            quarantined=sum(v or 0.0 for _, v in q.by_kind()) if q is not None else None,
            fill_max=max(fills) if fills else None))
    return out


@dataclass(frozen=True)
class DeviceState:
    """What recon says of one ring device: ``UNMOUNTED``, ``MISSING`` (not in recon's
    diskusage), ``mounted 40%``, ``no recon``, ``recon error: ...``; ``bad`` when the
    device cannot serve (unmounted or missing)."""

    text: str
    bad: bool = False
    unknown: bool = False


def ring_device_state(sw: SwiftState, ring_kind: str, d: RingDevice) -> DeviceState:
    """The recon state of device ``d`` of ring ``ring_kind`` (pure): the server of that
    ring kind on the device's ip:port, else any of that kind on the ip."""
    server = "object" if ring_kind.startswith("object") else ring_kind
    host = next((h for h in sw.recon if h.ip == d.ip and h.port == d.port
                 and h.server == server), None)
    if host is None:
        host = next((h for h in sw.recon if h.ip == d.ip and h.server == server), None)
    if host is None:
        return DeviceState("no recon", unknown=True)
    if d.device in host.unmounted:
        return DeviceState("UNMOUNTED", bad=True)
    if host.error:
        return DeviceState(f"recon error: {host.error}"[:60], unknown=True)
    du = next((u for u in host.diskusage if u.device == d.device), None)
    if du is None:
        return DeviceState("MISSING", bad=True)
    if du.error:
        return DeviceState(f"recon: {du.error}"[:60], unknown=True)
    if not du.mounted:
        return DeviceState("UNMOUNTED", bad=True)
    return DeviceState(f"mounted {100.0 * du.fill:.0f}%" if du.fill is not None else "mounted")
