"""Host facts of every configured host, in parallel: what belongs to each host (its plan),
one facts run, one identity run only when an OSD data dir is not mounted.

Because lab "hosts" are all the same machine, the facts are filtered to what belongs to
the host: its OSDs (CRUSH host == HostTarget.name) and its Swift devices (ring ip ==
HostTarget.address).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from storage.deploy import parse_lvs, parse_systemd
from storage.hostfacts.disks import parse_fsprobe, parse_smart, parse_xfs_events
from storage.hostfacts.identity import (
    candidates,
    identity_argv,
    norm,
    parse_identities,
    swift_identities,
)
from storage.hostfacts.parse import (
    keep_io_errors,
    parse_addrs,
    parse_daemon_section,
    parse_findmnt,
    parse_fstab,
    parse_io_errors,
    parse_listeners,
    parse_losetup,
    parse_lsblk,
    parse_md5sums,
    parse_netdev,
    parse_oom,
    parse_osd_section,
    parse_probes,
    parse_proc_mounts,
    parse_ps_osds,
    parse_ps_swift,
    parse_swift_section,
    split_sections,
)
from storage.hostfacts.scripts import DaemonProbe, facts_argv
from storage.model import (
    CephState,
    Daemon,
    DeviceIdentity,
    HostFacts,
    HostRaw,
    OsdDataDir,
    SwiftDeviceDir,
    SwiftState,
    daemon_kind,
)
from storage.runner import HostUnreachable, Runner
from storage.ssh import FabricRunner
from storage.targets import ClusterTarget, HostTarget
from storage.why import why


@dataclass(frozen=True)
class HostPlan:
    """What belongs to one host: its OSDs and Swift devices, with their paths."""

    target: HostTarget
    osds: tuple[tuple[int, str, str | None], ...] = ()  # (id, data dir, pid file)
    swift: tuple[tuple[str, str], ...] = ()  # (device name, dir)
    cluster_name: str = "ceph"
    daemons: tuple[DaemonProbe, ...] = ()  # whose life to read (its OSDs, its daemons)


def osd_data_dir(t: HostTarget, cluster: str, osd_id: int, fsid: str = "") -> str:
    return t.osd_data_dir.format(cluster=cluster, id=osd_id, fsid=fsid)


def plan_for(target: ClusterTarget, host: HostTarget, ceph: CephState | None,
             swift: SwiftState | None) -> HostPlan:
    cl = target.ceph_cluster_name
    osds: list[tuple[int, str, str | None]] = []
    if ceph is not None:
        for o in sorted(ceph.osds, key=lambda o: o.id):
            if o.host == host.name and o.exists:
                pidf = host.osd_pid_file.format(id=o.id, cluster=cl, fsid=ceph.fsid) \
                    if host.osd_pid_file else None
                osds.append((o.id, osd_data_dir(host, cl, o.id, ceph.fsid), pidf))
    devs: list[tuple[str, str]] = []
    if swift is not None and host.swift_devices_dir:
        seen: set[str] = set()
        for ring in swift.rings:
            for d in ring.devices:
                if d.ip == host.address and d.device not in seen:
                    seen.add(d.device)
                    devs.append((d.device, os.path.join(host.swift_devices_dir, d.device)))
    return HostPlan(host, tuple(osds), tuple(sorted(devs)), cl,
                    daemon_probes(host, cl, [(i, pidf) for i, _, pidf in osds],
                                  ceph.fsid if ceph is not None else ""))


def daemon_probes(host: HostTarget, cluster: str, osds: list[tuple[int, str | None]],
                  fsid: str = "") -> tuple[DaemonProbe, ...]:
    """What the facts script reads of each daemon of this host: its OSDs (paths from the
    host's templates) and the daemons its settings list."""
    crash = host.ceph_crash_dir or ""
    out: list[DaemonProbe] = []
    for osd_id, pidf in osds:
        def fill(t: str | None, osd_id: int = osd_id) -> str:
            return t.format(id=osd_id, cluster=cluster, fsid=fsid) if t else ""
        asok = fill(host.osd_admin_socket)
        out.append(DaemonProbe(f"osd.{osd_id}", pidf or "", f"asok:{asok}" if asok else "",
                               fill(host.osd_log_file), crash, fill(host.osd_unit)))
    for d in host.daemons:
        kind = daemon_kind(d.name)
        if d.admin_socket:
            probe = f"asok:{d.admin_socket}"
        elif d.port:
            how = {"memcached": "memcached", "rsyncd": "tcp"}.get(kind, "http")
            probe = f"{how}:{d.address or host.address}:{d.port}"
        else:
            probe = ""
        out.append(DaemonProbe(d.name, d.pid_file, probe, d.log_file,
                               crash if kind in ("mon", "mgr") else "", d.unit))
    return tuple(out)


@dataclass(frozen=True)
class _Parsed:
    facts: HostFacts  # no identities yet
    candidates: list[str]  # unmounted devices that may hold an unmounted OSD dir
    labels: dict[str, str]  # device path -> filesystem label


def _osd_daemon(osd_id: int, pid_file: str | None, pid: int | None, read: bool,
                cmdline: str, ps: dict[int, int]) -> Daemon:
    if read:
        # the pid file is the authority when configured: a ps match could be another
        # cluster's osd.N on the same machine
        return Daemon("ceph-osd", str(osd_id), pid, "ceph-osd" in cmdline)
    if pid_file:  # configured pid file is missing: the daemon removed it on exit
        return Daemon("ceph-osd", str(osd_id), None, False)
    if osd_id in ps:
        return Daemon("ceph-osd", str(osd_id), ps[osd_id], True)
    return Daemon("ceph-osd", str(osd_id), None, False)


def _facts_from_output(plan: HostPlan, text: str, window_s: float,
                       t_start: float, now: float | None = None) -> _Parsed:
    """Parse one facts run (``now``: the clock when the host's own is missing from it)."""
    t = plan.target
    sec = split_sections(text)
    now_lines = sec.get("now", [])
    remote_now = float(now_lines[0]) if now_lines and now_lines[0].strip().isdigit() \
        else (now if now is not None else time.time())
    if "procmounts" in sec:
        all_mounts = parse_proc_mounts("\n".join(sec["procmounts"]))
    else:
        all_mounts = parse_findmnt("\n".join(sec.get("findmnt", [])))
    backing = parse_losetup("\n".join(sec.get("losetup", [])))
    devs = parse_lsblk("\n".join(sec.get("lsblk", [])), backing)
    fstab_all = parse_fstab("\n".join(sec.get("fstab", [])))
    io_all = parse_io_errors(sec.get("kmsg", []), remote_now, window_s)
    ps = parse_ps_osds(sec.get("ps", []), plan.cluster_name)

    osd_data: dict[int, OsdDataDir] = {}
    daemons: list[Daemon] = []
    unmounted_osd_dirs: list[str] = []
    mounted = {norm(m.target) for m in all_mounts}
    for osd_id, d, pidf in plan.osds:
        s = parse_osd_section(osd_id, d, sec.get(f"osd {osd_id}", []))
        osd_data[osd_id] = s.data_dir
        if norm(d) not in mounted and not s.data_dir.has_whoami:
            unmounted_osd_dirs.append(d)
        daemons.append(_osd_daemon(osd_id, pidf, s.pid, s.pid_file_read, s.cmdline, ps))
    swift_devices: dict[str, SwiftDeviceDir] = {
        name: parse_swift_section(name, d, sec.get(f"swift {name}", []))
        for name, d in plan.swift}

    rel = {norm(d) for _, d, _ in plan.osds} | {norm(d) for _, d in plan.swift}
    mounts = tuple(m for m in all_mounts if norm(m.target) in rel)
    fstab = tuple(f for f in fstab_all if norm(f.mountpoint) in rel)
    cand = candidates(all_mounts, devs, backing, fstab_all, unmounted_osd_dirs)
    # block devices that matter: mounted on our dirs, our OSDs' block links, candidates,
    # and fstab sources of our dirs (by path or by backing file)
    keep_paths = {norm(m.source) for m in mounts} | {
        norm(d.block) for d in osd_data.values() if d.block} | {norm(c) for c in cand}
    keep_files = {norm(f.device) for f in fstab}
    bdevs = tuple(d.dev for d in devs if norm(d.dev.path) in keep_paths
                  or (d.dev.backing_file and norm(d.dev.backing_file) in keep_files))
    kept_names = {os.path.basename(b.path) for b in bdevs} | \
        {os.path.basename(m.source) for m in mounts}
    io = keep_io_errors(io_all, kept_names)
    listeners = parse_listeners(sec.get("listen", [])) if "listen" in sec else None
    mine = set(osd_data)
    lvm = tuple(v for v in parse_lvs("\n".join(sec.get("lvs", []))) if v.osd_id in mine)
    journals = {k[len("journal "):]: v for k, v in sec.items() if k.startswith("journal ")}
    units = tuple(u for u in parse_systemd(sec.get("systemd", []), journals)
                  if u.osd_id in mine)
    probes = parse_probes(sec.get("probes", []))
    oom = parse_oom(sec.get("oom", []))
    daemon_facts = tuple(
        parse_daemon_section(dp.name, daemon_kind(dp.name), sec.get(f"daemon {dp.name}", []),
                             probes, oom, remote_now, dp.pid_file, dp.log_file,
                             dp.probe.split(":", 1)[0] if dp.probe else "")
        for dp in plan.daemons if f"daemon {dp.name}" in sec)
    facts = HostFacts(name=t.name, address=t.address, mounts=mounts, block_devices=bdevs,
                      fstab=fstab, daemons=tuple(daemons), listeners=listeners,
                      swift_processes=tuple(parse_ps_swift(sec.get("swiftps", []))),
                      io_errors=io, osd_data=osd_data, swift_devices=swift_devices,
                      collected_at=time.time(), duration_s=time.monotonic() - t_start,
                      lvm_volumes=lvm, units=units,
                      ring_md5=parse_md5sums(sec.get("ringmd5", [])),
                      addresses=parse_addrs(sec.get("addrs", [])),
                      daemon_facts=daemon_facts,
                      net_counters=parse_netdev(sec.get("netdev", [])))
    if "xfslog" in sec:  # filesystems and disks (checks/disks.py); older output has none
        fs_probes = tuple(parse_fsprobe("osd", str(i), d, sec.get(f"fsprobe osd {i}", []))
                       for i, d, _ in plan.osds) + tuple(
            parse_fsprobe("swift", n, d, sec.get(f"fsprobe swift {n}", []))
            for n, d in plan.swift)
        smart = {k[len("smart "):]: parse_smart(k[len("smart "):], v)
                 for k, v in sec.items() if k.startswith("smart ")}
        facts = replace(facts, fs_probes=fs_probes, smart=smart, disks_collected=True,
                        xfs_events=parse_xfs_events(sec.get("xfslog", [])))
    # Swift: the dir name an unmounted device would be mounted as (fstab), else its label
    labels = {d.dev.path: d.label for d in devs if d.label}
    return _Parsed(facts, cand, labels)


def collect_one(plan: HostPlan, runner: Runner, window_s: float = 86400.0,
                keep_raw: bool = False) -> HostFacts:
    """All facts of one host: one round trip, plus one more only for unmounted devices.
    With ``keep_raw`` the scripts' output rides along (``HostFacts.raw``) for a snapshot."""
    t = plan.target
    t0 = time.monotonic()
    started = time.time()
    try:
        r = runner.run(t.name, facts_argv(t.fstab_path, plan.osds, plan.swift,
                                          t.swift_ring_dirs, plan.daemons),
                       timeout_s=t.timeout_s)
    except HostUnreachable as e:
        return HostFacts(name=t.name, address=t.address, error=e.reason,
                         collected_at=time.time(), duration_s=time.monotonic() - t0)
    if r.timed_out or "@@end" not in r.stdout:
        why = "timed out" if r.timed_out else f"facts script failed (rc {r.rc}): " \
            f"{r.stderr.strip()[:200]}"
        return HostFacts(name=t.name, address=t.address, error=why,
                         collected_at=time.time(), duration_s=time.monotonic() - t0)
    parsed = _facts_from_output(plan, r.stdout, window_s, t0)
    identity: str | None = None
    if parsed.candidates:
        try:
            identity = runner.run(t.name, identity_argv(parsed.candidates),
                                  timeout_s=t.timeout_s).stdout
        except HostUnreachable:
            identity = None
    facts = _with_identities(plan, parsed, identity)
    raw = HostRaw(r.stdout, identity, started, window_s) if keep_raw else None
    return replace(facts, duration_s=time.monotonic() - t0, raw=raw)


def _with_identities(plan: HostPlan, parsed: _Parsed, identity: str | None) -> HostFacts:
    """The facts with what the unmounted devices say they are (Swift labels; the
    identity script's answer for OSD candidates, only devices holding one of its OSDs)."""
    idents: list[DeviceIdentity] = swift_identities(plan.swift, parsed.facts, parsed.labels)
    if parsed.candidates:
        found = parse_identities(identity) if identity is not None else {}
        mine = {o[0] for o in plan.osds}
        for dev in parsed.candidates:
            ident = found.get(dev)
            if isinstance(ident, DeviceIdentity) and ident.whoami in mine:
                idents.append(ident)
    return replace(parsed.facts, identities=tuple(idents))


def facts_from_raw(plan: HostPlan, raw: HostRaw, collected_at: float,
                   duration_s: float) -> HostFacts:
    """The facts of one host from what its scripts printed (a snapshot's replay): the
    same parser as a live run, no I/O. ValueError when the output is not the script's."""
    if "@@end" not in raw.facts:
        raise ValueError("the facts script's output has no @@end: truncated")
    parsed = _facts_from_output(plan, raw.facts, raw.window_s, time.monotonic(),
                               now=raw.started_at)
    facts = _with_identities(plan, parsed, raw.identity)
    return replace(facts, collected_at=collected_at, duration_s=duration_s, raw=raw)


def collect_host_facts(target: ClusterTarget, ceph: CephState | None,
                       swift: SwiftState | None, runner: Runner | None = None,
                       window_s: float = 86400.0, max_workers: int = 32,
                       keep_raw: bool = False) -> dict[str, HostFacts]:
    """Facts of every configured host, in parallel; a silent host becomes HostFacts(error)."""
    if not target.hosts:
        return {}
    own = runner is None
    run: Runner = runner if runner is not None else FabricRunner(target.hosts)
    plans = [plan_for(target, h, ceph, swift) for h in target.hosts]
    out: dict[str, HostFacts] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(plans)))) as pool:
            futs = {p.target.name: pool.submit(collect_one, p, run, window_s, keep_raw)
                    for p in plans}
            for name, fut in futs.items():
                h = target.host(name)
                try:
                    out[name] = fut.result()
                except Exception as e:  # never let one host abort the run  # noqa: BLE001
                    out[name] = HostFacts(name=name, address=h.address if h else "",
                                          error=f"{why(e)}")
    finally:
        if own:
            run.close()
    return out
