"""The lab's Swift: four XFS devices on three lab hosts, the rings (one copy per storage
server), memcached, the proxy and the account/container/object servers, their replicators
and the rsync daemon they push DBs through, and waits on replication passes.

Every Swift program goes through ``lab.system.argv`` (the release seam, lab/system.py).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab import swift_conf
from lab.layout import SWIFT_DEVICE_HOST, SWIFT_DEVICES, SWIFT_KEY, SWIFT_SERVERS, SWIFT_USER
from lab.procs import LabError, run, wait
from lab.swift_conf import SWIFT_REPLICATION_IP

if TYPE_CHECKING:
    from lab.mounts import Mounts
    from lab.procs import Procs
    from lab.site import LabSite

SWIFT_PART_POWER = 9  # the seed's choice for 4 disks: 512 partitions, 384 replicas/disk
SWIFT_DEVICE_BYTES = 320 * 1024**2


class SwiftCluster:
    """Create, start and ask the Swift daemons of one lab."""

    def __init__(self, lab: LabSite, procs: Procs, mounts: Mounts) -> None:
        self.lab = lab
        self.procs = procs
        self.mounts = mounts

    # ------------------------------------------------------------------ set up
    def memcached_argv(self) -> list[str]:
        """memcached as a daemon of its own, with its pid file (also the lab host's start
        command for it: lab/config.py)."""
        lab = self.lab
        return ["memcached", "-d", "-u", "root", "-l", "127.0.0.1", "-p",
                str(lab.ports.memcached), "-U", "0", "-m", "64",
                "-P", str(lab.pids / "memcached.pid")]

    def up_memcached(self) -> None:
        step = "memcached"
        run(self.memcached_argv(), step)
        # 10 s proved short once: both labs of a run waited in vain at load ~10
        wait(lambda: self.procs.pid("memcached") is not None, 30, step, "memcached")

    def ring_builder(self, kind: str, *args: str, step: str, check: bool = True) -> None:
        """``swift-ring-builder KIND.builder ARGS`` in swift_etc; exit 1 (a warning, the
        ring is still written) counts as success unless ``check``."""
        b = self.lab.system.daemon_path(self.lab.swift_etc / f"{kind}.builder")
        p = run(self.lab.system.argv(["swift-ring-builder", b, *args]), step, check=check)
        if p.returncode not in (0, 1):
            raise LabError(step, p.stdout + p.stderr)

    def prepare(self) -> None:
        """Devices made and mounted, rings built and copied, confs written."""
        lab = self.lab
        step = "swift devices and rings"
        for d in SWIFT_DEVICES:
            img = lab.images / f"swift-{d}.xfs"
            self.mounts.make_image(img, SWIFT_DEVICE_BYTES)
            run(["mkfs.xfs", "-q", "-f", "-L", d, str(img)], step)
            self.mounts.mount_image(img, lab.swift_node / d, step)
        for kind, port in (("object", lab.ports.object), ("container", lab.ports.container),
                           ("account", lab.ports.account)):
            self.ring_builder(kind, "create", str(SWIFT_PART_POWER), "3", "1", step=step)
            # every device in one `add` (DEV WEIGHT DEV WEIGHT ...): each swift-ring-builder
            # process costs ~0.85 s of CPU, and the lab is built beside other test sessions
            adds: list[str] = []
            for z, d in enumerate(SWIFT_DEVICES, start=1):
                ip = SWIFT_DEVICE_HOST[d][1]
                # clients reach a device at its host's address; replication runs on a
                # replication network (as many clusters do), here 127.0.0.1, the one address
                # the lab's single replicator per server finds itself by (Swift's
                # whataremyips lists interface addresses only: 127.0.0.2-4 are not, and a
                # replicator that finds no local device in the ring replicates nothing)
                adds += [f"r1z{z}-{ip}:{port}R{SWIFT_REPLICATION_IP}:{port}/{d}", "100"]
            self.ring_builder(kind, "add", *adds, step=step)
            self.ring_builder(kind, "rebalance", step=step, check=False)
            (lab.swift_etc / f"{kind}-server.conf").write_text(
                swift_conf.server_conf(lab, kind, port))
        (lab.swift_etc / "rsyncd.conf").write_text(swift_conf.rsyncd_conf(lab))
        self.sync_server_rings()
        (lab.swift_etc / "proxy-server.conf").write_text(swift_conf.proxy_conf(lab))
        conf = lab.system.host_path(swift_conf.SWIFT_CONF)
        if not conf.exists():
            conf.parent.mkdir(exist_ok=True)
            conf.write_text(swift_conf.SWIFT_CONF_TEXT)

    def sync_server_rings(self, kinds: Iterable[str] = SWIFT_SERVERS) -> list[str]:
        """Copy every ring.gz of swift_etc into the swift_dir of each server in ``kinds``."""
        lab = self.lab
        done = []
        for kind in kinds:
            lab.ring_dir(kind).mkdir(parents=True, exist_ok=True)
            for f in sorted(lab.swift_etc.glob("*.ring.gz")):
                shutil.copy2(f, lab.ring_dir(kind) / f.name)
                done.append(str(lab.ring_dir(kind) / f.name))
        return done

    def up(self) -> None:
        lab = self.lab
        for kind in ("account", "container", "object", "proxy"):
            self.start_server(kind)
        wait(lambda: self.healthy() is True, 30, "swift",
             "the Swift proxy healthcheck", str(lab.log_dir / "swift-proxy.log"))
        self.procs.spawn("rsyncd", swift_conf.rsyncd_argv(lab), "start rsyncd")
        t0 = time.time()
        for kind in SWIFT_SERVERS:
            self.start_replicator(kind)
        for kind in SWIFT_SERVERS:
            self.wait_replication_pass(kind, t0, "swift replicators")
        self.recon_cron("swift recon cron")  # a node's cron: async pendings known from up

    def write_start_scripts(self) -> None:
        lab = self.lab
        for path, role in ((lab.swift_start_script, "server"),
                           (lab.replicator_start_script, "replicator")):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(swift_conf.start_script(lab, role))
            path.chmod(0o755)

    # ------------------------------------------------------------------ daemons
    def start_server(self, kind: str) -> int:
        return self.procs.spawn(f"swift-{kind}", swift_conf.server_argv(self.lab, kind),
                                    f"start swift-{kind}-server")

    def start_replicator(self, kind: str) -> int:
        return self.procs.spawn(f"swift-{kind}-replicator",
                                    swift_conf.server_argv(self.lab, kind, "replicator"),
                                    f"start swift-{kind}-replicator")

    def healthy(self) -> bool | str:
        try:
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.lab.ports.proxy}/healthcheck", timeout=3) as r:
                return r.status == 200 or f"HTTP {r.status}"
        except (urllib.error.URLError, OSError) as e:
            return str(e)

    def server_answers(self, kind: str) -> bool:
        port = getattr(self.lab.ports, kind)
        try:
            with urllib.request.urlopen(f"http://127.0.0.2:{port}/recon/unmounted",
                                        timeout=3) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def run_once(self, program: str, *args: str, step: str, timeout: float = 60,
                 log: bool = False) -> None:
        """``swift-PROGRAM object-server.conf ARGS`` to its end (auditor, updater, cron)."""
        lab = self.lab
        conf = lab.system.daemon_path(lab.swift_etc / "object-server.conf")
        run(lab.system.argv([f"swift-{program}", conf, *args]), step, timeout=timeout,
            log=str(lab.log_dir / f"swift-{program}.log") if log else None)

    def recon_cron(self, step: str) -> None:
        """What cron runs on a real node: count async pendings into the recon cache."""
        self.run_once("recon-cron", step=step)

    # ------------------------------------------------------------------ replication
    def replication_last(self, kind: str) -> tuple[float | None, float | None]:
        """(last completed, when that pass started) from the lab's recon cache."""
        try:
            cache = json.loads((self.lab.base / "swift" / "cache" / f"{kind}.recon")
                               .read_text())
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

    def kick_replication(self, kind: str, step: str, timeout: float = 90) -> bool:
        """A pass of ``kind`` now, not at the daemon's next interval (the lab's replicators
        pass every ``SWIFT_REPLICATOR_INTERVAL_S``: a pass over every partition costs CPU,
        and a container or account replicator's first pass after a start waits a random
        part of the interval): the running daemon stopped, one pass run to its end
        (``once``, never beside the daemon's own: two passes of one server would refuse
        each other's syncs), the daemon started again. A replicator that is not running
        (a fault) is left alone: False."""
        name = f"swift-{kind}-replicator"
        if not self.procs.stop(name):
            return False
        try:
            run([*swift_conf.server_argv(self.lab, kind, "replicator"), "once"], step,
                timeout=timeout, log=str(self.lab.log_dir / f"{name}.log"))
        finally:
            self.start_replicator(kind)
        return True

    def wait_replication_pass(self, kind: str, after: float, step: str,
                              timeout: float = 90) -> None:
        """Wait until a replication pass of ``kind`` that started after ``after`` is done
        (one run now when its replicator runs: ``kick_replication``)."""
        def done() -> bool:
            _, started = self.replication_last(kind)
            return started is not None and started >= after
        if not done():
            self.kick_replication(kind, step, timeout)
        wait(done, timeout, step, f"a {kind} replication pass",
             str(self.lab.log_dir / f"swift-{kind}-replicator.log"), 0.5)

    def replication_attempted(self, kind: str) -> float | None:
        """Partitions the last completed pass of ``kind`` attempted (recon's cache)."""
        try:
            cache = json.loads((self.lab.base / "swift" / "cache" / f"{kind}.recon")
                               .read_text())
        except (OSError, ValueError):
            return None
        stats = cache.get("replication_stats")
        n = stats.get("attempted") if isinstance(stats, dict) else None
        return float(n) if isinstance(n, (int, float)) else None

    def wait_replication_working(self, kind: str, after: float, step: str,
                                 timeout: float = 120) -> None:
        """Wait until a pass of ``kind`` that started after ``after`` attempted something:
        a replicator that reloaded a ring where it finds its own devices again (it checks
        the ring's mtime every ring_check_interval; an idle pass attempts nothing)."""
        def working() -> bool:
            _, started = self.replication_last(kind)
            return started is not None and started >= after and \
                (self.replication_attempted(kind) or 0) > 0
        if not working():
            self.kick_replication(kind, step, timeout)
        wait(working, timeout, step, f"a {kind} replication pass that attempted partitions",
             str(self.lab.log_dir / f"swift-{kind}-replicator.log"), 0.5)

    def settle_replication(self, step: str) -> None:
        """After a server was down: (re)start any stopped replicator and wait for a pass of
        each that started now, so recon's last pass counts no failures of the fault."""
        t0 = time.time()
        for kind in SWIFT_SERVERS:
            if self.procs.pid(f"swift-{kind}-replicator") is None:
                self.start_replicator(kind)
        for kind in SWIFT_SERVERS:
            self.wait_replication_pass(kind, t0, step)

    # ------------------------------------------------------------------ objects and rings
    def conn(self) -> Any:
        """A swiftclient Connection to the lab's proxy as the lab's user."""
        from swiftclient.client import Connection

        return Connection(authurl=f"http://127.0.0.1:{self.lab.ports.proxy}/auth/v1.0",
                          # one storage server process answers for every lab node: on a
                          # loaded machine the proxy may time out on all three at once and
                          # answer 503, which Swift's clients retry (CI met one)
                          user=SWIFT_USER, key=SWIFT_KEY, retries=5, timeout=15)

    def delete_container(self, container: str) -> None:
        """Delete a lab container and its objects (nothing if it is already gone)."""
        conn = self.conn()
        try:
            _, objs = conn.get_container(container)
            for o in objs:
                conn.delete_object(container, o["name"])
            conn.delete_container(container)
        except Exception:  # noqa: BLE001  (already gone)
            pass
        finally:
            conn.close()

    def data_files(self) -> set[Path]:
        return set(self.lab.swift_node.glob("d*/objects/*/*/*/*.data"))

    def backup_rings(self, bak: Path, names: Iterable[str]) -> None:
        """Save these files of swift_etc into ``bak`` (once: a second break keeps the
        first backup, the healthy one)."""
        if not bak.exists():
            bak.mkdir()
            for name in names:
                shutil.copy2(self.lab.swift_etc / name, bak / name)

    def restore_rings(self, bak: Path) -> None:
        """Put a scenario's saved builders and rings back into swift_etc (the builder must not
        look newer than the ring it was written with), drop the backup and push backups,
        and copy the rings to every server."""
        lab = self.lab
        if bak.exists():
            now = time.time()
            for f in bak.iterdir():
                shutil.copy2(f, lab.swift_etc / f.name)
                t = now - 1 if f.name.endswith(".builder") else now
                os.utime(lab.swift_etc / f.name, (t, t))
            shutil.rmtree(bak)
        self._drop_push_backups()
        self.sync_server_rings()

    def _drop_push_backups(self) -> None:
        """The backups a ring push (swift-ring-push, a rebalance's distribution) left
        beside each server's rings: the lab's heal puts its own rings back."""
        for kind in SWIFT_SERVERS:
            for f in self.lab.ring_dir(kind).glob("*.stordoc-*"):
                f.unlink()
