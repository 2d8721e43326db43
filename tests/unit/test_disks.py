"""Filesystems and disks (checks/disks.py, storage/hostfacts/disks.py): the facts script's
disk sections parsed from outputs captured on this machine (a remount read-only, an
``xfs_io -x -c shutdown``, smartctl on a virtio disk), one incident per physical device,
Ceph's failing-disk codes explained. ``smartctl-ata-failing.json`` is built in smartctl
7.3's JSON shape (no failing disk exists here); every other input is a real capture."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from checks.ceph_codes import ceph_health_finding
from checks.disks import check_disks, disks_of
from checks.incidents import correlate
from checks.model import CheckContext, Finding, Severity
from storage.hostfacts.disks import parse_fsprobe, parse_smart, parse_xfs_events
from storage.hostfacts.parse import parse_io_errors
from storage.hostfacts.scripts import FACTS_SCRIPT
from storage.model import (
    CephState,
    ClusterSnapshot,
    HealthCheck,
    HostFacts,
    Mount,
    OsdDataDir,
)
from tests.unit.test_hosts_facts import ceph_state, facts_of

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
NOW = 1_795_742_600.0
# what this kernel printed for ``xfs_io -x -c shutdown`` on a loop-mounted XFS
SHUTDOWN_LINES = [
    "2026-11-27T01:21:06,699120+00:00 XFS (sdb2): Mounting V5 Filesystem 46b8e6b8-9510",
    "2026-11-27T01:21:06,709133+00:00 XFS (sdb2): Ending clean mount",
    "2026-11-27T01:21:06,745771+00:00 XFS (sdb2): User initiated shutdown received.",
    "2026-11-27T01:21:06,746117+00:00 XFS (sdb2): Log I/O Error (0x6) detected at "
    "xfs_fs_goingdown+0x63/0xb0 (fs/xfs/xfs_fsops.c:475).  Shutting down filesystem.",
    "2026-11-27T01:21:06,746813+00:00 XFS (sdb2): Please unmount the filesystem and "
    "rectify the problem(s)",
]
RO = ["mount /dev/sdb2 xfs ro,relatime,inode64,logbufs=8,logbsize=32k,noquota",
      "write fail mktemp: failed to create file via template "
      "'/srv/node/d2/.stordoc-probe.XXXXXX': Read-only file system",
      "df 268435456 249491456 163835"]
SHUT = ["mount /dev/sdb2 xfs rw,relatime,inode64,logbufs=8,logbsize=32k,noquota",
        "write fail mktemp: failed to create file via template "
        "'/srv/node/d2/.stordoc-probe.XXXXXX': Input/output error",
        "df df: /srv/node/d2: Input/output error"]


def test_fsprobe_sections_read_ro_and_the_write_error() -> None:
    p = parse_fsprobe("swift", "d2", "/srv/node/d2", RO)
    assert (p.mounted, p.source, p.fstype, p.readonly) == (True, "/dev/sdb2", "xfs", True)
    assert p.write_ok is False and p.write_error == "Read-only file system"
    assert (p.size, p.avail, p.inodes_free) == (268435456, 249491456, 163835)
    s = parse_fsprobe("swift", "d2", "/srv/node/d2", SHUT)
    assert s.readonly is False and s.write_error == "Input/output error"
    assert s.size is None and s.df_error == "Input/output error"
    assert parse_fsprobe("osd", "1", "/x", ["mounted 0"]).mounted is False


def test_xfs_events_keep_the_order_mount_then_shutdown() -> None:
    ev = parse_xfs_events(SHUTDOWN_LINES)
    assert [e.kind for e in ev] == ["mount", "shutdown", "shutdown"]
    assert {e.device for e in ev} == {"sdb2"} and ev[1].when is not None
    # "Log I/O Error" is not a kernel I/O error line of the device (capital E)
    assert parse_io_errors(SHUTDOWN_LINES, NOW, 1e9) == ()


def test_smart_unknown_is_unknown_and_failing_is_failing() -> None:
    vda = parse_smart("/dev/vda", (FIX / "smartctl-vda-no-smart.json").read_text()
                      .splitlines())
    assert vda.available is False and "Unable to detect device type" in vda.reason
    assert parse_smart("/dev/loop3", ["virtual"]).available is False
    assert parse_smart("/dev/sdb", ["no smartctl"]).reason.startswith("smartctl is not")
    bad = parse_smart("/dev/sdb", (FIX / "smartctl-ata-failing.json").read_text()
                      .splitlines())
    assert bad.available and bad.passed is False and bad.exit_status == 8
    assert bad.attributes == {"Reallocated_Sector_Ct": 2984, "Current_Pending_Sector": 18,
                              "Offline_Uncorrectable": 0}


def _sdb_host(probe_d2: list[str], kmsg: tuple[str, ...] = (), smart: str = "virtual",
              kernel: list[str] = SHUTDOWN_LINES) -> HostFacts:
    """node2 with one disk, /dev/sdb: osd.1's data dir on sdb1 and Swift d2 on sdb2."""
    from storage.model import IoError

    osd = parse_fsprobe("osd", "1", "/var/lib/ceph/osd/ceph-1",
                        ["mount /dev/sdb1 xfs rw,noatime", "write ok", "df 10 5 5"])
    d2 = parse_fsprobe("swift", "d2", "/srv/node/d2", probe_d2)
    smart_lines = (FIX / smart).read_text().splitlines() if smart.endswith(".json") \
        else [smart]
    return HostFacts(
        name="node2", address="127.0.0.3",
        mounts=(Mount("/dev/sdb1", "/var/lib/ceph/osd/ceph-1", "xfs", "rw"),
                Mount("/dev/sdb2", "/srv/node/d2", "xfs", "rw")),
        osd_data={1: OsdDataDir(1, "/var/lib/ceph/osd/ceph-1", True, True)},
        io_errors=tuple(IoError("sdb", ln, NOW - 60) for ln in kmsg),
        fs_probes=(osd, d2), xfs_events=parse_xfs_events(kernel),
        smart={"/dev/sdb": parse_smart("/dev/sdb", smart_lines)}, disks_collected=True)


