"""The lab's Ceph: one monitor, one manager, BlueStore OSDs (``xfs``: a ceph-disk style
XFS data dir with a ``block`` symlink; ``raw``: ``ceph-volume raw``, label on the device,
tmpfs data dir), its ceph.conf, the ``ceph`` CLI against it, and waits on OSDs and PGs.

Every Ceph program goes through ``lab.system.argv`` and every path it sees through
``lab.system.daemon_path`` (the release seam, lab/system.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from typing import TYPE_CHECKING, Any

from checks.settle import judge_pgs, states_of
from lab.layout import CV_BOOTSTRAP_DIR, OSD_BLOCK_BYTES, host_of_osd
from lab.procs import LabError, run, wait
from storage.ceph import CephClient, CephError, SettleMethod, read_pg_settle
from storage.ceph.parse import as_map
from storage.targets import CephTarget

if TYPE_CHECKING:
    from lab.mounts import Mounts
    from lab.procs import Procs
    from lab.site import LabSite

XFS_DATA_BYTES = 320 * 1024**2  # an xfs OSD's data dir image: small files only


def osdmaptool_argv(lab: LabSite) -> list[str]:
    """The lab release's own osdmaptool (Reef's in its root filesystem): the host's
    Pacific one decodes a Reef map but ignores Reef's pg-upmap-primary."""
    return lab.system.argv(["osdmaptool"])


