"""The engine's own finding codes (a check that raised, a part of the cluster that did
not answer), registered on import like every check module's: a module of its own so the
catalog lists it without importing the engine (issue 39.6: no circle)."""

from __future__ import annotations

from checks.model import REGISTRY, CodeInfo, Severity

ENGINE_CODES = (
    CodeInfo("CHECK_INTERNAL_ERROR", Severity.WARN,
             "A check raised an exception; the other checks still ran."),
    CodeInfo("CEPH_UNREACHABLE", Severity.CRIT,
             "The Ceph monitors did not answer within the timeout."),
    CodeInfo("SWIFT_UNREACHABLE", Severity.CRIT,
             "The Swift rings or servers could not be read."),
    CodeInfo("HOST_UNREACHABLE", Severity.WARN,
             "A configured host did not answer over SSH; its facts are missing."),
)
for _ci in ENGINE_CODES:
    REGISTRY.add_code(_ci)
