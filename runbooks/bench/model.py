"""Benchmark options and results: plain data every front end renders (CLI, bot, TUI).

A ``BenchResult`` is one timed phase of one repetition (e.g. "rados write, rep 2"); one
invocation makes a *group* of them. Results carry their fingerprint (what must be equal for
two runs to be comparable: cluster, pool or container, workload, size, concurrency, client
host, versions) so ``--compare`` finds earlier runs of the same kind in the journal.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

KINDS = ("rados", "swift", "rbd", "limits")
MIB = 1024 * 1024


def stordoc_version() -> str:
    try:
        from importlib.metadata import version

        return version("stordoc")
    except Exception:
        return "0.1.0"


@dataclass(frozen=True)
class BenchOptions:
    """Everything a benchmark run takes; unused fields are ignored by other kinds.

    ``modes``: rados ``write``/``seq``/``rand``; rbd ``randrw``/``seq``; swift ``mix``;
    limits ``disk``/``net``. ``mix`` is read/write/delete percent (Swift, COSBench-style).
    ``size_max`` makes sizes a uniform range ``size..size_max`` (Swift).
    """

    modes: tuple[str, ...] = ("write",)
    duration_s: float = 5.0
    ops: int | None = None
    concurrency: int = 16
    size: int = 4 * MIB
    size_max: int | None = None
    mix: tuple[int, int, int] = (0, 100, 0)
    repeat: int = 1
    engine: str = "native"
    pool: str | None = None
    container: str | None = None
    keep: bool = False
    force: bool = False
    image_size: int = 256 * MIB
    rwmixread: int = 70
    hosts: tuple[str, ...] = ()
    limit_size: int = 64 * MIB
    prefill: int = 200  # Swift objects written before a mix that reads or deletes
    seed: int | None = None
    # load from these configured hosts over SSH ("*": [bench] clients, or every host)
    clients: tuple[str, ...] = ()
    # stop a phase once throughput is steady (``duration_s`` is then the maximum)
    steady: bool = False

    def with_(self, **kw: Any) -> BenchOptions:
        return replace(self, **kw)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["modes"] = list(self.modes)
        d["mix"] = list(self.mix)
        d["hosts"] = list(self.hosts)
        d["clients"] = list(self.clients)
        return d


@dataclass(frozen=True)
class Progress:
    """Live progress for a bar: elapsed seconds of the current phase, ops, MB/s so far."""

    phase: str
    rep: int
    reps: int
    elapsed_s: float
    planned_s: float
    ops: int
    bytes: int

    @property
    def mb_s(self) -> float:
        return self.bytes / MIB / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def ops_s(self) -> float:
        return self.ops / self.elapsed_s if self.elapsed_s > 0 else 0.0


@dataclass
class BenchResult:
    """One measured phase. Latencies in milliseconds; MB means MiB (as rados bench)."""

    cluster: str
    kind: str
    engine: str
    workload: str  # "write", "seq", "rand", "mix 80/15/5", "randrw 4k", "disk write"...
    group_id: str
    rep: int
    params: dict[str, Any]
    fingerprint_fields: dict[str, Any]
    started_at: float
    duration_s: float = 0.0
    status: str = "ok"  # ok | cancelled | failed
    user: str = ""
    ops: int = 0
    bytes: int = 0
    ops_s: float = 0.0
    mb_s: float = 0.0
    lat_avg_ms: float | None = None
    lat_p50_ms: float | None = None
    lat_p90_ms: float | None = None
    lat_p99_ms: float | None = None
    lat_p999_ms: float | None = None
    lat_max_ms: float | None = None
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    series: list[dict[str, float]] = field(default_factory=list)  # t, ops_s, mb_s, lat_ms
    state: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    stordoc_version: str = field(default_factory=stordoc_version)
    id: int | None = None

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.fingerprint_fields)

    def to_row(self) -> dict[str, Any]:
        d = asdict(self)
        d["fingerprint"] = self.fingerprint
        return d

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> BenchResult:
        names = {f for f in cls.__dataclass_fields__}
        kw = {k: v for k, v in row.items() if k in names}
        for k in ("params", "fingerprint_fields", "state", "error_kinds", "extra"):
            if not isinstance(kw.get(k), dict):
                kw[k] = {}
        for k in ("series", "notes"):
            if not isinstance(kw.get(k), list):
                kw[k] = []
        return cls(**kw)

    def headline(self) -> str:
        lat = f"{self.lat_avg_ms:.2f}" if self.lat_avg_ms is not None else "-"
        p99 = f"{self.lat_p99_ms:.2f}" if self.lat_p99_ms is not None else "-"
        return (f"{self.kind} {self.workload} rep {self.rep}: {self.ops_s:,.1f} ops/s, "
                f"{self.mb_s:,.2f} MB/s, latency avg {lat} ms, p99 {p99} ms, "
                f"errors {self.errors}")


def fingerprint(fields: Mapping[str, Any]) -> str:
    blob = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


# a run's own pool (runbooks.bench.pools): stordoc-bench-<group id>
SCRATCH_RE = re.compile(r"\Astordoc-bench-[0-9]{8}T[0-9]{6}-[0-9]{3}\Z")
SCRATCH_LABEL = "stordoc-bench-<run>"


def where_label(pool: str | None) -> str | None:
    """A run's own pool has a new name each time: fingerprints (what a run is compared
    with) use one label for all of them, so runs in their own pools compare."""
    if pool is not None and SCRATCH_RE.match(pool):
        return SCRATCH_LABEL
    return pool


def fingerprint_fields(cluster: str, kind: str, engine: str, workload: str,
                       where: str | None, size: int | Sequence[int | None],
                       concurrency: int, client: str, versions: Sequence[str]) -> dict[str, Any]:
    return {"cluster": cluster, "kind": kind, "engine": engine, "workload": workload,
            "where": where_label(where), "size": list(size) if isinstance(size, (list, tuple)) else size,
            "concurrency": concurrency, "client": client, "versions": sorted(versions)}


_SIZE_RE = re.compile(r"\A(?:[0-9]{1,13}(?:\.[0-9]{0,6})?|\.[0-9]{1,6})\Z", re.ASCII)
MAX_SIZE = 1024**4  # 1 TiB: no benchmark object, block or image is bigger


def parse_size(text: str) -> int:
    """``4k``, ``4KB``, ``4M``, ``1GiB``, ``65536`` -> bytes (binary units)."""
    t = text.strip().lower().replace("ib", "").rstrip("b")
    mult = 1
    for suffix, m in (("k", 1024), ("m", MIB), ("g", 1024 * MIB), ("t", 1024**2 * MIB)):
        if t.endswith(suffix):
            t, mult = t[:-1], m
            break
    # ASCII digits only: float() would take "inf", "nan", "1e400" and Unicode digits
    if not _SIZE_RE.match(t):
        raise ValueError(f"not a size: {text[:40]!r} (e.g. 4k, 4M, 1G)")
    v = float(t)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"size must be positive: {text[:40]!r}")
    n = int(v * mult)
    if not 1 <= n <= MAX_SIZE:
        raise ValueError(f"size must be between 1 byte and 1T: {text[:40]!r}")
    return n


def human_size(n: int) -> str:
    for unit, m in (("G", 1024 * MIB), ("M", MIB), ("K", 1024)):
        if n >= m and n % m == 0:
            return f"{n // m}{unit}"
    return f"{n}B" if n < 1024 else f"{n / 1024:.1f}K"
