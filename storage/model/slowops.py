"""Slow requests on OSDs: what each OSD Ceph names as slow says of its ops
(``dump_ops_in_flight`` / ``dump_historic_slow_ops``), its latency (``osd perf``), and
the slow heartbeat pings between OSDs (``OSD_SLOW_PING_TIME_BACK/FRONT``).
Parsed by ``storage.ceph.parse_ops``; judged by ``checks.slow_ops``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SlowOp:
    """One op of an OSD: what it is (``osd_op``, ``osd_repop``, ...), what it does
    (``write``, ``read``, ...), how long it has been (``age_s``, in flight) or took
    (``duration_s``, historic), where it waits (``flag_point``), and from whom."""

    kind: str  # the message type: osd_op, osd_repop, osd_repop_reply, ...
    ops: tuple[str, ...]  # the object ops inside: write, read, writefull, ...
    pg: str | None
    age_s: float
    duration_s: float | None
    flag_point: str
    client: str | None
    description: str
    in_flight: bool  # from dump_ops_in_flight (still blocked) or historic (done, slow)

    @property
    def what(self) -> str:
        """``osd_op write`` / ``osd_repop``: the op type in two words."""
        return f"{self.kind} {'+'.join(self.ops)}".strip()


@dataclass(frozen=True)
class OsdOps:
    """What one OSD said of its ops; ``error`` when it could not be read (then the
    ops are empty and that is not "no slow ops")."""

    osd: int
    in_flight: tuple[SlowOp, ...] = ()  # the ops still in flight, oldest first
    historic: tuple[SlowOp, ...] = ()  # the slow ops it kept, slowest first
    in_flight_total: int = 0  # how many ops were in flight (``num_ops``)
    error: str | None = None

    @property
    def oldest_s(self) -> float | None:
        """Age of the oldest op still in flight, else the longest historic duration."""
        ages = [o.age_s for o in self.in_flight]
        if ages:
            return max(ages)
        durs = [o.duration_s for o in self.historic if o.duration_s is not None]
        return max(durs) if durs else None

    def kinds(self) -> dict[str, int]:
        """Op type -> count, over in-flight and historic ops."""
        out: dict[str, int] = {}
        for o in (*self.in_flight, *self.historic):
            out[o.what] = out.get(o.what, 0) + 1
        return out

    def waits(self) -> dict[str, int]:
        """Where the ops in flight wait (``flag_point``) -> count; with none in flight,
        where the historic slow ops were last."""
        out: dict[str, int] = {}
        for o in self.in_flight or self.historic:
            if o.flag_point:
                out[o.flag_point] = out.get(o.flag_point, 0) + 1
        return out


@dataclass(frozen=True)
class SlowPing:
    """One slow heartbeat: from ``osd`` to ``peer`` on the back (cluster) or front
    (public) network, ``ms`` milliseconds (Ceph's 1 min average, or its worst)."""

    osd: int
    peer: int
    iface: str  # "back" | "front"
    ms: float
    trend: str = ""  # "possibly improving" / "" as Ceph says


@dataclass(frozen=True)
class SlowState:
    """All of it for one collection (empty: Ceph named no slow OSD, or not read)."""

    ops: tuple[OsdOps, ...] = ()
    pings: tuple[SlowPing, ...] = ()
    perf: Mapping[int, tuple[float, float]] = field(default_factory=dict)  # commit, apply ms
    error: str | None = None  # why the per-OSD reads were not made at all
    # (pgid, state) of PGs laggy or wait, from ``pg dump pgs_brief`` when it was read
    laggy_pgs: tuple[tuple[str, str], ...] = ()
