"""The ``stordoc.toml`` a lab writes for itself: the cluster ``lab`` with its Ceph conf and
key, its Swift proxy, one ``[[clusters.lab.hosts]]`` per lab host (SSH, OSD data dirs and
start commands, rings, start scripts, fstab), and ``[alerts]`` with the alert chain; and
``stordoc-prom.toml``, the same with ``[clusters.lab.prometheus]`` (host facts from the
lab's Prometheus) when its node_exporters run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from lab.alerts import AlertChain
from lab.ceph import osdmaptool_argv
from lab.hostmetrics import NODE_JOB, HostMetrics
from lab.layout import SWIFT_KEY, SWIFT_SERVERS, SWIFT_USER
from lab.swift_conf import SWIFT_REPLICATION_IP
from storage.private import write_private

if TYPE_CHECKING:
    from lab.parts import LabParts


def _hosts(lab: LabParts) -> str:
    hosts = ""
    for n in range(1, lab.n_hosts + 1):
        i = n - 1  # the OSD on this host
        raw = i < lab.n_osds and lab.kinds[i] == "raw"
        data_dir = f"{lab.cv_osd_root}/{lab.cv_cluster}-{{id}}" if raw \
            else f"{lab.ceph_dir / 'osd'}/ceph-{{id}}"
        # only the hosts that carry Swift devices read rings (node4 holds an OSD only)
        ring_dirs = json.dumps([str(lab.ring_dir(k)) for k in SWIFT_SERVERS])
        swift = (f'swift_devices_dir = "{lab.swift_node}"\n'
                 f"swift_ring_dirs = {ring_dirs}\n") if n <= 3 else ""
        activate = lab.ceph_cluster.ceph_volume_argv(
            "raw", "activate", "--device", "{device}", "--no-systemd")
        prepare = lab.ceph_cluster.ceph_volume_argv(
            "raw", "prepare", "--bluestore", "--data", "{device}", "--osd-id", "{id}")
        xfs_osd = lab.ceph_cluster.replace_xfs_templates()
        hosts += f"""
[[clusters.lab.hosts]]
name = "node{n}"
address = "127.0.0.{n + 1}"
port = {lab.ports.sshd}
user = "root"
key_file = "{lab.ssh_dir / 'client_ed25519'}"
known_hosts = "{lab.ssh_dir / 'known_hosts'}"
timeout = 10
osd_start = {json.dumps(lab.ceph_cluster.osd_start_argv(host=f"node{n}"))}
osd_data_dir = "{data_dir}"
osd_pid_file = "{lab.run_dir}/ceph-osd.{{id}}.pid"
osd_activate_raw = {json.dumps(activate)}
osd_prepare_raw = {json.dumps(prepare)}
osd_stop = ["kill", "{{pid}}"]
{xfs_osd}{swift}swift_server_start = {json.dumps([str(lab.swift_start_script), "{server}"])}
swift_replicator_start = {json.dumps([str(lab.replicator_start_script), "{server}"])}
fstab_path = "{lab.base / 'hosts' / f'node{n}.fstab'}"
osd_log_file = "{lab.log_dir}/ceph-osd.{{id}}.log"
osd_admin_socket = "{lab.run_dir}/ceph-osd.{{id}}.asok"
ceph_crash_dir = "{lab.ceph_dir / 'crash'}"
evidence_dir = "{lab.base / 'evidence'}"
{_daemons(lab) if n == 1 else ""}"""
    return hosts


def _daemons(lab: LabParts) -> str:
    """node1 carries the lab's one monitor, manager, and every Swift daemon (one process
    of each serves all lab hosts): their pid files, logs, sockets/ports, and a start
    command for every one of them (``daemon-start``)."""
    cc = lab.ceph_cluster
    out = ""

    def add(name: str, pid: Path, log: Path | None, start: list[str],
            asok: str = "", port: int | None = None, address: str = "") -> None:
        nonlocal out
        out += f"""
