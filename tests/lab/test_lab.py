"""The lab itself: up gives a healthy cluster, each fault is visible with the stock tools
and heal removes it, down leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import swiftclient

from lab import CACHE_POOL, FEW_PG_POOL, SWIFT_KEY, SWIFT_USER, Lab


def ceph(lab: Lab, *args: str) -> str:
    return subprocess.run(["ceph", "-c", str(lab.conf), *args], capture_output=True,
                          text=True, check=True, timeout=60).stdout


def osd_dump(lab: Lab) -> dict:
    return json.loads(ceph(lab, "osd", "dump", "--format", "json"))


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


def test_ssh_reaches_each_host_with_checked_host_key(lab: Lab) -> None:
    for addr in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
        out = subprocess.run(
            ["ssh", "-p", str(lab.ports.sshd), "-i", str(lab.ssh_dir / "client_ed25519"),
             "-o", f"UserKnownHostsFile={lab.ssh_dir / 'known_hosts'}",
             "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
             f"root@{addr}", "echo", "ok"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "ok"


def _wait(cond, timeout: float = 60) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.3)
    return False


def test_break_heal_osd_unmounted_out(lab: Lab) -> None:
    try:
        lab.break_("osd-unmounted", osd=1, out=True)
        tree = json.loads(ceph(lab, "osd", "tree", "--format", "json"))
        osd1 = next(n for n in tree["nodes"] if n["name"] == "osd.1")
        assert osd1["status"] == "down" and osd1["reweight"] == 0
        assert not os.path.ismount(lab.osd_dir(1))
        assert not (lab.osd_dir(1) / "whoami").exists()
        assert lab.pid("osd.1") is None
    finally:
        lab.heal("osd-unmounted", osd=1)
    o = next(o for o in osd_dump(lab)["osds"] if o["osd"] == 1)
    assert (o["up"], o["in"]) == (1, 1)
    assert os.path.ismount(lab.osd_dir(1))


def test_break_heal_cache_tier(lab: Lab) -> None:
    try:
        lab.break_("cache-tier-misconfigured")
        pools = {p["pool_name"]: p for p in json.loads(
            ceph(lab, "osd", "pool", "ls", "detail", "--format", "json"))}
        c = pools[CACHE_POOL]
        assert c["cache_mode"] == "writeback"
        assert c["target_max_bytes"] == 0 and c["target_max_objects"] == 0
        assert c["cache_target_dirty_ratio_micro"] > c["cache_target_full_ratio_micro"]
        assert c["hit_set_params"]["type"] == "none"
    finally:
        lab.heal("cache-tier-misconfigured")
    assert CACHE_POOL not in ceph(lab, "osd", "pool", "ls")


def test_break_heal_pool_few_pgs(lab: Lab) -> None:
    try:
        lab.break_("pool-few-pgs")
        pools = {p["pool_name"]: p for p in json.loads(
            ceph(lab, "osd", "pool", "ls", "detail", "--format", "json"))}
        assert pools[FEW_PG_POOL]["pg_num"] == 2
    finally:
        lab.heal("pool-few-pgs")
    assert FEW_PG_POOL not in ceph(lab, "osd", "pool", "ls")


def _recon_unmounted(lab: Lab) -> list[str]:
    import urllib.request

    with urllib.request.urlopen(
            f"http://127.0.0.3:{lab.ports.object}/recon/unmounted", timeout=10) as r:
        return [d["device"] for d in json.loads(r.read())]


def test_break_heal_swift_device_unmounted(lab: Lab) -> None:
    try:
        lab.break_("swift-device-unmounted", device="d2")
        assert _recon_unmounted(lab) == ["d2"]
    finally:
        lab.heal("swift-device-unmounted", device="d2")
    assert _recon_unmounted(lab) == []


def test_break_heal_swift_ring_bad(lab: Lab) -> None:
    b = str(lab.swift_etc / "object.builder")
    ring = lab.swift_etc / "object.ring.gz"

    def d4_weights() -> tuple[float, float]:
        from swift.common.ring import RingBuilder, RingData

        bw = next(d["weight"] for d in RingBuilder.load(b).devs if d and d["device"] == "d4")
        rw = next(d["weight"] for d in RingData.load(str(ring)).devs
                  if d and d["device"] == "d4")
        return bw, rw

    try:
        lab.break_("swift-ring-bad")
        out = subprocess.run(["swift-ring-builder", b], capture_output=True, text=True).stdout
        assert "d4" in out
        bw, rw = d4_weights()
        assert bw != rw  # the builder and the ring.gz disagree
        assert Path(b).stat().st_mtime > ring.stat().st_mtime
    finally:
        lab.heal("swift-ring-bad")
    bw, rw = d4_weights()
    assert bw == rw
    assert Path(b).stat().st_mtime <= ring.stat().st_mtime


def test_status_reports_processes_and_health(lab: Lab) -> None:
    st = lab.status()
    assert all(st["processes"].values())
    assert st["ceph_health"] == "HEALTH_OK"
    assert st["swift_healthcheck"] is True
    assert st["osds_up_in"] == (lab.n_osds, lab.n_osds)


def test_second_lab_side_by_side_survives_a_crash_and_down_leaves_nothing(lab: Lab) -> None:
    """A second lab with another dir and ports runs beside the first; after its processes
    die (mounts, loop devices and pid files left behind) `up` cleans up and starts again;
    `down` leaves no process, mount or loop device."""
    import signal

    base = Path("/var/tmp") / f"stordoc-lab-second-{os.getpid()}"
    other = Lab(base, int(os.environ.get("STORDOC_LAB2_PORT_BASE", "19400")),
                release=lab.release)
    try:
        other.up()
        assert other.running() and lab.running()
        # the lab dies: every process killed, mounts and loop devices stay
        for pid in other.status()["processes"].values():
            if pid:
                os.kill(pid, signal.SIGKILL)
        assert _wait(lambda: not any(other.status()["processes"].values()))
        assert other.mounts.under_base() and other.loop_devices()
        other.up()
        assert other.running() and lab.running()
        # XFS OSDs: data image + block; raw OSDs: block only; 4 Swift devices
        assert len(other.loop_devices()) == \
            sum(2 if k == "xfs" else 1 for k in other.kinds) + 4
        assert "raw" not in other.kinds or other.bootstrap_keyring.exists()
        pids = [p for p in other.status()["processes"].values() if p]
    finally:
        res = other.down()
    assert res["stopped"]
    assert not base.exists()
    assert other.loop_devices() == {}
    assert not any(str(base) in line for line in Path("/proc/mounts").read_text().splitlines())
    # ceph-volume's fixed paths of this lab (its own cluster name) are gone too
    cv = f"/var/lib/ceph/osd/{other.cv_cluster}-"
    assert not any(cv in line for line in Path("/proc/mounts").read_text().splitlines())
    assert not list(Path("/var/lib/ceph/osd").glob(f"{other.cv_cluster}-*"))
    assert not other.bootstrap_keyring.exists()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert lab.running()  # the first lab was not touched
