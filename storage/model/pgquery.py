"""What blocks a stuck PG (``ceph pg P query``, summarised) and how often OSDs flapped
(the cluster log): typed values for ``CephState.pg_blocks`` / ``CephState.osd_flaps``."""

from __future__ import annotations

from dataclasses import dataclass

# ``might_have_unfound`` statuses after which no OSD is left to ask (Ceph's docs:
# "already probed", "querying", "osd is down", "not queried")
PROBED_STATUSES = frozenset({"already probed", "osd is down"})


@dataclass(frozen=True)
class PeeringBlock:
    """One entry of ``peering_blocked_by``: an OSD peering waits for, and Ceph's word."""

    osd: int
    comment: str = ""


@dataclass(frozen=True)
class UnfoundPeer:
    """One entry of ``might_have_unfound``: an OSD that may hold unfound objects."""

    osd: int
    status: str


@dataclass(frozen=True)
class PgBlock:
    """One stuck PG, summarised from ``pg query`` (or only from ``pg dump_stuck`` when
    the query did not answer: ``error`` says why)."""

    pgid: str
    state: str
    up: tuple[int, ...] = ()
    acting: tuple[int, ...] = ()
    recovery_states: tuple[str, ...] = ()  # ``recovery_state`` names, innermost first
    blocked: str = ""  # e.g. "peering is blocked due to down osds"
    blocked_by: tuple[int, ...] = ()  # the PG stats' ``blocked_by``
    down_osds_we_would_probe: tuple[int, ...] = ()
    peering_blocked_by: tuple[PeeringBlock, ...] = ()
    might_have_unfound: tuple[UnfoundPeer, ...] = ()
    num_unfound: int = 0
    queried: bool = False
    error: str = ""

    @property
    def blocking_osds(self) -> tuple[int, ...]:
        """Every OSD named as blocking this PG, in first-named order."""
        seen: dict[int, None] = {}
        for o in (*(p.osd for p in self.peering_blocked_by), *self.down_osds_we_would_probe,
                  *self.blocked_by):
            seen[o] = None
        return tuple(seen)

    @property
    def all_probed(self) -> bool:
        """Every OSD that might hold the unfound objects was asked or is down."""
        return all(p.status in PROBED_STATUSES for p in self.might_have_unfound)


@dataclass(frozen=True)
class LargeOmapObject:
    """One ``Large omap object found`` line of the cluster log (an OSD's deep scrub, the
    only place Ceph names the object of LARGE_OMAP_OBJECTS): ``Object: 2:5a3f0d67:::NAME:head
    PG: 2.e6b0fc5a (2.1a) Key count: 200001 Size (bytes): 3600018``."""

    pool_id: int
    name: str
    pgid: str
    keys: int | None = None
    size_bytes: int | None = None
    namespace: str = ""


@dataclass(frozen=True)
class OsdFlaps:
    """How often the monitors marked one OSD down while it ran (or its peers reported it
    failed) and it came back, in the cluster log's window."""

    osd: int
    flaps: int  # marked down while it ran ("... but it is still running"), booted again
    wrongly_marked: int  # the same count (kept apart for older logs without the protest)
    failed_reports: int  # of the flaps, those its peers had reported failed (heartbeats)
    first: float | None = None  # when it came back after its first flap
    last: float | None = None  # stamp of the last boot
    window_s: float = 0.0  # how far back the log read reaches
    stamps: tuple[float, ...] = ()  # when it came back after each flap

    def within(self, now: float, window_s: float) -> int:
        """Flaps that ended in the last ``window_s`` seconds before ``now``."""
        return sum(1 for t in self.stamps if now - t <= window_s)
