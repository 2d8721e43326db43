"""Restart a crashed or hung daemon (``daemon-restart``), or start a stopped one
(``daemon-start``): mon, mgr, osd, and each Swift
daemon the host's settings list. Its evidence is saved on its host first (the log's tail,
Ceph's crash report, the hung process's /proc state), the crash report it read is archived
(``ceph crash archive``), a hung process is killed, then the daemon is started with the
host's own start command. A restart-looping daemon is refused with what the loop shows:
one more restart will not help.

The judgement is ``checks.daemons.judge``, the same one the check reports.
"""

from __future__ import annotations

import re

from checks.daemons import status_of
from checks.hostdiag import diagnose_osd
from checks.osd import cluster_entity
from runbooks.base import Draft, Runbook, host_of, register
from runbooks.model import Probe, Refused, RunbookInfo, StepEnv
from runbooks.osd import UP_POLL_S, _start_and_up, _start_argv, osd_up_probe
from storage.hostscripts import ALIVE_SCRIPT, EVIDENCE_SCRIPT, KILL_SCRIPT  # noqa: F401
from storage.hostscripts import PROGRAM as _PROGRAM
from storage.model import ClusterSnapshot, DaemonLife, DaemonStatus, HostFacts, OsdState
from storage.targets import HostTarget

_SWIFT_DAEMON = re.compile(r"\Aswift-(account|container|object)-[a-z-]+@(.+)\Z")


