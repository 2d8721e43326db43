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
            ("osd.3", {"device": own, "planned": "yes"}, "the device osd.3 uses now"),
            ("osd.0", {"device": NEW, "planned": "yes"}, "ceph-disk style XFS OSD whose data dir")):
        with pytest.raises(Refused, match=why):
            plan_on(release, "healthy", "osd-replace-disk", target, options)


def test_osd_replace_of_a_ceph_disk_xfs_osd_at_the_standard_path(release: str) -> None:
    """Where ceph-volume makes its data dir (/var/lib/ceph/osd/ceph-N), a ceph-disk XFS
    OSD comes back as a ceph-volume raw one: unmount the XFS partition, prepare raw, and
    say that its fstab line must go. (The lab keeps its XFS OSDs elsewhere: refused.)"""
    snap = replay(release, "healthy").outcome.snapshot
    n1 = snap.hosts["node1"]
    old = n1.osd_data[0].path
    std = "/var/lib/ceph/osd/ceph-0"

    def moved(p: str) -> str:
        return std if p == old else p

    n1 = dataclasses.replace(
        n1, osd_data={**n1.osd_data, 0: dataclasses.replace(n1.osd_data[0], path=std)},
        mounts=tuple(dataclasses.replace(m, target=moved(m.target)) for m in n1.mounts),
        fstab=tuple(dataclasses.replace(f, mountpoint=moved(f.mountpoint))
                    for f in n1.fstab))
    snap = dataclasses.replace(snap, hosts={**snap.hosts, "node1": n1})
    p = plan_on(release, "healthy", "osd-replace-disk", "osd.0",
                {"device": NEW, "planned": "yes"}, snap=snap)
    cmds = [s.command for s in p.steps]
    umount = cmds.index(f"umount {std}")
    prep = next(i for i, c in enumerate(cmds) if "raw prepare" in c and "--osd-id 0" in c)
    assert cmds.index("ceph osd destroy osd.0 --yes-i-really-mean-it") < umount < prep
    assert any(f"the fstab line for {std}" in w for w in p.warnings)


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
