"""The lab's host metrics without a lab: each simulated host's node_exporter speaks for
that host only (its address, its port, its mounts, its textfile directory), the lab's
Prometheus scrapes them as job ``node``, the alert chain keeps that job, ``lab down``
stops them, and the lab's Prometheus config for stordoc names the lab's Prometheus."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab import Lab
from lab.alerts import AlertPorts, prometheus_config
from lab.hostmetrics import (
    DEFAULT_MOUNTS_EXCLUDE,
    HostMetrics,
    NodeExporters,
    exporter_port,
    mounts_exclude,
)


def _flag(argv: list[str], name: str) -> str:
    vals = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
    assert len(vals) == 1, (name, argv)
    return vals[0]


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path / "lab", 29000, "mixed")  # never brought up


def test_each_exporter_listens_on_its_hosts_address_and_a_port_of_the_labs_range(
        lab: Lab) -> None:
    ne = NodeExporters(lab)
    assert [h for h, _ in ne.hosts()] == ["node1", "node2", "node3", "node4"]
    assert ne.targets() == {"node1": "127.0.0.2:29040", "node2": "127.0.0.3:29041",
                            "node3": "127.0.0.4:29042", "node4": "127.0.0.5:29043"}
    argv = ne.argv("node2")
    assert argv[0] == "prometheus-node-exporter"
    assert _flag(argv, "web.listen-address") == "127.0.0.3:29041"
    assert _flag(argv, "collector.textfile.directory") == str(lab.base / "hosts" /
                                                              "node2.textfile")
    # what stordoc maps, nothing else; no systemd collector: the lab has no systemd
    assert "--collector.disable-defaults" in argv
    for c in ("filesystem", "diskstats", "textfile", "uname"):
        assert f"--collector.{c}" in argv
    assert not any("systemd" in a for a in argv)
    # the lab's disks are loop devices: diskstats must not leave them out (Debian does)
    assert not re.match(_flag(argv, "collector.diskstats.device-exclude"), "loop12")
    with pytest.raises(ValueError):
        exporter_port(29000, 11)


def test_a_hosts_exporter_leaves_out_the_other_lab_hosts_mounts_only(lab: Lab) -> None:
    ne = NodeExporters(lab)
    owned = ne.owned_mounts()
    assert owned["node2"] == [str(lab.osd_dir(1)), str(lab.swift_node / "d2")]
    assert owned["node1"] == [str(lab.osd_dir(0)), str(lab.swift_node / "d1"),
                              str(lab.swift_node / "d4")]
    assert owned["node4"] == [str(lab.osd_dir(3))]  # the raw OSD's tmpfs, outside the base
    exclude = re.compile(_flag(ne.argv("node2"), "collector.filesystem.mount-points-exclude"))
    for mine in owned["node2"]:
        assert not exclude.search(mine), mine
    for host, paths in owned.items():
        if host != "node2":
            for p in paths:
                assert exclude.search(p), (host, p)
    # a deeper path or a neighbour's name is not excluded by accident; Debian's default stays
    assert not exclude.search(str(lab.osd_dir(0)) + "0")
    assert not exclude.search(str(lab.swift_node / "d1") + "/sub")
    assert exclude.search("/proc") and exclude.search("/run/user/0")
    assert mounts_exclude([]) == DEFAULT_MOUNTS_EXCLUDE


def test_the_node_job_scrapes_every_host_and_the_alert_chain_keeps_it(lab: Lab) -> None:
    hm = HostMetrics(lab)
    job = hm.exporters.scrape_config()
    assert job["job_name"] == "node"
    assert job["static_configs"][0]["targets"] == list(hm.exporters.targets().values())
    cfg = hm.prometheus_config()
    assert cfg["scrape_configs"] == [job]
    assert hm.prometheus_url == "http://127.0.0.1:29017" == \
        f"http://127.0.0.1:{AlertPorts(29000).prometheus}"
    chain = prometheus_config(AlertPorts(29000), "lab", Path("/r.yml"), (job,))
    jobs = [j["job_name"] for j in chain["scrape_configs"]]  # type: ignore[index]
    assert jobs == ["ceph", "node"]
    json.dumps(chain)  # Prometheus reads it as YAML: JSON is


def test_lab_down_and_status_know_the_exporters_when_they_run(lab: Lab) -> None:
    lab.base.mkdir(parents=True)
    lab.write_state(port_base=29000, osd_layout="mixed")
    assert not any(n.startswith("node-exporter.") for n in lab.known_daemons())
    assert "prometheus" not in lab.known_daemons()
    lab.write_state(metrics=True)
    names = lab.known_daemons()
    assert names[:6] == ["prometheus", "kmsg-textfile", "node-exporter.node1",
                         "node-exporter.node2", "node-exporter.node3", "node-exporter.node4"]
    lab.write_state(alerts=True)
    names = lab.known_daemons()
    assert names.count("prometheus") == 1 and names[0] == "alertmanager"


def test_textfiles_are_written_whole_and_named_as_the_collector_reads_them(
        lab: Lab) -> None:
    ne = NodeExporters(lab)
    p = ne.write_textfile("node3", "x.prom", "a 1\n")
    assert p == lab.base / "hosts" / "node3.textfile" / "x.prom"
    assert p.read_text() == "a 1\n" and [q.name for q in p.parent.iterdir()] == ["x.prom"]
    for bad in ("x.txt", "../x.prom"):
        with pytest.raises(ValueError):
            ne.write_textfile("node3", bad, "")


def test_the_labs_prometheus_config_reads_as_stordocs_settings(lab: Lab,
                                                               tmp_path: Path) -> None:
    from core.settings import load_settings
    from core.settings_clusters import PrometheusSettings
    from lab.config import config_text, prom_config_text

    lab.base.mkdir(parents=True)
    lab.write_state(port_base=29000, osd_layout="mixed", fsid="f")
    plain, prom = tmp_path / "a.toml", tmp_path / "b.toml"
    plain.write_text(config_text(lab))
    prom.write_text(prom_config_text(lab))
    assert load_settings(plain).cluster("lab").target("lab").prometheus is None
    t = load_settings(prom).cluster("lab").target("lab")
    assert t.prometheus is not None
    assert (t.prometheus.url, t.prometheus.job) == ("http://127.0.0.1:29017", "node")
    # the product's default: SSH for the hosts in question
    assert t.prometheus.ssh_max_hosts == PrometheusSettings(url="http://x").ssh_max_hosts > 0
    prom.write_text(prom_config_text(lab, ssh_max_hosts=0))
    alone = load_settings(prom).cluster("lab").target("lab").prometheus
    assert alone is not None and alone.ssh_max_hosts == 0
    # the same hosts, at the addresses the exporters listen on
    assert [(h.name, h.address) for h in t.hosts] == NodeExporters(lab).hosts()
