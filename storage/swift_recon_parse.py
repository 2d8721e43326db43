"""Recon's JSON answers of one storage server turned into a typed ``ReconHost``, once.

Pure: no I/O. Every Swift release's shapes are read alike (2.30 on the host, 2.35 in the
Reef lab, and the older object replication answer that has only ``replication_last``),
without sniffing versions: an answer that is missing, null or of another shape gives
None for its facts, never an exception. Checks judge the typed fields; they never read
``ReconHost.raw``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.model.swift import (
    DiskUsage,
    JsonValue,
    Load,
    Quarantined,
    ReconHost,
    Replication,
    Sockstat,
    SweepTimes,
)


def num(v: object) -> float | None:
    """A JSON number as a float; None for anything else (null, strings, booleans)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _answer(v: object) -> dict[str, Any] | None:
    """A recon answer that is a JSON object, else None."""
    return v if isinstance(v, dict) else None


def parse_quarantined(answer: object) -> Quarantined | None:
    q = _answer(answer)
    if q is None:
        return None
    return Quarantined(objects=num(q.get("objects")), containers=num(q.get("containers")),
                       accounts=num(q.get("accounts")))


def parse_async_pending(answer: object) -> float | None:
    a = _answer(answer)
    return num(a.get("async_pending")) if a is not None else None


def parse_replication(server: str, answer: object) -> Replication | None:
    """last completed (epoch), duration (s), failures and attempts of the last pass, or
    None. The object replicator reports its duration in minutes (``object_replication_time``)
    and, in older releases, its end only as ``replication_last``."""
    rep = _answer(answer)
    if rep is None:
        return None
    if server == "object":
        last = num(rep.get("object_replication_last")) or num(rep.get("replication_last"))
        took = num(rep.get("object_replication_time"))
        took = took * 60 if took is not None else None  # object replicator: minutes
    else:
        last = num(rep.get("replication_last"))
        took = num(rep.get("replication_time"))
    stats = _answer(rep.get("replication_stats"))
    fails = num(stats.get("failure")) if stats is not None else None
    tried = num(stats.get("attempted")) if stats is not None else None
    return {"last": last, "duration_s": took, "failures": fails, "attempted": tried}


def reported(answer: object) -> Mapping[str, JsonValue] | None:
    """The answer as recon sent it (a shallow copy), for evidence; None if not an object."""
    a = _answer(answer)
    return dict(a) if a is not None else None


def parse_load(answer: object) -> Load | None:
    load = _answer(answer)
    if load is None:
        return None
    return Load(avg_1m=num(load.get("1m")), avg_5m=num(load.get("5m")),
                avg_15m=num(load.get("15m")), reported=dict(load))


def parse_sockstat(answer: object) -> Sockstat | None:
    ss = _answer(answer)
    if ss is None:
        return None
    return Sockstat(orphan=num(ss.get("orphan")), reported=dict(ss))


def parse_drive_audit(answer: object) -> float | None:
    da = _answer(answer)
    return num(da.get("drive_audit_errors")) if da is not None else None


def parse_sweep_times(server: str, raw: Mapping[str, Any]) -> SweepTimes:
    """The updater's, auditor's (object auditor: ALL and ZBF passes) and, for object
    servers, the expirer's last sweep in seconds."""
    up = _answer(raw.get(f"updater/{server}"))
    au = _answer(raw.get(f"auditor/{server}"))
    ex = _answer(raw.get("expirer/object")) if server == "object" else None

    def audit_time(key: str) -> float | None:
        st = _answer(au.get(key)) if au is not None else None
        return num(st.get("audit_time")) if st is not None else None

    return SweepTimes(
        updater_s=num(up.get(f"{server}_updater_sweep")) if up is not None else None,
        auditor_s=num(au.get(f"{server}_auditor_pass_completed")) if au is not None
        else None,
        object_auditor_all_s=audit_time("object_auditor_stats_ALL"),
        object_auditor_zbf_s=audit_time("object_auditor_stats_ZBF"),
        expirer_s=num(ex.get("object_expiration_pass")) if ex is not None else None)


def parse_diskusage(v: Any) -> tuple[DiskUsage, ...]:
    """``/recon/diskusage``: one ``DiskUsage`` per entry that names a device."""
    out = []
    for d in v if isinstance(v, list) else ():
        if not isinstance(d, dict) or d.get("device") is None:
            continue
        m = d.get("mounted")
        out.append(DiskUsage(device=str(d["device"]), mounted=m is True,
                             size=num(d.get("size")), used=num(d.get("used")),
                             avail=num(d.get("avail")),
                             error=m if isinstance(m, str) and m else None))
    return tuple(out)


def recon_from_raw(ip: str, port: int, server: str, raw: dict[str, Any],
                   error: str | None = None, error_kind: str | None = None) -> ReconHost:
    """Build a ``ReconHost`` from the JSON answers (keyed by recon check name, plus
    ``_local_time``/``_rtt_s`` that ``storage.swift.fetch_recon`` adds around ``time``)."""
    err = error
    unm = raw.get("unmounted") or []
    du = raw.get("diskusage") or []
    rep = raw.get(f"replication/{server}")
    return ReconHost(
        ip=ip, port=port, server=server, error=err,
        error_kind=error_kind if err else None,
        unmounted=tuple(str(d.get("device")) for d in unm if isinstance(d, dict)),
        diskusage=parse_diskusage(du),
        ringmd5={str(k): str(v) for k, v in (raw.get("ringmd5") or {}).items()},
        swiftconfmd5=(next(iter(raw["swiftconfmd5"].values()), None)
                      if isinstance(raw.get("swiftconfmd5"), dict) else None),
        unmounted_answered="unmounted" in raw,
        quarantined=parse_quarantined(raw.get("quarantined")),
        async_pending=parse_async_pending(raw.get("async")),
        replication=parse_replication(server, rep),
        replication_reported=reported(rep),
        load=parse_load(raw.get("load")),
        remote_time=num(raw.get("time")),
        local_time=num(raw.get("_local_time")),
        rtt_s=num(raw.get("_rtt_s")),
        sockstat=parse_sockstat(raw.get("sockstat")),
        drive_audit_errors=parse_drive_audit(raw.get("driveaudit")),
        sweep_times=parse_sweep_times(server, raw),
        raw=raw)