class CephCluster:
    """Create, start and ask the Ceph daemons of one lab."""

    def __init__(self, lab: LabSite, procs: Procs, mounts: Mounts) -> None:
        self.lab = lab
        self.procs = procs
        self.mounts = mounts

    def _argv(self, *argv: str) -> list[str]:
        return self.lab.system.argv(argv)

    def _p(self, path: str | os.PathLike[str]) -> str:
        return self.lab.system.daemon_path(path)

    # ------------------------------------------------------------------ ceph CLI
    def cli(self, *args: str, timeout: float = 30, check: bool = True,
            step: str = "ceph") -> Any:
        """Run the ``ceph`` CLI against this lab, JSON out (None when it prints nothing)."""
        argv = self._argv("ceph", "-c", self._p(self.lab.conf), "--connect-timeout",
                          str(int(timeout)), "--format", "json", *args)
        try:
            p = run(argv, step, timeout=timeout + 5, check=check)
        except LabError:
            if check:
                raise
            return None  # a probe (check=False) that timed out on a loaded machine: unknown
        out = p.stdout.strip()
        if not out:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return out

    def ok(self, *args: str, timeout: float = 30) -> bool:
        """Whether a ``ceph`` command succeeds (False on a timeout)."""
        argv = self._argv("ceph", "-c", self._p(self.lab.conf), "--connect-timeout",
                          str(int(timeout)), *args)
        try:
            return subprocess.run(argv, capture_output=True, timeout=timeout + 5,
                                  check=False).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    # ------------------------------------------------------------------ ceph.conf
    def conf_text(self) -> str:
        lab = self.lab
        lo, hi = lab.ports.ms_range
        p = self._p
        # each OSD on its simulated host's own loopback address (as it would on a host of
        # its own); its host name from its UTS namespace (on-host): Ceph's metadata
        # then names node1..node4, as ``stordoc init`` reads them (issue 40.5)
        osd_sections = "".join(
            f"\n[osd.{i}]\ncrush_location = root=default host={host_of_osd(i)[0]}\n"
            f"public_addr = {host_of_osd(i)[1]}\ncluster_addr = {host_of_osd(i)[1]}\n"
            + (f"osd_data = {p(lab.osd_dir(i))}\n" if k == "raw" else "")
            for i, k in enumerate(lab.kinds))
        c = p(lab.ceph_dir)
        dis = lab.system.mgr_disabled_modules
        disabled = f"mgr_disabled_modules = {dis}\n" if dis is not None else ""
        return f"""[global]
fsid = {lab.fsid}
mon_host = [v2:127.0.0.1:{lab.ports.mon}]
mon_initial_members = a
public_network = 127.0.0.0/8
ms_bind_msgr1 = false
ms_bind_port_min = {lo}
ms_bind_port_max = {hi}
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = {p(lab.run_dir)}
pid_file = $run_dir/$cluster-$name.pid
admin_socket = $run_dir/$cluster-$name.asok
log_file = {p(lab.log_dir)}/$cluster-$name.log
mon_cluster_log_file = {p(lab.log_dir)}/$cluster.log
crash_dir = {c}/crash
keyring = {p(lab.admin_keyring)}
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
# PGs count as stuck (pg dump_stuck, PGS_STUCK) after 10 s here, not Ceph's 60: a fault's
# steady picture (down and in: stuck degraded) arrives within a test's seconds
mon_pg_stuck_threshold = 10
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
{disabled}
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
{lab.system.osd_conf_extra}{osd_sections}
[client]
keyring = {p(lab.admin_keyring)}
"""

    # ------------------------------------------------------------------ mon and mgr
    def up_mon_mgr(self) -> None:
        lab, p = self.lab, self._p
        step = "ceph monitor"
        c = lab.ceph_dir
        (c / "mon").mkdir(exist_ok=True)
        (c / "crash").mkdir(exist_ok=True)
        lab.conf.write_text(self.conf_text())
        self.write_on_host_script()
        mon_kr = c / "mon" / "keyring"
        run(self._argv("ceph-authtool", "--create-keyring", p(mon_kr), "--gen-key", "-n",
                       "mon.", "--cap", "mon", "allow *"), step)
        run(self._argv("ceph-authtool", "--create-keyring", p(lab.admin_keyring), "--gen-key",
                       "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd",
                       "allow *", "--cap", "mds", "allow *", "--cap", "mgr", "allow *"), step)
        run(self._argv("ceph-authtool", p(mon_kr), "--import-keyring", p(lab.admin_keyring)),
            step)
        monmap = c / "monmap"
        run(self._argv("monmaptool", "--create", "--clobber", "--fsid", lab.fsid, "--addv",
                       "a", f"[v2:127.0.0.1:{lab.ports.mon}]", p(monmap)), step)
        log = str(lab.log_dir / "ceph-mon.a.log")
        run(self._argv("ceph-mon", "-c", p(lab.conf), "--mkfs", "-i", "a", "--monmap",
                       p(monmap), "--keyring", p(mon_kr)), step, log=log)
        self.start_mon()
        step = "ceph manager"
        mgr_dir = c / "mgr" / "ceph-x"
        mgr_dir.mkdir(parents=True, exist_ok=True)
        run(self._argv("ceph", "-c", p(lab.conf), "auth", "get-or-create", "mgr.x", "mon",
                       "allow profile mgr", "osd", "allow *", "mds", "allow *", "-o",
                       p(mgr_dir / "keyring")), step, timeout=30)
        self.start_mgr()

    def start_mon(self) -> None:
        step = "start ceph-mon"
        log = str(self.lab.log_dir / "ceph-mon.a.log")
        run(self.mon_start_argv(), step, log=log)
        wait(lambda: self.ok("mon", "stat", timeout=5), 30, step,
             "the monitor to answer", log)

    def write_on_host_script(self) -> None:
        """The lab's hosts share this machine; a daemon started through ``on-host HOST``
        runs in a UTS namespace of its own whose host name is HOST, so Ceph's metadata
        names the simulated host as it names a real one (issue 40.5)."""
        path = self.lab.on_host_script
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n# on-host HOST ARGV...: run ARGV with HOST as its host name "
                        "(a lab host)\nexec unshare --uts sh -c 'hostname \"$0\" && exec "
                        "\"$@\"' \"$@\"\n")
        path.chmod(0o755)

    def on_host(self, host: str, *argv: str) -> list[str]:
        return [str(self.lab.on_host_script), host, *self._argv(*argv)]

    def mon_start_argv(self) -> list[str]:
        """The monitor and the manager live on node1 (``lab/config.py``)."""
        return self.on_host("node1", "ceph-mon", "-c", self._p(self.lab.conf), "-i", "a")

    def mgr_start_argv(self, name: str = "x") -> list[str]:
        env = self.lab.system.mgr_env
        return self.on_host("node1", *(("env", *env) if env else ()), "ceph-mgr", "-c",
                            self._p(self.lab.conf), "-i", name)

    def start_mgr(self) -> None:
        step = "start ceph-mgr"
        run(self.mgr_start_argv(), step, log=str(self.lab.log_dir / "ceph-mgr.x.log"))
        wait(lambda: self.procs.pid("mgr.x") is not None, 20, step, "ceph-mgr pid file")

    # ------------------------------------------------------------------ OSDs
    def osd_start_argv(self, i: int | str = "{id}", host: str | None = None) -> list[str]:
        """``ceph-osd`` of OSD ``i`` on simulated ``host`` (default: the OSD's own), under
        that host's name (``on-host``)."""
        if host is None:
            if not str(i).isdigit():
                raise ValueError("osd_start_argv: a template ({id}) needs its host")
            host = host_of_osd(int(i))[0]
        return self.on_host(host, "ceph-osd", "-c", self._p(self.lab.conf), "-i", str(i))

    def start_osd(self, i: int) -> None:
        step = f"start osd.{i}"
        run(self.osd_start_argv(i), step, log=str(self.lab.log_dir / f"ceph-osd.{i}.log"))

    def up_osds(self) -> None:
        lab = self.lab
        # ids are handed out in order by `osd new`, so create sequentially
        if "raw" in lab.kinds:
            self._prepare_ceph_volume()
        for i, kind in enumerate(lab.kinds):
            if kind == "raw":
                self._create_raw_osd(i)
            else:
                self._create_osd(i)
        n = lab.n_osds
        wait(lambda: self.osds_up_in() == (n, n), 90, "OSDs up",
             f"{n} OSDs up and in", str(lab.log_dir / "ceph-osd.0.log"), 0.5)

    def _create_osd(self, i: int) -> None:
        lab, p = self.lab, self._p
        step = f"create osd.{i}"
        img = lab.images / f"osd-{i}.xfs"
        blk = lab.images / f"osd-{i}.block"
        self.mounts.make_image(img, XFS_DATA_BYTES)
        self.mounts.make_image(blk, OSD_BLOCK_BYTES)
        run(["mkfs.xfs", "-q", "-f", "-L", f"osd{i}", str(img)], step)
        dev = self.mounts.attach(img, step)
        bdev = self.mounts.attach(blk, step)
        d = lab.osd_dir(i)
        self.mounts.mount(dev, d, step)
        os.symlink(bdev, d / "block")
        osd_uuid = str(uuid.uuid4())
        key = run(self._argv("ceph-authtool", "--gen-print-key"), step).stdout.strip()
        secrets = lab.base / f"osd-{i}.secret.json"
        secrets.write_text(json.dumps({"cephx_secret": key}))
        got = self.cli("osd", "new", osd_uuid, "-i", p(secrets), step=step)
        secrets.unlink()
        if int(got["osdid"] if isinstance(got, dict) else got) != i:
            raise LabError(step, f"ceph osd new gave id {got}, expected {i}")
        (d / "keyring").write_text(f"[osd.{i}]\n\tkey = {key}\n")
        log = str(lab.log_dir / f"ceph-osd.{i}.log")
        run(self._argv("ceph-osd", "-c", p(lab.conf), "-i", str(i), "--mkfs", "--osd-uuid",
                       osd_uuid), step, timeout=120, log=log)
        lab.write_state(**{f"osd{i}_uuid": osd_uuid})
        self.start_osd(i)

    def replace_xfs_templates(self) -> str:
        """The host templates (TOML lines) that rebuild an xfs OSD on a new disk as
        ``_create_osd`` built it (runbook osd-replace-disk): the lab's programs and
        ceph.conf; BlueStore's block a file inside the XFS (the spare disk is
        OSD_BLOCK_BYTES: the file leaves room for XFS itself)."""
        conf = self._p(self.lab.conf)
        t = {"osd_keyring_new": self._argv("ceph-authtool", "--create-keyring",
                                           "{data_dir}/keyring", "--gen-key", "-n", "osd.{id}"),
             "osd_keyring_print": self._argv("ceph-authtool", "{data_dir}/keyring", "-p", "-n",
                                             "osd.{id}"),
             "osd_mkfs": self._argv("ceph-osd", "-c", conf, "-i", "{id}", "--mkfs",
                                    "--osd-uuid", "{osd_uuid}", "--bluestore-block-size",
                                    str(OSD_BLOCK_BYTES - 1024**3))}
        return "".join(f"{k} = {json.dumps(v)}\n" for k, v in t.items())

    def ceph_volume_argv(self, *args: str) -> list[str]:
        """``ceph-volume`` on this lab: its config by ``CEPH_CONF``, its own cluster name."""
        return self._argv("env", f"CEPH_CONF={self._p(self.lab.conf)}", "ceph-volume",
                          "--cluster", self.lab.cv_cluster, *args)

    def _prepare_ceph_volume(self) -> None:
        """The bootstrap-osd key where ceph-volume reads it; dirs its mkfs (run as the
        ``ceph`` user) writes to."""
        lab = self.lab
        step = "ceph-volume bootstrap"
        lab.system.host_path(CV_BOOTSTRAP_DIR).mkdir(parents=True, exist_ok=True)
        lab.cv_osd_root.mkdir(parents=True, exist_ok=True)
        run(self._argv("ceph", "-c", self._p(lab.conf), "auth", "get-or-create",
                       "client.bootstrap-osd", "mon", "allow profile bootstrap-osd", "-o",
                       self._p(lab.bootstrap_keyring)), step)
        for d in (lab.log_dir, lab.run_dir, lab.ceph_dir / "crash"):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o1777)

    def _create_raw_osd(self, i: int) -> None:
        """An OSD as ``ceph-volume raw`` makes it: label on the device, tmpfs data dir."""
        lab = self.lab
        step = f"create osd.{i} (ceph-volume raw)"
        blk = lab.images / f"osd-{i}.block"
        self.mounts.make_image(blk, OSD_BLOCK_BYTES)
        dev = self.mounts.attach(blk, step)
        log = str(lab.log_dir / f"ceph-volume.osd.{i}.log")
        p = run(self.ceph_volume_argv("raw", "prepare", "--bluestore", "--data", dev), step,
                timeout=180, log=log, check=False)
        with open(log, "a") as f:
            f.write(p.stdout + p.stderr)
        if p.returncode != 0:
            raise LabError(step, f"ceph-volume raw prepare exited {p.returncode}: "
                           f"{p.stderr or p.stdout}", log)
        self.activate_raw(i, step)
        lab.write_state(**{f"osd{i}_device": dev})
        self.start_osd(i)

    def osd_device(self, i: int) -> str | None:
        """The loop device holding a raw OSD's BlueStore label (its ``block``)."""
        return self.mounts.loop_for(self.lab.images / f"osd-{i}.block")

    def activate_raw(self, i: int, step: str) -> None:
        """``ceph-volume raw activate --device DEV --no-systemd`` (what a boot runs)."""
        lab = self.lab
        dev = self.osd_device(i)
        if dev is None:
            raise LabError(step, f"no loop device attached for osd.{i}'s block image")
        if os.path.ismount(lab.osd_dir(i)):
            return
        log = str(lab.log_dir / f"ceph-volume.osd.{i}.log")
        p = run(self.ceph_volume_argv("raw", "activate", "--device", dev, "--no-systemd"),
                step, timeout=120, log=log, check=False)
        with open(log, "a") as f:
            f.write(p.stdout + p.stderr)
        if p.returncode != 0:
            raise LabError(step, f"ceph-volume raw activate exited {p.returncode}: "
                           f"{p.stderr or p.stdout}", log)

    def ask(self, prefix: str, mgr: bool = False) -> Any:
        """A read-only command without arguments (``osd dump``, ``pg stat`` to the manager
        with ``mgr``) through librados in this process, parsed JSON; None when Ceph does
        not answer (within the target's 10 s). What the lab's waits poll: a ``ceph`` CLI
        process costs ~0.45 s of CPU (measured; 2 s of wall time beside two other test
        sessions on 2 cores), this ~0.02 s."""
        try:
            with CephClient(self.target()) as c:
                return c.mgr(prefix) if mgr else c.mon(prefix)
        except CephError:
            return None

    def osds_up_in(self) -> tuple[int, int]:
        d = self.ask("osd dump")
        if not isinstance(d, dict):
            return (0, 0)
        osds = d.get("osds", [])
        return (sum(o["up"] for o in osds), sum(o["in"] for o in osds))

    def osd_up(self, i: int) -> bool | None:
        d = self.ask("osd dump")
        if not isinstance(d, dict):
            return None
        for o in d.get("osds", []):
            if o["osd"] == i:
                return bool(o["up"])
        return None

    # ------------------------------------------------------------------ pools and PGs
    def pgs_clean(self) -> bool:
        s = self.ask("pg stat", mgr=True)
        if not isinstance(s, dict):
            return False
        summ = s.get("pg_summary", s)
        by = summ.get("num_pg_by_state", [])
        total = summ.get("num_pgs", 0)
        # active+clean+scrubbing(+deep), +snaptrim...: clean too (a deep scrub is no fault)
        # laggy/wait read active+clean but do not serve I/O: not clean (checks.osd)
        clean = sum(x["num"] for x in by
                    if {"active", "clean"} <= set(str(x["name"]).split("+"))
                    and not {"laggy", "wait"} & set(str(x["name"]).split("+")))
        return total > 0 and clean == total

    def target(self) -> CephTarget:
        """How stordoc reaches this lab's Ceph (librados; the lab release's osdmaptool)."""
        lab = self.lab
        return CephTarget(conf=str(lab.conf), keyring=str(lab.admin_keyring), timeout_s=10,
                          osdmaptool=tuple(osdmaptool_argv(lab)))

    def _pgs_unsettled(self, c: CephClient) -> str | None:
        """Why the PGs do not read settled yet, None when every PG is active+clean and has
        reported on the current osdmap: ``checks.settle``, the rule of ``stordoc check``
        and a fix's follow-up (the manager's states lag an ``osd in`` by the OSDs' next
        report: read at once, they still say clean and peering starts a second later).
        The lab never falls back to the stamp rule: a lab without the map rule says why."""
        t = c.target
        settle = read_pg_settle(c, t.osdmaptool, t.timeout_s)
        if settle.method is not SettleMethod.OSDMAP:
            return f"the osdmap rule is not available: {settle.error}"
        num, states = states_of(settle, 0, {})
        v = judge_pgs(num, states, settle, time.time())
        if v.clean:
            return None
        if v.settling:
            return v.states.why_not
        return "PGs not all active+clean: " + ", ".join(
            f"{n} {st}" for st, n in sorted(v.unclean.items(), key=lambda kv: -kv[1]))

    def pgs_settled(self) -> bool:
        try:
            with CephClient(self.target()) as c:
                return self._pgs_unsettled(c) is None
        except CephError:
            return False

    def health_checks(self) -> set[str]:
        """The monitor's health check names (it hears of the PGs from the manager only
        every few seconds, after ``pg stat`` does)."""
        h = self.ask("health")
        return set(h.get("checks", {})) if isinstance(h, dict) else {"(no answer)"}

    def unsettled(self, settling_checks: frozenset[str]) -> str | None:
        """Why the cluster is not yet settled for the next test, None when it is: every
        OSD up and in, PGs settled (``_pgs_unsettled``), none of ``settling_checks`` in
        the monitor's health. One librados connection: it runs before every lab test."""
        n = self.lab.n_osds
        try:
            with CephClient(self.target()) as c:
                stat = as_map(c.mon("osd stat"))
                up_in = (stat.get("num_up_osds"), stat.get("num_in_osds"))
                if up_in != (n, n):
                    return f"OSDs up/in {up_in} of {n}"
                why = self._pgs_unsettled(c)
                if why is not None:
                    return why
                left = set(as_map(as_map(c.mon("health")).get("checks"))) & settling_checks
        except CephError as e:
            return f"ceph: {e}"
        return f"health {sorted(left)}" if left else None

    def wait_pgs_clean(self, timeout: float, step: str) -> None:
        """Wait for active+clean (a slow recovery is waited out, not re-peered: a re-peer
        restarts it), reported on the current osdmap; the error says what the PGs were
        doing."""
        try:
            wait(self.pgs_settled, timeout, step, "PGs active+clean")
        except LabError:
            raise LabError(step, f"timed out after {timeout:.0f}s waiting for PGs "
                           f"active+clean: {self.pg_states()}",
                           str(self.lab.log_dir / "ceph.log")) from None

    def pg_states(self) -> str:
        """``pg stat``'s states in one line (for a test that waits in vain)."""
        s = self.cli("pg", "stat", timeout=10, check=False)
        if not isinstance(s, dict):
            return str(s)[:200]
        summ = s.get("pg_summary", s)
        return ", ".join(f"{x['num']} {x['name']}" for x in summ.get("num_pg_by_state", []))

    def up_pools(self) -> None:
        step = "pools"
        # the PG heuristic wants (OSDs x 100 / 3) rounded up to a power of two; a quarter of
        # it is the least that raises no finding: 32 for 3 OSDs, 64 for 4
        pgs = "32" if self.lab.n_osds <= 3 else "64"
        self.cli("osd", "pool", "create", "rbd", pgs, pgs, "replicated", step=step)
        self.cli("osd", "pool", "application", "enable", "rbd", "rbd", step=step)
        # the new pool's PGs settled: a ``pg stat`` read at once may not list them yet
        wait(self.pgs_settled, 90, "PGs active+clean", "all PGs active+clean",
             str(self.lab.log_dir / "ceph.log"), 0.5)

    def pool_names(self) -> list[str]:
        got = self.cli("osd", "pool", "ls", check=False)
        return list(got) if isinstance(got, list) else []

    def delete_pool(self, pool: str, step: str) -> None:
        self.cli("osd", "pool", "delete", pool, pool, "--yes-i-really-really-mean-it",
                 step=step)

