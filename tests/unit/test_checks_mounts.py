"""checks.mounts on host facts parsed from captured lab outputs plus the Ceph/Swift state
captured at the same moment. Kernel I/O error lines cannot be produced in the lab (no
device-mapper in the container), so those tests add lines in the kernel's real formats to
the captured ``@@kmsg`` section."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from checks.engine import run_checks
from checks.model import Thresholds
from storage.model import ClusterSnapshot, HostFacts, RingDevice, SwiftState
from tests.unit.test_hosts_facts import LAB, ceph_state, facts_of, load_meta
from tests.unit.test_swift_rings import swift_state

MOUNT_CODES = {"OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", "OSD_DEVICE_IO_ERRORS",
               "OSD_FSTAB_DISABLED", "SWIFT_DEVICE_UNMOUNTED", "SWIFT_DEVICE_NO_DIR",
               "SWIFT_DEVICE_IO_ERRORS", "SWIFT_FSTAB_DISABLED"}


def snap(ceph: str | None, hosts: dict[str, HostFacts], swift: SwiftState | None = None,
         now: float | None = None) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="lab", taken_at=now or time.time(),
                           ceph=ceph_state(ceph) if ceph else None, swift=swift,
                           hosts=hosts, host_facts_collected=True)


def mount_findings(s: ClusterSnapshot, th: Thresholds | None = None,
                   now: float | None = None) -> list:
    rep = run_checks(s, th, now=now)
    return [f for f in rep.findings if f.code in MOUNT_CODES]


def test_healthy_lab_has_no_mount_findings(tmp_path: Path) -> None:
    hosts = {h: facts_of(f"healthy-{h}") for h in ("node1", "node2", "node3")}
    assert mount_findings(snap("healthy", hosts, swift_state("healthy", tmp_path))) == []


def test_osd_data_unmounted_names_the_matching_device() -> None:
    meta = load_meta("osd1-unmounted-node2")
    hosts = {"node1": facts_of("osd1-unmounted-node1"),
             "node2": facts_of("osd1-unmounted-node2")}
    f = mount_findings(snap("osd1-unmounted", hosts))
    assert [(x.code, x.entity, x.runbook, x.target) for x in f] == [
        ("OSD_DATA_UNMOUNTED", "osd.1", "osd-remount", "osd.1")]
    ev = f[0].evidence
    assert ev["host"] == "node2" and ev["data_dir"] == f"{LAB}/ceph/osd/ceph-1"
    assert ev["device"] == meta["candidates"][0]
    assert ev["device_whoami"] == 1 and ev["device_ceph_fsid"] == meta["cluster_fsid"]
    assert ev["remount_safe"] is True and ev["daemon_running"] is False
    assert f[0].severity.label == "crit"  # osd.1 is still in


def test_osd_data_unmounted_without_a_matching_device() -> None:
    # another cluster's device (different ceph_fsid) must not be taken for osd.1
    hosts = {"node2": facts_of("osd1-unmounted-node2")}
    other = dataclasses.replace(
        hosts["node2"], identities=tuple(dataclasses.replace(i, ceph_fsid="0" * 8)
                                         for i in hosts["node2"].identities))
    f = mount_findings(snap("osd1-unmounted", {"node2": other}))
    assert len(f) == 1 and f[0].code == "OSD_DATA_UNMOUNTED"
    assert f[0].evidence["device"] == "no matching device found"
    assert f[0].evidence["other_candidates"][0]["ceph_fsid"] == "0" * 8


def test_osd_daemon_stopped_with_data_mounted() -> None:
    hosts = {"node3": facts_of("osd2-stopped-node3")}
    f = mount_findings(snap("osd2-stopped", hosts))
    assert [(x.code, x.entity, x.runbook, x.target) for x in f] == [
        ("OSD_DAEMON_STOPPED", "osd.2", "osd-start", "osd.2")]
    assert f[0].evidence["device"].startswith("/dev/loop")


def _kmsg(extra: list[str]):
    def edit(text: str) -> str:
        return text.replace("@@kmsg\n", "@@kmsg\n" + "".join(x + "\n" for x in extra), 1)
    return edit


def _loop_of(facts: HostFacts, image: str) -> str:
    return next(b.path for b in facts.block_devices if b.backing_file
                and b.backing_file.endswith(image)).rsplit("/", 1)[-1]


def test_io_errors_on_the_unmounted_osd_device_make_remount_unsafe() -> None:
    plain = facts_of("osd1-unmounted-node2")
    dev = plain.identities[0].device.rsplit("/", 1)[-1]
    meta = load_meta("osd1-unmounted-node2")
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(meta["captured_at"] - 120))
    lines = [f"{when},000001+00:00 I/O error, dev {dev}, sector 4096 op 0x0:(READ) flags 0x0",
             f"{when},000002+00:00 Buffer I/O error on dev {dev}, logical block 512"]
    f2 = facts_of("osd1-unmounted-node2", _kmsg(lines), window_s=86400 * 365 * 100)
    f = mount_findings(snap("osd1-unmounted", {"node2": f2}), now=meta["captured_at"])
    by = {x.code: x for x in f}
    assert by["OSD_DATA_UNMOUNTED"].evidence["remount_safe"] is False
    io = by["OSD_DEVICE_IO_ERRORS"]
    assert io.entity == "osd.1" and io.evidence["count"] == 2 and io.runbook is None
    # outside the configured window they no longer count
    later = meta["captured_at"] + 7200
    f3 = mount_findings(snap("osd1-unmounted", {"node2": f2}),
                        Thresholds(io_error_window_s=3600), now=later)
    assert {x.code for x in f3} == {"OSD_DATA_UNMOUNTED"}


def test_io_errors_of_another_device_are_ignored() -> None:
    meta = load_meta("healthy-node1")
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(meta["captured_at"] - 60))
    f1 = facts_of("healthy-node1", _kmsg([f"{when},1+00:00 I/O error, dev sdz, sector 8"]))
    assert f1.io_errors == ()
    f = mount_findings(snap("healthy", {"node1": f1}), now=meta["captured_at"])
    assert f == []


def test_osd_fstab_line_commented_out() -> None:
    def comment_osd(text: str) -> str:
        return text.replace(f"\n{LAB}/images/osd-0.xfs", f"\n#{LAB}/images/osd-0.xfs")
    f1 = facts_of("healthy-node1", comment_osd)
    f = mount_findings(snap("healthy", {"node1": f1}))
    assert [(x.code, x.entity) for x in f] == [("OSD_FSTAB_DISABLED", "osd.0")]
    assert f[0].evidence["fstab_line"].startswith("#")


def test_swift_device_unmounted_host_and_recon_agree(tmp_path: Path) -> None:
    sw = swift_state("d2-unmounted", tmp_path)
    f2 = facts_of("swift-d2-unmounted-node2")
    f = mount_findings(snap("swift-d2-unmounted", {"node2": f2}, sw))
    assert [(x.code, x.entity, x.target, x.runbook) for x in f] == [
        ("SWIFT_DEVICE_UNMOUNTED", "d2@node2", "d2@node2",
         "swift-device-remount")]
    ev = f[0].evidence
    assert ev["dir_exists"] is True and ev["remount_safe"] is True
    assert ev["unmounted_device"] == "/dev/" + _loop_of(f2, "swift-d2.xfs")
    assert len(ev["recon_unmounted_on"]) == 3


def test_swift_device_without_dir_and_commented_fstab(tmp_path: Path) -> None:
    """A ring device d9 on node2 with no directory (recon never lists it), and d2's fstab
    line commented out (as swift-drive-audit does) while d2 is still mounted."""
    sw = swift_state("healthy", tmp_path)
    obj = sw.ring("object")
    assert obj is not None
    d9 = RingDevice(id=9, region=1, zone=2, ip="127.0.0.3", port=17413, device="d9",
                    weight=100.0, parts=100)
    sw = dataclasses.replace(sw, rings=tuple(
        dataclasses.replace(r, devices=r.devices + (d9,)) if r.kind == "object" else r
        for r in sw.rings))
    f2 = facts_of("nodir-commented-node2")
    f = mount_findings(snap("healthy", {"node2": f2}, sw))
    assert sorted((x.code, x.entity, x.target) for x in f) == [
        ("SWIFT_DEVICE_NO_DIR", "d9@node2", "d9@node2"),
        ("SWIFT_FSTAB_DISABLED", "d2@node2", "d2@node2")]


def test_swift_io_errors(tmp_path: Path) -> None:
    sw = swift_state("d2-unmounted", tmp_path)
    plain = facts_of("swift-d2-unmounted-node2")
    dev = _loop_of(plain, "swift-d2.xfs")
    meta = load_meta("swift-d2-unmounted-node2")
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(meta["captured_at"] - 30))
    f2 = facts_of("swift-d2-unmounted-node2",
                  _kmsg([(f"{when},5+00:00 XFS ({dev}): metadata I/O error in "
                          "\"xfs_trans_read_buf_map\" at daddr 0x2 len 1 error 5")]))
    f = mount_findings(snap("swift-d2-unmounted", {"node2": f2}, sw), now=meta["captured_at"])
    by = {x.code: x for x in f}
    assert by["SWIFT_DEVICE_UNMOUNTED"].evidence["remount_safe"] is False
    assert by["SWIFT_DEVICE_IO_ERRORS"].target == "d2@node2"


def test_unreachable_host_gives_no_mount_findings_for_it() -> None:
    down = HostFacts(name="node2", address="127.0.0.3", error="Connection refused")
    rep = run_checks(snap("osd1-unmounted", {"node2": down}))
    assert [(x.code, x.entity) for x in rep.findings if x.code in MOUNT_CODES
            | {"HOST_UNREACHABLE"}] == [("HOST_UNREACHABLE", "host node2")]
    assert any(x.code == "OSD_DOWN_IN" for x in rep.findings)  # Ceph checks still ran