def _alive_probe(host: str, pid_file: str) -> Probe:
    """A WaitOp probe: the pid file names a live process again."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        r = env.runner.run(host, ["sh", "-c", ALIVE_SCRIPT, "stordoc-alive", pid_file],
                           timeout_s=10)
        pid = r.stdout.strip()
        return (r.rc == 0 and pid.isdigit()), f"{pid_file}: {pid or 'no live process'}"

    return probe


def _status(snap: ClusterSnapshot, target: str) -> DaemonStatus:
    name, _, host = target.partition("@")
    st = status_of(snap, name, host or None)
    if st is None:
        where = f" on {host}" if host else ""
        raise Refused(f"no host reported {name}{where} (is it in the host's settings, and "
                      "were host facts collected?)")
    return st


def _osd_safe_to_start(snap: ClusterSnapshot, name: str, ht: HostTarget, facts: HostFacts,
                       verb: str) -> OsdState:
    """The osdmap's OSD ``name``, refused when its disk shows kernel I/O errors or its
    data dir is not in place (restarting or starting it then is unsafe or useless)."""
    osd = snap.ceph.osd(int(name.split(".", 1)[1])) if snap.ceph is not None else None
    if osd is None:
        raise Refused(f"{name} is not in the osdmap")
    dg = diagnose_osd(facts, osd, snap.ceph.fsid if snap.ceph else "", snap.taken_at)
    if dg is not None and dg.io_errors:
        e = dg.io_errors[-1]
        raise Refused(f"{e.device} on {ht.name} shows kernel I/O errors, {verb} "
                      f"{name} is unsafe: {e.line.strip()}")
    if dg is not None and dg.mount is None and not dg.populated:
        raise Refused(f"{dg.data_dir} is not in place on {ht.name}: use "
                      f"{dg.runbook() or 'osd-remount'}")
    return osd


@register
class DaemonRestart(Runbook):
    info = RunbookInfo(
        "daemon-restart",
        "Restart a crashed or hung daemon (mon, mgr, osd, Swift): save its evidence (log "
        "tail, crash report, /proc of a hung process) on its host, archive the crash report "
        "it read, kill a hung process, start it, wait until it answers. A restart-looping "
        "daemon is refused.",
        ("OSD_DAEMON_CRASHED", "OSD_DAEMON_HUNG", "DAEMON_CRASHED", "DAEMON_HUNG"),
        destructive=False, target_kind="daemon",
        target_help="osd.N, mon.ID, mgr.ID or NAME@HOST (swift-object-server@node1)")
    needs_host_facts = True

    def lock_keys(self, target: str) -> list[str]:
        """A Swift daemon also takes the lock of the runbooks that start its server or
        replicator (``object@node1``): two runbooks never act on one daemon at once."""
        m = _SWIFT_DAEMON.match(target)
        return [target, f"{m.group(1)}@{m.group(2)}"] if m else [target]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        st = _status(snap, target)
        where = f"{st.name} on {st.host}"
        if st.life is DaemonLife.LOOPING:
            raise Refused(f"{where} is {st.summary}: one more restart will not help; read "
                          f"{st.log_file or 'its log'} and fix the cause first")
        if st.life not in (DaemonLife.CRASHED, DaemonLife.HUNG):
            hint = f": use daemon-start {st.entity}" if st.life is DaemonLife.STOPPED else ""
            raise Refused(f"{where} is {st.life.value} ({st.summary}): daemon-restart "
                          f"restarts only a crashed or hung daemon{hint}")
        ht, facts = host_of(d.ctx, snap, st.host, st.name)
        if st.kind == "osd":
            osd_id = _osd_safe_to_start(snap, st.name, ht, facts, "restarting").id
            start = _start_argv(d, ht, osd_id)
        else:
            conf = next((x for x in ht.daemons if x.name == st.name), None)
            if conf is None or not conf.start:
                raise Refused(f"no start command for {st.name} in host {ht.name}'s settings "
                              f"(start = [...] under [[clusters.{d.ctx.cluster}.hosts."
                              "daemons]])")
            start = list(conf.start)
        # named by what died (stable between the plan and its re-plan before running)
        which = f"pid{st.pid}" if st.pid else (st.crash_id or "last")
        evidence_dir = f"{ht.evidence_dir.rstrip('/')}/{st.name}-{which}"
        crash_dir = ""
        if st.crash_id and ht.ceph_crash_dir:
            sub = "posted/" if st.crash_posted else ""
            crash_dir = f"{ht.ceph_crash_dir.rstrip('/')}/{sub}{st.crash_id}"
        hung = st.life is DaemonLife.HUNG
        d.params.update(daemon=st.name, host=ht.name, life=st.life.value, why=st.summary,
                        evidence_dir=evidence_dir, crash_id=st.crash_id, signal=st.signal)
        d.host(f"save the evidence of {st.name} in {evidence_dir}", ht.name,
               ["sh", "-c", EVIDENCE_SCRIPT, "stordoc-evidence", evidence_dir, st.log_file,
                crash_dir, str(st.pid) if hung and st.pid else ""])
        new = {c.crash_id for c in (snap.ceph.crashes or ())} if snap.ceph else set()
        if st.crash_id and st.crash_id in new:
            d.mon(f"archive crash report {st.crash_id} (saved with the evidence)",
                  "crash archive", {"id": st.crash_id})
        elif st.crash_id:
            d.warnings.append(f"crash report {st.crash_id} is not posted to the cluster yet "
                              "(ceph-crash posts it later): it is kept in the evidence")
        if hung:
            if not st.pid:
                raise Refused(f"{where} is hung but its pid is unknown")
            d.warnings.append(f"{where}: {st.summary}; the process is killed (SIGKILL) after "
                              "its evidence is saved")
            d.host(f"kill the hung {st.name} (pid {st.pid})", ht.name,
                   ["sh", "-c", KILL_SCRIPT, "stordoc-kill", str(st.pid),
                    _PROGRAM.get(st.kind, st.name)])
        d.host(f"start {st.name} on {ht.name}", ht.name, start)
        if st.kind == "osd":
            osd_id = int(st.name.split(".", 1)[1])
            d.wait(f"wait until {st.name} is up", f"ceph osd dump: wait until {st.name} is up",
                   osd_up_probe(osd_id), interval_s=UP_POLL_S)
        elif st.pid_file:
            d.wait(f"wait until {st.name} runs", f"{st.pid_file} names a live process",
                   _alive_probe(ht.name, st.pid_file), interval_s=0.5, where=ht.name)
        d.verify_codes = (*self.info.fixes, "OSD_DAEMON_STOPPED", "DAEMON_STOPPED")
        d.verify_entities = (st.entity,)
        if st.kind == "mgr":  # done when a manager answers again, not when a process runs
            d.wait(f"wait until {st.name} is in the manager map",
                   f"ceph mgr dump: {st.name} active or standby",
                   _mgr_probe(st.name.split(".", 1)[1]), interval_s=1.0)
            d.verify_codes += ("MGR_NO_ACTIVE", "MGR_NOT_ANSWERING", "PGS_STATS_STALE")
            d.verify_entities += (f"{cluster_entity(snap)} mgr", st.entity,
                                  f"{cluster_entity(snap)} pgs")
        d.verify_host_facts = True


def _mgr_probe(mgr_id: str) -> Probe:
    """A WaitOp probe: the manager map names ``mgr_id`` active and available, or a standby."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        try:
            dump = env.ceph.mon("mgr dump") or {}
        except Exception as e:  # noqa: BLE001  (the monitor may be slow to answer)
            return False, f"mgr dump: {e}"
        standbys = [str(s.get("name")) for s in dump.get("standbys", []) if isinstance(s, dict)]
        if dump.get("active_name") == mgr_id and dump.get("available"):
            return True, f"mgr.{mgr_id} is active and available"
        if mgr_id in standbys:
            return True, f"mgr.{mgr_id} is a standby (mgr.{dump.get('active_name')} is active)"
        return False, (f"mgr.{mgr_id} is not in the manager map yet (active: "
                       f"{dump.get('active_name') or 'none'})")

    return probe


