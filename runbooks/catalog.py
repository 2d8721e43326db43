"""The explicit list of runbook modules: importing one registers its runbooks."""

from runbooks import crash, daemons, osd, pools, swift  # noqa: F401
