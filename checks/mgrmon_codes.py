"""Ceph's own manager and monitor health codes, explained (``checks.ceph_codes`` calls
``EXPLAIN`` here for them): which module failed and what that stops, which monitor's
data directory is short of space or big, and what to compact or free.

Ceph's message formats (Pacific, Reef): MGR_MODULE_ERROR details are ``Module 'NAME'
has failed: WHY``; RECENT_MGR_MODULE_CRASH details are ``mgr module NAME crashed in
daemon mgr.x on host H at STAMP``; MON_DISK_LOW/CRIT details ``mon.a has 1% avail``;
MON_DISK_BIG details ``mon.a is 16 GiB >= mon_data_size_warn (15 GiB)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from checks.ceph_explained import Explained
from checks.model import CheckContext
from storage.model import CephState, HealthCheck

_FAILED_RE = re.compile(r"Module '([^']+)' has failed: ?(.*)")
_CRASHED_RE = re.compile(r"mgr module (\S+) crashed in daemon (\S+)(?: on host (\S+))?"
                         r"(?: at (\S+))?")
_AVAIL_RE = re.compile(r"\bmon\.(\S+) has (\d+)% avail")
_BIG_RE = re.compile(r"\bmon\.(\S+) is (.+?) >= mon_data_size_warn \((.+?)\)")
# what a failed module stops doing, in the words on-call needs
MODULE_EFFECT: Mapping[str, str] = {
    "pg_autoscaler": "no PG autoscaling",
    "balancer": "no balancing of PGs over the OSDs",
    "progress": "no recovery progress or ETA",
    "crash": "no new crash reports (RECENT_CRASH stays silent)",
    "devicehealth": "no disk health (SMART) scraping or failure prediction",
    "prometheus": "no metrics: the alerts built on them go silent",
    "rbd_support": "no RBD mirroring snapshots or trash purge schedules",
    "volumes": "no CephFS subvolume management",
    "telemetry": "no telemetry reports",
    "dashboard": "no dashboard",
    "orchestrator": "no orchestrator commands",
    "status": "no `ceph fs status`/`osd status`",
}


def _failover_hint(st: CephState) -> tuple[str, str | None, str | None]:
    """What restarts a module: a failover when a standby exists (the runbook), else
    disabling and enabling the module by hand."""
    mgr = st.mgr
    if mgr is not None and mgr.active and mgr.standbys:
        return (f"fail the manager over to a standby (`ceph mgr fail {mgr.active}`: "
                f"stordoc fix mgr-failover mgr.{mgr.active}), which restarts every module",
                "mgr-failover", f"mgr.{mgr.active}")
    return ("restart the module: `ceph mgr module disable NAME` then `ceph mgr module "
            "enable NAME` (no standby manager to fail over to)", None, None)


def _module_error(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    failed = {m.group(1): m.group(2).strip() for line in (hc.summary, *hc.detail)
              if (m := _FAILED_RE.search(line))}
    effects = [f"{m}: {MODULE_EFFECT[m]}" for m in sorted(failed) if m in MODULE_EFFECT]
    hint, runbook, target = _failover_hint(st)
    mods = ", ".join(f"{m} ({why[:80]})" if why else m for m, why in sorted(failed.items()))
    return Explained(
        f"manager module(s) failed: {mods or hc.summary}"
        + (f"; stopped: {'; '.join(effects)}" if effects else "")
        + f"; read its traceback (`ceph crash ls`, the active manager's log), then {hint}",
        {"modules": failed, "effects": effects,
         "manual": f"`ceph crash ls` lists the module's tracebacks (the active manager's log "
                   f"too); then {hint}"}, runbook=runbook, target=target)


def _module_crash(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    crashes = []
    for line in hc.detail:
        m = _CRASHED_RE.search(line)
        if m:
            crashes.append({"module": m.group(1), "daemon": m.group(2), "host": m.group(3),
                            "at": m.group(4)})
    mods = sorted({c["module"] or "?" for c in crashes})
    ids = [c.crash_id for c in (st.crashes or ()) if c.entity.startswith("mgr.")]
    effects = [f"{m}: {MODULE_EFFECT[m]}" for m in mods if m in MODULE_EFFECT]
    where = sorted({f"{c['daemon']}" + (f" on {c['host']}" if c["host"] else "")
                    for c in crashes})
    return Explained(
        f"manager module(s) {', '.join(mods) or '?'} crashed recently ({', '.join(where)})"
        + (f"; while it is down: {'; '.join(effects)}" if effects else "")
        + (f": read `ceph crash info {ids[-1]}`" if ids else
           ": `ceph crash ls-new` lists the reports, read one with `ceph crash info`")
        + "; a module that keeps "
        "crashing is raised as MGR_MODULE_ERROR; archive the report once read",
        {"crashes": crashes, "modules": mods, "crash_ids": ids[:20],
         "manual": (f"`ceph crash info {ids[-1]}` shows its traceback" if ids else
                    "`ceph crash ls-new` lists the reports; read one with `ceph crash "
                    "info`, archive it once read")},
        runbook="crash-archive" if ids else None, target=ids[-1] if ids else None)


def _setting(st: CephState, mon: str, name: str, default: str) -> str:
    """A monitor option as that monitor runs it, else as the configuration database has
    it, else Ceph's default."""
    v = st.mon_data.get(mon, {}).get(name)
    if v:
        return v
    for s in st.config_db:
        if s.name == name and s.section in ("global", "mon") and not s.mask:
            return s.value
    return f"{default}, the default"


