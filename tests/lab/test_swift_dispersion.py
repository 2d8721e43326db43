"""Dispersion on the real lab: nothing is sampled (and nothing created) until the
operator consents with `stordoc swift dispersion populate`; then 100% of copies; one
replica file removed from a device drops the percentage and names that device; put back,
the finding clears."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import Lab
from storage.dispersion import OBJECT_CONTAINER

ROOT = Path(__file__).resolve().parents[2]


def cli(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stordoc", "--config", str(cfg), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
                          input="",
                          env={**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200"})


def report(cfg: Path) -> tuple[int, dict]:
    r = cli(cfg, "swift", "dispersion", "report", "--json")
    assert r.returncode in (0, 1, 2), r.stdout + r.stderr
    return r.returncode, json.loads(r.stdout)


def drop_dispersion(lab: Lab) -> None:
    """Remove stordoc's dispersion containers and objects (a test that populated them)."""
    conn = lab.swift_cluster.conn()
    try:
        for c in conn.get_account(prefix="stordoc_dispersion_", full_listing=True)[1]:
            for o in conn.get_container(c["name"], full_listing=True)[1]:
                conn.delete_object(c["name"], o["name"])
            conn.delete_container(c["name"])
    finally:
        conn.close()


def test_populate_needs_consent_then_a_removed_replica_is_seen(lab: Lab, cfg: Path) -> None:
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
        assert rc == 0 and rep["state"] == "ok"
        assert (rep["object_pct"], rep["objects"]) == (100.0, 24)
        assert (rep["container_pct"], rep["containers"]) == (100.0, 6)
        msg = lab.break_("swift-dispersion-missing", device="d2")
        assert f"replica of {OBJECT_CONTAINER}/" in msg
        rc, rep = report(cfg)
        assert rc == 1 and rep["missing"] == 1
        assert rep["object_pct"] == pytest.approx(100 * 71 / 72)
        (f,) = rep["findings"]
        assert f["code"] == "SWIFT_DISPERSION_OBJECT_COPIES"
        assert f["entity"] == f"object ring d2@127.0.0.3:{lab.ports.object}"
        r = cli(cfg, "check")
        assert r.returncode == 1 and "SWIFT_DISPERSION_OBJECT_COPIES" in r.stdout
        lab.heal("swift-dispersion-missing")
        rc, rep = report(cfg)
        assert rc == 0 and rep["object_pct"] == 100.0 and rep["findings"] == []
        # populating again creates nothing that is there already
        r = cli(cfg, "swift", "dispersion", "populate", "--objects", "24", "--yes")
        assert "0 object(s) created (24 already there)" in " ".join(r.stdout.split())
    finally:
        lab.heal("swift-dispersion-missing")
    r = cli(cfg, "check")
    assert r.returncode == 0, r.stdout
