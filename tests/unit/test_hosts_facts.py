"""Host facts from real captured outputs of the facts/identity scripts (lab, over SSH).

The fixtures in tests/fixtures/hosts/ are the stdout of ``FACTS_SCRIPT`` / ``IDENTITY_SCRIPT``
as run on the lab's node1..node3, with the plan (OSDs, Swift dirs) they were run with.
``ReplayRunner`` hands those outputs back and records every argv it was asked to run.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage.ceph import build_state, load_raw_dir
from storage.hostfacts import (
    FACTS_SCRIPT,
    IDENTITY_SCRIPT,
    HostPlan,
    collect_host_facts,
    collect_one,
    facts_argv,
    identity_argv,
    parse_fstab,
    parse_io_errors,
    parse_ps_osds,
    plan_for,
    split_sections,
)
from storage.model import CephState, HostFacts
from storage.runner import CommandResult, HostUnreachable
from storage.ssh import FabricRunner
from storage.targets import ClusterTarget, HostTarget

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
LAB = "/var/tmp/sd-lab-hosts"


def load_meta(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def host_target(meta: dict) -> HostTarget:
    return HostTarget(name=meta["host"], address=meta["address"], port=17415,
                      osd_data_dir=f"{LAB}/ceph/osd/ceph-{{id}}",
                      osd_pid_file=f"{LAB}/ceph/run/ceph-osd.{{id}}.pid",
                      swift_devices_dir=f"{LAB}/swift/node", fstab_path=meta["fstab_path"])


def plan_of(meta: dict) -> HostPlan:
    return HostPlan(host_target(meta),
                    tuple((int(o[0]), o[1], o[2]) for o in meta["osds"]),
                    tuple((s[0], s[1]) for s in meta["swift"]))


def ceph_state(name: str) -> CephState:
    return build_state(load_raw_dir(str(FIX / f"{name}-ceph")))


@dataclass
class ReplayRunner:
    """Returns captured outputs per host; ``edit`` may rewrite a facts output first."""

    outputs: dict[str, dict[str, str]]  # host -> {"facts": text, "identity": text}
    down: set[str] = field(default_factory=set)
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        self.calls.append((host, tuple(argv)))
        if host in self.down:
            raise HostUnreachable(host, "Connection refused")
        kind = "identity" if "stordoc-unshare" in argv else "facts"
        out = self.outputs.get(host, {}).get(kind, "")
        return CommandResult(host, tuple(argv), 0, out, "", 0.01)

    def close(self) -> None:
        pass


def captured(name: str, edit=None) -> tuple[HostPlan, ReplayRunner]:
    meta = load_meta(name)
    facts = (FIX / f"{name}.facts.txt").read_text()
    if edit is not None:
        facts = edit(facts)
    ident_p = FIX / f"{name}.identity.txt"
    outs = {"facts": facts, "identity": ident_p.read_text() if ident_p.exists() else ""}
    return plan_of(meta), ReplayRunner({meta["host"]: outs})


def facts_of(name: str, edit=None, window_s: float = 1e12) -> HostFacts:
    plan, runner = captured(name, edit)
    return collect_one(plan, runner, window_s)


# ------------------------------------------------------------------ the healthy host


def test_healthy_node1_facts_are_filtered_to_its_own_osd_and_devices() -> None:
    f = facts_of("healthy-node1")
    assert f.reachable
    targets = {m.target for m in f.mounts}
    # node1 holds osd.0 and Swift d1, d4; the other labs' and nodes' mounts are dropped
    assert targets == {f"{LAB}/ceph/osd/ceph-0", f"{LAB}/swift/node/d1",
                       f"{LAB}/swift/node/d4"}
    assert all(m.fstype == "xfs" for m in f.mounts)
    assert [(d.kind, d.ident, d.running) for d in f.daemons] == [("ceph-osd", "0", True)]
    d0 = f.osd_data[0]
    assert (d0.path, d0.exists, d0.has_whoami) == (f"{LAB}/ceph/osd/ceph-0", True, True)
    assert d0.block is not None and d0.block.startswith("/dev/loop")
    assert f.osd_dirs == {0: f"{LAB}/ceph/osd/ceph-0"}
    assert set(f.swift_dirs) == {"d1", "d4"}
    assert all(d.exists for d in f.swift_devices.values())
    assert f.identities == ()
    # loop devices carry their backing image (the lab's "disks")
    backing = {b.backing_file for b in f.block_devices}
    assert f"{LAB}/images/swift-d1.xfs" in backing and f"{LAB}/images/osd-0.xfs" in backing
    assert [fl.commented for fl in f.fstab] == [False, False, False]


def test_healthy_host_costs_exactly_one_round_trip() -> None:
    plan, runner = captured("healthy-node2")
    collect_one(plan, runner)
    assert len(runner.calls) == 1
    _host, argv = runner.calls[0]
    assert argv[:3] == ("sh", "-c", FACTS_SCRIPT)


# ------------------------------------------------------------------ unmounted OSD


def test_unmounted_osd_device_is_identified_by_whoami_and_fsid() -> None:
    meta = load_meta("osd1-unmounted-node2")
    plan, runner = captured("osd1-unmounted-node2")
    f = collect_one(plan, runner)
    assert f.mount_at(f"{LAB}/ceph/osd/ceph-1") is None
    d1 = f.osd_data[1]
    assert d1.exists is True  # the empty mount point is there
    assert d1.has_whoami is False and d1.block is None
    assert len(f.identities) == 1
    ident = f.identities[0]
    assert ident.whoami == 1 and ident.ceph_fsid == meta["cluster_fsid"]
    assert ident.device == meta["candidates"][0]
    # second round trip only for the unmounted candidate, and its argv is that device only
    assert len(runner.calls) == 2
    argv = runner.calls[1][1]
    assert argv[-len(meta["candidates"]):] == tuple(meta["candidates"])
    assert IDENTITY_SCRIPT in argv
    assert [d.running for d in f.daemons] == [False]


def test_identity_mount_is_read_only_norecovery() -> None:
    assert "ro,norecovery,nodev,nosuid,noexec" in IDENTITY_SCRIPT
    assert "mktemp -d" in IDENTITY_SCRIPT and "umount" in IDENTITY_SCRIPT


# ------------------------------------------------------------------ the scripts' inputs


def test_argv_never_splices_paths_into_the_script() -> None:
    evil = "/srv/node/d1; rm -rf / #"
    argv = facts_argv("/etc/fstab'$(reboot)'", [(3, "/var/lib/ceph/osd/ceph-3 `x`", None)],
                      [("d1", evil)])
    assert argv[2] == FACTS_SCRIPT  # the script text is constant
    line = shlex.join(argv)  # what FabricRunner sends
    assert shlex.split(line) == argv  # and the remote shell gets exactly these arguments
    assert evil in argv
    ia = identity_argv(["/dev/sdb1; reboot"])
    assert shlex.split(shlex.join(ia))[-1] == "/dev/sdb1; reboot"


def test_split_sections_keeps_arguments() -> None:
    sec = split_sections("junk\n@@osd 3\ndir 1\n@@swift d1\ndir 0\n@@end\n")
    assert sec == {"osd 3": ["dir 1"], "swift d1": ["dir 0"], "end": []}


# ------------------------------------------------------------------ parsers


def test_parse_fstab_keeps_disabled_mount_lines_but_not_prose() -> None:
    text = (FIX / "nodir-commented-node2.fstab").read_text()
    lines = parse_fstab(text)
    assert [(fl.mountpoint.rsplit("/", 1)[-1], fl.commented) for fl in lines] == [
        ("ceph-1", False), ("d2", True)]
    assert lines[1].device.endswith("swift-d2.xfs") and lines[1].options == "loop,noatime"


def test_parse_io_errors_formats_and_window() -> None:
    now = 1_800_000_000.0
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now - 60))
    old = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now - 3 * 86400))
    lines = [
        f"{iso},123456+00:00 blk_update_request: I/O error, dev loop54, sector 2048 op 0x0:(READ)",
        f"{iso},123457+00:00 Buffer I/O error on dev sdb1, logical block 12, async page read",
        f"{iso}+0000 host kernel: XFS (sdc1): metadata I/O error in \"xfs_trans_read_buf_map\"",
        f"{old},000000+00:00 I/O error, dev sdd, sector 8",  # outside the 24 h window
        f"{iso},1+00:00 loop7: detected capacity change from 0 to 20480",
    ]
    errs = parse_io_errors(lines, now, 86400)
    assert [e.device for e in errs] == ["loop54", "sdb1", "sdc1"]
    assert all(e.when is not None and abs(e.when - (now - 60)) < 1 for e in errs)


def test_parse_ps_osds_ids_and_cluster_filter() -> None:
    lines = ["  101 /usr/bin/ceph-osd -f --cluster ceph --id 3 --setuser ceph",
             "  102 ceph-osd -c /etc/ceph/ceph.conf -i 4",
             "  103 /usr/bin/ceph-osd --cluster backup --id 5",
             "  104 sh -c grep ceph-osd -i 6",
             "  105 ceph-osd -i=7"]
    assert parse_ps_osds(lines) == {3: 101, 4: 102, 7: 105}
    assert parse_ps_osds(lines, "backup") == {5: 103}


# ------------------------------------------------------------------ many hosts


def test_collect_host_facts_parallel_and_unreachable_host_is_a_fact() -> None:
    ceph = ceph_state("healthy")
    m1, m2 = load_meta("healthy-node1"), load_meta("healthy-node2")
    target = ClusterTarget("lab", hosts=(host_target(m1), host_target(m2),
                                         HostTarget("node9", "127.0.0.9", port=1)))
    runner = ReplayRunner({
        "node1": {"facts": (FIX / "healthy-node1.facts.txt").read_text()},
        "node2": {"facts": (FIX / "healthy-node2.facts.txt").read_text()}}, down={"node9"})
    facts = collect_host_facts(target, ceph, None, runner=runner)
    assert set(facts) == {"node1", "node2", "node9"}
    assert facts["node9"].error == "Connection refused" and not facts["node9"].reachable
    assert facts["node1"].reachable and facts["node1"].osd_dirs == {0: f"{LAB}/ceph/osd/ceph-0"}
    assert facts["node2"].osd_dirs == {1: f"{LAB}/ceph/osd/ceph-1"}


def test_plan_uses_crush_host_for_osds() -> None:
    ceph = ceph_state("healthy")
    t = host_target(load_meta("healthy-node3"))
    plan = plan_for(ClusterTarget("lab", hosts=(t,)), t, ceph, None)
    assert [o[0] for o in plan.osds] == [2]
    assert plan.osds[0][2] == f"{LAB}/ceph/run/ceph-osd.2.pid"


def test_broken_output_is_an_error_not_an_exception() -> None:
    plan, runner = captured("healthy-node1", edit=lambda s: s.split("@@end")[0])
    f = collect_one(plan, runner)
    assert f.error is not None and "facts script failed" in f.error


def test_fabric_runner_refuses_unknown_host_names() -> None:
    r = FabricRunner([HostTarget("node1", "127.0.0.2")])
    with pytest.raises(HostUnreachable):
        r.run("nodeX", ["true"])
    r.close()


def test_io_errors_of_a_previous_device_under_the_same_name_are_dropped() -> None:
    """Seen in CI: a lab's loop7 got a write error at 11:00 and was detached; the next lab's
    Swift device got loop7 at 11:21 and was called failing for a day (every check of that lab
    said SWIFT_DEVICE_IO_ERRORS). The kernel's own lines, as dmesg printed them."""
    now = datetime(2026, 11, 27, 11, 26, tzinfo=UTC).timestamp()
    lines = [
        "2026-11-27T11:00:40,681475+00:00 I/O error, dev loop7, sector 0 op 0x1:(WRITE) flags "
        "0x800 phys_seg 0 prio class 2",
        "2026-11-27T11:00:41,000000+00:00 I/O error, dev loop9, sector 8 op 0x0:(READ)",
        "2026-11-27T11:10:00,000000+00:00 Buffer I/O error on dev sdb1, logical block 12",
        "2026-11-27T11:21:52,377137+00:00 loop7: detected capacity change from 0 to 655360",
        "2026-11-27T11:22:00,000000+00:00 sd 2:0:0:1: [sdb] Attached SCSI disk",
        "2026-11-27T11:23:00,000000+00:00 loop9: detected capacity change from 655360 to 0",
        "2026-11-27T11:24:00,000000+00:00 I/O error, dev sdb, sector 16 op 0x0:(READ)",
    ]
    errs = parse_io_errors(lines, now, 86400)
    # loop7's and sdb1's errors were their predecessors'; loop9 was only detached (no new
    # device yet), and the new sdb's own error counts
    assert [(e.device, e.line[11:19]) for e in errs] == [("loop9", "11:00:41"),
                                                          ("sdb", "11:24:00")]
    # the same loop7 error with no attach after it is still this device's
    assert [e.device for e in parse_io_errors(lines[:1], now, 86400)] == ["loop7"]
