"""Host facts two ways on the real lab: over SSH (each host's facts script) and from the
lab's Prometheus, which scrapes a node_exporter per lab host (lab/hostmetrics.py). Both
are judged on the same Ceph and Swift picture (one collect), so a difference can only
come from the host facts, and must give the same findings (codes and entities), the
kernel log's included: the lab runs scripts/stordoc-kmsg-textfile every 5 s into each
host's textfile directory, and a comparison waits until Prometheus has a kernel log read
after the last change.

- the healthy lab: Prometheus speaks for every host, no SSH at all, and each host's
  mounts under its OSD data dirs and Swift devices are the ones SSH sees;
- one live break, a Swift device remounted read-only: Prometheus alone (no SSH) and
  Prometheus with SSH for the host in question both say what SSH says;
- an exporter stopped: its host is HOST_FACTS_STALE and its facts unknown (Prometheus
  alone) or SSH's (the default), never healthy from Prometheus;
- an XFS shut down under a Swift device (node_exporter's filesystem collector still calls
  it healthy): Prometheus alone finds FS_SHUTDOWN from the kernel-log textfile, as SSH.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from checks.engine import CheckReport, run_checks
from core.settings import load_settings
from lab import Lab
from lab.config import write_config
from lab.hostmetrics import HostMetrics
from storage.collect import collect
from storage.hostfacts import collect_host_facts
from storage.hostfacts.prom import collect_via_prometheus
from storage.model import ClusterSnapshot, HostFacts, PromStatus
from storage.targets import ClusterTarget
from tests.support.broken import broken
from tests.support.poll import wait_until

# on Reef (CI's Pacific part is the longer); the Pacific lab runs the same exporters
pytestmark = pytest.mark.on_reef

SCRAPE_WAIT_S = 40  # the node job scrapes every 5 s; a loaded machine may lag


@pytest.fixture(scope="module")
def metrics(lab: Lab) -> HostMetrics:
    hm = HostMetrics(lab)
    if not hm.on():  # a kept lab made before the lab ran its exporters
        hm.up()
        write_config(lab)
    return hm


@pytest.fixture(scope="module")
def targets(lab: Lab, metrics: HostMetrics) -> tuple[ClusterTarget, ClusterTarget]:
    """The lab's cluster as stordoc.toml (SSH) and stordoc-prom.toml (Prometheus) say."""
    ssh = load_settings(lab.config_path).cluster("lab").target("lab")
    prom = load_settings(lab.prom_config_path).cluster("lab").target("lab")
    assert ssh.prometheus is None and prom.prometheus is not None
    assert prom.prometheus.url == metrics.prometheus_url and prom.prometheus.job == "node"
    return ssh, prom


def _prom_only(t: ClusterTarget) -> ClusterTarget:
    assert t.prometheus is not None
    return dataclasses.replace(t, prometheus=dataclasses.replace(t.prometheus,
                                                                 ssh_max_hosts=0))


def _scraped_since(metrics: HostMetrics, t0: float) -> bool:
    """Every exporter scraped (and up) after ``t0``, by Prometheus's own clock, with a
    kernel-log textfile read after ``t0``."""
    last = metrics.last_scrapes()
    up = metrics.scraped_up()
    want = set(metrics.exporters.targets().values())
    kmsg = {r["metric"].get("instance", ""): float(r["value"][1])
            for r in metrics.query('stordoc_kmsg_time{job="node"}')}
    return want <= set(last) and all(last[i] > t0 and up.get(i) == 1
                                     and kmsg.get(i, 0) > t0 for i in want)


@dataclasses.dataclass
class Both:
    snap: ClusterSnapshot
    ssh: CheckReport
    prom: CheckReport
    ssh_hosts: dict[str, HostFacts]
    prom_hosts: dict[str, HostFacts]
    status: PromStatus


def both(ssh_t: ClusterTarget, prom_t: ClusterTarget) -> Both:
    """One Ceph/Swift collect, host facts over SSH and from Prometheus, both checked (the
    hosts in question get SSH's facts in the second)."""
    snap = collect(ssh_t, host_facts=False)
    assert snap.ceph is not None and snap.swift is not None
    by_ssh = collect_host_facts(ssh_t, snap.ceph, snap.swift)
    by_prom, status = collect_via_prometheus(prom_t, snap.ceph, snap.swift)
    now = time.time()

    def checked(hosts: dict[str, HostFacts], ps: PromStatus | None = None) -> CheckReport:
        return run_checks(dataclasses.replace(snap, hosts=hosts, host_facts_collected=True,
                                              prometheus=ps), now=now)

    return Both(snap, checked(by_ssh), checked(by_prom, status), by_ssh, by_prom, status)


def keys(rep: CheckReport) -> set[tuple[str, str]]:
    return {(f.code, f.entity) for f in rep.findings}


def _mounts(f: HostFacts) -> set[tuple[str, str, str]]:
    return {(m.target, m.fstype, m.source) for m in f.mounts}


