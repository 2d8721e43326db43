"""The one host diagnosis (``checks.hostdiag``): device names, I/O errors, ownership,
flavour. The table-driven test shows that the check's evidence (``remount_safe`` /
``activate_safe``, ``OSD_DEVICE_IO_ERRORS``) and the runbook's refusal agree on every case:
both call the same function, and this keeps it so."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from checks.engine import run_checks
from checks.hostdiag import (
    Flavour,
    OsdHostState,
    device_names,
    diagnose_osd,
    io_errors_for,
    parent_name,
)
from runbooks.api import Refused, plan_from_snapshot
from storage.model import BlockDevice, DeviceIdentity, HostFacts, IoError
from tests.unit.test_runbook_plan import ctx_for, osd1_unmounted

FSID = "d8f86367-1e53-4f1d-97ba-975a43b70ad2"  # the captured lab's cluster fsid


@pytest.mark.parametrize(("name", "parent"), [
    ("sdb1", "sdb"), ("sdb", "sdb"), ("sdaa12", "sdaa"), ("nvme0n1p2", "nvme0n1"),
    ("nvme0n1", "nvme0n1"), ("loop3p1", "loop3"), ("loop3", "loop3"), ("vdb2", "vdb"),
    ("mmcblk0p1", "mmcblk0"), ("dm-3", "dm-3"),
])
def test_parent_name(name: str, parent: str) -> None:
    assert parent_name(name) == parent


def _facts(**kw: object) -> HostFacts:
    return HostFacts(name="node2", address="127.0.0.3", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("device", "logged_on", "blockdevs", "belongs"), [
    ("/dev/sdb1", "sdb", (), True),  # the whole disk of the partition logs errors
    ("/dev/sdb", "sdb1", (), True),  # a partition of the disk
    ("/dev/sdb1", "sdb2", (), True),  # a sibling partition: the disk is failing
    ("/dev/sdb1", "sdc", (), False),
    ("/dev/sdb1", "sdb10", (), True),
    ("/dev/nvme0n1p2", "nvme0n1", (), True),
    ("/dev/nvme0n1p2", "nvme0n11", (), False),  # another namespace, not a partition
    ("/dev/nvme1n1", "nvme0n1", (), False),
    ("/img/osd-1.xfs", "loop9", (BlockDevice("/dev/loop9", "loop", 1, None, None, None,
                                             "/img/osd-1.xfs"),), True),  # image's loop
    ("/img/osd-1.xfs", "loop8", (BlockDevice("/dev/loop9", "loop", 1, None, None, None,
                                             "/img/osd-1.xfs"),), False),
    ("/dev/loop9", "loop9", (), True),
    ("/dev/loop9", "loop90", (), False),
])
def test_io_errors_belong_to_the_device(device: str, logged_on: str,
                                        blockdevs: tuple[BlockDevice, ...],
                                        belongs: bool) -> None:
    f = _facts(block_devices=blockdevs, io_errors=(
        IoError(logged_on, f"blk_update_request: I/O error, dev {logged_on}, sector 8"),))
    assert bool(io_errors_for(f, [device])) is belongs, device_names(f, [device])


def test_io_errors_outside_the_window_do_not_count() -> None:
    f = _facts(io_errors=(IoError("sdb", "I/O error, dev sdb, sector 1", when=1000.0),))
    assert io_errors_for(f, ["/dev/sdb1"], now=1000.0 + 3600, window_s=7200)
    assert not io_errors_for(f, ["/dev/sdb1"], now=1000.0 + 86400, window_s=7200)


# --------------------------------------------------------------------------- agreement

Edit = Callable[[HostFacts], HostFacts]


def _ident(f: HostFacts) -> DeviceIdentity:
    return next(i for i in f.identities if i.whoami == 1)


def _set_dev(dev: str, blockdevs: tuple[BlockDevice, ...] = ()) -> Edit:
    """osd.1's matching device renamed (a partition, nvme, an image file)."""
    def edit(f: HostFacts) -> HostFacts:
        i = dataclasses.replace(_ident(f), device=dev)
        return dataclasses.replace(f, identities=(i,),
                                   block_devices=f.block_devices + blockdevs)
    return edit


def _errors(*names: str) -> Edit:
    def edit(f: HostFacts) -> HostFacts:
        return dataclasses.replace(f, io_errors=tuple(
            IoError(n, f"blk_update_request: I/O error, dev {n}, sector 2048") for n in names))
    return edit


def _then(*edits: Edit) -> Edit:
    def edit(f: HostFacts) -> HostFacts:
        for e in edits:
            f = e(f)
        return f
    return edit


def _two_devices(f: HostFacts) -> HostFacts:
    i = _ident(f)
    return dataclasses.replace(f, identities=(i, dataclasses.replace(i, device="/dev/sdz")),
                               block_devices=f.block_devices + (
                                   BlockDevice("/dev/sdz", "disk", 1, "xfs", None, None),))


def _foreign(f: HostFacts) -> HostFacts:
    return dataclasses.replace(f, identities=(dataclasses.replace(_ident(f),
                                                                  ceph_fsid="0" * 36),))


def _fstab_commented(f: HostFacts) -> HostFacts:
    return dataclasses.replace(f, fstab=tuple(dataclasses.replace(x, commented=True)
                                              for x in f.fstab))


