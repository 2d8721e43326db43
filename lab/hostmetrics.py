"""Host metrics in the lab, as a monitored fleet has them: one Prometheus node_exporter
per simulated host (Debian's ``prometheus-node-exporter`` 1.5), bound to that host's
address, and the lab's Prometheus scraping them (job ``node``, instance = the host's
``address:port``). stordoc can then read host facts from Prometheus (the lab writes a
second config, ``stordoc-prom.toml``, that names it) and compare them with what SSH sees.

Every lab host is this one machine, so each exporter is told what is its host's own, as
SSH's facts are filtered per host (storage/hostfacts/collect.py): the filesystem
collector leaves out the other lab hosts' OSD data dirs and Swift devices, and each host
has a textfile directory of its own (``hosts/nodeN.textfile``) for anything the lab must
export per host. Collectors: filesystem (mount points, fstype, device, size/avail/files,
``readonly`` from the mount options, ``device_error`` when statfs fails), diskstats (loop
devices included: the lab's disks are loop devices), textfile and uname. The systemd
collector is not run: the lab has no systemd (its daemons are plain processes with pid
files), so unit facts are absent from the lab's metrics.

Seen here (node_exporter 1.5): a remount read-only shows at once as ``readonly 1``; an
XFS shut down (``xfs_io -x -c shutdown``) still answers statfs, so its filesystem reads
healthy (``device_error 0``, the old sizes): the kernel-log textfile
(scripts/stordoc-kmsg-textfile, run by the lab's ``kmsg-textfile`` loop every 5 s into
each host's textfile directory, as cron would) is what tells.

The lab's Prometheus is one process (daemon ``prometheus``, port base+17): without the
alert chain it scrapes the node job only (config and data under ``metrics/``); the alert
chain (lab/alerts.py) restarts it with Ceph's job, rules and Alertmanager, the node job
kept, and hands it back here when it stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.layout import (
    EXPORTER_PREFIX,
    KMSG_TEXTFILE_DAEMON,
    SWIFT_DEVICE_HOST,
    SWIFT_DEVICES,
    host_of_osd,
)
from lab.procs import LabError, wait

if TYPE_CHECKING:
    from lab.parts import LabParts

NODE_EXPORTER = "prometheus-node-exporter"  # Debian's name for node_exporter
EXPORTER_OFFSET = 40  # node N's exporter listens on port base + 40 + N - 1
MAX_HOSTS = 10  # base + 40..49
PROMETHEUS_OFFSET = 17  # the lab's Prometheus (lab/alerts.py AlertPorts.prometheus)
NODE_SCRAPE = "5s"  # the node job's scrape interval and timeout in the lab (as the chain's:
# 2 s cost 3.5% of a core on an idle lab, 5 s about half that)
# Debian's default exclusion (node_exporter --help) and nothing else of the machine's
DEFAULT_MOUNTS_EXCLUDE = (r"^/(dev|proc|run|sys|mnt|media|var/lib/docker/.+"
                          r"|var/lib/containers/storage/.+)($|/)")
# diskstats: Debian leaves out loop devices; the lab's disks are loop devices
DISKSTATS_EXCLUDE = r"^(ram|fd)\d+$"
NODE_JOB = "node"
# scripts/stordoc-kmsg-textfile, run every KMSG_EVERY_S into each host's textfile directory
KMSG_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "stordoc-kmsg-textfile"
KMSG_EVERY_S = 5


def exporter_port(port_base: int, n: int) -> int:
    """The port of lab host ``node{n}``'s exporter."""
    if not 1 <= n <= MAX_HOSTS:
        raise ValueError(f"lab host node{n}: the lab's exporters serve node1..node{MAX_HOSTS}")
    return port_base + EXPORTER_OFFSET + n - 1


def prometheus_port(port_base: int) -> int:
    return port_base + PROMETHEUS_OFFSET


def mounts_exclude(others: list[str]) -> str:
    """node_exporter's ``--collector.filesystem.mount-points-exclude`` for one host: Debian's
    default and the mount points of the other lab hosts (an RE2 alternation; RE2 has no
    look-ahead, so "only mine" is said as "not theirs")."""
    if not others:
        return DEFAULT_MOUNTS_EXCLUDE
    alts = "|".join(re.escape(p.rstrip("/")) for p in sorted(others))
    return f"{DEFAULT_MOUNTS_EXCLUDE}|^({alts})$"


