"""OSD runbooks: remount an unmounted data directory (the seed 000 case), start a stopped
daemon, mark an up-but-out OSD in.

Every host command is an argv built from typed values: the OSD id is an int that exists
in the osdmap, the device is one the host itself reported (its contents name this OSD and
this cluster), the data directory comes from the host's configured template.
"""

from __future__ import annotations

from dataclasses import dataclass

from checks.hostdiag import Flavour, OsdDiagnosis, OsdHostState, diagnose_osd
from runbooks.base import (
    Draft,
    Runbook,
    fill_template,
    host_of,
    mount_options,
    need_ceph,
    parse_osd,
    register,
)
from runbooks.model import Probe, Refused, RunbookInfo, StepEnv
from storage.model import CephState, ClusterSnapshot, HostFacts, OsdState
from storage.targets import HostTarget

OSD_CODES = ("OSD_DOWN_IN", "OSD_DOWN_OUT", "OSD_UP_OUT")


# an OSD comes up 1-6 s after its start; a poll of one `osd dump` every quarter second
# answers within 0.25 s of it instead of the 1 s default (one monitor read each)
UP_POLL_S = 0.25


def osd_up_probe(osd_id: int) -> Probe:
    """A WaitOp probe: is the OSD up in a fresh ``osd dump``?"""

    def probe(env: StepEnv) -> tuple[bool, str]:
        dump = env.ceph.mon("osd dump")
        for o in (dump or {}).get("osds", []):
            if int(o.get("osd", -1)) == osd_id:
                up = bool(o.get("up"))
                return up, f"osd.{osd_id} up={int(up)} in={int(bool(o.get('in')))}"
        return False, f"osd.{osd_id} not in the osdmap"

    return probe


def _start_argv(d: Draft, ht: HostTarget, osd_id: int) -> list[str]:
    conf = d.ctx.target.ceph.conf if d.ctx.target.ceph else ""
    return fill_template(ht.osd_start, {"id": osd_id, "conf": conf,
                                        "cluster": d.ctx.target.ceph_cluster_name},
                         f"host {ht.name} osd_start")


def _start_and_up(d: Draft, ht: HostTarget, osd: OsdState, running: bool,
                  argv: list[str] | None = None) -> None:
    if running:
        d.warnings.append(f"a ceph-osd process for osd.{osd.id} already runs on {ht.name}; "
                          "only waiting for it to come up")
    else:
        d.host(f"start the osd.{osd.id} daemon", ht.name, argv or _start_argv(d, ht, osd.id))
    d.wait(f"wait until osd.{osd.id} is up", f"ceph osd dump: wait until osd.{osd.id} is up",
           osd_up_probe(osd.id), interval_s=UP_POLL_S)
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


def _diagnose(d: Draft, snap: ClusterSnapshot, ceph: CephState, osd: OsdState,
              ht: HostTarget, facts: HostFacts) -> OsdDiagnosis:
    """The host diagnosis the checks use: a runbook refuses exactly where the check's
    evidence says unsafe (``checks.hostdiag``)."""
    dg = diagnose_osd(facts, osd, ceph.fsid, snap.taken_at)
    if dg is None:
        raise Refused(f"host {ht.name} did not report a data dir for osd.{osd.id} "
                      "(is it its CRUSH host?)")
    d.params.update(flavour=dg.flavour.value)
    return dg


@dataclass(frozen=True)
class _DownOsd:
    """A down OSD with its host, the host's facts and the checks' diagnosis of it: what
    osd-remount, osd-activate and osd-start each start from."""

    ceph: CephState
    osd: OsdState
    ht: HostTarget
    facts: HostFacts
    dg: OsdDiagnosis


def _down_osd_on_host(d: Draft, snap: ClusterSnapshot, target: str) -> _DownOsd:
    ceph, osd = _down_osd(d, snap, target)
    ht, facts = host_of(d.ctx, snap, osd.host, f"osd.{osd.id}")
    return _DownOsd(ceph, osd, ht, facts, _diagnose(d, snap, ceph, osd, ht, facts))


@register
class OsdRemount(Runbook):
    info = RunbookInfo(
        "osd-remount",
        "Mount an OSD's data directory from the device that names it, start it, mark it in.",
        ("OSD_DATA_UNMOUNTED",), destructive=False, target_kind="osd", target_help="osd.N",
        touches_data=True)
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        o = _down_osd_on_host(d, snap, target)
        ceph, osd, ht, facts, dg = o.ceph, o.osd, o.ht, o.facts, o.dg
        data_dir = dg.data_dir
        if dg.mount is not None:
            raise Refused(f"{data_dir} is already mounted on {ht.name}: use osd-start")
        if dg.state is OsdHostState.NOT_ACTIVATED:
            raise Refused(f"osd.{osd.id} on {ht.name} is a {dg.flavour.value} OSD: its data "
                          f"dir is a tmpfs with nothing to mount; use osd-activate")
        why = dg.refusal()
        if why:
            raise Refused(why)
        devices = list(dict.fromkeys(i.device for i in dg.matches if i.kind == "xfs"))
        if not devices:
            others = [f"{i.device} (whoami {i.whoami}, fsid {i.ceph_fsid})"
                      for i in facts.identities if i.whoami is not None]
            raise Refused(f"no device on {ht.name} names osd.{osd.id} of cluster {ceph.fsid}"
                          + (f"; seen: {', '.join(others)}" if others else ""))
        block = {bd.path for bd in facts.block_devices}
        # prefer an attached block device over an image file named in fstab
        devices.sort(key=lambda p: (p not in block, p))
        device = devices[0]
        d.params.update(host=ht.name, device=device, data_dir=data_dir)
        mount_argv = ["mount", *mount_options(facts, data_dir, device, device in block),
                      device, data_dir]
        noout = _noout(d, ceph)
        d.host(f"mount {device} on {data_dir}", ht.name, mount_argv)
        _start_and_up(d, ht, osd, dg.running)
        _unset_noout(d, noout)
        d.verify_codes = ("OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", *OSD_CODES)
        d.verify_entities = (f"osd.{osd.id}",)
        d.verify_host_facts = True


