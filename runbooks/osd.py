"""OSD runbooks: remount an unmounted data directory (the seed 000 case), start a stopped
daemon, mark an up-but-out OSD in.

Every host command is an argv built from typed values: the OSD id is an int that exists
in the osdmap, the device is one the host itself reported (its contents name this OSD and
this cluster), the data directory comes from the host's configured template.
"""

from __future__ import annotations

import os
from typing import Any

from runbooks.base import (
    Draft,
    Runbook,
    fill_template,
    fstab_disabled,
    host_of,
    io_errors_for,
    need_ceph,
    parse_osd,
    register,
)
from runbooks.model import Refused, RunbookInfo, StepEnv
from storage.model import CephState, ClusterSnapshot, HostFacts, OsdState
from storage.targets import HostTarget

OSD_CODES = ("OSD_DOWN_IN", "OSD_DOWN_OUT", "OSD_UP_OUT")


def osd_up_probe(osd_id: int) -> Any:
    """A WaitOp probe: is the OSD up in a fresh ``osd dump``?"""

    def probe(env: StepEnv) -> tuple[bool, str]:
        dump = env.ceph.mon("osd dump")
        for o in (dump or {}).get("osds", []):
            if int(o.get("osd", -1)) == osd_id:
                up = bool(o.get("up"))
                return up, f"osd.{osd_id} up={int(up)} in={int(bool(o.get('in')))}"
        return False, f"osd.{osd_id} not in the osdmap"

    return probe


def _daemon(facts: HostFacts, osd_id: int) -> tuple[bool, int | None]:
    for d in facts.daemons:
        if d.kind == "ceph-osd" and d.ident == str(osd_id):
            return d.running, d.pid
    return False, None


def _data_dir(ht: HostTarget, facts: HostFacts, cluster_name: str, osd_id: int) -> str:
    d = facts.osd_dirs.get(osd_id)
    if d:
        return d
    try:
        return ht.osd_data_dir.format(cluster=cluster_name, id=osd_id)
    except (KeyError, ValueError, IndexError) as e:
        raise Refused(f"host {ht.name}: bad osd_data_dir template: {e}") from None


def _start_argv(d: Draft, ht: HostTarget, osd_id: int) -> list[str]:
    conf = d.ctx.target.ceph.conf if d.ctx.target.ceph else ""
    return fill_template(ht.osd_start, {"id": osd_id, "conf": conf,
                                        "cluster": d.ctx.target.ceph_cluster_name},
                         f"host {ht.name} osd_start")


def _start_and_up(d: Draft, ht: HostTarget, osd: OsdState, running: bool) -> None:
    if running:
        d.warnings.append(f"a ceph-osd process for osd.{osd.id} already runs on {ht.name}; "
                          "only waiting for it to come up")
    else:
        d.host(f"start the osd.{osd.id} daemon", ht.name, _start_argv(d, ht, osd.id))
    d.wait(f"wait until osd.{osd.id} is up", f"ceph osd dump: wait until osd.{osd.id} is up",
           osd_up_probe(osd.id))
    if not osd.in_:
        d.mon(f"mark osd.{osd.id} in (it was out)", "osd in", {"ids": [str(osd.id)]})


def _noout(d: Draft, ceph: CephState) -> int | None:
    """Set noout unless someone already did (then leave it to them)."""
    d.locks.append("flag noout")
    if "noout" in ceph.flags:
        d.warnings.append("noout is already set on the cluster; it is left as it is")
        return None
    return d.mon("set noout for the duration", "osd set", {"key": "noout"})


def _unset_noout(d: Draft, set_idx: int | None) -> None:
    if set_idx is not None:
        d.mon("clear noout", "osd unset", {"key": "noout"}, cleanup_of=set_idx)


def _down_osd(d: Draft, snap: ClusterSnapshot, target: str) -> tuple[CephState, OsdState]:
    ceph = need_ceph(snap)
    osd_id = parse_osd(target, ceph)
    osd = ceph.osd(osd_id)
    assert osd is not None
    if osd.destroyed:
        raise Refused(f"osd.{osd_id} is destroyed; it needs replacing, not restarting")
    if osd.up:
        raise Refused(f"osd.{osd_id} is up: nothing to restart")
    d.params["osd_id"] = osd_id
    d.params["was_in"] = osd.in_
    return ceph, osd


def _mount_options(facts: HostFacts, mountpoint: str, device: str,
                   is_block: bool) -> list[str]:
    """``-t FSTYPE -o OPTIONS`` from the host's own active fstab line for this mountpoint."""
    norm = mountpoint.rstrip("/")
    line = next((f for f in facts.fstab
                 if f.mountpoint.rstrip("/") == norm and not f.commented), None)
    fstype = None
    for bd in facts.block_devices:
        if bd.path == device and bd.fstype:
            fstype = bd.fstype
    opts: list[str] = []
    if line is not None:
        fstype = fstype or (line.fstype if line.fstype not in ("auto", "") else None)
        opts = [o for o in line.options.split(",") if o and o not in ("defaults",)]
    if is_block:
        opts = [o for o in opts if o != "loop" and not o.startswith("loop=")]
    elif "loop" not in opts:
        opts.insert(0, "loop")
    opts = [o for o in opts if o not in ("noauto", "nofail", "auto", "user", "users")]
    args: list[str] = []
    if fstype:
        args += ["-t", fstype]
    if opts:
        args += ["-o", ",".join(opts)]
    return args