def http_ok(url: str, timeout: float = 2.0) -> bool:
    """Whether ``url`` answers 200 (a lab server ready)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback)
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


class NodeExporters:
    """The node_exporters of one lab, one per host node1..nodeN."""

    def __init__(self, lab: LabParts) -> None:
        self.lab = lab

    @property
    def dir(self) -> Path:
        return self.lab.base / "metrics"

    def hosts(self) -> list[tuple[str, str]]:
        """(name, address) of every lab host, as the lab's config names them."""
        return [(f"node{n}", f"127.0.0.{n + 1}") for n in range(1, self.lab.n_hosts + 1)]

    def name(self, host: str) -> str:
        return EXPORTER_PREFIX + host

    def names(self) -> list[str]:
        return [self.name(h) for h, _ in self.hosts()]

    def target(self, host: str) -> str:
        """``address:port`` of ``host``'s exporter: Prometheus's ``instance`` label."""
        n = int(host.removeprefix("node"))
        return f"127.0.0.{n + 1}:{exporter_port(self.lab.ports.base, n)}"

    def targets(self) -> dict[str, str]:
        return {h: self.target(h) for h, _ in self.hosts()}

    def targets_by_daemon(self) -> dict[str, str]:
        """Daemon name -> ``address:port`` (the lab's status lists them)."""
        return {self.name(h): t for h, t in self.targets().items()}

    def textfile_dir(self, host: str) -> Path:
        return self.lab.base / "hosts" / f"{host}.textfile"

    def owned_mounts(self) -> dict[str, list[str]]:
        """Host -> the mount points of this lab that are that host's (its OSD data dir,
        its Swift devices): what SSH's facts keep for it."""
        lab = self.lab
        out: dict[str, list[str]] = {h: [] for h, _ in self.hosts()}
        for i in range(lab.n_osds):
            out.setdefault(host_of_osd(i)[0], []).append(str(lab.osd_dir(i)))
        for d in SWIFT_DEVICES:
            out.setdefault(SWIFT_DEVICE_HOST[d][0], []).append(str(lab.swift_node / d))
        return out

    def argv(self, host: str) -> list[str]:
        owned = self.owned_mounts()
        others = [p for h, paths in owned.items() if h != host for p in paths]
        return [
            NODE_EXPORTER, f"--web.listen-address={self.target(host)}",
            "--web.disable-exporter-metrics", "--collector.disable-defaults",
            "--collector.filesystem",
            f"--collector.filesystem.mount-points-exclude={mounts_exclude(others)}",
            "--collector.diskstats",
            f"--collector.diskstats.device-exclude={DISKSTATS_EXCLUDE}",
            "--collector.textfile",
            f"--collector.textfile.directory={self.textfile_dir(host)}",
            "--collector.uname", "--log.level=warn"]

    def write_textfile(self, host: str, name: str, text: str) -> Path:
        """Put ``name`` (``*.prom``) into ``host``'s textfile directory, atomically (the
        collector may read the directory at any moment)."""
        if not name.endswith(".prom") or "/" in name:
            raise ValueError(f"textfile {name!r}: a plain *.prom file name")
        d = self.make_textfile_dir(host)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=d)  # O_EXCL: no link followed
        try:
            os.fchmod(fd, 0o644)  # the exporter reads it
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, d / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return d / name

    def make_textfile_dir(self, host: str) -> Path:
        """``host``'s textfile directory, 0755 whatever the umask (the kernel-log script
        refuses a directory that group or others may write)."""
        d = self.textfile_dir(host)
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)
        return d

    def kmsg_argv(self) -> list[str]:
        """The kernel-log textfile of every host, refreshed every KMSG_EVERY_S (cron's
        job on a real host; every lab host is this machine, so one read serves all, and
        stordoc keeps each host's own devices' lines as SSH's facts do)."""
        dirs = [str(self.textfile_dir(h)) for h, _ in self.hosts()]
        return ["sh", "-c", f'while :; do sh "$0" "$@"; sleep {KMSG_EVERY_S}; done',
                str(KMSG_SCRIPT), *dirs]

    def refresh_kernel_log(self) -> None:
        """Write every host's kernel-log textfile now (once, and wait for it)."""
        dirs = [str(self.textfile_dir(h)) for h, _ in self.hosts()]
        r = subprocess.run(["sh", str(KMSG_SCRIPT), *dirs], capture_output=True, text=True,
                           timeout=60, check=False)
        if r.returncode != 0:
            raise LabError("node exporters", f"{KMSG_SCRIPT.name}: {r.stderr.strip()}")

    def start(self) -> None:
        """Spawn every host's exporter (no wait: ``wait_ready``)."""
        for host, address in self.hosts():
            self.write_textfile(host, "lab.prom", (
                "# HELP stordoc_lab_host The simulated lab host this exporter speaks for.\n"
                "# TYPE stordoc_lab_host gauge\n"
                f'stordoc_lab_host{{host="{host}",address="{address}"}} 1\n'))
            self.lab.stop(self.name(host))
            self.lab.procs.spawn(self.name(host), self.argv(host), "node exporters")
        self.refresh_kernel_log()  # each exporter's first scrape has it
        self.lab.stop(KMSG_TEXTFILE_DAEMON)
        self.lab.procs.spawn(KMSG_TEXTFILE_DAEMON, self.kmsg_argv(), "node exporters")

    def start_one(self, host: str) -> None:
        if self.lab.pid(self.name(host)) is None:
            self.lab.procs.spawn(self.name(host), self.argv(host), "node exporters")
        self.wait_ready([host])

    def stop_one(self, host: str) -> bool:
        return self.lab.stop(self.name(host))

    def wait_ready(self, hosts: list[str] | None = None, timeout: float = 30) -> None:
        for host in hosts or [h for h, _ in self.hosts()]:
            url = f"http://{self.target(host)}/metrics"
            wait(partial(http_ok, url), timeout, "node exporters",
                 f"{self.name(host)} to answer", str(self.lab.log_dir / f"{self.name(host)}.log"))

    def stop(self) -> list[str]:
        return [n for n in [KMSG_TEXTFILE_DAEMON, *self.names()] if self.lab.stop(n)]

    def scrape_config(self, cluster: str = "lab") -> dict[str, Any]:
        """The ``node`` job: every host's exporter, instance = its ``address:port``."""
        return {"job_name": NODE_JOB, "scrape_interval": NODE_SCRAPE,
                "scrape_timeout": NODE_SCRAPE,
                "static_configs": [{"targets": list(self.targets().values()),
                                    "labels": {"cluster": cluster}}]}


