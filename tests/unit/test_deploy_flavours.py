"""ceph-volume lvm, cephadm and systemd on their real output formats (LVM and cephadm cannot
run here: no device-mapper, no container images): the same facts parser, diagnosis, checks
and runbook plans (DryRunRecorder) as the live raw and XFS OSDs. See
tests/fixtures/deploy/README.md for where each fixture comes from."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest

from checks.engine import run_checks
from checks.hostdiag import Flavour, OsdHostState, diagnose_osd
from runbooks.api import (
    Refused,
    RunContext,
    _run_step,  # the executor's own step runner
    plan_from_snapshot,
)
from runbooks.model import StepEnv
from storage.deploy import (
    parse_cephadm_ls,
    parse_lvm_list,
    parse_lvs,
    parse_raw_list,
    parse_systemd,
)
from storage.hostfacts import HostPlan, collect_one, split_sections
from storage.journal import Journal
from storage.model import ClusterSnapshot, HostFacts
from storage.runner import DryRunRecorder
from storage.targets import CephTarget, ClusterTarget, HostTarget
from tests.unit.test_runbook_plan import FIX, Replay, pacific

D = FIX / "deploy"
FSID = "2096a079-ea45-448b-9fd3-040513b87387"
LVM4_FSID = "7c3b8e8a-3cf0-4b3b-9a37-0e7a5c6b5a14"


def test_raw_list_captured_live() -> None:
    ids = parse_raw_list((D / "ceph-volume-raw-list.json").read_text())
    assert len(ids) == 16  # every lab's BlueStore device on this machine
    mine = [i for i in ids.values() if i.ceph_fsid == FSID]
    assert sorted(i.whoami for i in mine if i.whoami is not None) == [0, 1, 2, 3]
    assert all(i.kind == "bluestore" and i.osd_fsid for i in mine)


def test_lvm_list_and_lvs_agree() -> None:
    a = parse_lvm_list((D / "ceph-volume-lvm-list.json").read_text())
    b = parse_lvs((D / "lvs.json").read_text())
    key = [(v.lv_path, v.osd_id, v.osd_fsid, v.cluster_fsid, v.type) for v in a]
    assert sorted(key) == sorted((v.lv_path, v.osd_id, v.osd_fsid, v.cluster_fsid, v.type)
                                 for v in b)  # vg0/root has no ceph tags: not listed
    osd5 = next(v for v in b if v.osd_id == 5)
    assert osd5.active is False and osd5.devices == ("/dev/sdd",)
    assert next(v for v in a if v.type == "db").devices == ("/dev/nvme0n1",)
    assert parse_lvs("") == () and parse_lvs("not json") == () and parse_lvm_list("[]") == ()


def test_systemd_and_cephadm_units() -> None:
    sec = split_sections((D / "systemd.txt").read_text())
    journals = {k[8:]: v for k, v in sec.items() if k.startswith("journal ")}
    units = {u.unit: u for u in parse_systemd(sec["systemd"], journals)}
    vol = units[f"ceph-volume@lvm-4-{LVM4_FSID}.service"]
    assert (vol.osd_id, vol.active_state, vol.result) == (4, "failed", "exit-code")
    assert "failed to read label" in " ".join(vol.log_tail)
    assert units[f"ceph-{FSID}@osd.6.service"].osd_id == 6
    assert units["ceph-osd@5.service"].log_tail == ()  # not failed: no journal asked
    ls = {u.osd_id: u for u in parse_cephadm_ls((D / "cephadm-ls.json").read_text())}
    assert set(ls) == {6, 7}  # crash.node5 is not an OSD
    assert (ls[6].active_state, ls[6].unit) == ("failed", f"ceph-{FSID}@osd.6")
    assert ls[7].active_state == "active"


# --------------------------------------------------------------------------- one host


def _facts_text() -> str:
    """node5's facts script output: osd.4/osd.5 lvm (tmpfs gone after a reboot), osd.6
    cephadm (data dir in place, unit failed); the LV and systemd sections are the fixtures."""
    lvs = (D / "lvs.json").read_text()
    systemd = (D / "systemd.txt").read_text().replace("@@end\n", "")
    return "\n".join([
        "@@now", "1795458000", "@@findmnt", json.dumps({"filesystems": [
            {"source": "/dev/sda1", "target": "/", "fstype": "ext4", "options": "rw"}]}),
        "@@lsblk", json.dumps({"blockdevices": []}), "@@losetup", "", "@@fstab", "",
        "@@kmsg", "@@ps", "@@swiftps", "@@listen", "unknown",
        "@@lvs", lvs, systemd.rstrip("\n"),
        "@@osd 4", "dir 1", "whoami 0",
        "@@osd 5", "dir 1", "whoami 0",
        "@@osd 6", "dir 1", "whoami 1", "block /dev/ceph-x/osd-block-6",
        "@@end", ""])


def _host() -> HostTarget:
    return HostTarget(name="node5", address="127.0.0.6",
                      osd_data_dir="/var/lib/ceph/osd/{cluster}-{id}")


def _snap() -> tuple[ClusterSnapshot, HostFacts]:
    base = pacific("osd1-down-in").ceph
    assert base is not None
    tmpl = base.osds[0]
    uuids = {4: LVM4_FSID, 5: "e0b2c6f1-95a4-4d0e-8f7e-2b6f0c1d9a37",
             6: "5f0c1d9a-37e0-4b2c-86f1-95a44d0e8f7e"}
    osds = tuple(dataclasses.replace(tmpl, id=i, uuid=u, up=False, in_=True, host="node5",
                                     up_from=10, state=("exists",)) for i, u in uuids.items())
    ceph = dataclasses.replace(base, fsid=FSID, osds=base.osds + osds)
    dirs = ((4, "/var/lib/ceph/osd/ceph-4", None), (5, "/var/lib/ceph/osd/ceph-5", None),
            (6, f"/var/lib/ceph/{FSID}/osd.6", None))
    facts = collect_one(HostPlan(_host(), dirs), Replay(_facts_text(), ""), window_s=1e12)
    return ClusterSnapshot("lab", 1795458000.0, ceph=ceph, hosts={"node5": facts},
                           host_facts_collected=True), facts


def _ctx(tmp_path: Path) -> RunContext:
    target = ClusterTarget("lab", ceph=CephTarget("/etc/ceph/ceph.conf"), hosts=(_host(),))
    return RunContext("lab", target, Journal(tmp_path / "journal.db"), user="tester")


def test_facts_carry_lv_tags_and_units() -> None:
    _, f = _snap()
    assert {(v.osd_id, v.type, v.active) for v in f.lvm_volumes} == {
        (4, "block", True), (4, "db", True), (5, "block", False)}
    assert {u.unit for u in f.units if u.active_state == "failed"} == {
        "ceph-osd@4.service", f"ceph-volume@lvm-4-{LVM4_FSID}.service",
        f"ceph-{FSID}@osd.6.service"}


def test_lvm_osd_not_activated_named_with_its_failed_units(tmp_path: Path) -> None:
    snap, f = _snap()
    assert snap.ceph is not None
    osd4 = snap.ceph.osd(4)
    assert osd4 is not None
    dg = diagnose_osd(f, osd4, FSID)
    assert dg is not None
    assert (dg.flavour, dg.state) == (Flavour.LVM, OsdHostState.NOT_ACTIVATED)
    rep = run_checks(snap, None)
    by = [(x.code, x.entity, x.runbook) for x in rep.findings if x.entity == "osd.4"]
    assert ("OSD_NOT_ACTIVATED", "osd.4", "osd-activate") in by
    failed = [x for x in rep.findings if x.code == "OSD_UNIT_FAILED" and x.entity == "osd.4"]
    assert {x.evidence["unit"] for x in failed} == {
        "ceph-osd@4.service", f"ceph-volume@lvm-4-{LVM4_FSID}.service"}
    vol = next(x for x in failed if x.evidence["unit"].startswith("ceph-volume@"))
    assert "RuntimeError" in vol.message  # the last log line not from systemd itself
    assert vol.runbook == "osd-activate" and len(vol.evidence["log_tail"]) == 6
    ctx = _ctx(tmp_path)
    p = plan_from_snapshot(ctx, snap, "osd-activate", "osd.4")
    cmds = [s.command for s in p.steps]
    assert f"ceph-volume --cluster ceph lvm activate --no-systemd 4 {LVM4_FSID}" in cmds
    assert "systemctl start ceph-osd@4" in cmds


def test_inactive_lv_is_named_and_not_activated_blindly(tmp_path: Path) -> None:
    snap, _ = _snap()
    rep = run_checks(snap, None)
    lv = next(x for x in rep.findings if x.code == "OSD_LV_INACTIVE")
    assert lv.entity == "osd.5" and lv.evidence["devices"] == ["/dev/sdd"]
    with pytest.raises(Refused, match="LV is not active"):
        plan_from_snapshot(_ctx(tmp_path), snap, "osd-activate", "osd.5")


def test_cephadm_osd_started_through_its_unit(tmp_path: Path) -> None:
    snap, f = _snap()
    assert snap.ceph is not None
    osd6 = snap.ceph.osd(6)
    assert osd6 is not None
    dg = diagnose_osd(f, osd6, FSID)
    assert dg is not None and dg.flavour is Flavour.CEPHADM
    rep = run_checks(snap, None)
    codes = {x.code: x for x in rep.findings if x.entity == "osd.6"}
    assert codes["OSD_DAEMON_STOPPED"].evidence["flavour"] == "cephadm"
    assert "statfs" in codes["OSD_UNIT_FAILED"].message
    p = plan_from_snapshot(_ctx(tmp_path), snap, "osd-start", "osd.6")
    assert f"systemctl start ceph-{FSID}@osd.6" in [s.command for s in p.steps]


def test_plans_run_recorded_by_the_dry_run_recorder(tmp_path: Path) -> None:
    """The lvm plan's host steps go to the Runner as argv lists (recorded, not run)."""
    snap, _ = _snap()
    ctx = _ctx(tmp_path)
    p = plan_from_snapshot(ctx, snap, "osd-activate", "osd.4")
    host_steps = [s for s in p.steps if s.where == "node5"]
    rec = DryRunRecorder()
    env = StepEnv(ctx, rec)
    for s in host_steps:
        assert _run_step(env, s, threading.Event())[0] == "done"
    assert rec.calls == [
        ("node5", ("ceph-volume", "--cluster", "ceph", "lvm", "activate", "--no-systemd",
                   "4", LVM4_FSID)),
        ("node5", ("systemctl", "start", "ceph-osd@4"))]
