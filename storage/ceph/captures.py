"""Captures: every command's JSON of one collection in a directory, one file per command
(``tests/fixtures/ceph-<release>/<scenario>/``, bug reports), and back."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Mapping
from typing import Any

# raw key -> file stem where ``key.replace(" ", "_")`` would not read back
RAW_FILE_NAMES = {
    "osd dump": "osd_dump", "osd tree": "osd_tree", "osd pool ls detail": "osd_pool_ls_detail",
    "df": "df", "health detail": "health_detail", "status": "status",
    "quorum_status": "quorum_status", "versions": "versions",
    "time-sync-status": "time-sync-status", "pg stat": "pg_stat",
    "pg dump_stuck": "pg_dump_stuck", "osd df": "osd_df", "config": "config",
    "osdmap_stamps": "osdmap_stamps", "errors": "errors",
    "pg dump pgs_brief": "pg_dump_pgs_brief", "osdmap pgs": "osdmap_pgs",
}


def save_raw_dir(raw: Mapping[str, Any], directory: str) -> None:
    """Write each command's JSON to ``directory/<name>.json``."""
    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for key, value in raw.items():
        name = RAW_FILE_NAMES.get(key, key.replace(" ", "_"))
        (out / f"{name}.json").write_text(json.dumps(value, indent=1, sort_keys=True) + "\n")


def load_raw_dir(directory: str | pathlib.Path) -> dict[str, Any]:
    """Read a directory written by :func:`save_raw_dir` back into ``raw`` for
    ``build_state``."""
    back = {v: k for k, v in RAW_FILE_NAMES.items()}
    raw: dict[str, Any] = {}
    for f in sorted(pathlib.Path(directory).glob("*.json")):
        raw[back.get(f.stem, f.stem.replace("_", " "))] = json.loads(f.read_text())
    return raw
