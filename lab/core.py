"""A real Ceph + Swift + SSH cluster on one machine, from Debian's packages.

Everything lives under one base directory (default ``/var/tmp/stordoc-lab``) and one port
range, so two labs can run side by side. Daemons are plain processes tracked by pid
files; ``down`` stops exactly those pids (checking each one's command line first, never a
name pattern), unmounts the lab's images and detaches its loop devices. ``break_`` and
``heal`` inject and undo real faults (an unmounted OSD data dir, a misconfigured cache
tier, a pool with too few PGs, an unmounted Swift device, a bad ring).

Layout (see docs/ARCHITECTURE.md): OSD N on CRUSH host ``node{N+1}`` (127.0.0.{N+2}); its
data dir ``ceph/osd/ceph-N`` is an XFS image loop-mounted there, holding small files and a
``block`` symlink to a loop device over a sparse file (as ceph-volume leaves it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.alerts import DAEMONS as ALERT_DAEMONS
from lab.alerts import AlertChain
from storage.procs import pid_alive

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
SWIFT_PART_POWER = 9  # the seed's choice for 4 disks: 512 partitions, 384 replicas/disk
SCENARIOS = ("osd-unmounted", "osd-not-activated", "cache-tier-misconfigured", "pool-few-pgs",
             "swift-device-unmounted", "swift-ring-bad", "swift-server-stopped",
             "swift-device-full", "swift-quarantine", "swift-async-pending",
             "swift-replication-stalled", "swift-ring-stale", "swift-dispersion-missing",
             "swift-replication-lost")
# swift-replication-lost: the ring's replication address for every device, somewhere no
# lab replicator finds itself (as after a ring built for a replication network the hosts
# are not on)
SWIFT_LOST_REPLICATION_IP = "127.0.0.99"
ASYNC_CONTAINER = "stordoc-lab-async"
ASYNC_OBJECTS = 40  # x 3 replicas = 120 async pendings, above the default warn (100)
QUARANTINE_CONTAINER = "stordoc-lab-quarantine"
QUARANTINE_OBJECTS = 4  # x 3 replicas = 12 quarantined, above the default growth warn (10)
SWIFT_FILL_FILE = "stordoc-lab-fill"  # at the device's root: no Swift daemon reads it
SWIFT_FILL_TO = 0.85  # above the default warn (0.80), below crit (0.90)
SWIFT_SERVERS = ("object", "container", "account")
# replicators run as daemons (a pass every few seconds) so replication age stays small on a
# healthy lab; `swift-replication-stalled` stops one of them while objects change
SWIFT_REPLICATOR_INTERVAL_S = 10
SWIFT_REPLICATION_IP = "127.0.0.1"
# the lab's auditor runs once, on demand (swift-quarantine): at Swift's default 20 files/s
# and 10 MB/s a lab that earlier tests filled outlasts any sane timeout; 0 = no rate limit,
# and no zero-byte-file child to wait for
AUDITOR_UNLIMITED = ("files_per_second = 0\nbytes_per_second = 0\n"
                     "zero_byte_files_per_second = 0")
STALLED_CONTAINER = "stordoc-lab-stalled"
STALLED_OBJECTS = 8
CACHE_BASE_POOL = "lab-base"
CACHE_POOL = "lab-cache"
FEW_PG_POOL = "lab-fewpg"
SWIFT_USER = "test:tester"
SWIFT_KEY = "testing"

Progress = Callable[[str], None]


class LabError(Exception):
    """A lab step failed; names the step and the log to read."""

    def __init__(self, step: str, detail: str, log: str | None = None) -> None:
        msg = f"lab step '{step}' failed: {detail.strip()[-800:]}"
        if log:
            msg += f" (see {log})"
        super().__init__(msg)
        self.step = step
        self.log = log


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


SWIFT_DEVICE_HOST = {"d1": ("node1", "127.0.0.2"), "d2": ("node2", "127.0.0.3"),
                     "d3": ("node3", "127.0.0.4"), "d4": ("node1", "127.0.0.2")}


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
        """Where each "host"'s ``fio --server`` listens during a multi-client RBD benchmark
        (on the host's own loopback address: labs side by side must not share a port)."""
        return self.base + 30

    @property
    def ms_range(self) -> tuple[int, int]:
        return self.base + 100, self.base + 199


def _run(argv: list[str], step: str, timeout: float = 60, log: str | None = None,
         input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           input=input, check=False)
    except subprocess.TimeoutExpired:
        raise LabError(step, f"{argv[0]} timed out after {timeout:.0f}s", log) from None
    except FileNotFoundError:
        raise LabError(step, f"{argv[0]} not found: install the lab packages "
                       "(scripts/setup)", log) from None
    if check and p.returncode != 0:
        raise LabError(step, f"{' '.join(argv)} exited {p.returncode}: {p.stderr or p.stdout}",
                       log)
    return p


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _wait(cond: Callable[[], bool], timeout: float, step: str, what: str,
          log: str | None = None, interval: float = 0.3) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(interval)
    raise LabError(step, f"timed out after {timeout:.0f}s waiting for {what}", log)


class Lab:
    """One lab under ``base`` with ports from ``port_base``."""

    def __init__(self, base: str | os.PathLike[str] = DEFAULT_DIR,
                 port_base: int | None = None, layout: str | None = None) -> None:
        self.base = Path(base).resolve()
        state = self._read_state()
        if port_base is None:
            port_base = int(state.get("port_base", DEFAULT_PORT_BASE)) if state else \
                DEFAULT_PORT_BASE
        self.ports = Ports(port_base)
        if layout is None:
            layout = str(state.get("osd_layout", DEFAULT_LAYOUT))
        self.kinds = layout_kinds(layout)
        self.layout = layout

    @property
    def n_osds(self) -> int:
        return len(self.kinds)

    @property
    def n_hosts(self) -> int:
        """CRUSH hosts with OSDs (node1..nodeN); Swift lives on node1..node3."""
        return max(3, self.n_osds)

    @property
    def cv_cluster(self) -> str:
        """The cluster *name* ceph-volume uses: unique per lab, so that its fixed paths
        (``/var/lib/ceph/osd/NAME-ID``, ``/var/lib/ceph/bootstrap-osd/NAME.keyring``) of
        labs side by side do not collide. The daemons keep the name ``ceph``."""
        return f"sdlab{self.ports.base}"

    @property
    def bootstrap_keyring(self) -> Path:
        return Path(CV_BOOTSTRAP_DIR) / f"{self.cv_cluster}.keyring"

    def osd_device(self, i: int) -> str | None:
        """The loop device holding a raw OSD's BlueStore label (its ``block``)."""
        return self._loop_for(self.images / f"osd-{i}.block")

    # ------------------------------------------------------------------ paths
    @property
    def ceph_dir(self) -> Path:
        return self.base / "ceph"

    @property
    def conf(self) -> Path:
        return self.ceph_dir / "ceph.conf"

    @property
    def admin_keyring(self) -> Path:
        return self.ceph_dir / "ceph.client.admin.keyring"

    @property
    def run_dir(self) -> Path:
        return self.ceph_dir / "run"

    @property
    def log_dir(self) -> Path:
        return self.base / "log"

    @property
    def images(self) -> Path:
        return self.base / "images"

    @property
    def pids(self) -> Path:
        return self.base / "pids"

    @property
    def swift_etc(self) -> Path:
        return self.base / "swift" / "etc"

    @property
    def swift_node(self) -> Path:
        return self.base / "swift" / "node"

    def ring_dir(self, kind: str) -> Path:
        """The swift_dir of one storage server (its own copy of the rings), so that one
        server can run with an older ring.gz than the others (``swift-ring-stale``)."""
        return self.base / "swift" / "srv" / kind

    @property
    def ssh_dir(self) -> Path:
        return self.base / "ssh"

    @property
    def config_path(self) -> Path:
        return self.base / "stordoc.toml"

    @property
    def state_path(self) -> Path:
        return self.base / "lab.json"

    def osd_dir(self, i: int) -> Path:
        if i < len(self.kinds) and self.kinds[i] == "raw":
            return Path(CV_OSD_ROOT) / f"{self.cv_cluster}-{i}"
        return self.ceph_dir / "osd" / f"ceph-{i}"

    def osd_pid_file(self, i: int) -> Path:
        return self.run_dir / f"ceph-osd.{i}.pid"

    # ------------------------------------------------------------------ state
    def _read_state(self) -> dict[str, Any]:
        try:
            return dict(json.loads((self.base / "lab.json").read_text()))
        except (OSError, ValueError):
            return {}

    def _write_state(self, **kv: Any) -> None:
        st = self._read_state()
        st.update(kv)
        self.state_path.write_text(json.dumps(st, indent=1))

    @property
    def fsid(self) -> str:
        return str(self._read_state().get("fsid", ""))

    # ------------------------------------------------------------------ ceph CLI
    def ceph(self, *args: str, timeout: float = 30, check: bool = True,
             step: str = "ceph") -> Any:
        """Run the ``ceph`` CLI against this lab, JSON out (None when it prints nothing)."""
        argv = ["ceph", "-c", str(self.conf), "--connect-timeout", str(int(timeout)),
                "--format", "json", *args]
        p = _run(argv, step, timeout=timeout + 5, check=check)
        out = p.stdout.strip()
        if not out:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return out

    def ceph_ok(self, *args: str, timeout: float = 30) -> bool:
        argv = ["ceph", "-c", str(self.conf), "--connect-timeout", str(int(timeout)), *args]
        try:
            return subprocess.run(argv, capture_output=True, timeout=timeout + 5,
                                  check=False).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    # ------------------------------------------------------------------ processes
    def _pidfile(self, name: str) -> Path:
        if name.startswith(("mon.", "mgr.", "osd.")):
            return self.run_dir / f"ceph-{name}.pid"
        return self.pids / f"{name}.pid"

    def pid(self, name: str) -> int | None:
        try:
            pid = int(self._pidfile(name).read_text().strip())
        except (OSError, ValueError):
            return None
        if not pid_alive(pid):
            return None
        # pid reuse guard: the process must be one of ours (its command line names our
        # base directory or our port)
        cl = _cmdline(pid)
        if str(self.base) not in cl and str(self.ports.memcached) not in cl:
            return None
        return pid

    def _known_daemons(self) -> list[str]:
        names = ["sshd", "memcached", "swift-proxy", "swift-account", "swift-container",
                 "swift-object", "rsyncd", "mgr.x"]
        names += [f"swift-{k}-replicator" for k in SWIFT_SERVERS]
        names += [f"osd.{i}" for i in range(self.n_osds)]
        names.append("mon.a")
        if self._read_state().get("alerts"):
            names[:0] = list(ALERT_DAEMONS)
        return names

    def stop(self, name: str, timeout: float = 20) -> bool:
        """Stop one daemon of this lab by its pid file. True if it was running."""
        pid = self.pid(name)
        if pid is None:
            return False
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.1)
        if pid_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            while pid_alive(pid):
                time.sleep(0.05)
        return True

    def _spawn(self, name: str, argv: list[str], step: str) -> int:
        """Start a non-daemonizing server in its own session, stdout to its log."""
        log = self.log_dir / f"{name}.log"
        with open(log, "ab") as out:
            try:
                p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     close_fds=True)
            except FileNotFoundError:
                raise LabError(step, f"{argv[0]} not found: install the lab packages "
                               "(scripts/setup)", str(log)) from None
        self._pidfile(name).write_text(str(p.pid))
        time.sleep(0.05)
        if p.poll() is not None:
            raise LabError(step, f"{name} exited at once with {p.returncode}", str(log))
        return p.pid

    # ------------------------------------------------------------------ mounts & loops
    def _mounts_under_base(self) -> list[str]:
        """Mounts of this lab: under its base dir, and its ceph-volume tmpfs data dirs."""
        out = []
        cv = f"{CV_OSD_ROOT}/{self.cv_cluster}-"
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                target = parts[1].replace("\\040", " ")
                if target == str(self.base) or target.startswith(str(self.base) + "/") \
                        or target.startswith(cv):
                    out.append(target)
        return sorted(out, key=lambda t: -t.count("/"))

    def loop_devices(self) -> dict[str, str]:
        """Loop devices of this lab: device -> backing file."""
        p = subprocess.run(["losetup", "-J", "-l"], capture_output=True, text=True,
                           check=False, timeout=15)
        if p.returncode != 0 or not p.stdout.strip():
            return {}
        res = {}
        for d in json.loads(p.stdout).get("loopdevices", []):
            back = (d.get("back-file") or "").replace(" (deleted)", "")
            if back.startswith(str(self.images) + "/"):
                res[d["name"]] = back
        return res

    def _loop_for(self, image: Path) -> str | None:
        for dev, back in self.loop_devices().items():
            if back == str(image):
                return dev
        return None

    def _attach(self, image: Path, step: str) -> str:
        dev = self._loop_for(image)
        if dev:
            return dev
        return _run(["losetup", "-f", "--show", str(image)], step).stdout.strip()

    def _mount(self, dev: str, target: Path, step: str) -> None:
        target.mkdir(parents=True, exist_ok=True)
        if os.path.ismount(target):
            return
        _run(["mount", "-t", "xfs", "-o", "noatime", dev, str(target)], step)

    def _umount(self, target: Path | str, step: str) -> None:
        if not os.path.ismount(target):
            return
        p = _run(["umount", str(target)], step, check=False)
        if p.returncode != 0:  # "target is busy": detach lazily, as an admin would
            _run(["umount", "-l", str(target)], step)

    # ------------------------------------------------------------------ up
    def up(self, progress: Progress | None = None, with_alerts: bool = False) -> float:
        """Bring the whole lab up from nothing; returns the seconds it took. With
        ``with_alerts``, also the alert chain (lab/alerts.py)."""
        say = progress or (lambda s: None)
        t0 = time.monotonic()
        say(f"cleaning any previous lab under {self.base}")
        self.down(quiet=True)
        for d in (self.base, self.run_dir, self.log_dir, self.images, self.pids,
                  self.swift_etc, self.swift_node, self.ssh_dir, self.base / "hosts",
                  self.base / "swift" / "cache", self.ceph_dir / "osd"):
            d.mkdir(parents=True, exist_ok=True)
        self._write_state(port_base=self.ports.base, fsid=str(uuid.uuid4()),
                          started=time.time(), osd_layout=self.layout)
        say("starting sshd and memcached")
        self._up_ssh()
        self._up_memcached()
        say("creating the Ceph monitor and manager")
        self._up_ceph_mon_mgr()
        say(f"creating {self.n_osds} BlueStore OSDs (layout {self.layout}: "
            f"{', '.join(self.kinds)})")
        with ThreadPoolExecutor(max_workers=2) as ex:
            swift_f = ex.submit(self._prepare_swift)
            self._up_osds()
            swift_f.result()
        say("starting Swift")
        self._up_swift()
        say("creating pools and waiting for HEALTH_OK")
        self._up_pools()
        if with_alerts:
            say("starting the alert chain (mgr prometheus module, Prometheus, Alertmanager)")
            self._write_state(alerts=True)
            AlertChain(self).up()
        self._write_config()
        took = time.monotonic() - t0
        self._write_state(up_seconds=round(took, 1))
        say(f"lab up in {took:.1f}s")
        return took

    def _up_ssh(self) -> None:
        step = "sshd"
        sd = self.ssh_dir
        for key in ("host_ed25519", "client_ed25519"):
            if not (sd / key).exists():
                _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                      f"stordoc-lab-{key}", "-f", str(sd / key)], step)
        pub = (sd / "client_ed25519.pub").read_text().strip()
        (sd / "authorized_keys").write_text(f'from="127.0.0.0/8" {pub}\n')
        os.chmod(sd / "authorized_keys", 0o600)
        hostpub = " ".join((sd / "host_ed25519.pub").read_text().split()[:2])
        hosts = ",".join(f"[127.0.0.{i}]:{self.ports.sshd}"
                         for i in range(1, self.n_hosts + 2))
        (sd / "known_hosts").write_text(f"{hosts} {hostpub}\n")
        log = self.log_dir / "sshd.log"
        (sd / "sshd_config").write_text(
            f"Port {self.ports.sshd}\nListenAddress 0.0.0.0\n"
            f"HostKey {sd / 'host_ed25519'}\nPidFile {self.pids / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {sd / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            "AllowUsers root@127.*\nMaxStartups 200:30:400\nMaxSessions 50\n"
            "LogLevel ERROR\nUseDNS no\nSubsystem sftp internal-sftp\n")
        Path("/run/sshd").mkdir(exist_ok=True)
        _run(["/usr/sbin/sshd", "-f", str(sd / "sshd_config"), "-E", str(log)], step,
             log=str(log))
        _wait(lambda: self.pid("sshd") is not None, 10, step, "sshd pid file", str(log))

    def _up_memcached(self) -> None:
        step = "memcached"
        _run(["memcached", "-d", "-u", "root", "-l", "127.0.0.1", "-p",
              str(self.ports.memcached), "-U", "0", "-m", "64",
              "-P", str(self.pids / "memcached.pid")], step)
        _wait(lambda: self.pid("memcached") is not None, 10, step, "memcached")

    def _ceph_conf(self) -> str:
        lo, hi = self.ports.ms_range
        st = self._read_state()
        osd_sections = "".join(
            f"\n[osd.{i}]\ncrush_location = root=default host={host_of_osd(i)[0]}\n"
            + (f"osd_data = {self.osd_dir(i)}\n" if k == "raw" else "")
            for i, k in enumerate(self.kinds))
        c = self.ceph_dir
        return f"""[global]
fsid = {st['fsid']}
mon_host = [v2:127.0.0.1:{self.ports.mon}]
mon_initial_members = a
public_network = 127.0.0.0/8
ms_bind_msgr1 = false
ms_bind_port_min = {lo}
ms_bind_port_max = {hi}
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = {self.run_dir}
pid_file = $run_dir/$cluster-$name.pid
admin_socket = $run_dir/$cluster-$name.asok
log_file = {self.log_dir}/$cluster-$name.log
mon_cluster_log_file = {self.log_dir}/$cluster.log
crash_dir = {c}/crash
keyring = {self.admin_keyring}
osd_pool_default_size = 3
osd_pool_default_min_size = 2
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 1
mon_allow_pool_delete = true
mon_data_avail_warn = 2
mon_data_avail_crit = 1
mon_warn_on_pool_no_redundancy = true
debug_ms = 0
debug_mon = 1
debug_osd = 1
debug_bluestore = 1
debug_rocksdb = 0

[mon]
mon_data = {c}/mon/$cluster-$id
keyring = {c}/mon/keyring

[mgr]
mgr_data = {c}/mgr/$cluster-$id
keyring = $mgr_data/keyring
mgr_stats_period = 2

[osd]
osd_data = {c}/osd/$cluster-$id
keyring = $osd_data/keyring
osd_objectstore = bluestore
osd_memory_target = 939524096
osd_memory_cache_min = 67108864
bluestore_cache_autotune = true
osd_crush_update_on_start = true
osd_op_num_shards = 2
osd_op_num_threads_per_shard = 1
# the lab's "disks" are files on one machine: Ceph's HDD recovery throttle (0.1 s sleep per
# op, one PG at a time) made a recovery of ~60k objects written while an OSD was down take
# over 7 minutes (measured: 9 objects/s), these settings ~100 s (600 objects/s)
osd_recovery_sleep_hdd = 0
osd_recovery_max_active_hdd = 8
osd_max_backfills = 4
{osd_sections}
[client]
keyring = {self.admin_keyring}
"""

    def _up_ceph_mon_mgr(self) -> None:
        step = "ceph monitor"
        c = self.ceph_dir
        (c / "mon").mkdir(exist_ok=True)
        (c / "crash").mkdir(exist_ok=True)
        self.conf.write_text(self._ceph_conf())
        mon_kr = c / "mon" / "keyring"
        _run(["ceph-authtool", "--create-keyring", str(mon_kr), "--gen-key", "-n", "mon.",
              "--cap", "mon", "allow *"], step)
        _run(["ceph-authtool", "--create-keyring", str(self.admin_keyring), "--gen-key",
              "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *",
              "--cap", "mds", "allow *", "--cap", "mgr", "allow *"], step)
        _run(["ceph-authtool", str(mon_kr), "--import-keyring", str(self.admin_keyring)],
             step)
        monmap = c / "monmap"
        _run(["monmaptool", "--create", "--clobber", "--fsid", self.fsid, "--addv", "a",
              f"[v2:127.0.0.1:{self.ports.mon}]", str(monmap)], step)
        log = str(self.log_dir / "ceph-mon.a.log")
        _run(["ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--monmap", str(monmap),
              "--keyring", str(mon_kr)], step, log=log)
        self.start_mon()
        step = "ceph manager"
        mgr_dir = c / "mgr" / "ceph-x"
        mgr_dir.mkdir(parents=True, exist_ok=True)
        _run(["ceph", "-c", str(self.conf), "auth", "get-or-create", "mgr.x", "mon",
              "allow profile mgr", "osd", "allow *", "mds", "allow *", "-o",
              str(mgr_dir / "keyring")], step, timeout=30)
        self.start_mgr()

    def start_mon(self) -> None:
        step = "start ceph-mon"
        log = str(self.log_dir / "ceph-mon.a.log")
        _run(["ceph-mon", "-c", str(self.conf), "-i", "a"], step, log=log)
        _wait(lambda: self.ceph_ok("mon", "stat", timeout=5), 30, step,
              "the monitor to answer", log)

    def start_mgr(self) -> None:
        step = "start ceph-mgr"
        _run(["ceph-mgr", "-c", str(self.conf), "-i", "x"], step,
             log=str(self.log_dir / "ceph-mgr.x.log"))
        _wait(lambda: self.pid("mgr.x") is not None, 20, step, "ceph-mgr pid file")

    def osd_start_argv(self, i: int | str = "{id}") -> list[str]:
        return ["ceph-osd", "-c", str(self.conf), "-i", str(i)]

    def _create_osd(self, i: int) -> None:
        step = f"create osd.{i}"
        img = self.images / f"osd-{i}.xfs"
        blk = self.images / f"osd-{i}.block"
        with open(img, "wb") as f:
            f.truncate(320 * 1024**2)
        with open(blk, "wb") as f:
            f.truncate(OSD_BLOCK_BYTES)
        _run(["mkfs.xfs", "-q", "-f", "-L", f"osd{i}", str(img)], step)
        dev = self._attach(img, step)
        bdev = self._attach(blk, step)
        d = self.osd_dir(i)
        self._mount(dev, d, step)
        os.symlink(bdev, d / "block")
        osd_uuid = str(uuid.uuid4())
        key = _run(["ceph-authtool", "--gen-print-key"], step).stdout.strip()
        secrets = self.base / f"osd-{i}.secret.json"
        secrets.write_text(json.dumps({"cephx_secret": key}))
        got = self.ceph("osd", "new", osd_uuid, "-i", str(secrets), step=step)
        secrets.unlink()
        if int(got["osdid"] if isinstance(got, dict) else got) != i:
            raise LabError(step, f"ceph osd new gave id {got}, expected {i}")
        (d / "keyring").write_text(f"[osd.{i}]\n\tkey = {key}\n")
        log = str(self.log_dir / f"ceph-osd.{i}.log")
        _run(["ceph-osd", "-c", str(self.conf), "-i", str(i), "--mkfs", "--osd-uuid",
              osd_uuid], step, timeout=120, log=log)
        self._write_state(**{f"osd{i}_uuid": osd_uuid})
        self.start_osd(i)

    def start_osd(self, i: int) -> None:
        step = f"start osd.{i}"
        _run(self.osd_start_argv(i), step, log=str(self.log_dir / f"ceph-osd.{i}.log"))

    def _up_osds(self) -> None:
        # ids are handed out in order by `osd new`, so create sequentially
        if "raw" in self.kinds:
            self._prepare_ceph_volume()
        for i, kind in enumerate(self.kinds):
            if kind == "raw":
                self._create_raw_osd(i)
            else:
                self._create_osd(i)
        n = self.n_osds
        _wait(lambda: self.osds_up_in() == (n, n), 90, "OSDs up",
              f"{n} OSDs up and in", str(self.log_dir / "ceph-osd.0.log"), 0.5)

    def ceph_volume_argv(self, *args: str) -> list[str]:
        """``ceph-volume`` on this lab: its config by ``CEPH_CONF``, its own cluster name."""
        return ["env", f"CEPH_CONF={self.conf}", "ceph-volume", "--cluster", self.cv_cluster,
                *args]

    def _prepare_ceph_volume(self) -> None:
        """The bootstrap-osd key where ceph-volume reads it; dirs its mkfs (run as the
        ``ceph`` user) writes to."""
        step = "ceph-volume bootstrap"
        Path(CV_BOOTSTRAP_DIR).mkdir(parents=True, exist_ok=True)
        Path(CV_OSD_ROOT).mkdir(parents=True, exist_ok=True)
        _run(["ceph", "-c", str(self.conf), "auth", "get-or-create", "client.bootstrap-osd",
              "mon", "allow profile bootstrap-osd", "-o", str(self.bootstrap_keyring)], step)
        for d in (self.log_dir, self.run_dir, self.ceph_dir / "crash"):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o1777)

    def _create_raw_osd(self, i: int) -> None:
        """An OSD as ``ceph-volume raw`` makes it: label on the device, tmpfs data dir."""
        step = f"create osd.{i} (ceph-volume raw)"
        blk = self.images / f"osd-{i}.block"
        with open(blk, "wb") as f:
            f.truncate(OSD_BLOCK_BYTES)
        dev = self._attach(blk, step)
        log = str(self.log_dir / f"ceph-volume.osd.{i}.log")
        p = _run(self.ceph_volume_argv("raw", "prepare", "--bluestore", "--data", dev), step,
                 timeout=180, log=log, check=False)
        with open(log, "a") as f:
            f.write(p.stdout + p.stderr)
        if p.returncode != 0:
            raise LabError(step, f"ceph-volume raw prepare exited {p.returncode}: "
                           f"{p.stderr or p.stdout}", log)
        self.activate_raw(i, step)
        self._write_state(**{f"osd{i}_device": dev})
        self.start_osd(i)

    def activate_raw(self, i: int, step: str) -> None:
        """``ceph-volume raw activate --device DEV --no-systemd`` (what a boot runs)."""
        dev = self.osd_device(i)
        if dev is None:
            raise LabError(step, f"no loop device attached for osd.{i}'s block image")
        if os.path.ismount(self.osd_dir(i)):
            return
        log = str(self.log_dir / f"ceph-volume.osd.{i}.log")
        p = _run(self.ceph_volume_argv("raw", "activate", "--device", dev, "--no-systemd"),
                 step, timeout=120, log=log, check=False)
        with open(log, "a") as f:
            f.write(p.stdout + p.stderr)
        if p.returncode != 0:
            raise LabError(step, f"ceph-volume raw activate exited {p.returncode}: "
                           f"{p.stderr or p.stdout}", log)

    def osds_up_in(self) -> tuple[int, int]:
        try:
            d = self.ceph("osd", "dump", timeout=10, check=False)
        except LabError:
            return (0, 0)
        if not isinstance(d, dict):
            return (0, 0)
        osds = d.get("osds", [])
        return (sum(o["up"] for o in osds), sum(o["in"] for o in osds))

    def osd_up(self, i: int) -> bool | None:
        d = self.ceph("osd", "dump", timeout=10, check=False)
        if not isinstance(d, dict):
            return None
        for o in d.get("osds", []):
            if o["osd"] == i:
                return bool(o["up"])
        return None

    def pgs_clean(self) -> bool:
        s = self.ceph("pg", "stat", timeout=10, check=False)
        if not isinstance(s, dict):
            return False
        summ = s.get("pg_summary", s)
        by = summ.get("num_pg_by_state", [])
        total = summ.get("num_pgs", 0)
        # active+clean+scrubbing(+deep), +snaptrim...: clean too (a deep scrub is no fault)
        clean = sum(x["num"] for x in by
                    if {"active", "clean"} <= set(str(x["name"]).split("+")))
        return total > 0 and clean == total

    def wait_pgs_clean(self, timeout: float, step: str) -> None:
        """Wait for active+clean (a slow recovery is waited out, not re-peered: a re-peer
        restarts it); the error says what the PGs were doing."""
        try:
            _wait(self.pgs_clean, timeout, step, "PGs active+clean")
        except LabError:
            raise LabError(step, f"timed out after {timeout:.0f}s waiting for PGs "
                           f"active+clean: {self.pg_states()}",
                           str(self.log_dir / "ceph.log")) from None

    def pg_states(self) -> str:
        """``pg stat``'s states in one line (for a test that waits in vain)."""
        s = self.ceph("pg", "stat", timeout=10, check=False)
        if not isinstance(s, dict):
            return str(s)[:200]
        summ = s.get("pg_summary", s)
        return ", ".join(f"{x['num']} {x['name']}" for x in summ.get("num_pg_by_state", []))

    def _up_pools(self) -> None:
        step = "pools"
        # the PG heuristic wants (OSDs x 100 / 3) rounded up to a power of two; a quarter of
        # it is the least that raises no finding: 32 for 3 OSDs, 64 for 4
        pgs = "32" if self.n_osds <= 3 else "64"
        self.ceph("osd", "pool", "create", "rbd", pgs, pgs, "replicated", step=step)
        self.ceph("osd", "pool", "application", "enable", "rbd", "rbd", step=step)
        _wait(self.pgs_clean, 90, "PGs active+clean", "all PGs active+clean",
              str(self.log_dir / "ceph.log"), 0.5)

    # ------------------------------------------------------------------ swift
    def _rsyncd_conf(self) -> str:
        """A DB replicator sends a whole DB a primary lacks by rsync (objects go by ssync):
        one daemon for the lab's devices, on the replication address and the lab's port."""
        mods = "".join(f"""
[{kind}]
path = {self.swift_node}
read only = false
lock file = {self.base / 'swift' / f'rsync-{kind}.lock'}
max connections = 8
""" for kind in SWIFT_SERVERS)
        return f"""# stordoc lab: rsync for the Swift replicators of the lab under {self.base}
uid = root
gid = root
use chroot = no
hosts allow = {SWIFT_REPLICATION_IP}
address = {SWIFT_REPLICATION_IP}
port = {self.ports.rsync}
log file = {self.log_dir / 'rsyncd.log'}
{mods}"""

    def _swift_server_conf(self, kind: str, port: int) -> str:
        return f"""[DEFAULT]
bind_ip = 0.0.0.0
bind_port = {port}
workers = 0
user = root
swift_dir = {self.ring_dir(kind)}
devices = {self.swift_node}
mount_check = true
# every daemon run on this conf (auditor, updater, recon-cron) writes the lab's cache
recon_cache_path = {self.base / 'swift' / 'cache'}
log_name = {kind}-server
log_level = WARNING

[pipeline:main]
pipeline = healthcheck recon {kind}-server

[app:{kind}-server]
use = egg:swift#{kind}

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:recon]
use = egg:swift#recon
recon_cache_path = {self.base / 'swift' / 'cache'}

[{kind}-replicator]
interval = {SWIFT_REPLICATOR_INTERVAL_S}
rsync_module = rsync://{SWIFT_REPLICATION_IP}:{self.ports.rsync}/{kind}
{"sync_method = ssync" if kind == "object" else ""}

[{kind}-auditor]
{AUDITOR_UNLIMITED if kind == "object" else ""}
[{kind}-updater]
"""

    def _prepare_swift(self) -> None:
        step = "swift devices and rings"
        fstabs: dict[str, list[str]] = {f"node{i}": [] for i in range(1, self.n_hosts + 1)}
        for i in (i for i, k in enumerate(self.kinds) if k == "xfs"):
            fstabs[host_of_osd(i)[0]].append(
                f"{self.images / f'osd-{i}.xfs'} {self.osd_dir(i)} xfs loop,noatime 0 0")
        for d in SWIFT_DEVICES:
            img = self.images / f"swift-{d}.xfs"
            with open(img, "wb") as f:
                f.truncate(320 * 1024**2)
            _run(["mkfs.xfs", "-q", "-f", "-L", d, str(img)], step)
            dev = self._attach(img, step)
            self._mount(dev, self.swift_node / d, step)
            fstabs[SWIFT_DEVICE_HOST[d][0]].append(
                f"{img} {self.swift_node / d} xfs loop,noatime 0 0")
        for host, lines in fstabs.items():
            (self.base / "hosts" / f"{host}.fstab").write_text(
                "# stordoc lab: what this host would mount at boot\n" + "\n".join(lines) + "\n")
        for kind, port in (("object", self.ports.object), ("container", self.ports.container),
                           ("account", self.ports.account)):
            b = str(self.swift_etc / f"{kind}.builder")
            _run(["swift-ring-builder", b, "create", str(SWIFT_PART_POWER), "3", "1"], step)
            for z, d in enumerate(SWIFT_DEVICES, start=1):
                ip = SWIFT_DEVICE_HOST[d][1]
                # clients reach a device at its host's address; replication runs on a
                # replication network (as many clusters do), here 127.0.0.1, the one address
                # the lab's single replicator per server finds itself by (Swift's
                # whataremyips lists interface addresses only: 127.0.0.2-4 are not, and a
                # replicator that finds no local device in the ring replicates nothing)
                _run(["swift-ring-builder", b, "add",
                      f"r1z{z}-{ip}:{port}R{SWIFT_REPLICATION_IP}:{port}/{d}", "100"], step)
            p = _run(["swift-ring-builder", b, "rebalance"], step, check=False)
            if p.returncode not in (0, 1):  # 1 = warning (e.g. balance), still written
                raise LabError(step, p.stdout + p.stderr)
            (self.swift_etc / f"{kind}-server.conf").write_text(
                self._swift_server_conf(kind, port))
        (self.swift_etc / "rsyncd.conf").write_text(self._rsyncd_conf())
        self.sync_server_rings()
        (self.swift_etc / "proxy-server.conf").write_text(f"""[DEFAULT]
bind_ip = 127.0.0.1
bind_port = {self.ports.proxy}
workers = 0
user = root
swift_dir = {self.swift_etc}
log_level = WARNING

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache tempauth proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
allow_account_management = true
account_autocreate = true

[filter:tempauth]
use = egg:swift#tempauth
user_admin_admin = admin .admin .reseller_admin
user_test_tester = {SWIFT_KEY} .admin

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:{self.ports.memcached}

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging
""")
        if not Path("/etc/swift/swift.conf").exists():
            # Swift reads the hash prefix/suffix here whatever swift_dir says
            Path("/etc/swift").mkdir(exist_ok=True)
            Path("/etc/swift/swift.conf").write_text(
                "[swift-hash]\nswift_hash_path_suffix = stordoc-lab\n"
                "swift_hash_path_prefix = stordoc-lab\n\n[storage-policy:0]\n"
                "name = Policy-0\ndefault = yes\n")

    def sync_server_rings(self, kinds: Iterable[str] = SWIFT_SERVERS) -> list[str]:
        """Copy every ring.gz of swift_etc into the swift_dir of each server in ``kinds``."""
        done = []
        for kind in kinds:
            self.ring_dir(kind).mkdir(parents=True, exist_ok=True)
            for f in sorted(self.swift_etc.glob("*.ring.gz")):
                shutil.copy2(f, self.ring_dir(kind) / f.name)
                done.append(str(self.ring_dir(kind) / f.name))
        return done

    def _up_swift(self) -> None:
        for kind in ("account", "container", "object", "proxy"):
            self.start_swift_server(kind)
        _wait(lambda: self.swift_healthy() is True, 30, "swift",
              "the Swift proxy healthcheck", str(self.log_dir / "swift-proxy.log"))
        self._spawn("rsyncd", ["rsync", "--daemon", "--no-detach",
                               f"--config={self.swift_etc / 'rsyncd.conf'}"], "start rsyncd")
        t0 = time.time()
        for kind in SWIFT_SERVERS:
            self.start_replicator(kind)
        for kind in SWIFT_SERVERS:
            self.wait_replication_pass(kind, t0, "swift replicators")
        self._recon_cron("swift recon cron")  # a node's cron: async pendings known from up

    def start_replicator(self, kind: str) -> int:
        return self._spawn(f"swift-{kind}-replicator",
                           [f"/usr/bin/swift-{kind}-replicator",
                            str(self.swift_etc / f"{kind}-server.conf"), "-v"],
                           f"start swift-{kind}-replicator")

    def replication_last(self, kind: str) -> tuple[float | None, float | None]:
        """(last completed, when that pass started) from the lab's recon cache."""
        try:
            cache = json.loads((self.base / "swift" / "cache" / f"{kind}.recon").read_text())
        except (OSError, ValueError):
            return None, None
        if kind == "object":
            last, took = cache.get("object_replication_last"), \
                cache.get("object_replication_time")
            took = took * 60 if isinstance(took, (int, float)) else None
        else:
            last, took = cache.get("replication_last"), cache.get("replication_time")
        if not isinstance(last, (int, float)):
            return None, None
        return float(last), float(last) - float(took or 0.0)

    def wait_replication_pass(self, kind: str, after: float, step: str,
                              timeout: float = 90) -> None:
        """Wait until a replication pass of ``kind`` that started after ``after`` is done."""
        def done() -> bool:
            _, started = self.replication_last(kind)
            return started is not None and started >= after
        _wait(done, timeout, step, f"a {kind} replication pass",
              str(self.log_dir / f"swift-{kind}-replicator.log"), 0.5)

    def swift_healthy(self) -> bool | str:
        try:
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.ports.proxy}/healthcheck", timeout=3) as r:
                return r.status == 200 or f"HTTP {r.status}"
        except (urllib.error.URLError, OSError) as e:
            return str(e)

    # ------------------------------------------------------------------ config
    @property
    def swift_start_script(self) -> Path:
        return self.base / "bin" / "swift-server-start"

    def _write_swift_start_script(self) -> None:
        """The lab's ``swift_server_start``: start one storage server detached, with the
        pid file ``lab down`` stops it by (a real host would use systemd)."""
        self.swift_start_script.parent.mkdir(parents=True, exist_ok=True)
        self.swift_start_script.write_text(f"""#!/bin/sh
# stordoc lab: start one Swift storage server of the lab under {self.base}
set -e
case "$1" in object|container|account) ;; *) echo "unknown server: $1" >&2; exit 64;; esac
setsid /usr/bin/swift-"$1"-server "{self.swift_etc}/$1-server.conf" -v \
  >>"{self.log_dir}/swift-$1.log" 2>&1 </dev/null &
echo $! >"{self.pids}/swift-$1.pid"
""")
        self.swift_start_script.chmod(0o755)
        self.replicator_start_script.write_text(f"""#!/bin/sh
# stordoc lab: start the replicator of one Swift storage server of the lab under {self.base}
set -e
case "$1" in object|container|account) ;; *) echo "unknown server: $1" >&2; exit 64;; esac
setsid /usr/bin/swift-"$1"-replicator "{self.swift_etc}/$1-server.conf" -v \\
  >>"{self.log_dir}/swift-$1-replicator.log" 2>&1 </dev/null &
echo $! >"{self.pids}/swift-$1-replicator.pid"
""")
        self.replicator_start_script.chmod(0o755)

    @property
    def replicator_start_script(self) -> Path:
        return self.base / "bin" / "swift-replicator-start"

    def start_swift_server(self, kind: str) -> int:
        return self._spawn(f"swift-{kind}", [f"/usr/bin/swift-{kind}-server",
                                             str(self.swift_etc / f"{kind}-server.conf"),
                                             "-v"], f"start swift-{kind}-server")

    def swift_server_answers(self, kind: str) -> bool:
        port = getattr(self.ports, kind)
        try:
            with urllib.request.urlopen(f"http://127.0.0.2:{port}/recon/unmounted",
                                        timeout=3) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _write_config(self) -> None:
        self._write_swift_start_script()
        hosts = ""
        for n in range(1, self.n_hosts + 1):
            i = n - 1  # the OSD on this host
            raw = i < self.n_osds and self.kinds[i] == "raw"
            data_dir = f"{CV_OSD_ROOT}/{self.cv_cluster}-{{id}}" if raw \
                else f"{self.ceph_dir / 'osd'}/ceph-{{id}}"
            # only the hosts that carry Swift devices read rings (node4 holds an OSD only)
            ring_dirs = json.dumps([str(self.ring_dir(k)) for k in SWIFT_SERVERS])
            swift = (f'swift_devices_dir = "{self.swift_node}"\n'
                     f"swift_ring_dirs = {ring_dirs}\n") if n <= 3 else ""
            hosts += f"""
[[clusters.lab.hosts]]
name = "node{n}"
address = "127.0.0.{n + 1}"
port = {self.ports.sshd}
user = "root"
key_file = "{self.ssh_dir / 'client_ed25519'}"
known_hosts = "{self.ssh_dir / 'known_hosts'}"
timeout = 10
osd_start = {json.dumps(self.osd_start_argv())}
osd_data_dir = "{data_dir}"
osd_pid_file = "{self.run_dir}/ceph-osd.{{id}}.pid"
osd_activate_raw = {json.dumps(self.ceph_volume_argv(
                "raw", "activate", "--device", "{device}", "--no-systemd"))}
{swift}swift_server_start = {json.dumps([str(self.swift_start_script), "{server}"])}
swift_replicator_start = {json.dumps([str(self.replicator_start_script), "{server}"])}
fstab_path = "{self.base / 'hosts' / f'node{n}.fstab'}"
"""
        self.config_path.write_text(f"""# Generated by `stordoc lab up` for the lab under {self.base}.
journal = "{self.base / 'journal.db'}"
default_cluster = "lab"

[clusters.lab]
muted = []

[clusters.lab.ceph]
conf = "{self.conf}"
keyring = "{self.admin_keyring}"
client = "client.admin"
timeout = 10

[clusters.lab.swift]
swift_dir = "{self.swift_etc}"
proxy_url = "http://127.0.0.1:{self.ports.proxy}"
auth_url = "http://127.0.0.1:{self.ports.proxy}/auth/v1.0"
user = "{SWIFT_USER}"
key = {{ value = "{SWIFT_KEY}" }}
{hosts}
[bench]
fio_port = {self.ports.fio}
{self._alerts_config()}""")

    def _alerts_config(self) -> str:
        """The [alerts] settings of a lab with the alert chain: the webhook's token and
        port, and Alertmanager's URL for silences."""
        if not self._read_state().get("alerts"):
            return ""
        chain = AlertChain(self)
        return f"""
[alerts]
token = {{ file = "{chain.token_file}" }}
alertmanager_url = "{chain.alertmanager_url}"
cluster_label = "cluster"
"""

    # ------------------------------------------------------------------ status
    def status(self) -> dict[str, Any]:
        """What runs, where, on which ports; Ceph health; Swift healthcheck."""
        procs = {n: self.pid(n) for n in self._known_daemons()}
        ports = {"mon": self.ports.mon, "swift-proxy": self.ports.proxy,
                 "swift-account": self.ports.account,
                 "swift-container": self.ports.container,
                 "swift-object": self.ports.object, "memcached": self.ports.memcached,
                 "sshd": self.ports.sshd}
        if self._read_state().get("alerts"):
            chain = AlertChain(self)
            ports.update(prometheus=chain.ports.prometheus,
                         alertmanager=chain.ports.alertmanager)
        health: Any = None
        if procs.get("mon.a"):
            try:
                h = self.ceph("health", timeout=8, check=False)
                health = h.get("status") if isinstance(h, dict) else h
            except LabError as e:
                health = str(e)
        return {
            "base": str(self.base), "config": str(self.config_path),
            "exists": self.state_path.exists(), "processes": procs, "ports": ports,
            "ceph_health": health, "osds_up_in": self.osds_up_in() if procs.get("mon.a")
            else None,
            "swift_healthcheck": self.swift_healthy() if procs.get("swift-proxy") else None,
            "mounts": self._mounts_under_base(), "loop_devices": self.loop_devices(),
            "up_seconds": self._read_state().get("up_seconds"),
            "osd_layout": self.layout, "osd_kinds": list(self.kinds),
        }

    def running(self) -> bool:
        st = self.status()
        return all(st["processes"].values()) and st["swift_healthcheck"] is True

    # ------------------------------------------------------------------ down
    def down(self, quiet: bool = False) -> dict[str, Any]:
        """Stop what this lab started, unmount, detach, remove the base directory."""
        stopped = []
        for name in self._known_daemons():
            if self.stop(name):
                stopped.append(name)
        unmounted = []
        for target in self._mounts_under_base():
            try:
                self._umount(target, "unmount")
                unmounted.append(target)
            except LabError:
                if not quiet:
                    raise
        detached = []
        for dev in self.loop_devices():
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False,
                           timeout=15)
            detached.append(dev)
        if not self._mounts_under_base():
            for d in Path(CV_OSD_ROOT).glob(f"{self.cv_cluster}-*"):
                if d.is_dir() and not os.path.ismount(d):
                    shutil.rmtree(d, ignore_errors=True)
            self.bootstrap_keyring.unlink(missing_ok=True)
        if self.base.exists() and not self._mounts_under_base():
            shutil.rmtree(self.base, ignore_errors=True)
        return {"stopped": stopped, "unmounted": unmounted, "detached": detached}

    # ------------------------------------------------------------------ faults
    def break_(self, scenario: str, osd: int = 1, out: bool = False,
               device: str = "d2", mode: str = "drift", server: str = "object") -> str:
        """Inject a real fault; returns a one-line description of what was done."""
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
        if scenario == "swift-quarantine":
            return self._break_quarantine()
        if scenario == "swift-async-pending":
            return self._break_async()
        if scenario == "swift-replication-stalled":
            return self._break_stalled(server)
        if scenario == "swift-ring-stale":
            return self._break_ring_stale(server)
        if scenario == "swift-replication-lost":
            return self._break_replication_lost(server)
        if scenario == "swift-dispersion-missing":
            return self._break_dispersion(device)
        if scenario == "swift-device-full":
            if device not in SWIFT_DEVICES:
                raise ValueError(f"the lab's Swift devices are {', '.join(SWIFT_DEVICES)}")
            root = self.swift_node / device
            if not os.path.ismount(root):
                raise LabError(f"break swift-device-full {device}", f"{root} is not mounted")
            st = os.statvfs(root)
            size = st.f_blocks * st.f_frsize
            used = (st.f_blocks - st.f_bfree) * st.f_frsize
            want = int(size * SWIFT_FILL_TO) - used
            if want > 0:
                with open(root / SWIFT_FILL_FILE, "ab") as fill:
                    os.posix_fallocate(fill.fileno(), 0, want)
            return f"Swift device {device} filled to {SWIFT_FILL_TO:.0%} ({root / SWIFT_FILL_FILE})"
        if scenario == "swift-server-stopped":
            if server not in SWIFT_SERVERS:
                raise ValueError(f"the lab's Swift servers are {', '.join(SWIFT_SERVERS)}")
            if not self.stop(f"swift-{server}"):
                return f"the {server} server was not running"
            return (f"swift-{server}-server stopped (port {getattr(self.ports, server)} on "
                    "every lab host)")
        if scenario in ("osd-unmounted", "osd-not-activated"):
            kind_wanted = "xfs" if scenario == "osd-unmounted" else "raw"
            mine = [i for i, k in enumerate(self.kinds) if k == kind_wanted]
            if osd not in mine:
                raise ValueError(f"{scenario} needs a {kind_wanted} OSD; this lab's are "
                                 f"{', '.join(f'osd.{i}' for i in mine) or 'none'} "
                                 f"(layout {self.layout})")
            step = f"break {scenario} osd.{osd}"
            self.stop(f"osd.{osd}")
            self.ceph("osd", "down", str(osd), check=False, step=step)
            self._umount(self.osd_dir(osd), step)
            _wait(lambda: self.osd_up(osd) is False, 60, step, f"osd.{osd} down")
            if out:
                self.ceph("osd", "out", str(osd), step=step)
            what = "tmpfs unmounted (as after a reboot whose activation did not run)" \
                if kind_wanted == "raw" else "unmounted"
            return (f"osd.{osd} stopped and {self.osd_dir(osd)} {what}"
                    + (", marked out" if out else ""))
        if scenario == "cache-tier-misconfigured":
            step = "break cache-tier-misconfigured"
            if {CACHE_BASE_POOL, CACHE_POOL} & set(self._pool_names()):
                # left by an earlier (maybe partial) break: start over, or the second
                # `application enable` on what is already a tier fails (EINVAL)
                self.heal("cache-tier-misconfigured")
            for pool in (CACHE_BASE_POOL, CACHE_POOL):
                self.ceph("osd", "pool", "create", pool, "8", "8", "replicated", step=step)
                self.ceph("osd", "pool", "application", "enable", pool, "rbd", step=step)
            self.ceph("osd", "tier", "add", CACHE_BASE_POOL, CACHE_POOL, step=step)
            self.ceph("osd", "tier", "cache-mode", CACHE_POOL, "writeback", step=step)
            self.ceph("osd", "tier", "set-overlay", CACHE_BASE_POOL, CACHE_POOL, step=step)
            for k, v in (("cache_target_dirty_ratio", "0.8"),
                         ("cache_target_dirty_high_ratio", "0.9"),
                         ("cache_target_full_ratio", "0.5")):
                self.ceph("osd", "pool", "set", CACHE_POOL, k, v, step=step)
            _wait(self.pgs_clean, 60, step, "PGs active+clean")
            return (f"writeback cache {CACHE_POOL} over {CACHE_BASE_POOL}: no target_max_*, "
                    "dirty 0.8 > full 0.5, no hit set")
        if scenario == "pool-few-pgs":
            step = "break pool-few-pgs"
            self.ceph("osd", "pool", "create", FEW_PG_POOL, "2", "2", "replicated",
                      step=step)
            self.ceph("osd", "pool", "application", "enable", FEW_PG_POOL, "rbd", step=step)
            _wait(self.pgs_clean, 60, step, "PGs active+clean")
            return f"pool {FEW_PG_POOL} with pg_num 2"
        if scenario == "swift-device-unmounted":
            if device not in SWIFT_DEVICES:
                raise ValueError(f"the lab's Swift devices are {', '.join(SWIFT_DEVICES)}")
            self._umount(self.swift_node / device, f"break swift-device-unmounted {device}")
            return f"Swift device {device} unmounted from {self.swift_node / device}"
        # swift-ring-bad
        step = f"break swift-ring-bad ({mode})"
        bak = self.base / "swift" / "ring-backup"
        if not bak.exists():
            bak.mkdir()
            for f in self.swift_etc.glob("*.builder"):
                shutil.copy2(f, bak / f.name)
            for f in self.swift_etc.glob("*.ring.gz"):
                shutil.copy2(f, bak / f.name)
        b = str(self.swift_etc / "object.builder")
        if mode == "replicas":
            # more replicas than zones and devices: the builder takes the setting, its
            # rebalance then refuses ("requires more than 4 devices"), so ring.gz keeps 3
            _run(["swift-ring-builder", b, "set_replicas", "5"], step)
            return "object.builder set to 5 replicas over 4 devices in 4 zones"
        _run(["swift-ring-builder", b, "set_weight", "/d4", "50"], step)
        return "object.builder changed (d4 weight 50) without writing object.ring.gz"

    def heal(self, scenario: str, osd: int = 1, device: str = "d2",
             server: str = "object") -> str:
        """Undo a fault injected by ``break_``."""
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
        if scenario == "swift-server-stopped":
            if server not in SWIFT_SERVERS:
                raise ValueError(f"the lab's Swift servers are {', '.join(SWIFT_SERVERS)}")
            step = f"heal swift-server-stopped {server}"
            if self.pid(f"swift-{server}") is None:
                self.start_swift_server(server)
            _wait(lambda: self.swift_server_answers(server), 30, step,
                  f"the {server} server answering recon",
                  str(self.log_dir / f"swift-{server}.log"))
            self.settle_replication(step)
            return f"swift-{server}-server running and answering recon"
        if scenario == "swift-quarantine":
            return self._heal_quarantine()
        if scenario == "swift-async-pending":
            return self._heal_async()
        if scenario == "swift-replication-stalled":
            return self._heal_stalled(server)
        if scenario == "swift-ring-stale":
            return self._heal_ring_stale()
        if scenario == "swift-replication-lost":
            return self._heal_replication_lost()
        if scenario == "swift-dispersion-missing":
            return self._heal_dispersion()
        if scenario == "swift-device-full":
            if device not in SWIFT_DEVICES:
                raise ValueError(f"the lab's Swift devices are {', '.join(SWIFT_DEVICES)}")
            (self.swift_node / device / SWIFT_FILL_FILE).unlink(missing_ok=True)
            self.settle_replication(f"heal swift-device-full {device}")
            return f"Swift device {device}: fill file removed"
        if scenario in ("osd-unmounted", "osd-not-activated"):
            step = f"heal {scenario} osd.{osd}"
            if not 0 <= osd < self.n_osds:
                raise ValueError(f"the lab has osd.0-osd.{self.n_osds - 1}, not osd.{osd}")
            if self.kinds[osd] == "raw":
                self.activate_raw(osd, step)
            else:
                img = self.images / f"osd-{osd}.xfs"
                self._mount(self._attach(img, step), self.osd_dir(osd), step)
            if self.pid(f"osd.{osd}") is None:
                self.start_osd(osd)
            _wait(lambda: self.osd_up(osd) is True, 60, step, f"osd.{osd} up",
                  str(self.log_dir / f"ceph-osd.{osd}.log"))
            self.ceph("osd", "in", str(osd), step=step)
            self.wait_pgs_clean(300, step)
            return f"osd.{osd} {'activated' if self.kinds[osd] == 'raw' else 'mounted'}, " \
                "started and in"
        if scenario == "cache-tier-misconfigured":
            step = "heal cache-tier-misconfigured"
            pools = self._pool_names()
            if CACHE_POOL in pools and CACHE_BASE_POOL in pools:
                self.ceph("osd", "tier", "remove-overlay", CACHE_BASE_POOL, check=False,
                          step=step)
                self.ceph("osd", "tier", "cache-mode", CACHE_POOL, "none",
                          "--yes-i-really-mean-it", check=False, step=step)
                self.ceph("osd", "tier", "remove", CACHE_BASE_POOL, CACHE_POOL, check=False,
                          step=step)
            for pool in (CACHE_POOL, CACHE_BASE_POOL):
                if pool in pools:
                    self.ceph("osd", "pool", "delete", pool, pool,
                              "--yes-i-really-really-mean-it", step=step)
            _wait(self.pgs_clean, 60, step, "PGs active+clean")
            return "cache tier and its pools removed"
        if scenario == "pool-few-pgs":
            step = "heal pool-few-pgs"
            if FEW_PG_POOL in self._pool_names():
                self.ceph("osd", "pool", "delete", FEW_PG_POOL, FEW_PG_POOL,
                          "--yes-i-really-really-mean-it", step=step)
            _wait(self.pgs_clean, 60, step, "PGs active+clean")
            return f"pool {FEW_PG_POOL} removed"
        if scenario == "swift-device-unmounted":
            step = f"heal swift-device-unmounted {device}"
            img = self.images / f"swift-{device}.xfs"
            self._mount(self._attach(img, step), self.swift_node / device, step)
            # the passes that failed towards it (507) count until each replicator's next one
            self.settle_replication(step)
            return f"Swift device {device} mounted again"
        step = "heal swift-ring-bad"
        self._restore_rings(self.base / "swift" / "ring-backup")
        return "rings and builders restored"

    def _swift_conn(self) -> Any:
        from swiftclient.client import Connection

        return Connection(authurl=f"http://127.0.0.1:{self.ports.proxy}/auth/v1.0",
                          user=SWIFT_USER, key=SWIFT_KEY, retries=1, timeout=15)

    def _data_files(self) -> set[Path]:
        return set(self.swift_node.glob("d*/objects/*/*/*/*.data"))

    def _break_quarantine(self) -> str:
        """Objects PUT, their replicas corrupted on disk, the object auditor run once."""
        step = "break swift-quarantine"
        before = self._data_files()
        conn = self._swift_conn()
        conn.put_container(QUARANTINE_CONTAINER)
        for i in range(QUARANTINE_OBJECTS):
            conn.put_object(QUARANTINE_CONTAINER, f"obj-{i}", contents=b"stordoc lab " * 64)
        conn.close()
        ours = sorted(self._data_files() - before)
        for path in ours:  # same size, other bytes: the ETag no longer matches
            with open(path, "r+b") as f:
                f.write(b"X" * path.stat().st_size)
        devices = sorted({p.relative_to(self.swift_node).parts[0] for p in ours})
        _run(["swift-object-auditor", str(self.swift_etc / "object-server.conf"), "once",
              "--devices", ",".join(devices)],
             step, timeout=300, log=str(self.log_dir / "swift-object-auditor.log"))
        quarantined = list(self.swift_node.glob("d*/quarantined/objects/*"))
        return (f"{len(ours)} object replica(s) corrupted, the auditor quarantined "
                f"{len(quarantined)}")

    def _recon_cron(self, step: str) -> None:
        """What cron runs on a real node: count async pendings into the recon cache."""
        _run(["swift-recon-cron", str(self.swift_etc / "object-server.conf")], step,
             timeout=60)

    def _break_async(self) -> str:
        """Container servers unreachable during PUTs: object servers queue the updates."""
        step = "break swift-async-pending"
        before = set(self.swift_node.glob("d*/async_pending*/*/*"))
        conn = self._swift_conn()
        conn.put_container(ASYNC_CONTAINER)
        conn.head_container(ASYNC_CONTAINER)  # the proxy caches the container's info
        self.stop("swift-container")
        try:
            for i in range(ASYNC_OBJECTS):
                conn.put_object(ASYNC_CONTAINER, f"obj-{i}", contents=b"async")
        finally:
            conn.close()
        self._recon_cron(step)
        now = set(self.swift_node.glob("d*/async_pending*/*/*"))
        older = f", {len(now & before)} older ones still queued" if now & before else ""
        return (f"container server stopped during {ASYNC_OBJECTS} PUTs: {len(now - before)} "
                f"async pendings{older} (the container server stays stopped until heal)")

    def _heal_async(self) -> str:
        step = "heal swift-async-pending"
        if self.pid("swift-container") is None:
            self.start_swift_server("container")
        _wait(lambda: self.swift_server_answers("container"), 30, step,
              "the container server answering recon")
        # on a loaded machine one updater pass can find the fresh container server too slow
        # and keep its pendings: pass again until none is left (bounded), then recount
        for _ in range(10):
            _run(["swift-object-updater", str(self.swift_etc / "object-server.conf"), "once"],
                 step, timeout=120, log=str(self.log_dir / "swift-object-updater.log"))
            if not any(True for _ in self.swift_node.glob("d*/async_pending*/*/*")):
                break
            time.sleep(2)
        self._recon_cron(step)
        self.settle_replication(step)
        left = sum(1 for _ in self.swift_node.glob("d*/async_pending*/*/*"))
        conn = self._swift_conn()
        try:
            _, objs = conn.get_container(ASYNC_CONTAINER)
            for o in objs:
                conn.delete_object(ASYNC_CONTAINER, o["name"])
            conn.delete_container(ASYNC_CONTAINER)
        except Exception:  # noqa: BLE001  (already gone)
            pass
        finally:
            conn.close()
        return f"container server started, object-updater run: {left} async pendings left"

    def _heal_quarantine(self) -> str:
        conn = self._swift_conn()
        try:
            _, objs = conn.get_container(QUARANTINE_CONTAINER)
            for o in objs:
                conn.delete_object(QUARANTINE_CONTAINER, o["name"])
            conn.delete_container(QUARANTINE_CONTAINER)
        except Exception:  # noqa: BLE001  (already gone)
            pass
        finally:
            conn.close()
        n = 0
        for d in self.swift_node.glob("d*/quarantined"):
            n += len(list(d.glob("objects/*")))
            shutil.rmtree(d)
        return f"lab objects deleted, {n} quarantined replica(s) removed"

    def settle_replication(self, step: str) -> None:
        """After a server was down: (re)start any stopped replicator and wait for a pass of
        each that started now, so recon's last pass counts no failures of the fault."""
        t0 = time.time()
        for kind in SWIFT_SERVERS:
            if self.pid(f"swift-{kind}-replicator") is None:
                self.start_replicator(kind)
        for kind in SWIFT_SERVERS:
            self.wait_replication_pass(kind, t0, step)

    def _break_stalled(self, server: str) -> str:
        """The replicator of ``server`` stopped, then objects change (PUT into a container)."""
        if server not in SWIFT_SERVERS:
            raise ValueError(f"the lab's Swift servers are {', '.join(SWIFT_SERVERS)}")
        was = self.stop(f"swift-{server}-replicator")
        last, _ = self.replication_last(server)
        conn = self._swift_conn()
        try:
            conn.put_container(STALLED_CONTAINER)
            for i in range(STALLED_OBJECTS):
                conn.put_object(STALLED_CONTAINER, f"obj-{i}", contents=b"stalled " * 32)
        finally:
            conn.close()
        return (f"swift-{server}-replicator " + ("stopped" if was else "was not running")
                + f" (last pass completed at {last}); {STALLED_OBJECTS} objects PUT since")

    def _heal_stalled(self, server: str) -> str:
        step = "heal swift-replication-stalled"
        conn = self._swift_conn()
        try:
            _, objs = conn.get_container(STALLED_CONTAINER)
            for o in objs:
                conn.delete_object(STALLED_CONTAINER, o["name"])
            conn.delete_container(STALLED_CONTAINER)
        except Exception:  # noqa: BLE001  (already gone)
            pass
        finally:
            conn.close()
        self.settle_replication(step)
        last, _ = self.replication_last(server)
        return f"swift-{server}-replicator running, a pass completed at {last}"

    def _break_ring_stale(self, server: str) -> str:
        """The object ring changes (device meta, written with write_ring) and reaches every
        server but ``server``, which keeps the older ring.gz."""
        if server not in SWIFT_SERVERS:
            raise ValueError(f"the lab's Swift servers are {', '.join(SWIFT_SERVERS)}")
        step = "break swift-ring-stale"
        bak = self.base / "swift" / "ring-stale-backup"
        if not bak.exists():
            bak.mkdir()
            for f in ("object.builder", "object.ring.gz"):
                shutil.copy2(self.swift_etc / f, bak / f)
        b = str(self.swift_etc / "object.builder")
        _run(["swift-ring-builder", b, "set_info", "--device", "d1", "--change-meta",
              f"stordoc-lab-{int(time.time())}", "--yes"], step)
        p = _run(["swift-ring-builder", b, "write_ring"], step, check=False)
        if p.returncode not in (0, 1):
            raise LabError(step, p.stdout + p.stderr)
        self.sync_server_rings([k for k in SWIFT_SERVERS if k != server])
        return (f"object ring changed and copied to every server but the {server} server "
                f"({self.ring_dir(server) / 'object.ring.gz'} is the older ring)")

    def _break_replication_lost(self, server: str) -> str:
        """``server``'s ring gets replication address 127.0.0.99 on every device (written
        and copied to every server): its replicator keeps completing passes that do nothing."""
        if server not in SWIFT_SERVERS:
            raise ValueError(f"the lab's Swift servers are {', '.join(SWIFT_SERVERS)}")
        step = "break swift-replication-lost"
        bak = self.base / "swift" / "ring-lost-backup"
        if not bak.exists():
            bak.mkdir()
            for f in (f"{server}.builder", f"{server}.ring.gz"):
                shutil.copy2(self.swift_etc / f, bak / f)
        b = str(self.swift_etc / f"{server}.builder")
        _run(["swift-ring-builder", b, "set_info", "--replication-ip", SWIFT_REPLICATION_IP,
              "--change-replication-ip", SWIFT_LOST_REPLICATION_IP, "--yes"], step)
        p = _run(["swift-ring-builder", b, "write_ring"], step, check=False)
        if p.returncode not in (0, 1):
            raise LabError(step, p.stdout + p.stderr)
        self.sync_server_rings()
        return (f"{server} ring: every device replicates at {SWIFT_LOST_REPLICATION_IP}, an "
                f"address no lab replicator has (swift-{server}-replicator replicates nothing)")

    def _heal_replication_lost(self) -> str:
        bak = self.base / "swift" / "ring-lost-backup"
        self._restore_rings(bak)
        # the replicators reload a changed ring within 15 s: wait for a pass after that
        time.sleep(16)
        self.settle_replication("heal swift-replication-lost")
        return "ring and builder restored and copied to every server, a pass completed"

    @property
    def _dispersion_aside(self) -> Path:
        return self.base / "swift" / "dispersion-removed"

    def _break_dispersion(self, device: str) -> str:
        """One replica of one of stordoc's dispersion objects removed from ``device`` (its
        hash directory moved aside, kept for heal). Needs ``swift dispersion populate``."""
        from storage.dispersion import OBJECT_CONTAINER, hash_prefix_suffix, object_names

        if device not in SWIFT_DEVICES:
            raise ValueError(f"the lab's Swift devices are {', '.join(SWIFT_DEVICES)}")
        step = "break swift-dispersion-missing"
        # a replication pass first: it hashes the suffixes populate's PUTs invalidated, so
        # the copy removed below stays missing (hashed after it, the suffix would differ
        # from its peers' and the replicators would put the copy straight back)
        self.wait_replication_pass("object", time.time(), step)
        pre, suf = hash_prefix_suffix()
        account = f"AUTH_{SWIFT_USER.split(':')[0]}"
        for name in object_names(10_000):
            h = hashlib.md5(pre + b"/" + f"{account}/{OBJECT_CONTAINER}/{name}".encode()
                            + suf, usedforsecurity=False).hexdigest()
            found = list((self.swift_node / device / "objects").glob(f"*/{h[-3:]}/{h}"))
            if not found:
                continue
            src = found[0]
            dst = self._dispersion_aside / device / src.relative_to(self.swift_node / device)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(src), str(dst))
            return f"replica of {OBJECT_CONTAINER}/{name} removed from {device} ({src})"
        raise LabError(step, f"no dispersion object has a replica on {device}: run "
                       "'stordoc swift dispersion populate' first")

    def _heal_dispersion(self) -> str:
        n = 0
        if self._dispersion_aside.exists():
            for dev_dir in self._dispersion_aside.iterdir():
                for hdir in sorted(dev_dir.glob("objects/*/*/*")):
                    dst = self.swift_node / dev_dir.name / hdir.relative_to(dev_dir)
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    if not dst.exists():
                        shutil.move(str(hdir), str(dst))
                        n += 1
            shutil.rmtree(self._dispersion_aside)
        return f"{n} removed replica(s) put back"

    def _drop_push_backups(self) -> None:
        """The backups a ring push (swift-ring-push, a rebalance's distribution) left
        beside each server's rings: the lab's heal puts its own rings back."""
        for kind in SWIFT_SERVERS:
            for f in self.ring_dir(kind).glob("*.stordoc-*"):
                f.unlink()

    def _restore_rings(self, bak: Path) -> None:
        """Put a scenario's saved builders and rings back into swift_etc (the builder must not
        look newer than the ring it was written with), drop the backup and push backups,
        and copy the rings to every server."""
        if bak.exists():
            now = time.time()
            for f in bak.iterdir():
                shutil.copy2(f, self.swift_etc / f.name)
                t = now - 1 if f.name.endswith(".builder") else now
                os.utime(self.swift_etc / f.name, (t, t))
            shutil.rmtree(bak)
        self._drop_push_backups()
        self.sync_server_rings()

    def _heal_ring_stale(self) -> str:
        bak = self.base / "swift" / "ring-stale-backup"
        self._restore_rings(bak)
        return "object ring and builder restored and copied to every server"

    def _pool_names(self) -> list[str]:
        got = self.ceph("osd", "pool", "ls", check=False)
        return list(got) if isinstance(got, list) else []

    def stop_mon(self) -> bool:
        return self.stop("mon.a")


def scenarios() -> Iterable[str]:
    return SCENARIOS