def _mon_probe(mon_id: str) -> Probe:
    """A WaitOp probe: ``mon_id`` is in the monitors' quorum."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        try:
            q = env.ceph.mon("quorum_status") or {}
        except Exception as e:  # noqa: BLE001  (no quorum yet: the monitors do not answer)
            return False, f"quorum_status: {e}"
        names = [str(n) for n in q.get("quorum_names", [])]
        return mon_id in names, f"quorum: {', '.join(names) or 'none'}"

    return probe


@register
class DaemonStart(Runbook):
    info = RunbookInfo(
        "daemon-start",
        "Start a stopped daemon (mon, mgr, osd, a Swift server or proxy, memcached, "
        "rsyncd) with its host's start command and wait until it runs; a crashed or hung "
        "one is daemon-restart's, a port held by another process refuses.",
        ("DAEMON_STOPPED",), destructive=False, target_kind="daemon",
        target_help="osd.N, mon.ID, mgr.ID or NAME@HOST (swift-proxy-server@node1)")
    needs_host_facts = True

    def lock_keys(self, target: str) -> list[str]:
        m = _SWIFT_DAEMON.match(target)
        return [target, f"{m.group(1)}@{m.group(2)}"] if m else [target]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        st = _status(snap, target)
        where = f"{st.name} on {st.host}"
        if st.life in (DaemonLife.CRASHED, DaemonLife.HUNG):
            raise Refused(f"{where} is {st.life.value} ({st.summary}): use daemon-restart "
                          f"{st.entity}, which saves its evidence first")
        if st.life is DaemonLife.LOOPING:
            raise Refused(f"{where} is {st.summary}: starting it once more will not help; "
                          f"read {st.log_file or 'its log'} and fix the cause first")
        if st.life is not DaemonLife.STOPPED:
            raise Refused(f"{where} is {st.life.value} ({st.summary}): nothing to start")
        ht, facts = host_of(d.ctx, snap, st.host, st.name)
        d.params.update(daemon=st.name, host=ht.name, life=st.life.value, why=st.summary)
        if st.kind == "osd":
            osd = _osd_safe_to_start(snap, st.name, ht, facts, "starting")
            _start_and_up(d, ht, osd, False)
            d.verify_codes = ("DAEMON_STOPPED", "OSD_DAEMON_STOPPED")
            d.verify_entities = (st.entity,)
            d.verify_host_facts = True
            return
        conf = next((x for x in ht.daemons if x.name == st.name), None)
        if conf is None or not conf.start:
            raise Refused(f"no start command for {st.name} in host {ht.name}'s settings "
                          f"(start = [...] under [[clusters.{d.ctx.cluster}.hosts.daemons]])")
        if conf.port is not None:
            if facts.listeners is None:
                raise Refused(f"cannot see the listening sockets on {ht.name} (no ss): "
                              f"refusing to start {st.name}, whose port {conf.port} may be "
                              "in use")
            held = facts.listeners.get(conf.port)
            if held is not None:
                raise Refused(f"port {conf.port} on {ht.name} is held by pid {held[0]} "
                              f"({held[1] or '?'}): not starting a second {st.name}")
        d.host(f"start {st.name} on {ht.name}", ht.name, list(conf.start))
        if st.pid_file:
            d.wait(f"wait until {st.name} runs", f"{st.pid_file} names a live process",
                   _alive_probe(ht.name, st.pid_file), interval_s=0.5, where=ht.name)
        verify: tuple[str, ...] = ("DAEMON_STOPPED", "DAEMON_CRASHED", "DAEMON_HUNG")
        entities: tuple[str, ...] = (st.entity,)
        if st.kind == "mgr":
            mgr_id = st.name.split(".", 1)[1]
            d.wait(f"wait until {st.name} is in the manager map",
                   f"ceph mgr dump: {st.name} active or standby", _mgr_probe(mgr_id),
                   interval_s=1.0)
            verify += ("MGR_NO_ACTIVE", "PGS_STATS_STALE")
            entities += (f"{cluster_entity(snap)} mgr", f"{cluster_entity(snap)} pgs")
        elif st.kind == "mon":
            d.wait(f"wait until {st.name} is in quorum", f"ceph quorum_status: {st.name}",
                   _mon_probe(st.name.split(".", 1)[1]), interval_s=1.0)
            verify += ("MON_OUT_OF_QUORUM", "CEPH_UNREACHABLE")
            entities += (cluster_entity(snap),)
        elif st.kind == "proxy-server" and snap.swift is not None and snap.swift.proxy_url:
            verify += ("SWIFT_PROXY_UNHEALTHY",)
            entities += (f"swift proxy {snap.swift.proxy_url}",)
        d.verify_codes = verify
        d.verify_entities = entities
        d.verify_host_facts = True
