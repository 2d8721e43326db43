"""The captures of tests/fixtures/ceph-settle as the raw answers a collection holds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from storage.ceph import OSDMAP_PGS, PGS_BRIEF, parse_osdmaptool_pgs, settle_from_raw
from storage.model.ceph import PgSettle

SETTLE = Path(__file__).resolve().parents[1] / "fixtures" / "ceph-settle"


def epoch_of(name: str) -> int:
    meta = json.loads((SETTLE / name / "meta.json").read_text())
    m = re.search(r"epoch (\d+)", meta["getmap"])
    assert m is not None
    return int(m.group(1))


def settle_raw(name: str) -> dict[str, Any]:
    """``{PGS_BRIEF: ..., OSDMAP_PGS: ..., "errors": {}}`` of one captured moment."""
    d = SETTLE / name
    mapped = parse_osdmaptool_pgs((d / "osdmaptool.txt").read_text(), epoch_of(name))
    assert mapped.incomplete() is None, name
    return {PGS_BRIEF: json.loads((d / "pg_dump_pgs_brief.json").read_text()),
            OSDMAP_PGS: mapped.to_json(), "errors": {}}


def settle_of(name: str) -> PgSettle:
    """The PgSettle a capture gives (the comparison of its dump with its map)."""

    s = settle_from_raw(settle_raw(name))
    assert s is not None
    return s
