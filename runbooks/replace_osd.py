"""Replace an OSD's disk, keeping its id: out, wait until ``ceph osd safe-to-destroy``,
stop, destroy (the id, CRUSH position and auth slot stay), prepare the new device under the
same id with ceph-volume (raw or lvm, as the OSD was deployed), start, in, verify.

Refused with one line, before anything is done: an OSD id that is not in the osdmap; a
disk that is not failing (the OSD up and in, no disk evidence on its host) unless the
replacement is planned (``-o planned=yes``, said in the plan); a new device in use
(mounted, a filesystem or an OSD label on it, or the OSD's own device; one the host facts
do not list is checked on the host by the plan's first step, before anything changes). A
ceph-disk style XFS OSD comes back as one, at the same data dir: mkfs.xfs (never forced)
with a new filesystem UUID, mount, a new key, ``osd new`` under the same id, ``ceph-osd
--mkfs``; the plan gives the exact fstab line to change (stordoc edits no fstab). It moves data
(the OSD's PGs go elsewhere and come back), so it is destructive: under a cluster's
two-person rule a second person confirms it.

Every host command is a configured argv template (``osd_stop``, ``osd_prepare_raw``,
``osd_create_lvm``, ``osd_mkfs_xfs``, ``osd_mount_xfs``, ``osd_keyring_new``,
``osd_keyring_print``, ``osd_mkfs``, ``osd_chown``, ``osd_start``) filled with typed values: the OSD id (an int in the
osdmap) and a device path the host itself reported.
"""

from __future__ import annotations

import json
import re
import shlex
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from checks import incident_rules
from checks.hostdiag import Flavour, OsdDiagnosis
from checks.model import Finding
from runbooks.base import Draft, Runbook, fill_template, host_of, need_ceph, parse_osd, register
from runbooks.model import InvalidRequest, Probe, PyOp, Refused, RunbookInfo, StepEnv
from runbooks.osd import OSD_CODES, UP_POLL_S, _diagnose, _start_argv, osd_up_probe
from storage.ceph import CephCommandError
from storage.model import CephState, ClusterSnapshot, HostFacts, OsdState
from storage.targets import HostTarget

DEVICE_PATH_RE = re.compile(r"\A/dev/[A-Za-z0-9][A-Za-z0-9._/-]{0,127}\Z", re.ASCII)
YES = ("yes", "true", "1", "y", "on")
KEY_RE = re.compile(r"\A[A-Za-z0-9+/]{20,200}={0,2}\Z")

# the host-side disk findings (device health, filesystem shut down or read-only, kernel I/O
# errors) that make an OSD's disk "failing": a finding of one of these codes on ``osd.N``
# or on one of its devices lets the replacement go ahead without ``planned``. Codes not
# registered (yet) simply never match.
DISK_FINDING_CODES = ("DEVICE_FAILING", "DEVICE_IO_ERRORS", "FS_READONLY", "FS_SHUTDOWN",
                      "FS_WRITE_FAILED", "OSD_DEVICE_IO_ERRORS", "SWIFT_DEVICE_IO_ERRORS")

# Ceph's health codes that say an OSD's disk fails (checks/ceph_codes.py explains them)
# (the incident rules' list less slow operations, which are no failing disk by themselves)
CEPH_DISK_CODES = tuple(c for c in incident_rules.CEPH_DISK_CODES
                        if c != "BLUESTORE_SLOW_OP_ALERT")

# the hook for other disk evidence: a function of the snapshot and the OSD that returns
# findings saying its disk fails (by default: the checks of DISK_FINDING_CODES)
DiskEvidence = Callable[[ClusterSnapshot, OsdState, tuple[str, ...]], list[Finding]]


