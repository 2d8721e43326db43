"""The lab's fault scenarios: one :class:`Scenario` object per fault, in one explicit
registry (``Lab.break_``/``Lab.heal`` and ``stordoc lab break|heal`` read it).

A new fault: a Scenario subclass in the module of its area (ceph, swift_devices,
swift_servers, swift_rings) and one line in ``_ALL`` below.
"""

from __future__ import annotations

from lab.scenarios.base import DEFAULTS, OPTION_NAMES, FaultArgs, Option, Scenario
from lab.scenarios.ceph import (
    CACHE_BASE_POOL,
    CACHE_POOL,
    FEW_PG_POOL,
    CacheTierMisconfigured,
    OsdNotActivated,
    OsdUnmounted,
    PoolFewPgs,
)
from lab.scenarios.daemons import OsdCrash, OsdHung, OsdRestartLoop
from lab.scenarios.disks import OsdReadErrors, SwiftDeviceReadonly, SwiftDeviceShutdown
from lab.scenarios.fill import ClusterNearfull, MaintenanceLeft
from lab.scenarios.flap import OsdFlapping, PgStuck
from lab.scenarios.mgrmon import MgrStopped, MonDiskLow, OsdCrushWeightZero
from lab.scenarios.scrub import PgInconsistent
from lab.scenarios.slow import OsdSlowOps
from lab.scenarios.swift_devices import (
    SwiftDeviceFull,
    SwiftDeviceUnmounted,
    SwiftDispersionMissing,
    SwiftQuarantine,
)
from lab.scenarios.swift_rings import SwiftReplicationLost, SwiftRingBad, SwiftRingStale
from lab.scenarios.swift_servers import (
    SwiftAsyncPending,
    SwiftReplicationStalled,
    SwiftServerStopped,
)
from lab.scenarios.unfound import PgUnfound

_ALL: tuple[Scenario, ...] = (
    OsdUnmounted(), OsdNotActivated(), CacheTierMisconfigured(), PoolFewPgs(),
    SwiftDeviceUnmounted(), SwiftRingBad(), SwiftServerStopped(), SwiftDeviceFull(),
    SwiftQuarantine(), SwiftAsyncPending(), SwiftReplicationStalled(), SwiftRingStale(),
    SwiftDispersionMissing(), SwiftReplicationLost(),
    SwiftDeviceReadonly(), SwiftDeviceShutdown(), OsdReadErrors(),
    MgrStopped(), OsdCrushWeightZero(), MonDiskLow(),
    OsdCrash(), OsdHung(), OsdRestartLoop(),
    OsdSlowOps(),
    PgInconsistent(),
    OsdFlapping(), PgStuck(), PgUnfound(),
    ClusterNearfull(), MaintenanceLeft(),
)
REGISTRY: dict[str, Scenario] = {s.name: s for s in _ALL}
SCENARIOS: tuple[str, ...] = tuple(REGISTRY)
assert len(REGISTRY) == len(_ALL), "two scenarios share a name"


def get(name: str) -> Scenario:
    """The scenario called ``name``; ValueError naming the known ones otherwise."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None


def users(option: str, heal: bool = False) -> list[str]:
    """Names of the scenarios whose break (or heal) reads ``option``."""
    return [s.name for s in _ALL
            if any(o.name == option for o in (s.heal_options if heal else s.options))]


def option(name: str) -> Option:
    """The first declaration of option ``name`` (its help and choices are the same in
    every scenario; only the check differs)."""
    for s in _ALL:
        for o in (*s.options, *s.heal_options):
            if o.name == name:
                return o
    raise KeyError(name)


__all__ = ["CACHE_BASE_POOL", "CACHE_POOL", "DEFAULTS", "FEW_PG_POOL", "OPTION_NAMES",
           "REGISTRY", "SCENARIOS", "FaultArgs", "Option", "Scenario", "get", "option",
           "users"]
