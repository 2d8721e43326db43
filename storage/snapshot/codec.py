"""What goes into a snapshot's files and back: the collectors' raw answers where a parser
exists (Ceph's JSON, recon's JSON, the host scripts' text: a replay runs the same parsers
a live check runs), typed values where it does not or where the source may not be loaded
from an untrusted place (rings and builders are read with Swift's loaders, one of which
unpickles: a snapshot carries what was read from them, never the files).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from storage.model import (
    ClusterSnapshot,
    DispersionState,
    HostFacts,
    HostRaw,
    ReconHost,
    RingState,
    SwiftState,
)
from storage.snapshot.files import SnapshotError, epoch, seconds
from storage.swift_recon_parse import recon_from_raw

_RINGS = TypeAdapter(tuple[RingState, ...])
_DISPERSION = TypeAdapter(DispersionState | None)
_HISTORY = TypeAdapter(dict[str, dict[str, tuple[float, float]]])

# names of configuration options whose values are credentials: never written
SECRET_NAME = re.compile(r"(password|passwd|secret|token|private|credential|_key$|^key$)",
                         re.IGNORECASE)
REDACTED = "<redacted by stordoc>"


def redact(value: Any) -> Any:
    """Ceph's answers with the values of secret-named options replaced (``config dump``
    entries ``{"name", "value"}``, ``config show``'s ``{name: value}``)."""
    if isinstance(value, list):
        return [redact(v) for v in value]
    if not isinstance(value, dict):
        return value
    name = value.get("name")
    out = {}
    for k, v in value.items():
        if k == "value" and isinstance(name, str) and SECRET_NAME.search(name):
            out[k] = REDACTED
        elif isinstance(k, str) and isinstance(v, str) and SECRET_NAME.search(k):
            out[k] = REDACTED
        else:
            out[k] = redact(v)
    return out


def answer_files(keys: list[str]) -> dict[str, str]:
    """One file name per Ceph command key (``osd dump`` -> ``ceph/osd_dump.json``), unique."""
    out: dict[str, str] = {}
    for key in keys:
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("._-")[:100] or "answer"
        name, n = f"ceph/{stem}.json", 2
        while name in out:
            name, n = f"ceph/{stem}-{n}.json", n + 1
        out[name] = key
    return out


# ------------------------------------------------------------------ Swift
def swift_doc(sw: SwiftState) -> dict[str, Any]:
    return {
        "collected_at": sw.collected_at, "proxy_url": sw.proxy_url,
        "proxy_healthy": sw.proxy_healthy, "proxy_error": sw.proxy_error,
        "local_ring_md5": dict(sw.local_ring_md5),
        "local_swiftconf_md5": sw.local_swiftconf_md5,
        "rings": _RINGS.dump_python(sw.rings, mode="json"),
        "recon": [{"ip": r.ip, "port": r.port, "server": r.server, "error": r.error,
                   "error_kind": r.error_kind, "answers": dict(r.raw)} for r in sw.recon],
        "dispersion": _DISPERSION.dump_python(sw.dispersion, mode="json"),
        "history": {e: {m: list(tv) for m, tv in ms.items()} for e, ms in sw.history.items()},
    }


def _opt_str(d: Mapping[str, Any], key: str) -> str | None:
    v = d.get(key)
    if v is not None and not isinstance(v, str):
        raise SnapshotError(f"swift.json: {key} is not text")
    return v


def swift_from_doc(doc: Any) -> SwiftState:
    """The Swift state a snapshot recorded (recon answers through recon's parser)."""
    if not isinstance(doc, Mapping):
        raise SnapshotError("swift.json is not an object")
    try:
        rings = _RINGS.validate_python(doc.get("rings") or [])
        dispersion = _DISPERSION.validate_python(doc.get("dispersion"))
        history = _HISTORY.validate_python(doc.get("history") or {})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise SnapshotError(f"swift.json: {where}: {first.get('msg')}") from None
    recon: list[ReconHost] = []
    for i, r in enumerate(doc.get("recon") or []):
        if not isinstance(r, Mapping) or not isinstance(r.get("ip"), str) or \
                isinstance(r.get("port"), bool) or not isinstance(r.get("port"), int) or \
                not isinstance(r.get("server"), str):
            raise SnapshotError(f"swift.json: recon entry {i} names no ip, port and server")
        answers = r.get("answers") or {}
        if not isinstance(answers, Mapping):
            raise SnapshotError(f"swift.json: recon entry {i}: answers is not an object")
        recon.append(recon_from_raw(r["ip"], r["port"], r["server"], dict(answers),
                                    _opt_str(r, "error"), _opt_str(r, "error_kind")))
    md5 = doc.get("local_ring_md5") or {}
    if not isinstance(md5, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                               for k, v in md5.items()):
        raise SnapshotError("swift.json: local_ring_md5 is not a map of text")
    healthy = doc.get("proxy_healthy")
    if healthy is not None and not isinstance(healthy, bool):
        raise SnapshotError("swift.json: proxy_healthy is not true, false or null")
    return SwiftState(
        rings=rings, recon=tuple(recon), proxy_url=_opt_str(doc, "proxy_url"),
        proxy_healthy=healthy, proxy_error=_opt_str(doc, "proxy_error"),
        local_ring_md5=dict(md5), local_swiftconf_md5=_opt_str(doc, "local_swiftconf_md5"),
        collected_at=epoch(doc.get("collected_at", 0.0), "swift.json: collected_at"),
        history=history, dispersion=dispersion)


# ------------------------------------------------------------------ hosts
def host_doc(h: HostFacts) -> dict[str, Any]:
    raw = h.raw
    if h.error is None and raw is None:
        raise ValueError(f"host {h.name}: facts collected without keep_raw")
    return {"name": h.name, "address": h.address, "error": h.error,
            "collected_at": h.collected_at, "duration_s": h.duration_s,
            "facts": raw.facts if raw else None, "identity": raw.identity if raw else None,
            "started_at": raw.started_at if raw else None,
            "window_s": raw.window_s if raw else None}


def host_from_doc(doc: Any, rel: str) -> tuple[str, str, str | None, HostRaw | None,
                                                float, float]:
    """(name, address, error, raw, collected_at, duration_s) of one host file."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("name"), str) or \
            not isinstance(doc.get("address"), str):
        raise SnapshotError(f"{rel}: no host name and address")
    err = doc.get("error")
    if err is not None and not isinstance(err, str):
        raise SnapshotError(f"{rel}: error is not text")
    collected = epoch(doc.get("collected_at", 0.0), f"{rel}: collected_at")
    took = seconds(doc.get("duration_s", 0.0), f"{rel}: duration_s")
    if err is not None:
        return doc["name"], doc["address"], err, None, collected, took
    facts, ident = doc.get("facts"), doc.get("identity")
    if not isinstance(facts, str) or (ident is not None and not isinstance(ident, str)):
        raise SnapshotError(f"{rel}: the facts script's output is missing")
    raw = HostRaw(facts, ident, epoch(doc.get("started_at", collected), f"{rel}: started_at"),
                  seconds(doc.get("window_s", 86400.0), f"{rel}: window_s"))
    return doc["name"], doc["address"], None, raw, collected, took


def needs(snap: ClusterSnapshot) -> list[str]:
    """What a snapshot cannot be written without (facts collected without their raw)."""
    return [n for n, h in snap.hosts.items() if h.error is None and h.raw is None]