def disk_findings(snap: ClusterSnapshot, osd: OsdState,
                  devices: tuple[str, ...]) -> list[Finding]:
    """Disk findings of the checks on this OSD or one of its devices."""
    from checks.engine import run_checks

    report = run_checks(snap, only=(*DISK_FINDING_CODES, "CEPH_HEALTH"),
                        now=snap.taken_at or None)
    names = {f"osd.{osd.id}", *devices}
    # Ceph's own word on the disk (OSD_TOO_MANY_REPAIRS, DEVICE_HEALTH...) names the OSDs
    ceph_says = [f for f in report.findings if f.code == "CEPH_HEALTH"
                 and f.evidence.get("ceph_code") in CEPH_DISK_CODES
                 and osd.id in f.evidence.get("osds", ())]
    # checks/disks.py names the physical disk (``disk /dev/sdb@node2``) and lists the
    # OSDs on it in its evidence
    return [f for f in report.findings if f.code != "CEPH_HEALTH" and (
            f.entity in names or f.target in names or osd.id in f.evidence.get("osds", ())
            or any(f.entity.endswith(d) for d in devices))] + ceph_says


def failing_evidence(snap: ClusterSnapshot, osd: OsdState, dg: OsdDiagnosis | None,
                     extra: DiskEvidence = disk_findings) -> list[str]:
    """Why this OSD's disk counts as failing (empty: it looks healthy)."""
    why: list[str] = []
    if osd.destroyed:
        why.append("destroyed")
    if not osd.up:
        why.append("down")
    if not osd.in_:
        why.append("out")
    if dg is not None:
        why += [f"kernel I/O errors on {e.device}" for e in dg.io_errors[-1:]]
        if dg.mount is None and not dg.populated:
            why.append(f"{dg.data_dir} not mounted")
    devices = dg.devices if dg is not None else ()
    why += [f"{f.code} {f.entity}" for f in extra(snap, osd, devices)]
    return why


