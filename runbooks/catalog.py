"""The explicit list of runbook modules: importing one registers its runbooks."""

from runbooks import crash, daemons, mgr, osd, pools, swift  # noqa: F401

# isort: split
from runbooks import replace_osd  # noqa: F401  osd-replace-disk (listed after the others)

# isort: split
from runbooks import fill, maintenance  # noqa: F401  issue 29: filling, maintenance
