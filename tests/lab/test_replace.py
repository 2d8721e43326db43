"""Disk replacement for real (issue #28), one live replacement each: the raw OSD of the
lab (osd.3) onto a spare disk, every object written before read back and compared; a
Swift drive (d2) onto a spare drive, dispersion 100% afterwards (both release-independent:
on the Reef session); an XFS-layout OSD (osd.0, ceph-disk style) rebuilt as one on a spare
disk at the same data dir, objects read back (on the Pacific session, to balance). Their plans and refusals on every release:
tests/unit/test_replace_plans.py; the goals' figures: benchmarks/replace_*.py."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from core.env import Env
from lab import Lab
from lab.replace import (
    adopt_spare,
    adopt_swift_spare,
    adopt_xfs_spare,
    attach_spare,
    attach_swift_spare,
    drop_spare,
    swift_spare_image,
)
from runbooks.api import Refused, RunContext, execute, plan
from storage.dispersion import sample
from storage.swiftlib import RingBuilder
from tests.support.cli import cli
from tests.support.poll import wait_until

OBJECTS = 40


@pytest.fixture
def ctx(env: Env) -> RunContext:
    c = env.run_context("lab", source="test")
    c.verify_timeout_s = 180
    return c


def _osd(lab: Lab, i: int) -> dict[str, Any]:
    dump = lab.ceph("osd", "dump")
    return next(o for o in dump["osds"] if o["osd"] == i)


def _write(io: Any, prefix: str) -> dict[str, str]:
    sums: dict[str, str] = {}
    for n in range(OBJECTS):
        data = os.urandom(16384 + n)
        io.write_full(f"{prefix}-{n}", data)
        sums[f"{prefix}-{n}"] = hashlib.sha256(data).hexdigest()
    return sums


def _settled_read_back(lab: Lab, io: Any, sums: dict[str, str]) -> dict[str, str]:
    wait_until(lab.ceph_cluster.pgs_settled, 300, lambda: f"PGs settled ({lab.pg_states()})")
    return {k: hashlib.sha256(io.read(k, 20000 + OBJECTS)).hexdigest() for k in sums}


def test_xfs_osd_disk_replaced_as_xfs_keeping_id_and_data_dir(lab: Lab,
                                                              ctx: RunContext) -> None:
    """osd.0 (the lab's xfs layout: an XFS data dir in fstab, BlueStore ``block`` beside)
    onto a spare disk: mkfs.xfs with the plan's UUID, mounted at the same data dir, the
    same id with a new uuid, the fstab line to change given exactly; objects intact."""
    import rados

    i = 0
    assert lab.kinds[i] == "xfs"
    data_dir = str(lab.osd_dir(i))
    with open("/proc/self/mounts") as f:
        old_src = next(ln.split()[0] for ln in f if ln.split()[1] == data_dir)
    spare = attach_spare(lab, i)
    used = False
    sums: dict[str, str] = {}
    with rados.Rados(conffile=str(lab.conf), conf={"keyring": str(lab.admin_keyring)}) as c, \
            c.open_ioctx("rbd") as io:
        try:
            sums = _write(io, "replace-xfs")
            with pytest.raises(Refused, match=f"the device osd.{i} uses now"):
                plan(ctx, "osd-replace-disk", f"osd.{i}", {"device": old_src,
                                                            "planned": "yes"})
            p = plan(ctx, "osd-replace-disk", f"osd.{i}", {"device": spare, "planned": "yes"})
            fs_uuid, osd_uuid = str(p.params["fs_uuid"]), str(p.params["osd_uuid"])
            cmds = [s.command for s in p.steps]
            assert f"mkfs.xfs -q -m uuid={fs_uuid} {spare}" in cmds  # never -f
            fstab = [w for w in p.warnings if w.startswith(f"the fstab line for {data_dir}")]
            assert len(fstab) == 1 and f"UUID={fs_uuid} {data_dir} xfs" in fstab[0]
            fstab_file = lab.base / "hosts" / "node1.fstab"
            before = fstab_file.read_text()
            res = execute(ctx, p, confirmed_by="tester")
            used = True
            assert res.ok, res.message
            assert fstab_file.read_text() == before  # not ours: told, not edited
            o = _osd(lab, i)
            assert (o["up"], o["in"], o["uuid"]) == (1, 1, osd_uuid)
            with open("/proc/self/mounts") as f:
                now = next(ln.split() for ln in f if ln.split()[1] == data_dir)
            assert now[0] == spare and now[2] == "xfs"
            blk = subprocess.run(["blkid", "-p", "-o", "value", "-s", "UUID", spare],
                                 capture_output=True, text=True, check=False, timeout=15)
            assert blk.stdout.strip() == fs_uuid
            assert (lab.osd_dir(i) / "whoami").read_text().strip() == str(i)
            assert (lab.osd_dir(i) / "block").is_file()  # BlueStore's block inside the XFS
            assert _settled_read_back(lab, io, sums) == sums
        finally:
            for k in sums:
                io.remove_object(k)
            if used:
                adopt_xfs_spare(lab, i, osd_uuid)
            else:
                drop_spare(lab, i)


@pytest.mark.on_reef
def test_osd_disk_replaced_keeping_its_id_and_every_object(lab: Lab, ctx: RunContext,
                                                           cfg: Path) -> None:
    import rados

    i = 3
    assert lab.kinds[i] == "raw"
    old_block = os.path.realpath(lab.osd_dir(i) / "block")
    spare = attach_spare(lab, i)
    used = False
    sums: dict[str, str] = {}
    with rados.Rados(conffile=str(lab.conf), conf={"keyring": str(lab.admin_keyring)}) as c, \
            c.open_ioctx("rbd") as io:
        try:
            for n in range(OBJECTS):
                data = os.urandom(16384 + n)
                io.write_full(f"replace-test-{n}", data)
                sums[f"replace-test-{n}"] = hashlib.sha256(data).hexdigest()
            # bad input on the live lab: one line, nothing done
            with pytest.raises(Refused, match="not replacing a healthy disk unless planned"):
                plan(ctx, "osd-replace-disk", f"osd.{i}", {"device": spare})
            with pytest.raises(Refused, match=f"the device osd.{i} uses now"):
                plan(ctx, "osd-replace-disk", f"osd.{i}", {"device": old_block,
                                                            "planned": "yes"})
            # the command line: one line on stderr, exit 4 (refused), nothing done (a
            # malformed device is InvalidRequest, exit 64: tests/unit/test_replace_plans.py)
            r = cli(cfg, "fix", "osd-replace-disk", f"osd.{i}", "-o", f"device={spare}",
                    "--yes", timeout=120, columns=None)
            assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1, r
            assert "Traceback" not in r.stderr + r.stdout
            assert (_osd(lab, i)["up"], _osd(lab, i)["in"]) == (1, 1)
            p = plan(ctx, "osd-replace-disk", f"osd.{i}", {"device": spare, "planned": "yes"})
            assert p.needs_second_person
            used = True
            res = execute(ctx, p, confirmed_by="tester")
            assert res.ok, res.message
            o = _osd(lab, i)
            assert (o["up"], o["in"]) == (1, 1)
            assert os.path.realpath(lab.osd_dir(i) / "block") == spare  # the new disk
            assert _settled_read_back(lab, io, sums) == sums
        finally:
            for k in sums:
                io.remove_object(k)
            if used:
                adopt_spare(lab, i)
            else:
                drop_spare(lab, i)


@pytest.mark.on_reef
def test_swift_drive_replaced_with_full_dispersion(lab: Lab, ctx: RunContext) -> None:
    execute(ctx, plan(ctx, "swift-dispersion-populate", "dispersion"), confirmed_by="tester")
    spare = attach_swift_spare(lab, "d2")
    try:
        with pytest.raises(Refused, match="not replacing a healthy drive unless planned"):
            plan(ctx, "swift-replace-drive", "d2@node2", {"device": spare})
        opts = {"device": spare, "planned": "yes", "ignore_min_part_hours": "yes"}
        p = plan(ctx, "swift-replace-drive", "d2@node2", opts)
        assert p.needs_second_person
        res = execute(ctx, p, confirmed_by="tester")
        assert res.ok, res.message
        with open("/proc/self/mounts") as f:
            src = next(ln.split()[0] for ln in f
                       if ln.split()[1] == str(lab.swift_node / "d2"))
        assert src == spare
        for kind in ("object", "container", "account"):
            b = RingBuilder.load(str(lab.swift_etc / f"{kind}.builder"))
            d2 = [d for d in b.devs if d is not None and d["device"] == "d2"]
            assert len(d2) == 1 and d2[0]["weight"] == 100 and d2[0]["parts"] > 0
        st = ctx.target.swift
        assert st is not None
        ds = sample(st, {k: str(lab.swift_etc / f"{k}.ring.gz")
                         for k in ("object", "container")}, time.time())
        assert ds.objects is not None and ds.objects.pct_found == 100.0
        assert ds.containers is not None and ds.containers.pct_found == 100.0
    finally:
        if swift_spare_image(lab, "d2").exists():
            with open("/proc/self/mounts") as f:
                on_spare = any(ln.split()[0] == spare for ln in f)
            if on_spare:
                adopt_swift_spare(lab, "d2")