def test_healthy_lab_same_findings_and_mounts_from_prometheus_alone(
        lab: Lab, metrics: HostMetrics, targets: tuple[ClusterTarget, ClusterTarget]) -> None:
    ssh_t, prom_t = targets
    t0 = time.time()
    wait_until(lambda: _scraped_since(metrics, t0), SCRAPE_WAIT_S, "a scrape of every exporter")
    # each exporter exports its own host's lab mounts, none of another lab host's
    owned = metrics.exporters.owned_mounts()
    lab_paths = {p for paths in owned.values() for p in paths}
    seen: dict[str, set[str]] = {}
    for r in metrics.query('node_filesystem_readonly{job="node"}'):
        if r["metric"]["mountpoint"] in lab_paths:
            seen.setdefault(r["metric"]["instance"], set()).add(r["metric"]["mountpoint"])
    assert seen == {metrics.exporters.target(h): set(paths) for h, paths in owned.items()}
    b = both(ssh_t, prom_t)
    hosts = [h.name for h in ssh_t.hosts]
    # Prometheus speaks for every host: nothing stale, no SSH at all
    assert b.status.from_prometheus == tuple(sorted(hosts)), b.status
    assert b.status.ssh_hosts == () and b.status.stale == () and b.status.unmatched == ()
    assert b.status.problems == () and b.status.kernel_log_unknown == ()
    for h in hosts:
        s, p = b.ssh_hosts[h], b.prom_hosts[h]
        assert s.reachable and p.reachable
        # each host's own OSD data dirs and Swift devices, mounted as SSH sees them
        assert _mounts(p) == _mounts(s) and _mounts(p), h
        assert p.osd_dirs == s.osd_dirs and p.swift_dirs == s.swift_dirs, h
        assert {(x.kind, x.name, x.readonly) for x in p.fs_probes} == \
            {(x.kind, x.name, x.readonly) for x in s.fs_probes}, h
    assert keys(b.prom) == keys(b.ssh), (b.ssh.findings, b.prom.findings)


def test_read_only_swift_device_same_findings_and_a_stopped_exporter_is_stale(
        lab: Lab, metrics: HostMetrics, targets: tuple[ClusterTarget, ClusterTarget]) -> None:
    ssh_t, prom_t = targets
    d2 = str(lab.swift_node / "d2")
    with broken(lab, "swift-device-readonly", device="d2"):
        # Prometheus has scraped node2 since the remount
        t0 = time.time()
        wait_until(lambda: [r for r in metrics.query(
            f'node_filesystem_readonly{{job="node",mountpoint="{d2}"}} == 1')],
            SCRAPE_WAIT_S, "Prometheus to see d2 read-only")
        wait_until(lambda: _scraped_since(metrics, t0), SCRAPE_WAIT_S, "a fresh scrape")
        alone = both(ssh_t, _prom_only(prom_t))
        ssh_keys = keys(alone.ssh)
        ro = {k for k in ssh_keys if k[0] == "FS_READONLY"}
        assert len(ro) == 1 and next(iter(ro))[1].endswith("@node2"), alone.ssh.findings
        assert alone.status.ssh_hosts == () and "node2" in alone.status.from_prometheus
        assert keys(alone.prom) == ssh_keys, (alone.ssh.findings, alone.prom.findings)
        # the default: SSH for the host Prometheus shows a problem on, and only for it
        # (and any host Swift itself names: on a loaded machine a recon answer may be late)
        deep = both(ssh_t, prom_t)
        said = deep.status.ssh_hosts
        assert [s for s in said if s.startswith("node2 (")], deep.status
        assert all(s.startswith("node2 (") or "does not answer" in s for s in said), said
        # within one collect (a read-only device makes replication failures appear over
        # time, so a later collect may hold more than the first: CI met it)
        assert keys(deep.prom) == keys(deep.ssh), (deep.ssh.findings, deep.prom.findings)
        assert ro <= keys(deep.ssh)

    # an exporter that stops: its host is stale, never healthy from Prometheus
    stopped = metrics.exporters.target("node3")
    assert metrics.exporters.stop_one("node3")
    try:
        wait_until(lambda: metrics.scraped_up().get(stopped) == 0, SCRAPE_WAIT_S,
                   "Prometheus to see node3's exporter down")
        gone = both(ssh_t, _prom_only(prom_t))
        stale = [f for f in gone.prom.findings if f.code == "HOST_FACTS_STALE"]
        assert [f.entity for f in stale] == ["host node3"], gone.prom.findings
        assert "node3" not in gone.prom_hosts and gone.status.unknown == ("node3",)
        # the rest as SSH says (node3's own facts aside: unknown, not healthy)
        assert keys(gone.prom) - {("HOST_FACTS_STALE", "host node3")} == \
            {k for k in keys(gone.ssh) if not k[1].endswith("node3")}
        fallback = both(ssh_t, prom_t)  # the default looks at it over SSH instead
        assert [st.fallback for st in fallback.status.stale] == ["ssh"]
        assert fallback.prom_hosts["node3"].reachable
    finally:
        metrics.exporters.start_one("node3")


def test_a_shut_down_xfs_is_found_from_prometheus_alone(
        lab: Lab, metrics: HostMetrics, targets: tuple[ClusterTarget, ClusterTarget]) -> None:
    """node_exporter's filesystem collector still reports a shut-down XFS healthy; the
    kernel-log textfile says it, and Prometheus alone gives SSH's findings."""
    ssh_t, prom_t = targets
    d2 = str(lab.swift_node / "d2")
    with broken(lab, "swift-device-shutdown", device="d2"):
        t0 = time.time()
        wait_until(lambda: _scraped_since(metrics, t0), SCRAPE_WAIT_S, "a fresh scrape")
        # what the filesystem collector says of it: mounted, writable, statfs answers
        fs = metrics.query(f'node_filesystem_readonly{{job="node",mountpoint="{d2}"}}')
        assert [float(r["value"][1]) for r in fs] == [0.0], fs
        alone = both(ssh_t, _prom_only(prom_t))
        shut = {k for k in keys(alone.ssh) if k[0] == "FS_SHUTDOWN"}
        assert len(shut) == 1 and next(iter(shut))[1].endswith("@node2"), alone.ssh.findings
        assert alone.status.ssh_hosts == () and "node2" in alone.status.from_prometheus
        assert keys(alone.prom) == keys(alone.ssh), (alone.ssh.findings, alone.prom.findings)