def safe_to_destroy_probe(osd_id: int) -> Probe:
    """A WaitOp probe: ``ceph osd safe-to-destroy osd.N`` (a manager command; EBUSY or
    EAGAIN while PGs still need this OSD's data)."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        try:
            res = env.ceph.mgr("osd safe-to-destroy", ids=[str(osd_id)])
        except CephCommandError as e:
            return False, f"not yet safe: {e.outs.strip() or e}"
        if isinstance(res, dict):
            safe = [int(x) for x in res.get("safe_to_destroy", [])]
            if osd_id in safe:
                return True, f"osd.{osd_id} is safe to destroy"
            return False, (f"not yet safe: {len(res.get('stored_pgs', []))} PG(s) stored, "
                           f"active {res.get('active', [])}")
        return True, str(res or f"osd.{osd_id} is safe to destroy")

    return probe


def destroy_op(osd_id: int) -> Probe:
    """``ceph osd destroy osd.N --yes-i-really-mean-it``: a manager command (the manager
    checks safe-to-destroy, then sends the monitor ``osd destroy-actual``)."""

    def op(env: StepEnv) -> tuple[bool, str]:
        env.ceph.mgr("osd destroy", id=osd_id, yes_i_really_mean_it=True)
        return True, f"destroyed osd.{osd_id}"

    return op


def process_gone_step(host: str, pid: int, wait_s: float = 90.0) -> Probe:
    """A stopped ceph-osd is marked down before it has closed its files: its data dir
    cannot be unmounted ("target is busy") until the process has exited."""

    def fn(env: StepEnv) -> tuple[bool, str]:
        deadline = time.monotonic() + wait_s
        while True:
            r = env.runner.run(host, ["ps", "-o", "pid=", "-p", str(pid)], timeout_s=30)
            if r.rc == 1 and not r.stdout.strip():
                return True, f"process {pid} on {host} has exited"
            if r.rc not in (0, 1):
                return False, f"ps -p {pid} on {host}: {r.stderr.strip() or r.rc}"
            if time.monotonic() > deadline:
                return False, f"process {pid} on {host} still runs after {wait_s:.0f} s"
            time.sleep(0.5)

    return fn


def osd_down_probe(osd_id: int) -> Probe:
    def probe(env: StepEnv) -> tuple[bool, str]:
        dump = env.ceph.mon("osd dump")
        for o in (dump or {}).get("osds", []):
            if int(o.get("osd", -1)) == osd_id:
                return not o.get("up"), f"osd.{osd_id} up={int(bool(o.get('up')))}"
        return False, f"osd.{osd_id} not in the osdmap"

    return probe


def unused_device_step(host: str, dev: str) -> Probe:
    """A step's check on the host itself, for a device its facts did not list (stordoc
    collects only the devices of its OSDs and Swift drives): ``lsblk`` and ``blkid -p``
    must show an unmounted disk with no partitions, filesystem or label."""

    def fn(env: StepEnv) -> tuple[bool, str]:
        r = env.runner.run(host, ["lsblk", "-J", "-b", "-o", "PATH,TYPE,SIZE,MOUNTPOINT", dev],
                           timeout_s=30)
        if not r.ok:
            return False, f"lsblk {dev} on {host}: {r.stderr.strip() or r.rc}"
        try:
            devs = json.loads(r.stdout).get("blockdevices", [])
        except ValueError:
            return False, f"lsblk {dev} on {host} printed no JSON"
        if len(devs) != 1:
            return False, f"{dev} on {host}: lsblk lists {len(devs)} devices"
        d0 = devs[0]
        if d0.get("children"):
            return False, f"{dev} on {host} is in use: it has partitions or holders"
        if d0.get("mountpoint"):
            return False, f"{dev} on {host} is in use: mounted on {d0['mountpoint']}"
        if not int(d0.get("size") or 0):
            return False, f"{dev} on {host} has no size (no medium attached)"
        b = env.runner.run(host, ["blkid", "-p", "-o", "export", dev], timeout_s=30)
        if b.rc == 0 and b.stdout.strip():
            sig = " ".join(ln for ln in b.stdout.split() if ln.startswith(("TYPE=", "LABEL=")))
            return False, f"{dev} on {host} is in use: it carries {sig or 'a signature'}"
        if b.rc not in (0, 2):
            return False, f"blkid -p {dev} on {host}: {b.stderr.strip() or b.rc}"
        return True, f"{dev} on {host}: {int(d0['size']) // 2**20} MiB, no partitions, " \
            "filesystem or label"

    return fn


def device_option(d: Draft, runbook: str) -> str:
    """The ``device`` option, spelled as a device path (a usage error otherwise)."""
    raw = d.options.get("device")
    if raw is None or not str(raw).strip():
        raise InvalidRequest(f"{runbook} needs the new device: -o device=/dev/sdX")
    dev = str(raw).strip()
    if not DEVICE_PATH_RE.match(dev) or ".." in dev.split("/"):
        raise InvalidRequest(f"{dev!r} is not a device path like /dev/sdb")
    return dev


def _new_device(d: Draft, facts: HostFacts, ht: HostTarget, osd_id: int,
                dg: OsdDiagnosis | None) -> tuple[str, bool]:
    """The ``device`` option: (path, whether the host's facts listed it). A device the
    facts list is refused here when in use; one they do not list is checked on the host
    by the plan's first step (``unused_device_step``), before anything changes."""
    dev = device_option(d, "osd-replace-disk")
    own = set(dg.devices) if dg is not None else set()
    if dev in own:
        raise Refused(f"{dev} is the device osd.{osd_id} uses now: give the new disk")
    mounted = next((m.target for m in facts.mounts if m.source == dev), None)
    if mounted:
        raise Refused(f"{dev} on {ht.name} is in use: mounted on {mounted}")
    ident = next((i for i in facts.identities if i.device == dev), None)
    if ident is not None and (ident.whoami is not None or ident.osd_fsid or ident.label):
        who = f"osd.{ident.whoami}" if ident.whoami is not None else (ident.label or "?")
        raise Refused(f"{dev} on {ht.name} is in use: it carries {ident.kind} data of {who}"
                      f"{f' (cluster {ident.ceph_fsid})' if ident.ceph_fsid else ''}")
    for other in facts.osd_data.values():
        if other.block and other.block == dev:
            raise Refused(f"{dev} on {ht.name} is in use: the block device of another OSD")
    bd = next((b for b in facts.block_devices if b.path == dev), None)
    if bd is None:
        return dev, False
    if bd.mountpoint:
        raise Refused(f"{dev} on {ht.name} is in use: mounted on {bd.mountpoint}")
    if bd.fstype:
        raise Refused(f"{dev} on {ht.name} is in use: it holds {bd.fstype} (wipe it "
                      "yourself if it is really spare)")
    return dev, True


@dataclass(frozen=True)
class XfsRebuild:
    """A ceph-disk style XFS OSD rebuilt on a new disk, as it was: an XFS filesystem (a
    new UUID chosen here) mounted at the same data dir, the OSD's key made on the host,
    ``osd new`` under the same id with that key, ``ceph-osd --mkfs`` (BlueStore, its block
    a file inside the XFS), the data dir handed to the daemon's user."""

    fs_uuid: str
    osd_uuid: str
    mkfs_xfs: list[str]
    mount: list[str]
    keyring_new: list[str]
    keyring_print: list[str]
    mkfs: list[str]
    chown: list[str]

    def add_steps(self, d: Draft, host: str, i: int, device: str, data_dir: str) -> None:
        long = max(d.ctx.step_timeout_s, 300.0)
        d.host(f"make an XFS filesystem (UUID {self.fs_uuid}) on {device}", host,
               self.mkfs_xfs, timeout_s=long)
        d.host(f"mount {device} at {data_dir}", host, self.mount)
        d.host(f"make osd.{i}'s new key in {data_dir}/keyring", host, self.keyring_new)
        d.remote(f"register osd.{i} again under its id (osd new {self.osd_uuid} {i})", host,
                 f"{shlex.join(self.keyring_print)}; ceph osd new {self.osd_uuid} {i} "
                 "-i <the key as cephx_secret>",
                 osd_new_step(host, i, self.osd_uuid, self.keyring_print))
        d.host(f"make osd.{i}'s BlueStore in {data_dir} (ceph-osd --mkfs)", host, self.mkfs,
               timeout_s=long)
        d.host(f"give {data_dir} to the OSD daemon's user", host, self.chown)


def osd_new_step(host: str, osd_id: int, osd_uuid: str, print_key: list[str]) -> Probe:
    """Read the key the host just made (it never leaves this step: not in the message,
    not in the audit) and ``osd new UUID ID`` with it as the cephx secret: the destroyed
    id comes back with a new uuid and that key."""

    def fn(env: StepEnv) -> tuple[bool, str]:
        r = env.runner.run(host, print_key, timeout_s=30)
        key = r.stdout.strip()
        if not r.ok or not KEY_RE.match(key):
            return False, f"reading osd.{osd_id}'s new key on {host} failed: " \
                f"{r.stderr.strip() or r.rc}"
        got = env.ceph.mon_input("osd new", json.dumps({"cephx_secret": key}).encode(),
                                 uuid=osd_uuid, id=osd_id)
        new_id = got.get("osdid") if isinstance(got, dict) else got
        if str(new_id).strip() != str(osd_id):
            return False, f"osd new gave id {new_id}, expected {osd_id}"
        return True, f"osd.{osd_id} registered with uuid {osd_uuid} and its new key"

    return fn


def fstab_change(dg: OsdDiagnosis, fstab_path: str, host: str, fs_uuid: str) -> list[str]:
    """What the plan says about the fstab line(s) for the data dir: the line names the old
    filesystem (by device, UUID or LABEL), so it must name the new UUID. stordoc did not
    write that line and does not edit it: the operator gets the exact line to put there."""
    out = []
    for ln in dg.fstab_active:
        old = (ln.raw or f"{ln.device} {ln.mountpoint} {ln.fstype} {ln.options}").strip()
        fields = old.split()
        if len(fields) > 3:  # a loop image's line: the new disk is a block device
            opts = [o for o in fields[3].split(",") if o != "loop"] or ["defaults"]
            fields[3] = ",".join(opts)
        new = " ".join([f"UUID={fs_uuid}", *fields[1:]])
        out.append(f"the fstab line for {dg.data_dir} in {fstab_path} on {host} names the old "
                   f"disk: change `{old}` to `{new}` (stordoc does not edit a file it did not "
                   "write; until then a reboot mounts the old disk or nothing)")
    return out


def xfs_rebuild(d: Draft, ht: HostTarget, osd: OsdState, fsid: str, device: str,
                dg: OsdDiagnosis, values: dict[str, object]) -> XfsRebuild:
    # the same plan made again (as ``execute`` does, to see nothing changed) must name the
    # same UUIDs: derived from the cluster, the OSD's old uuid and the new device (the old
    # uuid changes with the replacement, so a next replacement gets new ones)
    seed = f"{fsid}/osd.{osd.id}/{osd.uuid}/{device}"
    fs_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"stordoc:xfs:{seed}"))
    osd_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"stordoc:osd:{seed}"))
    v = {**values, "data_dir": dg.data_dir, "fs_uuid": fs_uuid, "osd_uuid": osd_uuid}

    def fill(name: str) -> list[str]:
        return fill_template(getattr(ht, name), v, f"host {ht.name} {name}")

    mkfs_xfs = fill("osd_mkfs_xfs")
    if any(a in ("-f", "--force") for a in mkfs_xfs):
        raise Refused(f"host {ht.name} osd_mkfs_xfs forces mkfs.xfs (-f): it could overwrite "
                      "a filesystem; leave -f out")
    d.warnings += fstab_change(dg, ht.fstab_path, ht.name, fs_uuid)
    d.params.update(fs_uuid=fs_uuid, osd_uuid=osd_uuid, layout="xfs")
    return XfsRebuild(fs_uuid, osd_uuid, mkfs_xfs, fill("osd_mount_xfs"),
                      fill("osd_keyring_new"), fill("osd_keyring_print"), fill("osd_mkfs"),
                      fill("osd_chown"))


