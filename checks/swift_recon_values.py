"""What recon's numbers say, before any judgement: the replication pass, the sweeps, the
samples kept for history, and the per-server summary the TUI and Slack show. Pure reads
of ``ReconHost.raw``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from checks.swift_servers import server_entity
from storage.model import ReconHost, SwiftState

QUARANTINE_KINDS = ("objects", "containers", "accounts")


def num(v: object) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return None


def recon_samples(sw: SwiftState) -> list[tuple[str, str, float]]:
    """The numbers kept in the journal for history: (entity, metric, value)."""
    out: list[tuple[str, str, float]] = []
    for r in sw.recon:
        if r.error_kind is not None:
            continue
        ent = server_entity(r.server, r.ip, r.port)
        q = r.raw.get("quarantined")
        if isinstance(q, dict):
            for k in QUARANTINE_KINDS:
                v = num(q.get(k))
                if v is not None:
                    out.append((ent, f"quarantined_{k}", v))
        a = r.raw.get("async")
        if isinstance(a, dict) and num(a.get("async_pending")) is not None:
            out.append((ent, "async_pending", float(a["async_pending"])))
    return out


def age_h(s: float) -> str:
    return f"{s / 3600:.1f} h"


class Replication(TypedDict):
    """A server's last replication pass as recon reports it (None: not reported)."""

    last: float | None  # epoch seconds it completed
    duration_s: float | None
    failures: float | None
    attempted: float | None


def replication(r: ReconHost) -> Replication | None:
    """last completed (epoch), duration (s), failures of the last pass, or None."""
    rep = r.raw.get(f"replication/{r.server}")
    if not isinstance(rep, dict):
        return None
    if r.server == "object":
        last = num(rep.get("object_replication_last")) or num(rep.get("replication_last"))
        took = num(rep.get("object_replication_time"))
        took = took * 60 if took is not None else None  # object replicator: minutes
    else:
        last = num(rep.get("replication_last"))
        took = num(rep.get("replication_time"))
    stats = rep.get("replication_stats") if isinstance(rep.get("replication_stats"), dict) \
        else {}
    fails = num(stats.get("failure")) if isinstance(stats, dict) else None
    tried = num(stats.get("attempted")) if isinstance(stats, dict) else None
    return {"last": last, "duration_s": took, "failures": fails, "attempted": tried}


def sweeps(r: ReconHost) -> list[tuple[str, float]]:
    """(daemon, seconds of the last sweep/pass) that recon reports for this server."""
    out: list[tuple[str, float]] = []
    up = r.raw.get(f"updater/{r.server}")
    if isinstance(up, dict):
        v = num(up.get(f"{r.server}_updater_sweep"))
        if v is not None:
            out.append((f"{r.server}-updater", v))
    au = r.raw.get(f"auditor/{r.server}")
    if isinstance(au, dict):
        v = num(au.get(f"{r.server}_auditor_pass_completed"))
        if v is not None:
            out.append((f"{r.server}-auditor", v))
        for key in ("object_auditor_stats_ALL", "object_auditor_stats_ZBF"):
            st = au.get(key)
            if isinstance(st, dict) and num(st.get("audit_time")) is not None:
                out.append((f"object-auditor ({key.rsplit('_', 1)[1]})",
                            float(st["audit_time"])))
    ex = r.raw.get("expirer/object") if r.server == "object" else None
    if isinstance(ex, dict):
        v = num(ex.get("object_expiration_pass"))
        if v is not None:
            out.append(("object-expirer", v))
    return out

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
        a = r.raw.get("async")
        q = r.raw.get("quarantined")
        mine = ring_devs.get((r.ip, r.port), set())
        fills = [float(du["used"]) / float(du["size"]) for du in r.diskusage
                 if du.get("mounted") and num(du.get("size")) and num(du.get("used"))
                 is not None and str(du.get("device")) in mine]
        out.append(ServerSummary(
            r.server, r.ip, r.port, "ok",
            replication_age_s=max(0.0, now - last) if isinstance(last, float) else None,
            async_pending=num(a.get("async_pending")) if isinstance(a, dict) else None,
            quarantined=sum(num(q.get(k)) or 0.0 for k in QUARANTINE_KINDS)
            if isinstance(q, dict) else None,
            fill_max=max(fills) if fills else None))
    return out
