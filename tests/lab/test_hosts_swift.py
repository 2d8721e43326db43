"""Host facts over real SSH on the lab: each host's own OSDs and Swift devices, a host
that refuses SSH is a finding while Ceph's checks still run, unknown and wrong host keys
are refused (never added), one connection per host is reused. What the facts say of each
broken scenario: test_scenarios.py (live) and tests/unit/test_replay.py (snapshots)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from checks.engine import CheckReport, run_checks
from core.settings import load_settings
from lab import Lab
from storage.collect import collect
from storage.hostfacts import collect_host_facts
from storage.model import ClusterSnapshot
from storage.runner import HostUnreachable
from storage.ssh import FabricRunner
from storage.targets import ClusterTarget, HostTarget
from tests.support.broken import broken
from tests.support.init_config import findings, init_config, settled


@pytest.fixture(scope="module")
def target(lab: Lab) -> ClusterTarget:
    return load_settings(lab.config_path).cluster("lab").target("lab")


def check(target: ClusterTarget) -> tuple[ClusterSnapshot, CheckReport]:
    snap = collect(target)
    return snap, run_checks(snap)


@pytest.mark.release
def test_host_facts_over_real_ssh(lab: Lab, target: ClusterTarget) -> None:
    snap = collect(target)
    assert snap.ceph is not None and snap.swift is not None
    assert set(snap.hosts) == {f"node{i + 1}" for i in range(lab.n_hosts)}
    for i, kind in enumerate(lab.kinds):
        f = snap.hosts[f"node{i + 1}"]
        assert f.reachable, f.error
        d = str(lab.osd_dir(i))
        assert f.osd_dirs == {i: d}  # osd.i lives on CRUSH host node{i+1}
        m = f.mount_at(d)  # ceph-volume raw OSDs live on a tmpfs
        assert m is not None and m.fstype == ("tmpfs" if kind == "raw" else "xfs")
        assert [(x.ident, x.running) for x in f.daemons] == [(str(i), True)]
        assert x_pid_matches(lab, i, f.daemons[0].pid)
    assert set(snap.hosts["node1"].swift_dirs) == {"d1", "d4"}
    assert set(snap.hosts["node2"].swift_dirs) == {"d2"}


def x_pid_matches(lab: Lab, osd: int, pid: int | None) -> bool:
    return pid is not None and pid == lab.pid(f"osd.{osd}")


@pytest.mark.on_reef
def test_ssh_refusing_host_is_a_finding_and_ceph_checks_still_run(
        lab: Lab, target: ClusterTarget) -> None:
    # a port in the lab's range that nothing listens on
    dead = HostTarget("node9", "127.0.0.10", port=lab.ports.sshd + 1, key_file=target.hosts[0]
                      .key_file, known_hosts=target.hosts[0].known_hosts, timeout_s=3)
    t2 = dataclasses.replace(target, hosts=target.hosts + (dead,))
    snap, rep = check(t2)
    hu = [x for x in rep.findings if x.code == "HOST_UNREACHABLE"]
    assert [x.entity for x in hu] == ["host node9"]
    assert snap.ceph is not None and "osd-mounts" in rep.checks_run
    assert all(snap.hosts[n].reachable for n in ("node1", "node2", "node3"))


@pytest.mark.on_reef
def test_unknown_host_key_is_refused(lab: Lab, target: ClusterTarget,
                                     tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    h = dataclasses.replace(target.hosts[0], known_hosts=str(empty))
    r = FabricRunner([h])
    with pytest.raises(HostUnreachable) as e:
        r.run(h.name, ["true"])
    r.close()
    assert "unknown host key" in e.value.reason
    assert empty.read_text() == ""  # never added
    facts = collect_host_facts(dataclasses.replace(target, hosts=(h,)), None, None)
    assert facts[h.name].error and "unknown host key" in facts[h.name].error


@pytest.mark.on_reef
def test_wrong_host_key_is_refused(lab: Lab, target: ClusterTarget, tmp_path: Path) -> None:
    import paramiko

    kh = tmp_path / "known_hosts"
    other = paramiko.Ed25519Key.from_private_key_file(target.hosts[0].key_file)  # not the host key
    kh.write_text(f"[127.0.0.2]:{lab.ports.sshd} ssh-ed25519 {other.get_base64()}\n")
    h = dataclasses.replace(target.hosts[0], known_hosts=str(kh))
    facts = collect_host_facts(dataclasses.replace(target, hosts=(h,)), None, None)
    assert facts[h.name].error and "mismatch" in facts[h.name].error


@pytest.mark.on_reef
def test_one_connection_per_host_is_reused(target: ClusterTarget) -> None:
    h = target.hosts[0]
    r = FabricRunner([h])
    try:
        a = r.run(h.name, ["sh", "-c", "echo $PPID"])
        conn = r._conns[h.name]
        b = r.run(h.name, ["echo", "a b; echo c"])
        assert r._conns[h.name] is conn
        assert a.ok and b.stdout == "a b; echo c\n"  # an argument, not shell text
    finally:
        r.close()


@pytest.mark.on_reef
def test_doctor_names_every_access_ok(lab: Lab) -> None:
    """``stordoc doctor`` on the healthy lab (issue 40.2): every configured access is
    ``ok`` (read-only: nothing is changed), Slack and Prometheus not configured, exit 0."""
    from tests.support.cli import run_main

    rc, out, err = run_main("--config", str(lab.config_path), "doctor", width=80)
    heads = [ln for ln in out.splitlines() if not ln.startswith(" ")]
    assert rc == 0, out + err
    assert [h.split(":")[0] for h in heads if h.startswith("ok")] == (
        ["ok    ceph client.admin"] + [f"ok    ssh node{i + 1}" for i in range(lab.n_hosts)]
        + ["ok    swift recon", "ok    swift proxy", "ok    swift auth"])
    assert {h.split(":")[0] for h in heads if not h.startswith("ok")} == {
        "off   prometheus", "off   slack", "off   least privilege"}
    # checks as client.admin: the line that makes a read-only user (run by
    # test_least_privilege.py) is printed
    assert "ceph auth get-or-create client.stordoc-ro" in " ".join(out.split())
    assert all(len(ln) <= 80 for ln in out.splitlines())


@pytest.mark.release
def test_each_simulated_host_is_a_host_to_ceph(lab: Lab) -> None:
    """Issue 40.5: the lab's daemons report their simulated host as Ceph's metadata does
    on real hosts (its host name from a UTS namespace of its own, each OSD on its host's
    loopback address), so what reads the cluster's hosts from Ceph (``stordoc init``)
    finds node1..node4, the hosts the lab's SSH answers as; also after stordoc restarted
    them through the host's ``osd_start`` (the scenarios before this test)."""
    from lab.layout import host_of_osd

    for i in range(lab.n_osds):
        meta = lab.ceph("osd", "metadata", str(i))
        host, address = host_of_osd(i)
        assert meta["hostname"] == host, meta["hostname"]
        assert meta["front_addr"].startswith(f"v2:{address}:"), meta["front_addr"]
    assert lab.ceph("mon", "metadata", "a")["hostname"] == "node1"
    assert lab.ceph("mgr", "metadata", "x")["hostname"] == "node1"


