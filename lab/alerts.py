"""The lab's alert chain, as production runs it: the mgr ``prometheus`` module exports the
cluster's metrics, Prometheus scrapes them and evaluates Ceph's own alert rules
(Debian's ``ceph-prometheus-alerts``, their ``for:`` shortened so a lab fault fires in
seconds, not minutes), and Alertmanager routes the alerts to stordoc's webhook with a
bearer token. Everything listens on loopback at the lab's ports; pids are the lab's.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lab.hostmetrics import PROMETHEUS_OFFSET, HostMetrics
from lab.hostmetrics import http_ok as _http_ok
from lab.layout import ALERT_DAEMONS
from lab.procs import LabError, wait

if TYPE_CHECKING:
    from lab.parts import LabParts

CEPH_RULES = Path("/etc/prometheus/ceph/ceph_default_alerts.yml")
LAB_FOR = "5s"  # every rule's `for:` in the lab (Ceph's own: 1m to 15m)
SCRAPE = "5s"  # scrape interval and timeout in the lab (production: 15s to 1m): the mgr
# module answers slowly on a loaded 2-core machine, and a timed-out scrape fires nothing
EVAL = "2s"  # rule evaluation interval in the lab
WEBHOOK_PATH = "/alertmanager"

_FOR_RE = re.compile(r'^(\s*for:\s*)"?[0-9]+[smhdwy]"?\s*$', re.MULTILINE)


@dataclass(frozen=True)
class AlertPorts:
    """Ports of the chain, after the lab's own (+0..+15)."""

    base: int

    @property
    def exporter(self) -> int:  # the mgr prometheus module
        return self.base + 16

    @property
    def prometheus(self) -> int:  # the lab's one Prometheus (lab/hostmetrics.py)
        return self.base + PROMETHEUS_OFFSET

    @property
    def alertmanager(self) -> int:
        return self.base + 18

    @property
    def webhook(self) -> int:  # where the lab's Alertmanager delivers: the bot's port
        return self.base + 19


def lab_rules(text: str, for_: str = LAB_FOR) -> str:
    """Ceph's rule file with every ``for:`` set to ``for_`` (nothing else changed)."""
    return _FOR_RE.sub(lambda m: f'{m.group(1)}"{for_}"', text)


def prometheus_config(ports: AlertPorts, cluster: str, rules: Path,
                      more_jobs: tuple[dict[str, object], ...] = ()) -> dict[str, object]:
    """JSON is YAML: Prometheus reads this as its config file. ``more_jobs``: the lab's
    node exporters' job when they run (lab/hostmetrics.py)."""
    return {
        # external_labels: every alert names its cluster, aggregated ones too
        # (CephOSDDownHigh's count() drops the scrape's labels)
        "global": {"scrape_interval": SCRAPE, "evaluation_interval": EVAL,
                   "scrape_timeout": SCRAPE, "external_labels": {"cluster": cluster}},
        "rule_files": [str(rules)],
        "alerting": {"alertmanagers": [
            {"static_configs": [{"targets": [f"127.0.0.1:{ports.alertmanager}"]}]}]},
        "scrape_configs": [{
            "job_name": "ceph", "honor_labels": True,
            "static_configs": [{"targets": [f"127.0.0.1:{ports.exporter}"],
                                "labels": {"cluster": cluster}}]}, *more_jobs],
    }


def alertmanager_config(ports: AlertPorts, token_file: Path) -> dict[str, object]:
    """Route everything to stordoc's webhook, grouped per alert and cluster, resolved too."""
    return {
        "route": {"receiver": "stordoc", "group_by": ["alertname", "cluster"],
                  "group_wait": "1s", "group_interval": "5s", "repeat_interval": "1h"},
        "receivers": [{"name": "stordoc", "webhook_configs": [{
            "url": f"http://127.0.0.1:{ports.webhook}{WEBHOOK_PATH}",
            "send_resolved": True,
            "http_config": {"authorization": {"type": "Bearer",
                                              "credentials_file": str(token_file)}}}]}],
    }