def _activate_argv(d: Draft, ht: HostTarget, dg: OsdDiagnosis, ceph: CephState) -> list[str]:
    m = dg.matches[0] if dg.matches else None
    conf = d.ctx.target.ceph.conf if d.ctx.target.ceph else ""
    values = {"id": dg.osd_id, "conf": conf, "cluster": d.ctx.target.ceph_cluster_name,
              "device": m.device if m else "", "osd_fsid": (m.osd_fsid if m else "") or "",
              "fsid": ceph.fsid}
    if dg.flavour is Flavour.CEPHADM:
        return fill_template(ht.osd_start_cephadm, values, f"host {ht.name} osd_start_cephadm")
    if m is None:
        raise Refused(f"no device names osd.{dg.osd_id}")
    if dg.flavour is Flavour.LVM or m.kind == "lvm":
        if not m.osd_fsid:
            raise Refused(f"the LV tags of osd.{dg.osd_id} carry no ceph.osd_fsid")
        return fill_template(ht.osd_activate_lvm, values, f"host {ht.name} osd_activate_lvm")
    return fill_template(ht.osd_activate_raw, values, f"host {ht.name} osd_activate_raw")


@register
class OsdActivate(Runbook):
    info = RunbookInfo(
        "osd-activate",
        "Re-create a ceph-volume (raw/lvm) or cephadm OSD's tmpfs data dir from the label or "
        "LV tags that name it (what a boot runs), start it, mark it in.",
        ("OSD_NOT_ACTIVATED",), destructive=False, target_kind="osd", target_help="osd.N",
        touches_data=True)
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        o = _down_osd_on_host(d, snap, target)
        ceph, osd, ht, dg = o.ceph, o.osd, o.ht, o.dg
        if dg.mount is not None or dg.populated:
            raise Refused(f"{dg.data_dir} is in place on {ht.name}: nothing to activate; "
                          "use osd-start")
        if dg.state is OsdHostState.UNMOUNTED:
            raise Refused(f"osd.{osd.id} on {ht.name} has an XFS data partition: use "
                          "osd-remount")
        if not dg.matches and dg.foreign:
            f0 = dg.foreign[0]
            raise Refused(f"{f0.device} on {ht.name} names osd.{osd.id} of another cluster "
                          f"({f0.ceph_fsid}; this cluster is {ceph.fsid}): refusing to "
                          "activate it")
        why = dg.refusal()
        if why:
            raise Refused(why)
        m = dg.matches[0]
        if not m.activatable:
            what = "LV is not active" if m.kind == "lvm" else \
                "BlueStore label lacks what activation needs (osd_key, ready)"
            raise Refused(f"{m.device} on {ht.name} names osd.{osd.id} but its {what}")
        argv = _activate_argv(d, ht, dg, ceph)
        d.params.update(host=ht.name, device=m.device, data_dir=dg.data_dir)
        noout = _noout(d, ceph)
        if dg.flavour is Flavour.CEPHADM:
            d.host(f"start the cephadm unit of osd.{osd.id}", ht.name, argv)
            d.wait(f"wait until osd.{osd.id} is up",
                   f"ceph osd dump: wait until osd.{osd.id} is up", osd_up_probe(osd.id),
                   interval_s=UP_POLL_S)
            if not osd.in_:
                d.mon(f"mark osd.{osd.id} in (it was out)", "osd in", {"ids": [str(osd.id)]})
        else:
            d.host(f"activate osd.{osd.id} from {m.device} ({dg.flavour.value})", ht.name,
                   argv)
            _start_and_up(d, ht, osd, dg.running)
        _unset_noout(d, noout)
        d.verify_codes = ("OSD_NOT_ACTIVATED", "OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED",
                          "OSD_UNIT_FAILED", *OSD_CODES)
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
        o = _down_osd_on_host(d, snap, target)
        ceph, osd, ht, dg = o.ceph, o.osd, o.ht, o.dg
        data_dir = dg.data_dir
        if dg.state is OsdHostState.NOT_ACTIVATED:
            raise Refused(f"{data_dir} is empty on {ht.name}: osd.{osd.id} "
                          f"({dg.flavour.value}) was not activated; use osd-activate")
        if dg.mount is None and not dg.populated:
            raise Refused(f"{data_dir} is not mounted on {ht.name}: use osd-remount")
        if dg.io_errors:
            e = dg.io_errors[-1]
            raise Refused(f"{e.device} on {ht.name} shows kernel I/O errors, starting "
                          f"osd.{osd.id} is unsafe: {e.line.strip()}")
        if dg.running:
            raise Refused(f"a ceph-osd process for osd.{osd.id} runs on {ht.name} "
                          f"(pid {dg.pid}) but the OSD is down: read its log before "
                          "restarting it")
        d.params.update(host=ht.name, data_dir=data_dir)
        # cephadm runs the OSD in its container unit, not ceph-osd@N
        argv = _activate_argv(d, ht, dg, ceph) if dg.flavour is Flavour.CEPHADM else None
        _start_and_up(d, ht, osd, False, argv)
        d.verify_codes = ("OSD_DAEMON_STOPPED", *OSD_CODES)
        d.verify_entities = (f"osd.{osd.id}",)
        d.verify_host_facts = True


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
