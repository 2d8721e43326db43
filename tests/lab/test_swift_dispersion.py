"""Dispersion on the real lab: nothing is sampled (and nothing created) until the
operator consents with `stordoc swift dispersion populate`; then 100% of copies, and a
second populate creates nothing that is there already."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from lab import Lab
from tests.support.cli import cli
from tests.support.labtools import drop_dispersion


def report(cfg: Path) -> tuple[int, dict]:
    r = cli(cfg, "swift", "dispersion", "report", "--json")
    assert r.returncode in (0, 1, 2), r.stdout + r.stderr
    return r.returncode, json.loads(r.stdout)


@pytest.mark.on_reef
def test_populate_needs_consent_then_reports_every_copy(lab: Lab, cfg: Path) -> None:
    """(The removed replica is the scenario swift-dispersion-missing: broken for real on
    both releases by test_scenarios.py, its report replayed by tests/unit/test_replay.py.)"""
    drop_dispersion(lab)  # a lab an earlier run populated: start from "never populated"
    try:
        rc, rep = report(cfg)
        assert rc == 0 and rep["state"].startswith("not populated")
        r = cli(cfg, "swift", "dispersion", "populate", "--objects", "24")
        assert r.returncode != 0 and "not confirmed" in r.stderr  # nothing without consent
        assert report(cfg)[1]["state"].startswith("not populated")
        t0 = time.time()
        r = cli(cfg, "swift", "dispersion", "populate", "--objects", "24", "--containers", "6",
                "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "24 object(s) created" in " ".join(r.stdout.split())
        # a container copy a busy server missed at the PUT comes with the next pass
        lab.wait_replication_pass("container", t0, "dispersion containers replicated")
        rc, rep = report(cfg)
        assert rc == 0 and rep["state"] == "ok" and rep["findings"] == []
        assert (rep["object_pct"], rep["objects"]) == (100.0, 24)
        assert (rep["container_pct"], rep["containers"]) == (100.0, 6)
        # populating again creates nothing that is there already
        r = cli(cfg, "swift", "dispersion", "populate", "--objects", "24", "--yes")
        assert "0 object(s) created (24 already there)" in " ".join(r.stdout.split())
    finally:
        drop_dispersion(lab)