def _as_raw(f: HostFacts) -> HostFacts:
    """The same host with osd.1 a ceph-volume raw OSD: no fstab line, a BlueStore label."""
    i = dataclasses.replace(_ident(f), kind="bluestore", activatable=True)
    return dataclasses.replace(f, identities=(i,), fstab=())


CASES: list[tuple[str, Edit, bool]] = [
    ("healthy candidate", lambda f: f, True),
    ("I/O errors on the device", _errors("loop54"), False),
    ("partition, errors on its disk", _then(_set_dev("/dev/sdb1"), _errors("sdb")), False),
    ("disk, errors on its partition", _then(_set_dev("/dev/sdb"), _errors("sdb1")), False),
    ("nvme partition, errors on the namespace",
     _then(_set_dev("/dev/nvme0n1p2"), _errors("nvme0n1")), False),
    ("image file, errors on its loop device",
     _then(_set_dev("/img/osd-1.xfs", (BlockDevice("/dev/loop77", "loop", 1, None, None,
                                                    None, "/img/osd-1.xfs"),)),
           _errors("loop77")), False),
    ("errors on another disk", _then(_set_dev("/dev/sdb1"), _errors("sdc")), True),
    ("two devices name the OSD", _two_devices, False),
    ("only another cluster's device", _foreign, False),
    ("fstab line commented out", _fstab_commented, False),
]


@pytest.mark.parametrize(("case", "edit", "safe"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("flavour", ["xfs", "raw"])
def test_check_and_runbook_agree(tmp_path: Path, case: str, edit: Edit, safe: bool,
                                 flavour: str) -> None:
    if flavour == "raw" and case == "fstab line commented out":
        pytest.skip("a raw OSD has no fstab line")
    ctx = ctx_for(tmp_path)
    snap = osd1_unmounted(ctx, _then(_as_raw, edit) if flavour == "raw" else edit)
    rep = run_checks(snap, None, now=snap.taken_at or None)
    code, key, runbook = (("OSD_DATA_UNMOUNTED", "remount_safe", "osd-remount")
                          if flavour == "xfs" else
                          ("OSD_NOT_ACTIVATED", "activate_safe", "osd-activate"))
    mine = [f for f in rep.findings if f.entity == "osd.1"]
    main = [f for f in mine if f.code in ("OSD_DATA_UNMOUNTED", "OSD_NOT_ACTIVATED")]
    assert main, [(f.code, f.message) for f in mine]
    if any(f.code == code for f in main):
        check_safe = bool(next(f for f in main if f.code == code).evidence[key])
    else:  # no device of this cluster: the check names none, so nothing is "safe"
        check_safe = False
    try:
        plan_from_snapshot(ctx, snap, runbook, "osd.1")
        runbook_ok = True
    except Refused:
        runbook_ok = False
    assert check_safe is safe, case
    assert runbook_ok is safe, case
    # the I/O-error finding appears exactly when the errors belong to the OSD's device
    has_io = any(f.code == "OSD_DEVICE_IO_ERRORS" for f in mine)
    assert has_io is ("errors" in case and case != "errors on another disk"), case


def test_raw_osd_flavour_state_and_runbook(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    snap = osd1_unmounted(ctx, _as_raw)
    assert snap.ceph is not None
    osd = snap.ceph.osd(1)
    assert osd is not None
    dg = diagnose_osd(snap.hosts["node2"], osd, snap.ceph.fsid)
    assert dg is not None
    assert (dg.flavour, dg.state, dg.runbook()) == (Flavour.RAW, OsdHostState.NOT_ACTIVATED,
                                                     "osd-activate")
    rep = run_checks(snap, None)
    down = next(f for f in rep.findings if f.code in ("OSD_DOWN_IN", "OSD_DOWN_OUT"))
    assert down.runbook == "osd-activate"  # the symptom points at the runbook that runs
    p = plan_from_snapshot(ctx, snap, "osd-activate", "osd.1")
    cmds = [s.command for s in p.steps]
    assert any(c.startswith("ceph-volume --cluster ceph raw activate --device /dev/loop54 "
                            "--no-systemd") for c in cmds), cmds
    with pytest.raises(Refused, match="osd-activate"):
        plan_from_snapshot(ctx, snap, "osd-remount", "osd.1")
    with pytest.raises(Refused, match="osd-activate"):
        plan_from_snapshot(ctx, snap, "osd-start", "osd.1")


def test_label_without_key_is_not_activated_blindly(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    snap = osd1_unmounted(ctx, _then(_as_raw, lambda f: dataclasses.replace(
        f, identities=(dataclasses.replace(_ident(f), activatable=False),))))
    with pytest.raises(Refused, match="lacks what activation needs"):
        plan_from_snapshot(ctx, snap, "osd-activate", "osd.1")


def test_foreign_label_gets_its_own_finding(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    snap = osd1_unmounted(ctx, _then(_as_raw, _foreign))
    rep = run_checks(snap, None)
    f = next(x for x in rep.findings if x.code == "OSD_LABEL_FOREIGN")
    assert f.evidence["device_ceph_fsid"] == "0" * 36
    with pytest.raises(Refused, match="another cluster"):
        plan_from_snapshot(ctx, snap, "osd-activate", "osd.1")
