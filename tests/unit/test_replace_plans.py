"""Disk replacement plans (issue #28) on saved snapshots of the lab, per release: the steps
of ``osd-replace-disk`` and ``swift-replace-drive``, and every bad input refused with one
line before anything is done (a healthy disk, a device in use, an OSD that does not
exist, a drive that holds the last copy, a ring inside min_part_hours). The live
replacements: tests/lab/test_replace.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from runbooks.api import InvalidRequest, Plan, Refused, RunContext, plan_from_snapshot
from storage.journal import Journal
from storage.model import ClusterSnapshot, DeviceIdentity
from storage.swiftlib import RingBuilder
from tests.unit.test_replay import RELEASES, replay

pytestmark = pytest.mark.parametrize("release", RELEASES)

NEW = "/dev/sdz"  # a disk no snapshot host reports: checked on the host by step 1


def plan_on(release: str, case: str, runbook: str, target: str,
            options: dict[str, object] | None = None,
            snap: ClusterSnapshot | None = None) -> Plan:
    rp = replay(release, case)
    ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, user="tester")
    return plan_from_snapshot(ctx, snap or rp.outcome.snapshot, runbook, target, options)


# ------------------------------------------------------------------ osd-replace-disk


def test_osd_replace_of_a_down_raw_osd(release: str) -> None:
    p = plan_on(release, "osd-not-activated", "osd-replace-disk", "osd.3", {"device": NEW})
    cmds = [s.command for s in p.steps]
    assert p.destructive and p.needs_second_person  # moves data: the two-person rule
    assert p.steps[0].title == f"check that {NEW} on node4 is an unused disk"
    assert "ceph osd safe-to-destroy osd.3" in " ".join(cmds)
    destroy = cmds.index("ceph osd destroy osd.3 --yes-i-really-mean-it")
    prep = next(i for i, c in enumerate(cmds) if f"raw prepare --bluestore --data {NEW} "
                "--osd-id 3" in c)
    assert destroy < prep < cmds.index("ceph osd in 3")
    assert not any(c.startswith("kill") for c in cmds)  # nothing runs: nothing to stop
    assert str(p.params["reason"]).startswith("failing: ") and "down" in p.params["reason"]
    assert "osd.3" in p.verify_entities and "OSD_DOWN_IN" in p.verify_codes


def test_osd_replace_of_a_healthy_disk_needs_planned(release: str) -> None:
    with pytest.raises(Refused, match="not replacing a healthy disk unless planned"):
        plan_on(release, "healthy", "osd-replace-disk", "osd.3", {"device": NEW})
    p = plan_on(release, "healthy", "osd-replace-disk", "osd.3",
                {"device": NEW, "planned": "yes"})
    cmds = [s.command for s in p.steps]
    assert cmds[1] == "ceph osd out 3" and p.steps[3].title == "stop the osd.3 daemon"
    assert p.params["reason"] == "planned replacement of a healthy disk"
    assert any(w.startswith("planned:") for w in p.warnings)


def test_osd_replace_refusals(release: str) -> None:
    own = replay(release, "healthy").outcome.snapshot.hosts["node4"].osd_data[3].block
    for target, options, why in (
            ("osd.9", {"device": NEW}, "osd.9 does not exist in the osdmap"),
            ("osd.3", {"device": own, "planned": "yes"}, "the device osd.3 uses now")):
        with pytest.raises(Refused, match=why):
            plan_on(release, "healthy", "osd-replace-disk", target, options)


def test_osd_replace_of_a_ceph_disk_xfs_osd_stays_xfs(release: str) -> None:
    """osd.0 (the lab's xfs layout): rebuilt as an XFS OSD at the same data dir, keeping
    its id: mkfs.xfs never forced, with the plan's UUID; mount; a new key; osd new under
    the same id; ceph-osd --mkfs; the exact fstab line to change said, not edited."""
    snap = replay(release, "healthy").outcome.snapshot
    data_dir = snap.hosts["node1"].osd_data[0].path
    p = plan_on(release, "healthy", "osd-replace-disk", "osd.0",
                {"device": NEW, "planned": "yes"})
    fs_uuid, osd_uuid = p.params["fs_uuid"], p.params["osd_uuid"]
    assert p.params["layout"] == "xfs" and fs_uuid != osd_uuid
    cmds = [s.command for s in p.steps]
    order = [cmds.index("ceph osd destroy osd.0 --yes-i-really-mean-it"),
             cmds.index(f"umount {data_dir}"),
             cmds.index(f"mkfs.xfs -q -m uuid={fs_uuid} {NEW}"),
             cmds.index(f"mount -t xfs -o noatime {NEW} {data_dir}"),
             next(i for i, c in enumerate(cmds) if c.startswith("ceph-authtool --create-keyring "
                                                               f"{data_dir}/keyring --gen-key")),
             next(i for i, c in enumerate(cmds) if f"ceph osd new {osd_uuid} 0" in c),
             next(i for i, c in enumerate(cmds) if "--mkfs --osd-uuid " + str(osd_uuid) in c
                  and " -i 0 " in c),
             cmds.index(f"chown -R ceph:ceph {data_dir}"),
             next(i for i, s in enumerate(p.steps) if s.title == "start the osd.0 daemon"),
             cmds.index("ceph osd in 0")]
    assert order == sorted(order)
    assert not any("-f" in c.split() for c in cmds if c.startswith("mkfs"))
    # a killed ceph-osd is marked down before it closes its files: unmount after it exited
    titles = [s.title for s in p.steps]
    gone = next(i for i, t in enumerate(titles) if t.startswith("wait until the osd.0 process"))
    assert titles.index("stop the osd.0 daemon") < gone < cmds.index(f"umount {data_dir}")
    assert not any("raw prepare" in c or "lvm create" in c for c in cmds)
    fstab = [w for w in p.warnings if w.startswith(f"the fstab line for {data_dir}")]
    assert len(fstab) == 1 and f"`UUID={fs_uuid} {data_dir} xfs noatime 0 0`" in fstab[0]
    # the same plan made again (execute does) names the same UUIDs
    again = plan_on(release, "healthy", "osd-replace-disk", "osd.0",
                    {"device": NEW, "planned": "yes"})
    assert [s.command for s in again.steps] == cmds


def test_osd_replace_xfs_refuses_a_device_with_a_filesystem(release: str) -> None:
    """No mkfs.xfs -f: a new device that holds a filesystem is in use, and a host template
    that forces mkfs.xfs is refused by the settings and by the plan."""
    from core.settings_clusters import HostSettings
    from storage.model import BlockDevice

    rp = replay(release, "healthy")
    snap = rp.outcome.snapshot
    n1 = snap.hosts["node1"]
    dev = BlockDevice(path=NEW, type="disk", size=10 * 2**30, fstype="xfs", uuid="u",
                      mountpoint=None)
    used = dataclasses.replace(snap, hosts={**snap.hosts, "node1": dataclasses.replace(
        n1, block_devices=(*n1.block_devices, dev))})
    with pytest.raises(Refused, match=f"{NEW} on node1 is in use: it holds xfs"):
        plan_on(release, "healthy", "osd-replace-disk", "osd.0",
                {"device": NEW, "planned": "yes"}, snap=used)
    with pytest.raises(ValueError, match="-f would overwrite"):
        HostSettings(name="n", address="127.0.0.2",
                     osd_mkfs_xfs=["mkfs.xfs", "-f", "{device}"])
    forced = dataclasses.replace(rp.target, hosts=tuple(
        dataclasses.replace(h, osd_mkfs_xfs=("mkfs.xfs", "-f", "{device}"))
        for h in rp.target.hosts))
    ctx = RunContext("lab", forced, Journal(":memory:"), rp.thresholds, user="tester")
    with pytest.raises(Refused, match="forces mkfs.xfs"):
        plan_from_snapshot(ctx, snap, "osd-replace-disk", "osd.0",
                           {"device": NEW, "planned": "yes"})


def test_osd_replace_of_an_lvm_osd(release: str) -> None:
    """ceph-volume lvm cannot run on the lab's kernel (no device-mapper): its plan is
    tested here only. osd.3 made to look like an LVM OSD (its block an LV with the
    ceph.osd_id tag): ``ceph-volume lvm create --osd-id 3`` after destroy, before start."""
    from storage.model import LvmVolume

    snap = replay(release, "healthy").outcome.snapshot
    n4 = snap.hosts["node4"]
    lv = "/dev/ceph-0b1c/osd-block-3"
    assert snap.ceph is not None
    osd3 = snap.ceph.osd(3)
    assert osd3 is not None
    vol = LvmVolume(lv_path=lv, vg_name="ceph-0b1c", lv_name="osd-block-3", osd_id=3,
                    osd_fsid=osd3.uuid, cluster_fsid=snap.ceph.fsid, devices=("/dev/sdc",))
    n4 = dataclasses.replace(
        n4, osd_data={**n4.osd_data, 3: dataclasses.replace(n4.osd_data[3], block=lv)},
        lvm_volumes=(*n4.lvm_volumes, vol))
    lvm = dataclasses.replace(snap, hosts={**snap.hosts, "node4": n4})
    p = plan_on(release, "healthy", "osd-replace-disk", "osd.3",
                {"device": NEW, "planned": "yes"}, snap=lvm)
    cmds = [s.command for s in p.steps]
    create = cmds.index(f"ceph-volume --cluster ceph lvm create --bluestore --data {NEW} "
                        "--osd-id 3 --no-systemd")
    assert p.steps[create].title == f"create (prepare and activate) {NEW} as osd.3 " \
        "(ceph-volume lvm)"
    start = next(i for i, s in enumerate(p.steps) if s.title == "start the osd.3 daemon")
    assert cmds.index("ceph osd destroy osd.3 --yes-i-really-mean-it") < create < start
    assert not any("raw prepare" in c or c.startswith("mkfs") for c in cmds)


def test_osd_replace_device_in_use_and_malformed(release: str) -> None:
    rp = replay(release, "osd-not-activated")
    snap = rp.outcome.snapshot
    n4 = snap.hosts["node4"]
    labelled = dataclasses.replace(snap, hosts={**snap.hosts, "node4": dataclasses.replace(
        n4, identities=(*n4.identities, DeviceIdentity(NEW, whoami=1, ceph_fsid="f",
                                                       kind="bluestore")))})
    with pytest.raises(Refused, match=f"{NEW} on node4 is in use: it carries bluestore "
                       "data of osd.1"):
        plan_on(release, "osd-not-activated", "osd-replace-disk", "osd.3", {"device": NEW},
                snap=labelled)
    mounted = dataclasses.replace(snap, hosts={**snap.hosts, "node4": dataclasses.replace(
        snap.hosts["node4"], mounts=(*snap.hosts["node4"].mounts, dataclasses.replace(
            snap.hosts["node1"].mounts[0], source=NEW)))})
    with pytest.raises(Refused, match=f"{NEW} on node4 is in use: mounted on"):
        plan_on(release, "osd-not-activated", "osd-replace-disk", "osd.3", {"device": NEW},
                snap=mounted)
    for bad in ("/dev/../etc/passwd", "sdb; reboot", ""):
        with pytest.raises(InvalidRequest):
            plan_on(release, "osd-not-activated", "osd-replace-disk", "osd.3",
                    {"device": bad})


# ------------------------------------------------------------------ swift-replace-drive


def with_builders(snap: ClusterSnapshot, tmp: Path, replicas: int,
                  min_part_hours: int = 0) -> ClusterSnapshot:
    """The snapshot's rings with builder files of our own in ``tmp`` (the snapshot's paths
    were the capture lab's): same devices, ``replicas`` copies."""
    assert snap.swift is not None
    rings = []
    for r in snap.swift.rings:
        b = RingBuilder(6, replicas, min_part_hours)
        for dv in sorted(r.devices, key=lambda x: x.id):
            b.add_dev({"id": dv.id, "region": dv.region, "zone": dv.zone, "ip": dv.ip,
                       "port": dv.port, "device": dv.device, "weight": dv.weight,
                       "replication_ip": dv.replication_ip or dv.ip,
                       "replication_port": dv.replication_port or dv.port, "meta": ""})
        b.rebalance(seed=1)
        if min_part_hours == 0:
            b.pretend_min_part_hours_passed()
        bp, rp = tmp / f"{r.kind}.builder", tmp / f"{r.kind}.ring.gz"
        b.save(str(bp))
        b.get_ring().save(str(rp))
        rings.append(dataclasses.replace(r, builder_path=str(bp), ring_path=str(rp)))
    return dataclasses.replace(snap, swift=dataclasses.replace(snap.swift,
                                                               rings=tuple(rings)))


def test_swift_replace_of_an_unmounted_drive(release: str, tmp_path: Path) -> None:
    snap = with_builders(replay(release, "swift-device-unmounted").outcome.snapshot,
                         tmp_path, 3)
    p = plan_on(release, "swift-device-unmounted", "swift-replace-drive", "d2@node2",
                {"device": NEW}, snap=snap)
    titles = [s.title for s in p.steps]
    assert p.destructive and p.needs_second_person
    assert titles[1] == "back up the builders and rings"
    assert "object ring: weight of d2 to 0, rebalance" in titles
    assert f"make an XFS filesystem labelled d2 on {NEW}" in titles
    assert not any(t.startswith("wait until d2 has drained") for t in titles)  # unreadable
    assert not any(t.startswith("unmount") for t in titles)  # it is not mounted
    assert titles.index("object ring: remove the old d2, add the new one, rebalance") < \
        titles.index("wait until dispersion finds every copy") == len(titles) - 1
    assert "SWIFT_DISPERSION_OBJECT_COPIES" in p.verify_codes
    assert "pretend_min_part_hours_passed" in " ".join(s.command for s in p.steps)


def test_swift_replace_refusals(release: str, tmp_path: Path) -> None:
    snap = with_builders(replay(release, "healthy").outcome.snapshot, tmp_path, 3)
    with pytest.raises(Refused, match="not replacing a healthy drive unless planned"):
        plan_on(release, "healthy", "swift-replace-drive", "d2@node2", {"device": NEW},
                snap=snap)
    p = plan_on(release, "healthy", "swift-replace-drive", "d2@node2",
                {"device": NEW, "planned": "yes"}, snap=snap)
    titles = [s.title for s in p.steps]
    assert "wait until d2 has drained to its new primaries" in titles  # it can drain
    assert any(t.startswith("unmount the old drive") for t in titles)
    with pytest.raises(Refused, match="no ring lists device d9 on node2"):
        plan_on(release, "healthy", "swift-replace-drive", "d9@node2", {"device": NEW},
                snap=snap)
    # the drive itself, and a device mounted elsewhere on the host: in use
    drive, other = (m.source for m in snap.hosts["node2"].mounts)
    for dev, why in ((drive, "is the drive mounted on"), (other, "is in use: mounted on")):
        with pytest.raises(Refused, match=why):
            plan_on(release, "healthy", "swift-replace-drive", "d2@node2",
                    {"device": dev, "planned": "yes"}, snap=snap)


def test_swift_replace_refuses_the_last_copy(release: str, tmp_path: Path) -> None:
    """One replica: every partition of the unmounted d2 has its only copy there."""
    snap = with_builders(replay(release, "swift-device-unmounted").outcome.snapshot,
                         tmp_path, 1)
    with pytest.raises(Refused, match="d2 holds the last available copy of"):
        plan_on(release, "swift-device-unmounted", "swift-replace-drive", "d2@node2",
                {"device": NEW}, snap=snap)


def test_swift_replace_inside_min_part_hours(release: str, tmp_path: Path) -> None:
    snap = with_builders(replay(release, "swift-device-unmounted").outcome.snapshot,
                         tmp_path, 3, min_part_hours=1)
    with pytest.raises(Refused, match="inside min_part_hours"):
        plan_on(release, "swift-device-unmounted", "swift-replace-drive", "d2@node2",
                {"device": NEW}, snap=snap)
    p = plan_on(release, "swift-device-unmounted", "swift-replace-drive", "d2@node2",
                {"device": NEW, "ignore_min_part_hours": "yes"}, snap=snap)
    assert any("min_part_hours ignored" in w for w in p.warnings)


def test_a_disk_finding_makes_a_healthy_looking_osd_failing(release: str) -> None:
    """The hook for device-health findings (DEVICE_FAILING, FS_SHUTDOWN, ...): a finding
    on the OSD counts as failing evidence, so no ``planned`` is needed."""
    from types import SimpleNamespace

    from checks.hostdiag import diagnose_osd
    from runbooks.replace_osd import DISK_FINDING_CODES, failing_evidence

    snap = replay(release, "healthy").outcome.snapshot
    assert snap.ceph is not None
    osd = snap.ceph.osd(3)
    assert osd is not None
    dg = diagnose_osd(snap.hosts["node4"], osd, snap.ceph.fsid, snap.taken_at)
    assert failing_evidence(snap, osd, dg) == []
    assert "DEVICE_FAILING" in DISK_FINDING_CODES

    def smart_says_failing(*_: object) -> list[SimpleNamespace]:
        return [SimpleNamespace(code="DEVICE_FAILING", entity="osd.3")]

    assert failing_evidence(snap, osd, dg, smart_says_failing) == ["DEVICE_FAILING osd.3"]


def test_process_gone_step_polls_until_the_pid_is_gone(release: str) -> None:
    from types import SimpleNamespace

    from runbooks.replace_osd import process_gone_step

    answers = [(0, "  4242\n"), (0, "  4242\n"), (1, "")]
    calls: list[list[str]] = []

    def run(host: str, argv: list[str], timeout_s: float) -> SimpleNamespace:
        calls.append(argv)
        rc, out = answers.pop(0)
        return SimpleNamespace(rc=rc, stdout=out, stderr="")

    env = SimpleNamespace(runner=SimpleNamespace(run=run))
    ok, msg = process_gone_step("node1", 4242)(env)  # type: ignore[arg-type]
    assert ok and msg == "process 4242 on node1 has exited" and len(calls) == 3
    assert calls[0] == ["ps", "-o", "pid=", "-p", "4242"]
    answers[:] = [(0, " 4242\n")] * 5
    ok, msg = process_gone_step("node1", 4242, wait_s=0.0)(env)  # type: ignore[arg-type]
    assert not ok and "still runs" in msg


def test_the_disk_checks_findings_count_as_failing(release: str, tmp_path: Path) -> None:
    """The findings checks/disks.py and Ceph's explained codes make, on the lab's real
    faults, let a replacement go ahead without ``planned``: a shut-down XFS under d2 (the
    finding names the physical disk and lists d2) and Ceph's OSD_TOO_MANY_REPAIRS on osd.1
    (after BlueStore's injected read errors)."""
    from checks.hostdiag import diagnose_osd
    from runbooks.replace_osd import failing_evidence

    snap = with_builders(replay(release, "swift-device-shutdown").outcome.snapshot,
                         tmp_path, 3)
    p = plan_on(release, "swift-device-shutdown", "swift-replace-drive", "d2@node2",
                {"device": NEW}, snap=snap)
    assert "FS_SHUTDOWN disk /dev/loop" in str(p.params.get("reason")), p.params
    with pytest.raises(Refused, match="healthy"):  # the other drive on that host is fine
        plan_on(release, "swift-device-shutdown", "swift-replace-drive", "d1@node1",
                {"device": NEW}, snap=snap)

    snap = replay(release, "osd-read-errors").outcome.snapshot
    assert snap.ceph is not None
    osd1, osd2 = snap.ceph.osd(1), snap.ceph.osd(2)
    assert osd1 is not None and osd2 is not None
    why = failing_evidence(snap, osd1, diagnose_osd(snap.hosts["node2"], osd1,
                                                   snap.ceph.fsid, snap.taken_at))
    assert why == ["CEPH_HEALTH ceph OSD_TOO_MANY_REPAIRS"], why
    assert failing_evidence(snap, osd2, diagnose_osd(snap.hosts["node3"], osd2,
                                                    snap.ceph.fsid, snap.taken_at)) == []