@register
class OsdRemount(Runbook):
    info = RunbookInfo(
        "osd-remount",
        "Mount an OSD's data directory from the device that names it, start it, mark it in.",
        ("OSD_DATA_UNMOUNTED",), destructive=False, target_kind="osd", target_help="osd.N",
        touches_data=True)
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph, osd = _down_osd(d, snap, target)
        ht, facts = host_of(d.ctx, snap, osd.host, f"osd.{osd.id}")
        data_dir = _data_dir(ht, facts, d.ctx.target.ceph_cluster_name, osd.id)
        if facts.mount_at(data_dir) is not None:
            raise Refused(f"{data_dir} is already mounted on {ht.name}: use osd-start")
        disabled = fstab_disabled(facts, data_dir)
        if disabled:
            raise Refused(f"the fstab line for {data_dir} on {ht.name} is commented out on "
                          f"purpose ({disabled.strip()}): someone disabled this disk")
        matches = [i for i in facts.identities
                   if i.whoami == osd.id and i.ceph_fsid == ceph.fsid]
        devices = list(dict.fromkeys(i.device for i in matches))
        if not devices:
            others = [f"{i.device} (whoami {i.whoami}, fsid {i.ceph_fsid})"
                      for i in facts.identities if i.whoami is not None]
            raise Refused(f"no device on {ht.name} names osd.{osd.id} of cluster {ceph.fsid}"
                          + (f"; seen: {', '.join(others)}" if others else ""))
        block = {bd.path for bd in facts.block_devices}
        # prefer an attached block device over an image file named in fstab
        devices.sort(key=lambda p: (p not in block, p))
        in_block = [p for p in devices if p in block]
        if len(in_block) > 1:
            raise Refused(f"several devices on {ht.name} name osd.{osd.id}: "
                          f"{', '.join(in_block)}; mount the right one by hand")
        device = devices[0]
        errs = io_errors_for(facts, device)
        if errs:
            raise Refused(f"{device} on {ht.name} shows kernel I/O errors, remounting is "
                          f"unsafe: {errs[0].strip()}")
        running, _ = _daemon(facts, osd.id)
        d.params.update(host=ht.name, device=device, data_dir=data_dir)
        mount_argv = ["mount", *_mount_options(facts, data_dir, device, device in block),
                      device, data_dir]
        noout = _noout(d, ceph)
        d.host(f"mount {device} on {data_dir}", ht.name, mount_argv)
        _start_and_up(d, ht, osd, running)
        _unset_noout(d, noout)
        d.verify_codes = ("OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", *OSD_CODES)
        d.verify_entities = (f"osd.{osd.id}",)
        d.verify_host_facts = True


@register
class OsdStart(Runbook):
    info = RunbookInfo(
        "osd-start",
        "Start a stopped OSD daemon whose data directory is mounted; mark it in if out.",
        ("OSD_DAEMON_STOPPED", "OSD_DOWN_IN", "OSD_DOWN_OUT"), destructive=False,
        target_kind="osd", target_help="osd.N")
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        _, osd = _down_osd(d, snap, target)
        ht, facts = host_of(d.ctx, snap, osd.host, f"osd.{osd.id}")
        data_dir = _data_dir(ht, facts, d.ctx.target.ceph_cluster_name, osd.id)
        m = facts.mount_at(data_dir)
        if m is None and not _tmpfs_like(facts, data_dir):
            raise Refused(f"{data_dir} is not mounted on {ht.name}: use osd-remount")
        if m is not None:
            errs = io_errors_for(facts, m.source)
            if errs:
                raise Refused(f"{m.source} on {ht.name} shows kernel I/O errors, starting "
                              f"osd.{osd.id} is unsafe: {errs[0].strip()}")
        running, pid = _daemon(facts, osd.id)
        if running:
            raise Refused(f"a ceph-osd process for osd.{osd.id} runs on {ht.name} (pid {pid}) "
                          "but the OSD is down: read its log before restarting it")
        d.params.update(host=ht.name, data_dir=data_dir)
        _start_and_up(d, ht, osd, False)
        d.verify_codes = ("OSD_DAEMON_STOPPED", *OSD_CODES)
        d.verify_entities = (f"osd.{osd.id}",)
        d.verify_host_facts = True


def _tmpfs_like(facts: HostFacts, data_dir: str) -> bool:
    """A data dir that is a plain directory with content (no separate mount) counts."""
    return bool(facts.links.get(os.path.join(data_dir, "block")))


@register
class OsdIn(Runbook):
    info = RunbookInfo("osd-in", "Mark an OSD that is up but out back in.", ("OSD_UP_OUT",),
                       destructive=False, target_kind="osd", target_help="osd.N")

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        osd_id = parse_osd(target, ceph)
        osd = ceph.osd(osd_id)
        assert osd is not None
        if not osd.up:
            raise Refused(f"osd.{osd_id} is down: start it first (osd-start or osd-remount)")
        if osd.in_:
            raise Refused(f"osd.{osd_id} is already in")
        if "noin" in ceph.flags:
            d.warnings.append("the noin flag is set; 'osd in' still marks this OSD in")
        d.params["osd_id"] = osd_id
        d.mon(f"mark osd.{osd_id} in", "osd in", {"ids": [str(osd_id)]})
        d.verify_codes = ("OSD_UP_OUT",)
        d.verify_entities = (f"osd.{osd_id}",)