def _ceph(health: tuple[HealthCheck, ...] = ()) -> CephState:
    """The captured lab state (osd.1 lives on node2) with these health checks."""
    st = dataclasses.replace(ceph_state("healthy"), health_checks=health)
    assert next(o for o in st.osds if o.id == 1).host == "node2"
    return st


def _snap(*facts: HostFacts, health: tuple[HealthCheck, ...] = ()) -> ClusterSnapshot:
    ceph = _ceph(health) if health else None
    return ClusterSnapshot(cluster="lab", taken_at=NOW, ceph=ceph, swift=None,
                           hosts={f.name: f for f in facts}, host_facts_collected=True)


def _disk_findings(h: HostFacts) -> dict[str, Finding]:
    return {f.code: f for f in check_disks(_snap(h), CheckContext(now=NOW))}


def test_one_disk_names_every_osd_and_swift_device_on_it() -> None:
    h = _sdb_host(SHUT)
    (disk,) = disks_of(h).values()
    assert (disk.device, disk.osds, disk.swift) == ("/dev/sdb", {1}, {"d2"})
    f = _disk_findings(h)["FS_SHUTDOWN"]
    assert f.entity == "disk /dev/sdb@node2" and f.severity == Severity.CRIT
    assert f.evidence["osds"] == [1] and f.evidence["swift_devices"] == ["d2"]
    assert "Swift device d2" in f.message and "Input/output error" in f.message
    assert "SMART: unknown" in f.message  # a loop/virtual disk is not called healthy
    assert f.since is not None and f.since < NOW  # when the kernel said it
    assert "osd-replace-disk / swift-replace-drive" in f.evidence["manual"]


def test_readonly_and_a_shutdown_that_was_remounted_since() -> None:
    ro = _disk_findings(_sdb_host(RO, kernel=SHUTDOWN_LINES[:2]))
    assert set(ro) == {"FS_READONLY"}
    f = ro["FS_READONLY"]
    assert "mount -o remount,rw /srv/node/d2" in f.evidence["manual"]
    assert "Swift device d2 on node2 (/dev/sdb2) is mounted read-only" in f.message
    # a later mount of the same device clears an older shutdown line
    h = _sdb_host(SHUT)
    later = (*h.xfs_events, *parse_xfs_events(
        ["2026-11-27T01:30:00,000000+00:00 XFS (sdb2): Mounting V5 Filesystem 46b8e6b8"]))
    got = _disk_findings(dataclasses.replace(h, xfs_events=later))
    assert "FS_SHUTDOWN" not in got and set(got) == {"FS_WRITE_FAILED"}


def test_healthy_probes_and_old_facts_give_nothing() -> None:
    ok = ["mount /dev/sdb2 xfs rw,relatime", "write ok", "df 10 5 5"]
    h = dataclasses.replace(_sdb_host(ok), xfs_events=())
    assert _disk_findings(h) == {}
    old = facts_of("healthy-node1")  # captured before the disk sections existed
    assert old.disks_collected is False and _disk_findings(old) == {}


