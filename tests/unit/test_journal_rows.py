"""A journal row stays bounded (issue #37 item 9): a finding's evidence, message and
entity are cut to ``storage.rowcap``'s bound with counts and a sample, so a check that
meets a Prometheus scraping 200,000 other instances adds a few KiB per run, not 8.6 MB."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.service.pipeline import CheckRequest, run_check
from storage.journal import Journal
from storage.rowcap import CUT, MAX_EVIDENCE, MAX_ROW, bounded_json, cap_text
from tests.support.prom_server import FakeProm, Node
from tests.unit.test_prom_facts import at, nodes_of, saved, via_prom

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=30)
    | st.dictionaries(st.text(max_size=10), inner, max_size=30), max_leaves=60)


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.text(max_size=12), _JSON, max_size=12),
       st.sampled_from([64, 400, 2000, 20000]))
def test_evidence_is_within_the_bound_valid_and_untouched_when_small(ev: dict, limit: int
                                                                     ) -> None:
    text = bounded_json(ev, limit)
    got = json.loads(text)
    assert len(text.encode("utf-8", "surrogatepass")) <= max(limit, 2000)
    if len(json.dumps(ev).encode("utf-8", "surrogatepass")) <= limit:
        assert got == ev and CUT not in got
    else:
        assert got[CUT]["evidence_bytes"] > limit


def test_a_long_list_keeps_a_sample_and_its_count() -> None:
    ev = {"instances": [f"10.0.{i >> 8}.{i & 255}:9100" for i in range(200_000)],
          "job": "node", "count": 200_000}
    got = json.loads(bounded_json(ev))
    assert len(json.dumps(got)) <= MAX_EVIDENCE
    assert got["job"] == "node" and got["count"] == 200_000
    assert got["instances"][:3] == ev["instances"][:3]
    assert got[CUT]["instances"] == 200_000


def test_cap_text() -> None:
    assert cap_text("short", 100) == "short"
    assert cap_text(None, 10) is None
    long = "é" * 10_000
    cut = cap_text(long, 1000)
    assert cut is not None and len(cut.encode()) <= 1000 and "20000 bytes, cut" in cut


def _size(path: Path) -> int:
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal") if
               os.path.exists(f"{path}{s}"))


# Other instances the fake Prometheus serves: at 200,000 a journal grew 8.6 MB per check
# before the cap; 50,000 (2 MB per check uncapped, 32 times the 64 KiB bound) proves the
# same bound at a quarter of the cost (the cap keeps 20 instances and counts, whatever N)
STRANGERS = 50_000
CHECKS = 3


def test_many_unmatched_series_keep_each_journal_row_bounded(tmp_path: Path) -> None:
    """A fake Prometheus answering for the cluster's 4 hosts and ``STRANGERS`` instances of
    the same job that are not this cluster's: ``CHECKS`` checks, each row under 64 KiB, the
    journal file growing by a few KiB per check (it was 8.6 MB per run for 200,000, 61 MB
    after six)."""
    snap, target, _ = saved("reef", "healthy")
    strangers = [Node(f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}:9100", f"other{i}")
                 for i in range(STRANGERS)]
    fake = FakeProm(nodes_of(snap.hosts) + strangers, clock=at(snap))
    path = tmp_path / "journal.db"
    j = Journal(path)
    sizes = [_size(path)]
    with fake.serve() as url:
        got, asked = via_prom(snap, target, url, timeout_s=120.0)
    assert asked == []
    t = replace(target, prometheus=None)
    for _ in range(CHECKS):
        out = run_check(CheckRequest(t, snapshot=got, journal=j, now=snap.taken_at))
        assert out.run_id is not None
        sizes.append(_size(path))
    j.close()
    with sqlite3.connect(path) as c:
        rows = c.execute("select code, length(cast(entity as blob)) + length(cast(message "
                         "as blob)) + length(cast(evidence as blob)), evidence, message "
                         "from findings").fetchall()
    um = [r for r in rows if r[0] == "PROMETHEUS_UNMATCHED"]
    assert len(um) == CHECKS
    assert max(r[1] for r in rows) < MAX_ROW
    ev = json.loads(um[-1][2])
    assert ev["count"] == STRANGERS and ev["by_port"] == {"9100": STRANGERS}
    assert len(ev["instances"]) == 20 and f"{STRANGERS} node instance(s)" in um[-1][3]
    growth = [b - a for a, b in pairwise(sizes)]
    assert max(growth) <= 64 << 10, growth
    ps = got.prometheus
    assert ps is not None and ps.unmatched_count == STRANGERS and len(ps.unmatched) == 20
    assert ps.unmatched_ports == (("9100", STRANGERS),)