def test_init_config_checks_like_the_labs_own(lab: Lab, cfg: Path, tmp_path: Path) -> None:
    """``stordoc init`` given only what a team has (ceph.conf, a keyring, the Swift dir,
    an SSH key), nothing of the lab's own (its hosts come from the daemons' metadata and
    the rings, as on a real cluster: issue 40.5): a config of at most 30 lines whose
    hosts come from the cluster, with which ``check --json`` gives the findings of the lab's own generated config, the
    same host facts of each host, and ``doctor`` reaches every host (issue 40.1); with
    osd.1's data dir unmounted, and with a Swift device unmounted (the raw OSD not
    activated: tests/lab/test_scenarios.py, while it is broken there). On Pacific only: the Reef lab runs its daemons in a
    chroot, so the paths they report (a raw OSD's data dir) are not the host's, which no
    real cluster does."""
    from core.env import Env
    from tests.support.cli import run_main

    mine, text = init_config(lab, tmp_path)
    assert len(text.splitlines()) <= 30, text
    assert "[[clusters.lab.hosts]]" not in text and "hosts_from" in text
    assert findings(mine) == findings(cfg)
    # the seed fault and a Swift device unmounted: seen on their hosts alike
    for scenario, kw, want in (("osd-unmounted", {"osd": 1}, ("OSD_DATA_UNMOUNTED", "osd.1")),
                               ("swift-device-unmounted", {"device": "d2"},
                                ("SWIFT_DEVICE_UNMOUNTED", "d2@node2"))):
        with broken(lab, scenario, **kw):
            theirs = settled(cfg)
            assert want in theirs, theirs
            assert settled(mine) == theirs, scenario

    def facts(config: Path) -> dict[str, Any]:
        env = Env(load_settings(config))
        try:
            snap = env.collect(env.target("lab"))
        finally:
            env.close()
        return {n: (h.error, h.osd_dirs, sorted(h.swift_dirs), sorted(h.ring_md5))
                for n, h in snap.hosts.items()}

    ours, labs = facts(mine), facts(cfg)
    assert ours == labs and len(ours) == lab.n_hosts
    rc, so, se = run_main("--config", str(mine), "doctor", width=100)
    assert sorted(ln.split(":")[0] for ln in so.splitlines() if ln.startswith("ok    ssh")) \
        == [f"ok    ssh node{i + 1}" for i in range(lab.n_hosts)], so + se
