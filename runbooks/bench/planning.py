"""Planning a benchmark: the options normalized and checked against the caps, the
clients connected and probed, the cluster's health gate, and the plan shown before
anything is written (``plan_bench`` changes nothing)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runbooks.bench import clients as clients_mod
from runbooks.bench import limits as limits_mod
from runbooks.bench import rados as rados_mod
from runbooks.bench import rados_multi, rbd_multi, swift_container, swift_multi
from runbooks.bench import rbd as rbd_mod
from runbooks.bench import swift as swift_mod
from runbooks.bench.client_hosts import resolve_clients
from runbooks.bench.common import BenchLimits, Session, ceph_gate, check_caps, limits_of
from runbooks.bench.model import KINDS, BenchOptions
from runbooks.bench.pools import PoolChoice, choose_pool
from runbooks.model import Refused, RunContext
from storage.rados_io import MODES as RADOS_MODES
from storage.rados_io import RadosBenchError, RadosIO

LOCK_TARGET = "bench"
DEFAULT_MODES = {"rados": ("write",), "swift": ("mix",), "rbd": ("randrw",),
                 "limits": ("disk", "net")}
VALID_MODES = {"rados": set(RADOS_MODES), "swift": {"mix"}, "rbd": set(rbd_mod.MODES),
               "limits": {"disk", "net"}}


@dataclass
class BenchPlan:
    """What a benchmark will do, shown before confirmation (like a runbook plan)."""

    kind: str
    cluster: str
    options: BenchOptions
    where: str
    steps: list[str]
    warnings: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    limits: BenchLimits = field(default_factory=BenchLimits)
    pool: PoolChoice | None = None  # rados, rbd: the pool, and whether the run creates it

    @property
    def planned_s(self) -> float:
        if self.kind == "limits":
            return 0.0
        return self.options.duration_s * len(self.options.modes) * self.options.repeat

    def lines(self) -> list[str]:
        o = self.options
        out = [f"Plan: bench {self.kind} on cluster {self.cluster} ({self.where})",
               (f"  caps: {self.limits.max_duration_s:g} s of I/O, "
                f"{self.limits.max_bytes / 1024**2:,.0f} MiB written; lock '{LOCK_TARGET}'"),
               (f"  engine {o.engine}, modes {', '.join(o.modes)}, concurrency "
                f"{o.concurrency}, repeat {o.repeat}")]
        st = self.state
        if st.get("health") and "num_osds" in st:  # Ceph's state (rados, rbd)
            out.append(f"  cluster: {st.get('health')}, {st.get('num_up_osds', '?')}/"
                       f"{st['num_osds']} OSDs up")
        elif st.get("health") and st.get("proxy"):  # a Swift proxy's: no OSDs to count
            ver = f", Swift {st['swift_version']}" if st.get("swift_version") else ""
            out.append(f"  Swift proxy {st['proxy']}: {st['health']}{ver}")
        elif st.get("health"):
            out.append(f"  cluster: {st['health']}")
        out.append("Steps:")
        out += [f"  {i}. {s}" for i, s in enumerate(self.steps, 1)]
        out += [f"Warning: {w}" for w in self.warnings]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "cluster": self.cluster, "where": self.where,
                "options": self.options.to_dict(), "steps": self.steps,
                "warnings": self.warnings, "state": self.state,
                "limits": self.limits.__dict__, "planned_s": self.planned_s,
                "pool": None if self.pool is None else {
                    "name": self.pool.name, "create": self.pool.create,
                    "named_by": self.pool.named_by}}


def _where(ctx: RunContext, kind: str, o: BenchOptions, lim: BenchLimits,
           pool: PoolChoice | None = None) -> str:
    by = ""
    if o.clients:
        names = [h.name for h in resolve_clients(ctx, o.clients, lim.clients)]
        by = f" from {len(names)} clients ({', '.join(names)})"
    if kind in ("rados", "rbd") and pool is not None:
        return f"pool {pool.name}{', created for this run' if pool.create else ''}{by}"
    if kind == "swift":
        return f"container {o.container or lim.container}{by}"
    return "hosts " + (", ".join(o.hosts) or ", ".join(h.name for h in ctx.target.hosts))


# the tools each client must have for a multi-client run (asked before anything starts)
CLIENT_TOOLS: dict[str, tuple[list[str], ...]] = {"rados": rados_multi.TOOLS,
                                                  "rbd": rbd_multi.TOOLS,
                                                  "swift": swift_multi.TOOLS}


def connect_fleet(ctx: RunContext, kind: str, o: BenchOptions, lim: BenchLimits,
           on_step: Callable[[str, str, str, int], None] | None = None, probe: bool = True
           ) -> clients_mod.Fleet:
    """The run's clients, connected and checked: one unreachable client, or one without
    the engine's tools, refuses the run before anything is started."""
    fleet = clients_mod.fleet_for(ctx, o.clients, lim.clients, on_step)
    try:
        fleet.probe(CLIENT_TOOLS.get(kind, ()) if probe else ())
    except BaseException:
        fleet.close()
        raise
    return fleet