def test_failing_smart_and_io_errors_are_one_incident_with_cephs_disk_codes() -> None:
    kmsg = ("2026-11-27T01:20:00+00:00 blk_update_request: I/O error, dev sdb, sector "
            "2048 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",)
    h = _sdb_host(SHUT, kmsg, smart="smartctl-ata-failing.json")
    health = (HealthCheck("DEVICE_HEALTH", "HEALTH_WARN", "1 device(s) expected to fail soon",
                          ("WDC_WD30-WCC7K6XP1R5D (node2:sdb); daemons osd.1; life "
                           "expectancy between 2026-11-28 and 2026-12-05",)),
              HealthCheck("OSD_TOO_MANY_REPAIRS", "HEALTH_WARN",
                          "Too many repaired reads on 1 OSDs", ("osd.1 had 13 reads repaired",)))
    s = _snap(h, health=health)
    ctx = CheckContext(now=NOW)
    disk = list(check_disks(s, ctx))
    assert {f.code for f in disk} == {"FS_SHUTDOWN", "DEVICE_IO_ERRORS", "DEVICE_FAILING"}
    failing = next(f for f in disk if f.code == "DEVICE_FAILING")
    assert failing.severity == Severity.CRIT and "SMART: FAILED" in failing.message
    assert "Reallocated_Sector_Ct 2984" in failing.message
    assert "`ceph osd out 1` and weight 0 for d2 in the rings" in failing.evidence["manual"]
    ioe = next(f for f in disk if f.code == "DEVICE_IO_ERRORS")
    assert ioe.evidence["count"] == 1 and "dev sdb, sector 2048" in ioe.message
    assert s.ceph is not None
    ceph = [ceph_health_finding(hc, s.ceph, ctx) for hc in health]
    others = [Finding("OSD_DEVICE_IO_ERRORS", Severity.CRIT, "osd.1", "errors"),
              Finding("SWIFT_DEVICE_IO_ERRORS", Severity.CRIT, "d2@node2", "errors",
                      {"ip": "127.0.0.3", "device": "d2"}),
              Finding("SWIFT_DEVICE_UNMOUNTED", Severity.CRIT, "d1@node1", "other disk",
                      {"ip": "127.0.0.2", "device": "d1"})]
    incs = correlate([*disk, *ceph, *others], s)
    top = incs[0]
    assert (top.root.code, top.root.entity) == ("FS_SHUTDOWN", "disk /dev/sdb@node2")
    assert {f.key for f in top.consequences} == {
        ("DEVICE_IO_ERRORS", "disk /dev/sdb@node2"), ("DEVICE_FAILING", "disk /dev/sdb@node2"),
        ("CEPH_HEALTH", "ceph DEVICE_HEALTH"), ("CEPH_HEALTH", "ceph OSD_TOO_MANY_REPAIRS"),
        ("OSD_DEVICE_IO_ERRORS", "osd.1"), ("SWIFT_DEVICE_IO_ERRORS", "d2@node2")}
    assert [i.root.entity for i in incs[1:]] == ["d1@node1"]  # another disk: its own


def test_cephs_failing_disk_codes_are_explained_not_bare() -> None:
    st = _ceph()
    ctx = CheckContext(now=NOW)
    cases = {
        "DEVICE_HEALTH": ("dev1 (node2:sdb); daemons osd.1; life expectancy ...",
                          "`ceph osd out 1`"),
        "DEVICE_HEALTH_IN_USE": ("dev1 (node2:sdb); daemons osd.1", "osd-replace-disk"),
        "DEVICE_HEALTH_TOOMANY": ("dev1 (node2:sdb); daemons osd.1", "add capacity"),
        "OSD_TOO_MANY_REPAIRS": ("osd.1 had 13 reads repaired", "until the OSD restarts"),
        "BLUESTORE_SPURIOUS_READ_ERRORS": ("osd.1  reads with retries: 4", "SMART"),
        "BLUESTORE_SLOW_OP_ALERT": ("osd.1 observed slow operation indications in BlueStore",
                                    "dump_historic_slow_ops"),
    }
    for code, (detail, advice) in cases.items():
        f = ceph_health_finding(HealthCheck(code, "HEALTH_WARN", "summary", (detail,)), st,
                                ctx)
        assert f.evidence["osds"] == [1] and f.evidence["hosts"] == {"osd.1": "node2"}, code
        assert "osd.1 (node2)" in f.message, (code, f.message)
        assert advice in f.evidence["manual"], (code, f.evidence["manual"])


@pytest.mark.skipif(not os.path.ismount("/dev/shm") or os.geteuid() != 0,
                    reason="needs a writable tmpfs mount point")
def test_the_write_probe_touches_nothing_it_did_not_create(tmp_path: Path) -> None:
    """The real facts script against /dev/shm (a mount point): the probe writes, removes
    its own file and leaves every other file, even one named like its own, alone."""
    decoy = Path("/dev/shm/.stordoc-probe.XXXXXX")
    decoy.write_text("not stordoc's")
    before = sorted(os.listdir("/dev/shm"))
    fstab = tmp_path / "fstab"
    fstab.write_text("")
    try:
        out = subprocess.run(["sh", "-c", FACTS_SCRIPT, "stordoc-facts", str(fstab),
                              "swift", "shm", "/dev/shm"], capture_output=True, text=True,
                             timeout=120, check=True).stdout
        assert sorted(os.listdir("/dev/shm")) == before
        assert decoy.read_text() == "not stordoc's"
    finally:
        decoy.unlink(missing_ok=True)
    sec = out.split("@@fsprobe swift shm\n", 1)[1].split("@@", 1)[0].splitlines()
    p = parse_fsprobe("swift", "shm", "/dev/shm", sec)
    assert p.mounted and p.fstype == "tmpfs" and p.write_ok is True and p.size
    assert json.dumps(p.write_error) == "null" and time.time() > 0