class HostMetrics:
    """The node exporters and the lab's Prometheus scraping them (without the alert
    chain: the node job alone)."""

    def __init__(self, lab: LabParts, cluster: str = "lab") -> None:
        self.lab = lab
        self.cluster = cluster
        self.exporters = NodeExporters(lab)

    @property
    def dir(self) -> Path:
        return self.lab.base / "metrics"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{prometheus_port(self.lab.ports.base)}"

    def prometheus_config(self) -> dict[str, Any]:
        return {"global": {"scrape_interval": NODE_SCRAPE, "scrape_timeout": NODE_SCRAPE,
                           "evaluation_interval": "1m"},
                "scrape_configs": [self.exporters.scrape_config(self.cluster)]}

    def start(self) -> None:
        """Start the exporters and a node-only Prometheus; ``wait_ready`` waits for them
        (so that ``lab up`` does other work meanwhile)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lab.write_state(metrics=True)
        self.exporters.start()
        self.start_prometheus()

    def start_prometheus(self) -> None:
        """(Re)start the lab's Prometheus with the node job only, on fresh data."""
        self.lab.stop("prometheus")
        shutil.rmtree(self.dir / "prom-data", ignore_errors=True)
        cfg = self.dir / "prometheus.yml"
        cfg.write_text(json.dumps(self.prometheus_config(), indent=1))  # JSON is YAML
        self.lab.procs.spawn("prometheus", [
            "prometheus", f"--config.file={cfg}",
            f"--storage.tsdb.path={self.dir / 'prom-data'}",
            "--storage.tsdb.retention.time=2h",
            f"--web.listen-address=127.0.0.1:{prometheus_port(self.lab.ports.base)}",
            "--log.level=warn"], "host metrics")

    def wait_ready(self, timeout: float = 60) -> None:
        self.exporters.wait_ready(timeout=timeout)
        wait(lambda: http_ok(self.prometheus_url + "/-/ready"), timeout, "host metrics",
             "Prometheus to be ready", str(self.lab.log_dir / "prometheus.log"))

    def up(self) -> None:
        self.start()
        self.wait_ready()

    def down(self) -> None:
        """Stop the exporters and the lab's Prometheus (the alert chain's too)."""
        self.exporters.stop()
        self.lab.stop("prometheus")
        self.lab.write_state(metrics=False)

    def on(self) -> bool:
        return bool(self.lab.read_state().get("metrics"))

    # ------------------------------------------------------------------ asking Prometheus
    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result vector (tests and the lab's status)."""
        url = self.prometheus_url + "/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql})
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 (loopback)
                data = json.load(resp)
        except (OSError, ValueError) as e:
            raise LabError("host metrics", f"Prometheus query {promql!r}: {e}") from None
        return list(data.get("data", {}).get("result", []))

    def scraped_up(self) -> dict[str, float]:
        """instance -> the node job's ``up`` as Prometheus has it now."""
        return {r["metric"].get("instance", ""): float(r["value"][1])
                for r in self.query(f'up{{job="{NODE_JOB}"}}')}

    def last_scrapes(self) -> dict[str, float]:
        """instance -> the wall-clock time of the node job's last scrape of it."""
        return {r["metric"].get("instance", ""): float(r["value"][1])
                for r in self.query(f'timestamp(up{{job="{NODE_JOB}"}})')}
