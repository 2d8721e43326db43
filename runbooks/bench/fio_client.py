"""fio's client/server output as stordoc reads it: one ``client_stats`` entry per server
(matched to our client by the address fio connected to) plus fio's own "All clients" sum,
and the averaged per-second logs fio's client receives from every server
(``<prefix>_{iops,bw,lat}.1.log.<address>``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from runbooks.bench.model import MIB

ALL_CLIENTS = "All clients"
VERIFY_RE = re.compile(r"(verify failed|bad header|bad magic|verify: )", re.I)


def _dir(e: Mapping[str, Any], d: str) -> dict[str, Any]:
    v = e.get(d) or {}
    return v if isinstance(v, dict) else {}


def per_client_figures(e: Mapping[str, Any]) -> dict[str, Any]:
    """One ``client_stats`` entry of fio's JSON as stordoc keeps a client's figures."""
    dirs = [d for d in ("read", "write") if int(_dir(e, d).get("total_ios") or 0)]
    ops = sum(int(_dir(e, d).get("total_ios") or 0) for d in dirs)
    nbytes = sum(int(_dir(e, d).get("io_bytes") or 0) for d in dirs)
    el = max((float(_dir(e, d).get("runtime") or 0) for d in dirs), default=0.0) / 1000
    lat_w = sum(float(_dir(e, d).get("lat_ns", {}).get("mean") or 0) *
                int(_dir(e, d).get("total_ios") or 0) for d in dirs)
    lat_max = max((float(_dir(e, d).get("lat_ns", {}).get("max") or 0) for d in dirs),
                  default=0.0)

    def pct(key: float) -> float | None:
        vals = [float(v) for d in dirs for k, v in
                (_dir(e, d).get("clat_ns", {}).get("percentile") or {}).items()
                if abs(float(k) - key) < 1e-6]
        return max(vals) / 1e6 if vals else None

    ss = e.get("steadystate") if isinstance(e.get("steadystate"), dict) else None
    return {"ops": ops, "bytes": nbytes, "elapsed_s": el, "ops_s": ops / el if el else 0.0,
            "mb_s": nbytes / MIB / el if el else 0.0,
            "lat_avg_ms": lat_w / ops / 1e6 if ops else None,
            "lat_max_ms": lat_max / 1e6 if ops else None,
            "lat_p99_ms": pct(99.0), "error": int(e.get("error") or 0),
            "steady_attained": bool(ss.get("attained")) if ss else None,
            "engine": {"source": "fio client_stats", "total_ios": ops, "io_bytes": nbytes,
                       "runtime_ms": el * 1000,
                       "iops": sum(float(_dir(e, d).get("iops") or 0) for d in dirs),
                       "bw_bytes": sum(float(_dir(e, d).get("bw_bytes") or 0) for d in dirs)}}


def split_client_stats(doc: Mapping[str, Any], specs: Mapping[str, str]
                       ) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
    """fio's ``client_stats``: our client -> its entry (matched by the address fio
    connected to), and fio's own "All clients" sum (None with one client)."""
    by_addr = {spec.split(":", 1)[1].rsplit(",", 1)[0]: c for c, spec in specs.items()}
    per: dict[str, dict[str, Any]] = {}
    total = None
    for e in doc.get("client_stats") or []:
        if not isinstance(e, dict):
            continue
        if e.get("jobname") == ALL_CLIENTS:
            total = e
            continue
        c = by_addr.get(str(e.get("hostname")))
        if c is not None and c not in per:
            per[c] = e
    return per, total


def series_from_logs(logdir: str, prefix: str, addresses: Sequence[str]) -> list[dict[str, float]]:
    """The per-second sum over clients of fio's averaged logs (iops, bw in KiB/s, lat in
    ns), as fio's client stored them: ``<prefix>_iops.1.log.<address>``."""
    ops: dict[int, float] = {}
    mb: dict[int, float] = {}
    lat_w: dict[int, float] = {}
    for a in addresses:
        for kind, into in (("iops", ops), ("bw", mb)):
            for sec, v in _log_rows(f"{prefix}_{kind}.1.log.{a}"):
                into[sec] = into.get(sec, 0.0) + (v if kind == "iops" else v / 1024)
        iops_here = dict(_sum_by_sec(f"{prefix}_iops.1.log.{a}"))
        for sec, v in _log_rows(f"{prefix}_lat.1.log.{a}"):
            lat_w[sec] = lat_w.get(sec, 0.0) + v / 1e6 * iops_here.get(sec, 0.0)
    out = []
    for sec in sorted(ops):
        o_ = ops[sec]
        out.append({"t": float(sec), "ops_s": o_, "mb_s": mb.get(sec, 0.0),
                    "lat_ms": lat_w.get(sec, 0.0) / o_ if o_ else 0.0, "partial": 0.0})
    return out


def _log_rows(path: str) -> list[tuple[int, float]]:
    """(second, value) rows; read and write rows of the same second both kept."""
    rows = []
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) < 2:
                    continue
                try:
                    ms, v = int(parts[0]), float(parts[1])
                except ValueError:
                    continue
                rows.append((max(1, round(ms / 1000)), v))
    except OSError:
        return []
    return rows


def _sum_by_sec(path: str) -> list[tuple[int, float]]:
    acc: dict[int, float] = {}
    for sec, v in _log_rows(path):
        acc[sec] = acc.get(sec, 0.0) + v
    return sorted(acc.items())


def verify_examples(text: str) -> list[str]:
    return [ln.strip()[:200] for ln in text.splitlines() if VERIFY_RE.search(ln)][:3]