class AlertChain:
    """Start, check and stop the chain of one lab."""

    def __init__(self, lab: LabParts, cluster: str = "lab") -> None:
        self.lab = lab
        self.cluster = cluster
        self.ports = AlertPorts(lab.ports.base)
        self.dir = lab.base / "alerts"

    @property
    def token_file(self) -> Path:
        return self.dir / "webhook-token"

    @property
    def alertmanager_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.alertmanager}"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.prometheus}"

    def up(self) -> None:
        if not CEPH_RULES.exists():
            raise LabError("alerts", f"{CEPH_RULES} is missing: install the Debian package "
                                     "ceph-prometheus-alerts (bash scripts/setup does)")
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in ALERT_DAEMONS:  # already running (lab up --with-alerts): start afresh
            self.lab.stop(name)
        # a fresh start: Alertmanager's notification log would otherwise remember what it
        # sent to the same receiver before and stay silent (repeat_interval), and
        # Prometheus would restore old alert state; both directories are this chain's own
        for d in ("am-data", "prom-data"):
            shutil.rmtree(self.dir / d, ignore_errors=True)
        if not self.token_file.exists():
            self.token_file.write_text(secrets.token_hex(24) + "\n")
        self.token_file.chmod(0o600)
        lab = self.lab
        lab.ceph("config", "set", "mgr", "mgr/prometheus/server_addr", "127.0.0.1")
        lab.ceph("config", "set", "mgr", "mgr/prometheus/server_port",
                 str(self.ports.exporter))
        lab.ceph("config", "set", "mgr", "mgr/prometheus/scrape_interval", "5")
        lab.ceph("mgr", "module", "enable", "prometheus", "--force")
        wait(lambda: _http_ok(f"http://127.0.0.1:{self.ports.exporter}/metrics", 5), 90,
              "alerts", "the mgr prometheus module to answer",
              str(lab.log_dir / "mgr.x.log"))
        rules = self.dir / "ceph_alerts.yml"
        rules.write_text(lab_rules(CEPH_RULES.read_text()))
        prom_cfg = self.dir / "prometheus.yml"
        metrics = HostMetrics(lab, self.cluster)
        node_job = (metrics.exporters.scrape_config(self.cluster),) if metrics.on() else ()
        prom_cfg.write_text(json.dumps(prometheus_config(self.ports, self.cluster, rules,
                                                         node_job), indent=1))
        am_cfg = self.dir / "alertmanager.yml"
        am_cfg.write_text(json.dumps(alertmanager_config(self.ports, self.token_file),
                                     indent=1))
        lab.procs.spawn("alertmanager", [
            "prometheus-alertmanager", f"--config.file={am_cfg}",
            f"--storage.path={self.dir / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{self.ports.alertmanager}",
            "--cluster.listen-address=", "--log.level=warn"], "alerts")
        lab.procs.spawn("prometheus", [
            "prometheus", f"--config.file={prom_cfg}",
            f"--storage.tsdb.path={self.dir / 'prom-data'}",
            "--storage.tsdb.retention.time=6h",
            f"--web.listen-address=127.0.0.1:{self.ports.prometheus}",
            "--log.level=warn"], "alerts")
        wait(lambda: _http_ok(self.alertmanager_url + "/-/ready"), 60, "alerts",
              "Alertmanager to be ready", str(lab.log_dir / "alertmanager.log"))
        wait(lambda: _http_ok(self.prometheus_url + "/-/ready"), 60, "alerts",
              "Prometheus to be ready", str(lab.log_dir / "prometheus.log"))

    def down(self) -> None:
        """Stop Prometheus and Alertmanager, switch the mgr module off; the lab stays
        (with its node exporters' Prometheus again when they run)."""
        for name in ALERT_DAEMONS:
            self.lab.stop(name)
        self.lab.ceph("mgr", "module", "disable", "prometheus", check=False)
        self.lab.write_state(alerts=False)
        metrics = HostMetrics(self.lab, self.cluster)
        if metrics.on():
            metrics.start_prometheus()
            metrics.wait_ready()

    def firing(self) -> list[str]:
        """Names of the alerts Prometheus has firing now (for the lab's status and tests)."""
        try:
            with urllib.request.urlopen(self.prometheus_url + "/api/v1/alerts",  # noqa: S310
                                        timeout=5) as resp:
                data = json.load(resp)
        except (OSError, ValueError):
            return []
        return sorted({a["labels"]["alertname"] for a in data.get("data", {}).get("alerts", [])
                       if a.get("state") == "firing"})

    def wait_firing(self, name: str, timeout: float = 120) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if name in self.firing():
                return time.monotonic() - t0
            time.sleep(0.5)
        raise TimeoutError(f"alert {name} not firing after {timeout:.0f} s")