def _mon_disk(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    mons: dict[str, dict[str, object]] = {}
    for line in hc.detail:
        if (m := _AVAIL_RE.search(line)):
            mons.setdefault(m.group(1), {})["avail_pct"] = int(m.group(2))
        if (m := _BIG_RE.search(line)):
            mons.setdefault(m.group(1), {}).update(store=m.group(2), limit=m.group(3))
    for name, info in mons.items():
        info["path"] = st.mon_data.get(name, {}).get("mon_data")
    parts = []
    for name, info in sorted(mons.items()):
        path = info.get("path") or "its mon_data directory"
        if "avail_pct" in info:
            parts.append(f"mon.{name}: {info['avail_pct']}% free on the filesystem of "
                         f"{path}")
        if "store" in info:
            parts.append(f"mon.{name}: store {info['store']} in {path} (warn at "
                         f"{info['limit']})")
    first = min(mons) if mons else "NAME"
    if hc.code == "MON_DISK_BIG":
        todo = (f"compact it: `ceph tell mon.{first} compact` (the store grows while PGs are "
                "not clean: osdmaps are kept until they are); a store that stays big after "
                "the cluster is clean needs mon_data_size_warn raised or more disk")
    else:
        warn = _setting(st, first, "mon_data_avail_warn", "30")
        crit = _setting(st, first, "mon_data_avail_crit", "5")
        todo = (f"free space on that filesystem (old logs under /var/log/ceph, core dumps, "
                f"packages) or compact the store (`ceph tell mon.{first} compact`); Ceph "
                f"warns at mon_data_avail_warn ({warn} %) and the monitor shuts itself "
                f"down at mon_data_avail_crit ({crit} %)")
    return Explained(f"{'; '.join(parts) or hc.summary}: {todo}",
                     {"mons": mons, "manual": todo})


EXPLAIN: Mapping[str, Callable[[HealthCheck, CephState, CheckContext], Explained]] = {
    "MGR_MODULE_ERROR": _module_error,
    "RECENT_MGR_MODULE_CRASH": _module_crash,
    "MON_DISK_LOW": _mon_disk, "MON_DISK_CRIT": _mon_disk, "MON_DISK_BIG": _mon_disk,
}


def explain(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    return EXPLAIN[hc.code](hc, st, ctx)