[[clusters.lab.hosts.daemons]]
name = "{name}"
pid_file = "{pid}"
log_file = "{log or ''}"
admin_socket = "{asok}"
{f"port = {port}" if port else ""}
address = "{address}"
start = {json.dumps(start)}
"""
    add("mon.a", lab.run_dir / "ceph-mon.a.pid", lab.log_dir / "ceph-mon.a.log",
        cc.mon_start_argv(), asok=str(lab.run_dir / "ceph-mon.a.asok"))
    add("mgr.x", lab.run_dir / "ceph-mgr.x.pid", lab.log_dir / "ceph-mgr.x.log",
        cc.mgr_start_argv(), asok=str(lab.run_dir / "ceph-mgr.x.asok"))
    for k in SWIFT_SERVERS:
        add(f"swift-{k}-server", lab.pids / f"swift-{k}.pid", lab.log_dir / f"swift-{k}.log",
            [str(lab.swift_start_script), k], port=getattr(lab.ports, k),
            address="127.0.0.1")
        add(f"swift-{k}-replicator", lab.pids / f"swift-{k}-replicator.pid",
            lab.log_dir / f"swift-{k}-replicator.log", [str(lab.replicator_start_script), k])
    add("swift-proxy-server", lab.pids / "swift-proxy.pid", lab.log_dir / "swift-proxy.log",
        [str(lab.swift_start_script), "proxy"], port=lab.ports.proxy, address="127.0.0.1")
    add("memcached", lab.pids / "memcached.pid", None, lab.swift_cluster.memcached_argv(),
        port=lab.ports.memcached, address="127.0.0.1")
    add("rsyncd", lab.pids / "rsyncd.pid", lab.log_dir / "rsyncd.log",
        [str(lab.swift_start_script), "rsyncd"], port=lab.ports.rsync,
        address=SWIFT_REPLICATION_IP)
    return out


def _alerts(lab: LabParts) -> str:
    """The [alerts] settings of a lab with the alert chain: the webhook's token and
    port, and Alertmanager's URL for silences."""
    if not lab.read_state().get("alerts"):
        return ""
    chain = AlertChain(lab)
    return f"""
[alerts]
token = {{ file = "{chain.token_file}" }}
alertmanager_url = "{chain.alertmanager_url}"
cluster_label = "cluster"
"""


def config_text(lab: LabParts) -> str:
    return f"""# Generated by `stordoc lab up` for the lab under {lab.base}.
journal = "{lab.base / 'journal.db'}"
default_cluster = "lab"

[clusters.lab]
muted = []

[clusters.lab.ceph]
conf = "{lab.conf}"
keyring = "{lab.admin_keyring}"
client = "client.admin"
timeout = 10
osdmaptool = {json.dumps(osdmaptool_argv(lab))}
rados = {json.dumps(lab.system.argv(["rados"]))}

[clusters.lab.swift]
swift_dir = "{lab.swift_etc}"
proxy_url = "http://127.0.0.1:{lab.ports.proxy}"
auth_url = "http://127.0.0.1:{lab.ports.proxy}/auth/v1.0"
user = "{SWIFT_USER}"
key = {{ value = "{SWIFT_KEY}" }}
{_hosts(lab)}
[bench]
fio_port = {lab.ports.fio}
{_alerts(lab)}"""


def prom_config_text(lab: LabParts, ssh_max_hosts: int | None = None) -> str:
    """The lab's config with ``[clusters.lab.prometheus]``: host facts from the lab's
    Prometheus (its node_exporters, lab/hostmetrics.py), SSH for the hosts in question
    (``ssh_max_hosts`` 0: none, Prometheus alone)."""
    metrics = HostMetrics(lab)
    limit = "" if ssh_max_hosts is None else f"ssh_max_hosts = {ssh_max_hosts}\n"
    return (config_text(lab).replace("# Generated by `stordoc lab up`",
                                     "# Generated by `stordoc lab up` (host facts from "
                                     "Prometheus)", 1)
            + f"""
[clusters.lab.prometheus]
url = "{metrics.prometheus_url}"
job = "{NODE_JOB}"
{limit}""")


def write_config(lab: LabParts) -> None:
    """The Swift start scripts the config names, then the config (and, with the host
    metrics running, ``stordoc-prom.toml``: the same with host facts from Prometheus)."""
    lab.swift_cluster.write_start_scripts()
    write_private(lab.config_path, config_text(lab))  # it holds the Swift key inline
    if HostMetrics(lab).on():
        write_private(lab.prom_config_path, prom_config_text(lab))
    else:
        lab.prom_config_path.unlink(missing_ok=True)
