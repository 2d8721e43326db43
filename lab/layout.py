"""Where things are in a lab: its defaults, ports, OSD layouts, and which lab host holds
which OSD and Swift device (no processes, no files)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_DIR = "/var/tmp/stordoc-lab"
DEFAULT_PORT_BASE = 16000
N_OSDS = 3  # OSDs of the ``xfs`` and ``raw`` layouts; ``mixed`` adds a fourth
LAYOUTS = ("xfs", "raw", "mixed")
DEFAULT_LAYOUT = "mixed"
CV_OSD_ROOT = "/var/lib/ceph/osd"  # where ceph-volume puts data dirs (fixed per cluster name)
CV_BOOTSTRAP_DIR = "/var/lib/ceph/bootstrap-osd"
# sparse: costs disk only as data lands. 2 GiB proved too small: a few benchmark runs
# filled the OSDs and BlueStore aborts on ENOSPC
OSD_BLOCK_BYTES = 10 * 1024**3
SWIFT_DEVICES = ("d1", "d2", "d3", "d4")
SWIFT_SERVERS = ("object", "container", "account")
SWIFT_DEVICE_HOST = {"d1": ("node1", "127.0.0.2"), "d2": ("node2", "127.0.0.3"),
                     "d3": ("node3", "127.0.0.4"), "d4": ("node1", "127.0.0.2")}
SWIFT_USER = "test:tester"
SWIFT_KEY = "testing"
ALERT_DAEMONS = ("prometheus", "alertmanager")  # the alert chain's (lab/alerts.py)
# node_exporter daemons, one per lab host: node-exporter.node1, ... (lab/hostmetrics.py)
EXPORTER_PREFIX = "node-exporter."
# the loop running scripts/stordoc-kmsg-textfile into every lab host's textfile directory
# (lab/hostmetrics.py), as cron does on a real host
KMSG_TEXTFILE_DAEMON = "kmsg-textfile"


def layout_kinds(layout: str) -> tuple[str, ...]:
    """Per OSD id, how it is deployed: ``xfs`` (ceph-disk style data partition) or ``raw``
    (ceph-volume raw: BlueStore label on the device, tmpfs data dir)."""
    if layout == "xfs":
        return ("xfs",) * N_OSDS
    if layout == "raw":
        return ("raw",) * N_OSDS
    if layout == "mixed":
        return ("xfs",) * N_OSDS + ("raw",)
    raise ValueError(f"unknown OSD layout {layout!r}; known: {', '.join(LAYOUTS)}")


def host_of_osd(osd_id: int) -> tuple[str, str]:
    """CRUSH host name and loopback address of an OSD in the lab."""
    return f"node{osd_id + 1}", f"127.0.0.{osd_id + 2}"


@dataclass(frozen=True)
class Ports:
    base: int

    @property
    def mon(self) -> int:
        return self.base

    @property
    def proxy(self) -> int:
        return self.base + 10

    @property
    def account(self) -> int:
        return self.base + 11

    @property
    def container(self) -> int:
        return self.base + 12

    @property
    def object(self) -> int:
        return self.base + 13

    @property
    def memcached(self) -> int:
        return self.base + 14

    @property
    def sshd(self) -> int:
        return self.base + 15

    @property
    def rsync(self) -> int:
        """The rsync daemon the account and container replicators push whole DBs through
        (base + 16..19 belong to the alert chain)."""
        return self.base + 20

    @property
    def fio(self) -> int:
        """The lab's ``[bench] fio_port`` (no longer listened on: fio's servers use Unix
        sockets; the lab test checks nothing answers there during a run)."""
        return self.base + 30

    @property
    def ms_range(self) -> tuple[int, int]:
        return self.base + 100, self.base + 199
