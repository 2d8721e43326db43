"""What every workload shares: the caps, the health gate, the session a run carries
(cancel flag, progress callback, audit steps) and turning raw measurements into results."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from checks.settle import judge_pgs, states_of
from runbooks.bench.measure import latency_summary, series_from_buckets
from runbooks.bench.model import BenchOptions, BenchResult, Progress, fingerprint_fields
from runbooks.model import Refused, RunContext
from storage.ceph import settle_from_json
from storage.rados_io import RawRun, client_host

MIB = 1024 * 1024


@dataclass(frozen=True)
class BenchLimits:
    """Caps and verdict knobs (``[bench]`` in the settings)."""

    max_duration_s: float = 120.0
    max_bytes: int = 2 * 1024**3
    # None: each RADOS/RBD run creates a pool of its own and removes it (bench.pools)
    pool: str | None = None
    container: str = "stordoc-bench"
    k_noise: float = 3.0
    min_change: float = 0.10
    clients: tuple[str, ...] = ()  # default clients of ``--clients`` without names
    fio_port: int = 8765  # unused: fio's servers listen on Unix sockets (fio_jobs)

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any] | None) -> BenchLimits:
        if not m:
            return cls()
        names = cls.__dataclass_fields__
        kw = {k: v for k, v in m.items() if k in names}
        if "clients" in kw:
            kw["clients"] = tuple(kw["clients"] or ())
        return cls(**kw)


def limits_of(ctx: RunContext, limits: BenchLimits | None) -> BenchLimits:
    """The caller's limits, else the cluster context's ``[bench]`` settings (a caller
    that passes none still gets the configured byte cap, clients, ...)."""
    if limits is not None:
        return limits
    m = ctx.bench_limits or (ctx.options.get("bench") if ctx.options else None)
    return BenchLimits.from_mapping(m)


class ClusterNotSettled(Refused):
    """The gate's no included PGs not all active+clean: right after a fix (an OSD back
    in, a remount) that is the cluster settling, worth waiting for, not a reason to give
    up (``runbooks.verify.bench_after``)."""


def ceph_gate(state: Mapping[str, Any], force: bool, now: float | None = None) -> list[str]:
    """Refuse on HEALTH_ERR or PGs not all active+clean (unless forced): a benchmark on
    a degraded cluster measures recovery, and it adds load to a cluster already in trouble.
    PGs that read clean but have not reported on the current osdmap (right after an OSD
    went up/down/in/out: ``checks.settle``, the rule ``check`` and a fix's follow-up use)
    are settling too. Returns warnings when forced."""
    problems = []
    unsettled = False
    now = time.time() if now is None else now
    full = sorted(set(state.get("health_checks") or []) & FULL_CHECKS)
    if full:
        problems.append("cluster is (near) full: " + ", ".join(full))
    if state.get("health") == "HEALTH_ERR":
        problems.append("cluster health is HEALTH_ERR")
    settle = settle_from_json(state.get("pg_settle"))
    # the states of the dump whose placement was compared, when one was read (newer)
    total, pgs = states_of(settle, state.get("num_pgs") or 0, state.get("pgs_by_state") or {})
    v = judge_pgs(total, pgs, settle, now)
    if total and v.unclean:
        other = ", ".join(f"{n} {s}" for s, n in sorted(v.unclean.items()))
        problems.append(f"{sum(v.unclean.values())} of {total} PGs not active+clean ({other})")
        unsettled = True
    elif total and v.settling:
        problems.append(f"all {total} PGs read active+clean, but {v.states.why_not}: they "
                        "may be the map before the last OSD change")
        unsettled = True
    if state.get("num_up_osds") is not None and state.get("num_osds") and \
            state["num_up_osds"] < state["num_osds"]:
        problems.append(f"{state['num_osds'] - state['num_up_osds']} OSD(s) down")
    # not judged by the osdmap (no osdmaptool, one older than the monitors): said
    how = [f"PG states judged by the {v.states.fallback}"] if v.states.fallback else []
    if problems and not force:
        raise (ClusterNotSettled if unsettled else Refused)(
            "refusing to benchmark: " + "; ".join(problems + how)
            + " (use --force to run anyway)")
    return [f"forced despite: {p}" for p in problems] + how


FULL_CHECKS = {"OSD_FULL", "OSD_NEARFULL", "OSD_BACKFILLFULL", "POOL_FULL", "POOL_NEAR_FULL",
               "POOL_BACKFILLFULL"}
SPACE_SHARE = 0.5  # never write more than half of what the pool can still take


def check_caps(opts: BenchOptions, limits: BenchLimits, phases: int) -> None:
    total = opts.duration_s * phases * max(1, opts.repeat)
    if opts.duration_s <= 0:
        raise Refused("duration must be positive")
    if total > limits.max_duration_s:
        raise Refused(f"planned {total:g} s of I/O ({phases} phase(s) x {opts.repeat} rep(s) x "
                      f"{opts.duration_s:g} s) exceeds the cap of {limits.max_duration_s:g} s "
                      "(settings [bench] max_duration_s)")
    if opts.concurrency < 1 or opts.concurrency > 1024:
        raise Refused("concurrency must be 1..1024")
    if opts.repeat < 1 or opts.repeat > 20:
        raise Refused("repeat must be 1..20")
    if opts.ops is not None and opts.ops < 1:
        raise Refused("ops must be positive")
    if opts.size < 1 or opts.size > limits.max_bytes:
        raise Refused(f"size must be 1..{limits.max_bytes} bytes")


@dataclass
class Session:
    """One benchmark invocation: options, caps, cancel flag, progress and audit hooks."""

    ctx: RunContext
    opts: BenchOptions
    limits: BenchLimits
    group_id: str
    cancel: threading.Event
    on_progress: Callable[[Progress], None] | None = None
    on_step: Callable[[str, str, str, int], None] | None = None  # title, command, out, rc
    warnings: list[str] = field(default_factory=list)
    bytes_written: int = 0
    space_cap: int | None = None  # from the pool's MAX AVAIL (rados, rbd)
    # data read back wrong (a verified read found a mismatch): the run fails with these
    integrity: list[str] = field(default_factory=list)
    # set by a multi-client run: time.time() of the first "go" (the first I/O)
    first_io_at: float | None = None

    def fit_space(self, state: Mapping[str, Any]) -> None:
        avail = state.get("pool_max_avail")
        if avail is not None:
            self.space_cap = int(avail * SPACE_SHARE)
            if self.space_cap < self.limits.max_bytes:
                self.warnings.append(f"byte cap lowered to {self.space_cap / MIB:,.0f} MiB: "
                                     f"half of what the pool can still take")

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    def progress(self, phase: str, rep: int, elapsed: float, planned: float, ops: int,
                 nbytes: int) -> None:
        if self.on_progress is not None:
            try:
                self.on_progress(Progress(phase, rep, self.opts.repeat, elapsed, planned, ops,
                                          nbytes))
            except Exception:
                pass  # a broken progress display must not break the benchmark

    def step(self, title: str, command: str, output: str = "", rc: int = 0) -> None:
        if self.on_step is not None:
            self.on_step(title, command, output, rc)

    def bytes_left(self) -> int:
        cap = self.limits.max_bytes if self.space_cap is None else \
            min(self.limits.max_bytes, self.space_cap)
        return max(0, cap - self.bytes_written)


def result_from_raw(s: Session, kind: str, engine: str, workload: str, where: str | None,
                    raw: RawRun, rep: int, state: Mapping[str, Any],
                    extra: Mapping[str, Any] | None = None) -> BenchResult:
    lat = latency_summary(raw.lat_ns)
    el = raw.elapsed_s or 1e-9
    res = BenchResult(
        cluster=s.ctx.cluster, kind=kind, engine=engine, workload=workload,
        group_id=s.group_id, rep=rep,
        params={**s.opts.to_dict(), "op_size": raw.op_size, "mode": raw.mode},
        fingerprint_fields=fingerprint_fields(
            s.ctx.cluster, kind, engine, workload, where, raw.op_size, raw.concurrency,
            client_host(), state.get("versions") or []),
        started_at=raw.started_at, duration_s=raw.elapsed_s,
        status="cancelled" if raw.stopped_by == "cancel" else "ok", user=s.ctx.user,
        ops=raw.ops, bytes=raw.bytes, ops_s=raw.ops / el, mb_s=raw.bytes / MIB / el,
        errors=raw.n_errors, error_kinds=dict(raw.errors),
        series=series_from_buckets(raw.sec_ops, raw.sec_bytes, raw.sec_lat_ns, raw.elapsed_s),
        state=dict(state),
        lat_avg_ms=lat["lat_avg_ms"], lat_p50_ms=lat["lat_p50_ms"],
        lat_p90_ms=lat["lat_p90_ms"], lat_p99_ms=lat["lat_p99_ms"],
        lat_p999_ms=lat["lat_p999_ms"], lat_max_ms=lat["lat_max_ms"],
        extra={"stopped_by": raw.stopped_by, "client_cpu_s": raw.client_cpu_s,
               "submit_cpu_s": raw.submit_cpu_s, "reap_cpu_s": raw.reap_cpu_s,
               **dict(extra or {})})
    if raw.stopped_by == "bytes":
        res.notes.append("stopped at the byte cap (settings [bench] max_bytes)")
    return res


def new_group_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{int(time.time() * 1000) % 1000:03d}"
