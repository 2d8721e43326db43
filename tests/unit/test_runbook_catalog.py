"""The catalog lists every runbook once, in a fixed order: ``stordoc runbooks`` shows them
in it and ``runbook_for_code`` takes the first that declares a code. Registration follows
import order (runbooks/catalog.py, then runbooks/swift/__init__.py, kept by hand)."""

from __future__ import annotations

from runbooks.api import list_runbooks, runbook_for_code

ORDER = ["crash-archive", "osd-remount", "osd-activate", "osd-start", "osd-in",
         "daemon-restart", "daemon-start", "mgr-failover", "cache-tier-tune", "pool-pg-num",
         "swift-device-remount", "swift-server-start",
         "swift-ring-rebalance", "swift-ring-push", "swift-dispersion-populate",
         "swift-replicator-start", "osd-replace-disk", "swift-replace-drive",
         "osd-reweight-by-utilization", "balancer-upmap", "full-ratio-raise",
         "ratio-restore", "flag-unset",
         "maintenance-start", "maintenance-end", "pg-repair", "pg-mark-unfound-lost",
         "pool-app-enable", "global-id-reclaim-off", "config-restore",
         "quota-restore"]


def test_the_catalog_lists_every_runbook_in_its_order() -> None:
    assert [i.name for i in list_runbooks()] == ORDER


def test_each_code_goes_to_the_runbook_that_declares_it() -> None:
    infos = list_runbooks()
    for info in infos:
        for code in info.fixes:
            # a code two runbooks fix (OSDMAP_FLAGS: flag-unset, maintenance-end) goes to
            # the first that declares it, in the registry's order
            first = next(i.name for i in infos if code in i.fixes)
            assert runbook_for_code(f" {code.lower()} ") == first
    assert runbook_for_code("NO_SUCH_CODE") is None
