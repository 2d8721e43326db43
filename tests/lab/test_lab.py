"""The lab itself, per release: up gives a healthy cluster of its layout, Swift answers
through the proxy, SSH reaches each simulated host with a checked host key. Each fault is
broken and undone for real in test_scenarios.py; a second lab beside this one, killed and
brought up again, in test_osd_layouts.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import swiftclient

from lab import SWIFT_KEY, SWIFT_USER, Lab


def ceph(lab: Lab, *args: str) -> str:
    return subprocess.run(["ceph", "-c", str(lab.conf), *args], capture_output=True,
                          text=True, check=True, timeout=60).stdout


def osd_dump(lab: Lab) -> dict:
    return json.loads(ceph(lab, "osd", "dump", "--format", "json"))


@pytest.mark.release
def test_up_gives_its_layouts_osds_up_in_one_per_host(lab: Lab) -> None:
    dump = osd_dump(lab)
    n = lab.n_osds
    assert [(o["osd"], o["up"], o["in"]) for o in dump["osds"]] == [(i, 1, 1) for i in range(n)]
    tree = json.loads(ceph(lab, "osd", "tree", "--format", "json"))
    hosts = {n["name"]: n["children"] for n in tree["nodes"] if n["type"] == "host"}
    assert sorted(hosts) == [f"node{i + 1}" for i in range(n)]
    rbd = next(p for p in dump["pools"] if p["pool_name"] == "rbd")
    assert (rbd["size"], rbd["min_size"]) == (3, 2)
    mounts = {ln.split()[1]: ln.split()[2] for ln in Path("/proc/self/mounts").read_text()
              .splitlines()}
    # each OSD's data dir is its own mount (XFS, or ceph-volume's tmpfs for raw OSDs),
    # holding whoami and a block symlink
    for i, kind in enumerate(lab.kinds):
        d = lab.osd_dir(i)
        assert os.path.ismount(d)
        assert mounts[str(d)] == ("tmpfs" if kind == "raw" else "xfs")
        assert (d / "whoami").read_text().strip() == str(i)
        assert (d / "block").is_symlink() and os.readlink(d / "block").startswith("/dev/loop")
        if kind == "raw":  # the label ceph-volume wrote names this OSD of this cluster
            label = json.loads(subprocess.run(
                ["ceph-bluestore-tool", "show-label", "--dev", os.readlink(d / "block")],
                capture_output=True, text=True, check=True, timeout=30).stdout)
            (meta,) = label.values()
            assert (meta["whoami"], meta["ceph_fsid"]) == (str(i), lab.fsid)
            # ceph-volume's fixed path, seen through the release's root filesystem
            root = lab.system.host_path("/var/lib/ceph/osd")
            assert str(d).startswith(f"{root}/{lab.cv_cluster}-")
            assert lab.system.daemon_path(d) == f"/var/lib/ceph/osd/{lab.cv_cluster}-{i}"
    assert json.loads(ceph(lab, "health", "--format", "json"))["status"] == "HEALTH_OK"


@pytest.mark.release
def test_swift_put_get_through_the_proxy(lab: Lab) -> None:
    conn = swiftclient.Connection(authurl=f"http://127.0.0.1:{lab.ports.proxy}/auth/v1.0",
                                  user=SWIFT_USER, key=SWIFT_KEY, retries=1, timeout=15)
    body = os.urandom(4096)
    conn.put_container("lab-test")
    conn.put_object("lab-test", "obj", body)
    _, got = conn.get_object("lab-test", "obj")
    assert got == body
    conn.delete_object("lab-test", "obj")
    conn.delete_container("lab-test")


@pytest.mark.release
def test_ssh_reaches_each_host_with_checked_host_key(lab: Lab) -> None:
    for addr in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
        out = subprocess.run(
            ["ssh", "-p", str(lab.ports.sshd), "-i", str(lab.ssh_dir / "client_ed25519"),
             "-o", f"UserKnownHostsFile={lab.ssh_dir / 'known_hosts'}",
             "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
             f"root@{addr}", "echo", "ok"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "ok"


@pytest.mark.release
def test_status_reports_processes_and_health(lab: Lab) -> None:
    st = lab.status()
    assert all(st["processes"].values())
    assert st["ceph_health"] == "HEALTH_OK"
    assert st["swift_healthcheck"] is True
    assert st["osds_up_in"] == (lab.n_osds, lab.n_osds)
