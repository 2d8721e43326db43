"""The lab: a real Ceph + Swift + SSH cluster on this machine, for tests and demos.

Test and demo infrastructure, not part of inspecting a cluster: it sits beside
``storage/`` and may use it; nothing in checks/runbooks/storage imports it.
"""

from lab.core import Lab
from lab.layout import (
    DEFAULT_DIR,
    DEFAULT_LAYOUT,
    DEFAULT_PORT_BASE,
    LAYOUTS,
    SWIFT_KEY,
    SWIFT_USER,
)
from lab.procs import LabError
from lab.scenarios import CACHE_BASE_POOL, CACHE_POOL, FEW_PG_POOL, SCENARIOS

__all__ = ["CACHE_BASE_POOL", "CACHE_POOL", "DEFAULT_DIR", "DEFAULT_LAYOUT", "DEFAULT_PORT_BASE",
           "FEW_PG_POOL", "LAYOUTS", "SCENARIOS", "SWIFT_KEY", "SWIFT_USER", "Lab", "LabError"]
