"""Ceph over python-rados: ``client`` (the connection, timeouts, command errors),
``parse`` / ``parse_daemons`` / ``parse_config`` (pure JSON -> typed parts, for every
release stordoc knows), ``state`` (``build_state``: raw JSON -> ``CephState``),
``collect`` (which commands, required or optional, what a failure means),
``parse_settle`` / ``settle`` (have the PGs reported on the current osdmap: the pure rule,
and getting the answers through osdmaptool) and ``captures``
(raw JSON to and from a directory).

The names the rest of stordoc uses are importable from ``storage.ceph``.
"""

from storage.ceph.captures import RAW_FILE_NAMES, load_raw_dir, save_raw_dir
from storage.ceph.client import (
    ETIMEDOUT,
    CephClient,
    CephCommandError,
    CephError,
    CephUnreachable,
)
from storage.ceph.collect import (
    CONFIG_KEYS,
    MAX_EPOCH_LOOKUPS,
    OPTIONAL,
    REQUIRED,
    Command,
    collect_ceph,
    collect_raw,
)
from storage.ceph.parse import (
    STUCK_OPS,
    down_epochs,
    last_osd_change,
    parse_autoscale_status,
    parse_df,
    parse_osd_df,
    parse_osd_dump,
    parse_osd_tree,
    parse_pg_dump_stuck,
    parse_pg_stat,
    parse_pool,
    parse_pool_ls_detail,
    parse_stamp,
)
from storage.ceph.parse_config import parse_config_dump, parse_config_show, parse_config_value
from storage.ceph.parse_daemons import (
    parse_crashes,
    parse_health,
    parse_metadata,
    parse_osd_perf,
    parse_status,
    parse_time_sync,
    parse_version_string,
    parse_versions,
)
from storage.ceph.parse_settle import (
    OSDMAP_PGS,
    PGS_BRIEF,
    OsdmapPgs,
    PgReport,
    Placement,
    compare,
    parse_osdmaptool_pgs,
    parse_pgs_brief,
    settle_from_json,
    settle_from_raw,
    settle_to_json,
    worth_comparing,
)
from storage.ceph.settle import SettleUnavailable, read_osdmap_pgs, read_pg_settle
from storage.ceph.state import DEFAULT_MON_MAX_PG_PER_OSD, build_state
from storage.model.ceph import PgSettle, SettleMethod

# Pools that hold a few objects of Ceph's own (device health, mgr): never sized for data.
SYSTEM_POOLS = frozenset({"device_health_metrics", ".mgr"})

__all__ = [
    "CONFIG_KEYS", "DEFAULT_MON_MAX_PG_PER_OSD", "ETIMEDOUT", "MAX_EPOCH_LOOKUPS", "OPTIONAL",
    "OSDMAP_PGS", "PGS_BRIEF", "RAW_FILE_NAMES", "REQUIRED", "STUCK_OPS", "SYSTEM_POOLS",
    "CephClient", "CephCommandError", "CephError", "CephUnreachable", "Command",
    "OsdmapPgs", "PgReport", "PgSettle", "Placement", "SettleMethod", "SettleUnavailable",
    "build_state", "compare", "parse_osdmaptool_pgs", "parse_pgs_brief",
    "read_osdmap_pgs", "read_pg_settle", "settle_from_json", "settle_from_raw",
    "settle_to_json", "worth_comparing",
    "collect_ceph", "collect_raw", "down_epochs", "last_osd_change", "load_raw_dir", "parse_autoscale_status",
    "parse_config_dump", "parse_config_show", "parse_config_value", "parse_crashes",
    "parse_df", "parse_health", "parse_metadata", "parse_osd_df", "parse_osd_dump",
    "parse_osd_perf", "parse_osd_tree", "parse_pg_dump_stuck", "parse_pg_stat",
    "parse_pool", "parse_pool_ls_detail", "parse_stamp", "parse_status",
    "parse_time_sync", "parse_version_string", "parse_versions", "save_raw_dir",
]
