"""The explicit list of runbook modules: importing one registers its runbooks, and the
registry of them all (``registry()``). The runbook modules import ``runbooks.base``, never
this list back (issue 39.6: no circle)."""

from __future__ import annotations

from collections.abc import Mapping

from runbooks import crash, daemons, mgr, osd, pools, swift  # noqa: F401

# isort: split
from runbooks import replace_osd  # noqa: F401  osd-replace-disk (listed after the others)

# isort: split
from runbooks import (  # noqa: F401  issue 29: filling, maintenance
    fill,
    flags,  # noqa: F401  flag-unset (issue 38: a flag by the name Ceph takes)
    maintenance,
    pg_repair,  # noqa: F401  pg-repair (issue 29: scrub errors)
    pg_unfound,  # noqa: F401  pg-mark-unfound-lost (two people; listed last)
)

# isort: split
from runbooks import pool_app  # noqa: F401  pool-app-enable, global-id-reclaim-off (issue 38)

# isort: split
from runbooks import config  # noqa: F401  config-restore (issue 38.2: an option as the cause)

# isort: split
from runbooks import quota  # noqa: F401  quota-restore (issue 38.2: a pool quota as the cause)

# isort: split
from runbooks.base import _REGISTRY, Runbook


def registry() -> Mapping[str, Runbook]:
    """Every runbook by name, in the order of the list above."""
    return dict(_REGISTRY)
