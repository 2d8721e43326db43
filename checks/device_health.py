"""Ceph's own view of its disks: ``ceph device ls`` (the manager's device table) and the
devicehealth module's life expectancy prediction, and the wear level a device reports.

A device whose predicted failure (``life_expectancy_max``) falls within
``device_health_warn_s`` (mgr/devicehealth's ``warn_threshold``, 6 weeks: where Ceph
raises DEVICE_HEALTH) is DEVICE_FAILING, warn; within ``device_health_crit_s``
(``mark_out_threshold``, 4 weeks: where Ceph marks its OSDs out) crit. A ``wear_level``
of ``device_wear_warn`` (0.9) or more warns too. The finding is on the physical disk
(``disk /dev/sdb@node2``, as ``checks.disks``) so it folds into the disk's one incident;
when SMART already makes that disk DEVICE_FAILING, ``checks.disks`` says both in one
finding. No prediction says nothing: unknown is not failing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from checks.hostdiag import kernel_name, parent_name
from checks.model import CheckContext, Finding, Severity, Thresholds, check
from storage.model import CephDevice, CephState, ClusterSnapshot, HostFacts, SmartReport

OSD_REPLACE = "osd-replace-disk"


@dataclass(frozen=True)
class Prediction:
    """What Ceph says of one physical disk that is worth a finding."""

    host: str
    device: str  # /dev/sdb
    severity: Severity
    words: str  # "Ceph's devicehealth predicts failure between 2026-12-01 and ..."
    osds: tuple[int, ...] = ()
    evidence: Mapping[str, object] = field(default_factory=dict)

    @property
    def entity(self) -> str:
        return f"disk {self.device}@{self.host}"


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def _host(name: str, hosts: Mapping[str, HostFacts]) -> str:
    """Ceph's hostname as stordoc's host name (the configured one when only the short
    names agree), so the finding lands on the same disk entity as ``checks.disks``."""
    if name in hosts:
        return name
    short = name.split(".")[0]
    return next((h for h in hosts if h.split(".")[0] == short), name)


def _judge(d: CephDevice, th: Thresholds, now: float) -> tuple[Severity, str] | None:
    sev: Severity | None = None
    parts = []
    hi = d.life_expectancy_max
    if hi is not None and hi < now + th.device_health_warn_s:
        sev = Severity.CRIT if hi < now + th.device_health_crit_s else Severity.WARN
        lo = d.life_expectancy_min
        when = (f"between {_day(lo)} and {_day(hi)}" if lo is not None and lo < hi
                else f"by {_day(hi)}")
        asof = (f" (predicted {_day(d.life_expectancy_stamp)})"
                if d.life_expectancy_stamp else "")
        parts.append(f"Ceph's devicehealth predicts failure {when}{asof}")
    if d.wear_level is not None and d.wear_level >= th.device_wear_warn:
        sev = sev or Severity.WARN
        parts.append(f"Ceph reports it {d.wear_level:.0%} worn")
    return (sev, "; ".join(parts)) if sev is not None else None


def predictions(ceph: CephState | None, hosts: Mapping[str, HostFacts], th: Thresholds,
                now: float) -> dict[tuple[str, str], Prediction]:
    """(host, /dev/X) -> Ceph's word on that disk, for the devices worth a finding."""
    out: dict[tuple[str, str], Prediction] = {}
    for d in ceph.devices if ceph is not None else ():
        judged = _judge(d, th, now)
        if judged is None:
            continue
        sev, words = judged
        osds = tuple(sorted(int(x[4:]) for x in d.daemons
                            if x.startswith("osd.") and x[4:].isdigit()))
        for host, dev in d.location:
            h = _host(host, hosts)
            disk = "/dev/" + parent_name(kernel_name(dev))
            out[(h, disk)] = Prediction(h, disk, sev, words, osds, {
                "devid": d.devid, "daemons": list(d.daemons),
                "life_expectancy_min": _day(d.life_expectancy_min)
                if d.life_expectancy_min else None,
                "life_expectancy_max": _day(d.life_expectancy_max)
                if d.life_expectancy_max else None,
                "life_expectancy_stamp": _day(d.life_expectancy_stamp)
                if d.life_expectancy_stamp else None,
                "wear_level": d.wear_level})
    return out


def smart_failing(r: SmartReport | None) -> bool:
    """SMART makes the disk DEVICE_FAILING (``checks.disks``)."""
    return r is not None and r.available and (
        r.passed is False or any(v for v in r.attributes.values()))


def _covered_by_smart(p: Prediction, hosts: Mapping[str, HostFacts]) -> bool:
    f = hosts.get(p.host)
    return bool(f and f.reachable and f.disks_collected
                and smart_failing(f.smart.get(p.device)))


@check("device-health", codes=(), needs=("ceph",))
def check_device_health(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    """Ceph's failure prediction and wear level of each device (``ceph device ls``)."""
    out: list[Finding] = []
    for _, p in sorted(predictions(snap.ceph, snap.hosts, ctx.thresholds,
                                   ctx.now).items()):
        if _covered_by_smart(p, snap.hosts):
            continue  # checks.disks says it with SMART's words, one finding
        names = ", ".join(f"osd.{i}" for i in p.osds) or "no OSD"
        out_cmd = (f"`ceph osd out {' '.join(str(i) for i in p.osds)}` to move the data off "
                   "while it still reads, then " if p.osds else "")
        manual = f"{out_cmd}replace the drive ({OSD_REPLACE})"
        out.append(Finding(
            "DEVICE_FAILING", p.severity, p.entity,
            f"{p.device} on {p.host} ({names}): {p.words}", {
                **p.evidence, "host": p.host, "disk": p.device,
                "disk_key": f"{p.host}:{p.device}", "osds": list(p.osds),
                "swift_devices": [], "swift_keys": [], "has_osds": bool(p.osds),
                "replace_runbook": OSD_REPLACE, "source": "ceph device ls",
                "manual": manual}))
    return out