def _normalize(kind: str, options: BenchOptions) -> BenchOptions:
    if kind not in KINDS:
        raise Refused(f"unknown benchmark {kind!r}; known: {', '.join(KINDS)}")
    o = options
    if o.modes == ("write",) and kind != "rados":
        o = o.with_(modes=DEFAULT_MODES[kind])
    bad = [m for m in o.modes if m not in VALID_MODES[kind]]
    if bad:
        raise Refused(f"unknown {kind} mode(s) {', '.join(bad)}; known: "
                      f"{', '.join(sorted(VALID_MODES[kind]))}")
    if kind == "rados" and o.engine not in ("native", "rados-bench"):
        raise Refused(f"unknown engine {o.engine!r} (native, rados-bench)")
    if o.clients:
        if kind not in CLIENT_TOOLS:
            raise Refused(f"bench {kind} does not run from clients"
                          + (" (limits: use --host)" if kind == "limits" else ""))
        if kind == "rados" and o.engine != "rados-bench":
            o = o.with_(engine="rados-bench")  # the stock tool runs on each client
    if kind == "swift":
        if len(o.mix) != 3 or any(v < 0 for v in o.mix) or sum(o.mix) != 100:
            raise Refused(f"mix must be three percentages read/write/delete summing to 100, "
                          f"got {'/'.join(map(str, o.mix))}")
        if o.size_max is not None and o.size_max < o.size:
            raise Refused("size range: the maximum is below the minimum")
    return o


def plan_bench(ctx: RunContext, kind: str, options: BenchOptions,
               limits: BenchLimits | None = None) -> BenchPlan:
    """Validate and describe; changes nothing. Raises Refused with a one-line reason."""
    lim = limits_of(ctx, limits)
    o = _normalize(kind, options)
    phases = len(o.modes) if kind != "limits" else 0
    if kind != "limits":
        check_caps(o, lim, phases)
    if kind == "swift" and o.size_max and o.size_max > lim.max_bytes:
        raise Refused("size range above the byte cap")
    s = Session(ctx, o, lim, "<group>", threading.Event())
    state: dict[str, Any] = {}
    warnings: list[str] = []
    clients: list[str] = []
    if o.clients:
        fleet = connect_fleet(ctx, kind, o, lim)
        clients = fleet.names
        fleet.close()
    choice: PoolChoice | None = None
    if kind in ("rados", "rbd"):
        named_by = "--pool" if o.pool else "settings [bench] pool" if lim.pool else None
        try:
            with RadosIO(rados_mod.ceph_target(s)) as io:
                choice = choose_pool(io, o.pool or lim.pool, named_by,
                                     o.keep and kind == "rados")
                state = io.state(None if choice.create else choice.name)
        except RadosBenchError as e:
            raise Refused(str(e)) from None
        warnings += ceph_gate(state, o.force)
        pool = choice.name
        if kind == "rados" and clients:
            steps = rados_multi.plan_lines(s, pool, True, clients)
        elif kind == "rados":
            steps = rados_mod.plan_lines(s, pool, True)
        elif clients:
            steps = rbd_multi.plan_lines(s, pool, clients)
        else:
            steps = rbd_mod.plan_lines(s, pool, "stordoc-bench-<run>")
        steps[:0] = choice.plan_lines()
        if choice.create:
            steps.append(f"remove pool {pool}")
    elif kind == "swift":
        state = swift_container.state(s)
        warnings += swift_container.gate(state, o.force)
        container = o.container or lim.container
        owner = swift_container.check_container(s, container) \
            if state.get("health") == "ok" else "absent"
        steps = swift_multi.plan_lines(s, container, owner, clients) if clients else \
            swift_mod.plan_lines(s, container, owner)
    else:
        if o.limit_size * 2 > lim.max_bytes:
            raise Refused("limit test size above the byte cap")
        steps = limits_mod.plan_lines(s)
    return BenchPlan(kind, ctx.cluster, o, _where(ctx, kind, o, lim, choice), steps, warnings,
                     state, lim, choice)
