"""The core every front end uses (the CLI in ``stordoc/``, ``bot/``, ``tui/``): the
service (checks, fixes, records), the I/O environment, the settings, and every policy
(which fix an incident gets, roles, the two-person rule, approvals). It never imports a
front end."""
