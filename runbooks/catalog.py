"""The explicit list of runbook modules: importing one registers its runbooks."""

from runbooks import crash, mgr, osd, pools, swift  # noqa: F401
