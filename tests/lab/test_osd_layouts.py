"""OSD deployment layouts on the real lab, per release: the session's `mixed` lab names each
OSD's flavour (ceph-disk style XFS, ceph-volume raw) with no finding; a second lab of
another layout (raw only, on Pacific) comes up healthy beside it, and with every process
killed (a crash), `lab down` leaves nothing behind.

The tmpfs seed fault (osd-not-activated) is broken for real and repaired by its `next:`
line on both releases in test_scenarios.py; its diagnosis, plan and the TUI/Slack views
are replayed from snapshots in tests/unit/test_replay*.py."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from checks.hostdiag import Flavour, osd_diagnoses
from core.env import Env
from core.service import Service
from core.service.inspect import RecordPolicy
from core.settings import load_settings
from lab import Lab
from tests.support.poll import wait_until

HOST_CODES = {"OSD_DATA_UNMOUNTED", "OSD_NOT_ACTIVATED", "OSD_DAEMON_STOPPED",
              "OSD_DEVICE_IO_ERRORS", "OSD_FSTAB_DISABLED", "OSD_LABEL_FOREIGN",
              "OSD_UNIT_FAILED", "OSD_LV_INACTIVE"}
# the second lab's layout per release (it runs on Pacific only: raw; the mixed session
# lab holds both kinds on both releases)
OTHER_LAYOUT = {"pacific": "raw", "reef": "xfs"}


@pytest.mark.release
def test_healthy_lab_gives_no_host_finding_and_names_each_flavour(lab: Lab, env: Env) -> None:
    out = Service(env).check("lab", "test")
    bad = [f for f in out.report.findings if f.code in HOST_CODES
           or f.entity.startswith("osd.")]
    assert bad == [], [(f.code, f.message) for f in bad]
    snap = out.snapshot
    assert snap.ceph is not None
    dg = osd_diagnoses(snap.hosts, snap.ceph.osds, snap.ceph.fsid, snap.taken_at)
    want = {i: Flavour.RAW if k == "raw" else Flavour.XFS for i, k in enumerate(lab.kinds)}
    assert {i: d.flavour for i, d in dg.items()} == want
    for i, k in enumerate(lab.kinds):
        if k == "raw":
            assert "tmpfs" in dg[i].evidence[0]


# on Pacific only (its lab starts in a third of Reef's time): the session's mixed lab holds
# both OSD kinds on both releases, and this is mostly the lab tool's own proof
def test_a_second_lab_of_another_layout_side_by_side_crashed_leaves_nothing(
        lab: Lab) -> None:
    layout = OTHER_LAYOUT.get(lab.release, "raw")
    base = Path("/var/tmp") / f"stordoc-lab-{layout}-{os.getpid()}"
    other = Lab(base, int(os.environ.get("STORDOC_LAB2_PORT_BASE", "19400")), layout,
                release=lab.release)
    pids: list[int] = []
    try:
        other.up()
        assert other.kinds == (layout,) * 3
        assert other.running() and lab.running()
        e = Env(load_settings(other.config_path).model_copy(
            update={"journal": str(base / "test-journal.db")}))
        try:
            # a fresh lab may still be peering: until it has nothing to say
            last: list[object] = []

            def quiet() -> bool:
                last[:] = [(f.code, f.entity) for f in
                           Service(e).check("lab", "test", RecordPolicy.NEVER)
                           .report.findings]
                return not last
            wait_until(quiet, 180, f"no finding on the fresh {layout} lab ({last})", 2.0)
        finally:
            e.close()
        # the lab dies: every process killed, mounts and loop devices stay; `lab down`
        # (below) cleans up after it (a second `lab up` over the remains is no longer
        # tried here: 40-70 s of CI's budget for the lab tool's own proof)
        pids = [p for p in other.status()["processes"].values() if p]
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not any(other.status()["processes"].values()), 60, "every process gone",
             0.3)
        assert other.mounts.under_base() and other.loop_devices()
        # XFS OSDs: data image + block; raw OSDs: block only; 4 Swift devices
        assert len(other.loop_devices()) == \
            sum(2 if k == "xfs" else 1 for k in other.kinds) + 4
        assert "raw" not in other.kinds or other.bootstrap_keyring.exists()
    finally:
        other.down(quiet=True)
    assert not base.exists()
    assert other.loop_devices() == {}
    mounts = Path("/proc/mounts").read_text()
    assert str(base) not in mounts
    # ceph-volume's fixed paths of this lab (its own cluster name) are gone too
    assert f"/var/lib/ceph/osd/{other.cv_cluster}-" not in mounts
    assert not list(Path("/var/lib/ceph/osd").glob(f"{other.cv_cluster}-*"))
    assert not other.bootstrap_keyring.exists()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert lab.running()  # the session's lab was not touched