@register
class OsdReplaceDisk(Runbook):
    option_keys = ("device", "planned")
    info = RunbookInfo(
        "osd-replace-disk",
        "Replace an OSD's disk keeping its id: out, wait until safe-to-destroy, stop, "
        "destroy, prepare the new device with the same id (ceph-volume raw/lvm, or XFS + "
        "ceph-osd --mkfs for a ceph-disk style OSD), start, in.",
        (), destructive=True, target_kind="osd",
        target_help="osd.N -o device=/dev/NEW [-o planned=yes]")
    needs_host_facts = True

    def lock_keys(self, target: str) -> list[str]:
        return [target]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        device_option(d, self.info.name)  # a malformed request is refused first
        ceph = need_ceph(snap)
        osd_id = parse_osd(target, ceph)
        osd = ceph.osd(osd_id)
        assert osd is not None
        ht, facts = host_of(d.ctx, snap, osd.host, f"osd.{osd_id}")
        dg = _diagnose(d, snap, ceph, osd, ht, facts)
        flavour = dg.flavour
        if flavour not in (Flavour.RAW, Flavour.LVM, Flavour.XFS):
            raise Refused(f"osd.{osd_id} on {ht.name} is deployed as {flavour.value}: "
                          "osd-replace-disk handles ceph-volume raw and lvm OSDs and "
                          "ceph-disk style XFS OSDs")
        planned = str(d.options.get("planned", "")).strip().lower() in YES
        why = failing_evidence(snap, osd, dg)
        if not why and not planned:
            raise Refused(f"osd.{osd_id} is up and in and its host shows no disk trouble: "
                          "not replacing a healthy disk unless planned (-o planned=yes)")
        device, listed = _new_device(d, facts, ht, osd_id, dg)
        d.params.update(osd_id=osd_id, host=ht.name, device=device, old_devices=list(dg.devices),
                        data_dir=dg.data_dir,
                        reason="planned replacement of a healthy disk" if not why
                        else "failing: " + ", ".join(why))
        if planned and not why:
            d.warnings.append(f"planned: osd.{osd_id} is healthy; its data moves off and "
                              "back (PGs backfill twice)")
        conf = d.ctx.target.ceph.conf if d.ctx.target.ceph else ""
        values = {"id": osd_id, "conf": conf, "cluster": d.ctx.target.ceph_cluster_name,
                  "device": device}
        xfs: XfsRebuild | None = None
        if flavour is Flavour.XFS:
            xfs = xfs_rebuild(d, ht, osd, ceph.fsid, device, dg, values)
            prep: list[str] = []
        elif flavour is Flavour.LVM:
            prep = fill_template(ht.osd_create_lvm, values, f"host {ht.name} osd_create_lvm")
        else:
            prep = fill_template(ht.osd_prepare_raw, values, f"host {ht.name} osd_prepare_raw")
        if not listed:
            d.remote(f"check that {device} on {ht.name} is an unused disk", ht.name,
                     f"lsblk -J -b -o PATH,TYPE,SIZE,MOUNTPOINT {device}; blkid -p {device}",
                     unused_device_step(ht.name, device))
        self._steps(d, ceph, osd, ht, dg, device, prep, flavour, xfs)

    def _steps(self, d: Draft, ceph: CephState, osd: OsdState, ht: HostTarget,
               dg: OsdDiagnosis, device: str, prep: list[str], flavour: Flavour,
               xfs: XfsRebuild | None = None) -> None:
        i = osd.id
        timeout = max(d.ctx.step_timeout_s, 600.0)  # data moves off the OSD
        if osd.destroyed:
            d.warnings.append(f"osd.{i} is already destroyed: going on with the new device")
        else:
            if osd.in_:
                d.mon(f"mark osd.{i} out (its PGs move to other OSDs)", "osd out",
                      {"ids": [str(i)]})
            d.wait(f"wait until osd.{i} is safe to destroy",
                   f"ceph osd safe-to-destroy osd.{i}: wait until no PG needs its data",
                   safe_to_destroy_probe(i), timeout_s=timeout, interval_s=2.0)
            if dg.running:
                if dg.pid is None and "{pid}" in " ".join(ht.osd_stop):
                    raise Refused(f"the ceph-osd of osd.{i} runs on {ht.name} but its pid is "
                                  "unknown: stop it yourself, then plan again")
                stop = fill_template(ht.osd_stop, {
                    "id": i, "pid": dg.pid or "", "cluster": d.ctx.target.ceph_cluster_name,
                    "conf": d.ctx.target.ceph.conf if d.ctx.target.ceph else ""},
                    f"host {ht.name} osd_stop")
                d.host(f"stop the osd.{i} daemon", ht.name, stop)
                if dg.pid is not None:
                    d.remote(f"wait until the osd.{i} process ({dg.pid}) has exited", ht.name,
                             f"ps -o pid= -p {dg.pid}: until it lists nothing",
                             process_gone_step(ht.name, dg.pid), timeout_s=120.0)
            if osd.up:
                d.wait(f"wait until osd.{i} is down", f"ceph osd dump: wait until osd.{i} "
                       "is down", osd_down_probe(i), interval_s=UP_POLL_S)
            d._add(f"destroy osd.{i} (keeps its id and CRUSH position)", "ceph",
                   PyOp(f"ceph osd destroy osd.{i} --yes-i-really-mean-it", destroy_op(i)),
                   None, None)
        if dg.mount is not None:
            d.host(f"unmount the old data dir {dg.data_dir}", ht.name, ["umount", dg.data_dir])
        if xfs is not None:
            xfs.add_steps(d, ht.name, i, device, dg.data_dir)
        else:
            what = "create (prepare and activate)" if flavour is Flavour.LVM else "prepare"
            d.host(f"{what} {device} as osd.{i} ({flavour.value})", ht.name, prep,
                   timeout_s=max(d.ctx.step_timeout_s, 300.0))
        d.host(f"start the osd.{i} daemon", ht.name, _start_argv(d, ht, i))
        d.wait(f"wait until osd.{i} is up", f"ceph osd dump: wait until osd.{i} is up",
               osd_up_probe(i), interval_s=UP_POLL_S, timeout_s=max(d.ctx.step_timeout_s,
                                                                    180.0))
        d.mon(f"mark osd.{i} in", "osd in", {"ids": [str(i)]})
        for old in dg.devices:
            d.warnings.append(f"the old device {old} still carries osd.{i}'s old label: take "
                              f"it out of {ht.name} (or zap it) once the new disk serves")
        d.verify_codes = ("OSD_NOT_ACTIVATED", "OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED",
                          *OSD_CODES)
        d.verify_entities = (f"osd.{i}",)
        d.verify_host_facts = True
        d.before_after[f"osd.{i} device"] = (", ".join(dg.devices) or "-", device)
