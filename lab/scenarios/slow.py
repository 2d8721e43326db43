"""Slow requests on one OSD, made for real: Ceph's own dispatch delay injection
(``osd_debug_inject_dispatch_delay_probability`` 1 and ``_duration`` 2 s on osd.N: every
message the OSD dispatches waits, as on an overloaded or stalling OSD) under client
writes (``rados bench``, 4 KB, 2 at a time, in the background), with
``osd_op_complaint_time`` and ``osd_op_history_slow_op_threshold`` of that OSD lowered to
1 s so Ceph raises SLOW_OPS within seconds, and ``mon_warn_on_slow_ping_time`` 20 ms so
the heartbeats the delay slows (100+ ms against ~1 ms) raise OSD_SLOW_PING_TIME_*. The
PGs whose read lease waits on the OSD turn laggy. Both options exist on Pacific and Reef
(``ceph config help``). Heal stops the load, removes every option and the bench's
objects, and waits for the slow ops to drain and the PGs to be clean."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.procs import LabError, run, wait
from lab.scenarios.base import OSD_ANY, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

LOAD = "slow-load"  # the background bench's pid file name
POOL = "rbd"  # the lab's own pool: no new pool (a pool of few PGs is a finding)
RUN_NAME = "stordoc-slow"
WAIT_S = 300.0  # a loaded 2-core CI machine once took more than 150 s to raise both
OSD_OPTIONS = (("osd_op_complaint_time", "1"), ("osd_op_history_slow_op_threshold", "1"),
               ("osd_debug_inject_dispatch_delay_duration", "2"),
               ("osd_debug_inject_dispatch_delay_probability", "1"))
PING = ("mon_warn_on_slow_ping_time", "20")


def _checks(lab: Lab) -> dict[str, Any]:
    h = lab.ceph("health", "detail", check=False)
    c = h.get("checks") if isinstance(h, dict) else None
    return c if isinstance(c, dict) else {}


def _names(checks: dict[str, Any], code: str) -> str:
    c = checks.get(code)
    if not isinstance(c, dict):
        return ""
    return str((c.get("summary") or {}).get("message", "")) + " ".join(
        str(d.get("message", "")) for d in c.get("detail") or [] if isinstance(d, dict))


class OsdSlowOps(Scenario):
    name = "osd-slow-ops"
    summary = "an OSD delays every message it dispatches (slow ops, slow heartbeats)"
    options = (OSD_ANY,)
    heal_options = (OSD_ANY,)

    def _rados(self, lab: Lab, step: str, *args: str) -> list[str]:
        cc = lab.ceph_cluster
        return cc._argv("rados", "-c", cc._p(lab.conf), "-p", POOL, *args)

    def _raised(self, lab: Lab, osd: int) -> bool:
        c = _checks(lab)
        return (f"osd.{osd}" in _names(c, "SLOW_OPS")
                and any(f"osd.{osd}" in _names(c, k) for k in
                        ("OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT")))

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"break osd-slow-ops osd.{osd}"
        for name, value in OSD_OPTIONS:
            lab.ceph("config", "set", f"osd.{osd}", name, value, step=step)
        lab.ceph("config", "set", "global", *PING, step=step)
        load = self._rados(lab, step, "bench", "3600", "write", "-t", "2", "-b", "4096",
                           "--run-name", RUN_NAME, "--no-cleanup")
        restarts = 0

        def raised() -> bool:
            nonlocal restarts
            if lab.procs.pid(LOAD) is None:  # the load ended (a loaded machine: a timeout)
                lab.procs.spawn(LOAD, load, step)
                restarts += 1
            return self._raised(lab, osd)
        try:
            wait(raised, WAIT_S, step, f"SLOW_OPS and OSD_SLOW_PING_TIME_* naming osd.{osd}")
        except LabError as e:
            c = _checks(lab)
            said = {k: _names(c, k)[:160] for k in ("SLOW_OPS", "OSD_SLOW_PING_TIME_BACK",
                                                    "OSD_SLOW_PING_TIME_FRONT")}
            tail = (lab.log_dir / f"{LOAD}.log").read_text(errors="replace").splitlines()[-3:] \
                if (lab.log_dir / f"{LOAD}.log").exists() else []
            raise LabError(step, f"timed out after {WAIT_S:.0f}s waiting for SLOW_OPS and "
                           f"OSD_SLOW_PING_TIME_* naming osd.{osd}; health checks {sorted(c)}, "
                           f"{said}; the load started {restarts + 1} time(s), its log ends "
                           f"{tail}", e.log) from None
        return (f"osd.{osd}: every dispatch delayed 2 s under client writes; Ceph warns "
                "SLOW_OPS and OSD_SLOW_PING_TIME_*")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"heal osd-slow-ops osd.{osd}"
        pid = lab.procs.pid(LOAD)
        lab.stop(LOAD)
        lab.procs.pidfile(LOAD).unlink(missing_ok=True)
        for name, _ in reversed(OSD_OPTIONS):
            lab.ceph("config", "rm", f"osd.{osd}", name, step=step)
        lab.ceph("config", "rm", "global", PING[0], step=step)
        wait(lambda: not {"SLOW_OPS", "OSD_SLOW_PING_TIME_BACK",
                          "OSD_SLOW_PING_TIME_FRONT"} & set(_checks(lab)), WAIT_S, step,
             "SLOW_OPS and OSD_SLOW_PING_TIME_* cleared")
        listed = run(self._rados(lab, step, "ls"), step).stdout.split()
        mine = [n for n in listed if n.startswith("benchmark_data_") and pid is not None
                and f"_{pid}_object" in n]
        for prefix in sorted({n.split("_object")[0] for n in mine}):
            run(self._rados(lab, step, "cleanup", "--prefix", prefix), step, timeout=120)
        if RUN_NAME in listed:
            run(self._rados(lab, step, "rm", RUN_NAME), step)
        lab.wait_pgs_clean(300, step)
        return (f"osd.{osd}: delay injection and lowered thresholds removed, load stopped, "
                f"{len(mine)} bench object(s) removed, PGs clean")
