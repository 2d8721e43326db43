"""Snapshots of every ``lab break`` scenario, saved from a real lab into
``tests/fixtures/snapshots/<release>/<case>/``: the replay tests read them (findings,
incidents, next steps, CLI text and JSON, Slack blocks, TUI rows without a lab), and one
lab test per case breaks the lab for real and checks that the live findings reach the
snapshot's (so a fixture cannot rot).

Regenerate (each release on its own lab; ``scripts/snapshots`` does both):

    .venv/bin/python -m tests.support.fixture_snapshots --dir /var/tmp/stordoc-lab \\
        --out tests/fixtures/snapshots/pacific [CASE ...]

With the lab's alert chain running (``lab up --with-alerts``: the mgr ``prometheus``
module), each snapshot also holds the metrics Prometheus would scrape then (``metrics/``:
the module's ``/metrics`` and every host's node_exporter, storage/snapshot/metrics.py);
``--metrics-only`` breaks each case again and adds only ``metrics/`` to its saved
snapshot, leaving the snapshot's other files as they are.

A case is saved once the fault is visible (its root incident is on top) and the findings
stayed the same over ``STABLE_READS`` checks ``STABLE_GAP_S`` apart with no PG peering,
activating or recovering: the steady broken state a live run reaches too.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.service import Service
from tests.support.poll import wait_until

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "snapshots"
STABLE_READS = 3
STABLE_GAP_S = 3.0
# a fault younger than this is not its steady picture yet: PGs count as stuck after the
# lab's mon_pg_stuck_threshold (10 s), and Ceph's health hears of degraded PGs after the
# manager does
MIN_AGE_S = 25.0
WAIT_S = 300.0


@dataclass(frozen=True)
class Case:
    """One saved fault: the lab scenario and its options, what the diagnosis must say
    (the top incident's root and its one next step, ``None`` when no runbook applies),
    and what must be done before the break (``prepare``: dispersion objects, objects for
    the replicators, a journal baseline)."""

    name: str
    scenario: str | None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    root: str | None = None  # code of the top incident's root
    entity: str | None = None  # its entity, with <object>/<container>/<account> for ports
    next_step: str | None = None  # the command, "" for none
    verdict: int = 0
    prepare: tuple[str, ...] = ()
    heal_kwargs: Mapping[str, Any] = field(default_factory=dict)
    plain: str | None = None  # a fault made by plain commands (PLAIN), not `lab break`
    # the live test runs ``next_step`` through the CLI unless the repair needs more than
    # that line (then the named test repairs it, with what it needs)
    repaired_by: str | None = None
    incidents: int = 1  # a scenario may make a second problem of its own (said in its case)
    # the one release whose lab breaks it live in the tests (one live break per scenario;
    # half on each release, to share the time: "both" for the healthy baseline). Both
    # releases' snapshots are saved from real labs (scripts/snapshots) and replayed.
    live_on: str = "pacific"
    # consequences that come and go with timing (a Swift replication pass after the
    # break; slow heartbeats and laggy PGs under a delayed OSD): the live test compares
    # without them, on both sides, where the root's incident explains them
    after_pass: tuple[str, ...] = ()
    # codes a loaded 2-core machine makes on its own while this fault runs (slow
    # heartbeats between OSDs whose dispatch is delayed, reported from any OSD): the live
    # test leaves them out wherever they are, on both sides; the root is still compared
    load_noise: tuple[str, ...] = ()


CASES: tuple[Case, ...] = (
    Case("healthy", None, live_on="both"),
    Case("osd-unmounted-out", "osd-unmounted", {"osd": 1, "out": True},
         "OSD_DATA_UNMOUNTED", "osd.1", "stordoc fix osd-remount osd.1", 1,
         heal_kwargs={"osd": 1}),
    Case("osd-unmounted-in", "osd-unmounted", {"osd": 2}, "OSD_DATA_UNMOUNTED", "osd.2",
         "stordoc fix osd-remount osd.2", 2, heal_kwargs={"osd": 2}, live_on="reef"),
    # down and in (the seed fault's tmpfs form out as well: benchmarks/time_to_repair.py)
    Case("osd-not-activated", "osd-not-activated", {"osd": 3},
         "OSD_NOT_ACTIVATED", "osd.3", "stordoc fix osd-activate osd.3", 2,
         heal_kwargs={"osd": 3}),
    # the scenario's base pool has 8 PGs: POOL_PG_NUM_LOW lab-base, a second, real problem
    Case("cache-tier-misconfigured", "cache-tier-misconfigured", {}, "CACHE_NO_TARGET",
         "pool lab-cache", "stordoc fix cache-tier-tune lab-cache", 1, incidents=2,
         live_on="reef"),
    Case("pool-few-pgs", "pool-few-pgs", {}, "POOL_PG_NUM_LOW", "pool lab-fewpg",
         "stordoc fix pool-pg-num lab-fewpg", 1),
    Case("swift-device-unmounted", "swift-device-unmounted", {"device": "d2"},
         "SWIFT_DEVICE_UNMOUNTED", "d2@node2",
         "stordoc fix swift-device-remount d2@node2", 2, heal_kwargs={"device": "d2"},
         live_on="reef", after_pass=("SWIFT_REPLICATION_FAILURES",)),
    # a saved snapshot never plans the rebalance (its plan loads the builder file, a
    # pickle): the incident says to plan it live, which test_runbooks.py does
    Case("swift-ring-drift", "swift-ring-bad", {"mode": "drift"},
         "SWIFT_BUILDER_NEWER_THAN_RING", "object ring", "", 1,
         repaired_by="test_runbooks.py::test_swift_ring_rebalance (plan-only until "
                     "-o apply=true, min_part_hours)"),
    Case("swift-ring-replicas", "swift-ring-bad", {"mode": "replicas"},
         "SWIFT_REPLICAS_EXCEED_DEVICES", "object ring", "", 2, live_on="reef"),
    Case("swift-object-server-stopped", "swift-server-stopped", {"server": "object"},
         "SWIFT_SERVER_DOWN", "object server 127.0.0.2:<object>",
         "stordoc fix swift-server-start object@node1", 2, heal_kwargs={"server": "object"}),
    Case("swift-device-full", "swift-device-full", {"device": "d2"}, "SWIFT_DEVICE_FULL",
         "d2@node2", "", 1, heal_kwargs={"device": "d2"}, live_on="reef"),
    Case("swift-quarantine", "swift-quarantine", {}, "SWIFT_QUARANTINE_GROWTH",
         "object server 127.0.0.2:<object>", "", 1, prepare=("journal-baseline",)),
    Case("swift-async-pending", "swift-async-pending", {}, "SWIFT_SERVER_DOWN",
         "container server 127.0.0.2:<container>",
         "stordoc fix swift-server-start container@node1", 2, live_on="reef"),
    Case("swift-replication-stalled", "swift-replication-stalled", {"server": "object"},
         "SWIFT_REPLICATOR_NOT_RUNNING", "object server 127.0.0.2:<object>",
         "stordoc fix swift-replicator-start object@node1", 1,
         heal_kwargs={"server": "object"}),
    Case("swift-ring-stale", "swift-ring-stale", {"server": "object"},
         "SWIFT_RING_MD5_MISMATCH", "object ring 127.0.0.2:<object>",
         "stordoc fix swift-ring-push object", 2, live_on="reef"),
    Case("swift-dispersion-missing", "swift-dispersion-missing", {"device": "d2"},
         "SWIFT_DISPERSION_OBJECT_COPIES", None, None, 1, prepare=("dispersion",),
         heal_kwargs={"device": "d2"}),
    Case("swift-replication-lost", "swift-replication-lost", {"server": "object"},
         "SWIFT_REPLICATOR_IDLE", "object server 127.0.0.2:<object>", None, 1,
         prepare=("objects",), live_on="reef"),
    # a filesystem that stops accepting writes; one that shuts down (checks/disks.py):
    # one incident per physical device, no runbook (remount by hand, or replace the drive)
    Case("swift-device-readonly", "swift-device-readonly", {"device": "d2"}, "FS_READONLY",
         "disk /dev/loop<N>@node2", "", 2, heal_kwargs={"device": "d2"}, live_on="reef",
         after_pass=("SWIFT_REPLICATION_FAILURES",)),
    Case("swift-device-shutdown", "swift-device-shutdown", {"device": "d2"}, "FS_SHUTDOWN",
         "disk /dev/loop<N>@node2", "", 2, heal_kwargs={"device": "d2"}, live_on="reef",
         after_pass=("SWIFT_REPLICATION_FAILURES",)),
    # a disk that returns bad data (BlueStore's read error injection, repaired from a
    # copy): Ceph's OSD_TOO_MANY_REPAIRS, explained; nothing on the host to see
    Case("osd-read-errors", "osd-read-errors", {"osd": 1}, "CEPH_HEALTH",
         "ceph OSD_TOO_MANY_REPAIRS", "", 1, heal_kwargs={"osd": 1}, live_on="reef"),
    # faults made by plain commands, not by the lab's scenarios
    # a daemon's life (checks/daemons.py): killed, crashed with a crash report, hung
    Case("osd-killed", None, {}, "OSD_DAEMON_CRASHED", "osd.2",
         "stordoc fix daemon-restart osd.2", 2, plain="kill -9 osd.2"),
    Case("osd-crash", "osd-crash", {"osd": 2}, "OSD_DAEMON_CRASHED", "osd.2",
         "stordoc fix daemon-restart osd.2", 2, heal_kwargs={"osd": 2}, live_on="reef"),
    Case("osd-hung", "osd-hung", {"osd": 2}, "OSD_DAEMON_HUNG", "osd.2",
         "stordoc fix daemon-restart osd.2", 2, heal_kwargs={"osd": 2}),
    # refused by daemon-restart (one more restart will not help): no next step
    Case("osd-restart-loop", "osd-restart-loop", {"osd": 2}, "OSD_DAEMON_RESTART_LOOP",
         "osd.2", "", 2, heal_kwargs={"osd": 2}, live_on="reef"),
    Case("osd-out", None, {}, "OSD_UP_OUT", "osd.2", "stordoc fix osd-in osd.2", 1,
         plain="ceph osd out 2"),
    # manager, monitors, placement (lab/scenarios/mgrmon.py): the stopped manager is
    # started by daemon-start (the failover runbook needs a standby: test_mgrmon_lab.py)
    Case("mgr-stopped", "mgr-stopped", {}, "DAEMON_STOPPED", "mgr.x",
         "stordoc fix daemon-start mgr.x", 2),
    Case("osd-crush-weight-zero", "osd-crush-weight-zero", {"osd": 1}, "OSD_NO_DATA",
         "osd.1", "", 1, heal_kwargs={"osd": 1}, live_on="reef"),
    # the free-space line raised at runtime is the cause (issue 38.2): config-restore mon.a
    # puts back the ceph.conf value it overrode (`ceph tell mon.a config set ...`)
    Case("mon-disk-low", "mon-disk-low", {}, "CONFIG_OPTION_CAUSE", "config mon.a",
         "stordoc fix config-restore mon.a", 1, live_on="reef"),
    # slow requests (lab/scenarios/slow.py): Ceph's dispatch delay on osd.1 under writes;
    # config-restore osd.1 removes the debug options (issue 38.2); the slow heartbeats
    # are the lowered mon_warn_on_slow_ping_time's own incident (config-restore global)
    Case("osd-slow-ops", "osd-slow-ops", {"osd": 1}, "OSD_SLOW_OPS", "osd.1",
         "stordoc fix config-restore osd.1", 1, incidents=2,
         heal_kwargs={"osd": 1}, live_on="reef",
         after_pass=("OSD_SLOW_PING", "CEPH_HEALTH", "PGS_LAGGY"),
         load_noise=("OSD_SLOW_PING", "CONFIG_OPTION_CAUSE")),
    # one replica's object corrupted on disk, then a deep scrub (lab/scenarios/scrub.py):
    # the bad copy named, repaired by its runbook and proven by a deep scrub
    Case("pg-inconsistent", "pg-inconsistent", {}, "PG_INCONSISTENT", "pg <pool>.1",
         "stordoc fix pg-repair 2.1", 2),
    # flapping and stuck PGs (lab/scenarios/flap.py, checks/pgblocks.py): a running OSD
    # marked down again and again (no runbook: the host or link); a PG down, blocked by
    # the stopped OSD that alone has its newest writes (its pool of 1 PG is POOL_PG_NUM_LOW)
    Case("osd-flapping", "osd-flapping", {"osd": 0}, "OSD_FLAPPING", "osd.0", "", 1,
         heal_kwargs={"osd": 0}, live_on="reef"),
    Case("pg-stuck", "pg-stuck", {}, "OSD_DAEMON_STOPPED", "osd.2",
         "stordoc fix osd-start osd.2", 2, incidents=2),
    # unfound objects (lab/scenarios/unfound.py, the way Ceph's qa makes them): the newest
    # writes only on osd.2, stopped and marked lost; its data is still there, so starting
    # it is the next step (nothing lost); Ceph's OBJECT_UNFOUND and PG_DAMAGED fold into it
    # and offer pg-mark-unfound-lost, which the live test runs through Slack with two
    # people (its one live break, on Reef: not broken again by test_scenarios.py)
    Case("pg-unfound", "pg-unfound", {}, "OSD_DAEMON_STOPPED", "osd.2",
         "stordoc fix osd-start osd.2", 2, incidents=2, live_on="reef",
         repaired_by="test_unfound_lab.py::test_unfound_objects_marked_lost_by_two_people_"
                     "in_slack"),
    # a filling cluster and a maintenance flag left behind (lab/scenarios/fill.py): the
    # nearfull ratio lowered under the OSDs' fill is the cause (issue 38.2): the OSDs past
    # it and Ceph's nearfull codes fold into it, ratio-restore puts it back
    Case("cluster-nearfull", "cluster-nearfull", {}, "FULL_RATIO_LOWERED",
         "cluster lab full ratios", "stordoc fix ratio-restore lab", 1),
    Case("maintenance-left", "maintenance-left", {"osd": 1}, "OSDMAP_FLAGS",
         "osd.1 flag noout", "stordoc fix maintenance-end node2", 1,
         heal_kwargs={"osd": 1}, live_on="reef"),
    # warning lines lowered by plain `ceph config set` (issue 38.2): each section's lowered
    # options are one CONFIG_OPTION_CAUSE incident (config-restore puts a whole section
    # back), Ceph's codes folded in: global (mon_max_pg_per_osd: TOO_MANY_PGS and
    # PGS_PER_OSD_HIGH) tops, mgr (the scrub intervals: PG_NOT_(DEEP_)SCRUBBED) second
    Case("config-warn-lines", None, {}, "CONFIG_OPTION_CAUSE", "config global",
         "stordoc fix config-restore global", 1, incidents=2,
         plain="ceph config set (warning lines)"),
    # the full ratios lowered under the OSDs' fill by plain commands (issue 38.2): the
    # lab's OSDs hold the same fill to 4 KB, so one case has them all full (OSD_FULL,
    # POOL_FULL "no space"), the other all backfillfull (OSD_BACKFILLFULL,
    # POOL_BACKFILLFULL); every Ceph full code folds into FULL_RATIO_LOWERED
    Case("cluster-full", None, {}, "FULL_RATIO_LOWERED", "cluster lab full ratios",
         "stordoc fix ratio-restore lab", 2, plain="ceph osd set-full-ratio under the fill"),
    Case("cluster-backfillfull", None, {}, "FULL_RATIO_LOWERED", "cluster lab full ratios",
         "stordoc fix ratio-restore lab", 1,
         plain="ceph osd set-backfillfull-ratio under the fill", live_on="reef"),
    # a pool quota under the pool's use (`ceph osd pool set-quota rbd max_objects 4` with 4
    # objects in it): Ceph's POOL_FULL "running out of quota"; quota-restore puts it back
    Case("pool-quota", None, {}, "POOL_QUOTA_CAUSE", "pool rbd",
         "stordoc fix quota-restore rbd", 2, plain="ceph osd pool set-quota rbd max_objects",
         live_on="reef"),
    # near the quota: Ceph warns POOL_NEAR_FULL only with mon_pool_quota_warn_threshold
    # set (0, off, by default), as an operator who wants the warning sets it: 4 objects
    # under max_objects 6 with the warning at 50%
    Case("pool-quota-near", None, {}, "POOL_QUOTA_CAUSE", "pool rbd",
         "stordoc fix quota-restore rbd", 1,
         plain="ceph osd pool set-quota rbd max_objects (near)", live_on="reef"),
    # the full ratios lowered with an OSD out: its PGs' objects cannot be recovered onto
    # the full OSDs (Ceph's PG_RECOVERY_FULL, recovery_toofull): the ratio's incident; the
    # OSD out is a second one (osd-in)
    Case("cluster-full-out", None, {}, "FULL_RATIO_LOWERED", "cluster lab full ratios",
         "stordoc fix ratio-restore lab", 2, incidents=2,
         plain="ceph osd out 3 under the lowered full ratios"),
)
BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES)


# ------------------------------------------------------------------ comparing
_REPLAYED: dict[tuple[str, str], Any] = {}


def replayed(release: str, name: str) -> Any:
    """``core.service.snapshots.load`` of the saved snapshot ``FIXTURES/release/name``,
    once per test session (a Replay is frozen; a test that needs it otherwise makes its
    own copy with ``dataclasses.replace``): the replay tests of several files read every
    saved snapshot, each replay a full check with its next-step planning."""
    from core.service.snapshots import load

    key = (release, name)
    if key not in _REPLAYED:
        _REPLAYED[key] = load(str(FIXTURES / release / name))
    return _REPLAYED[key]


def port_names(ports: Any) -> dict[int, str]:
    """The lab's Swift ports by name (``<object>`` ...), to compare entities across labs."""
    return {ports.object: "<object>", ports.container: "<container>",
            ports.account: "<account>", ports.proxy: "<proxy>"}


def normalize(text: str, ports: Mapping[int, str], base: str = "") -> str:
    """An entity or target with the lab's own ports and directory replaced by names."""
    def sub(m: re.Match[str]) -> str:
        return ":" + ports.get(int(m.group(1)), m.group(1))

    out = re.sub(r":(\d{2,5})\b", sub, text)
    out = re.sub(r"/dev/loop\d+", "/dev/loop<N>", out)  # a disk's entity: the lab's loop
    out = _CRASH_ID.sub("<crash>", out)  # a crash report's id is new with every crash
    out = re.sub(r"^pg \d+\.", "pg <pool>.", out)  # a new pool's id: how many came before
    out = re.sub(r"^\d+\.(?=[0-9a-f]+$)", "<pool>.", out)  # the same as a runbook's target
    return out.replace(base, "<lab>") if base else out


_CRASH_ID = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z_[0-9a-f-]{36}")


# Which PGs of a down OSD are "degraded" besides "undersized" depends on whether they hold
# objects, i.e. on what earlier tests wrote to the lab (on Pacific, pool 1 is empty on a
# fresh lab and holds objects after the devicehealth module's first scrape): not part of
# the fault's diagnosis, so left out of the comparison (CI met it on Pacific).
_DATA_DEPENDENT = re.compile(r" pgs stuck degraded$")


def finding_keys(findings: Any, ports: Mapping[int, str], base: str = ""
                 ) -> set[tuple[str, str, str, str | None, str | None]]:
    """What must be equal between a live check and its snapshot: each finding's code,
    entity, severity, runbook and target (messages carry ages and device numbers)."""
    return {(f.code, normalize(f.entity, ports, base), f.severity.label, f.runbook,
             normalize(f.target, ports, base) if f.target else f.target) for f in findings
            if not (f.code == "PGS_STUCK" and _DATA_DEPENDENT.search(f.entity))}


def snapshot_ports(doc_settings: Mapping[str, Any]) -> dict[int, str]:
    """The Swift ports of the lab a snapshot was saved on (its proxy URL's port is
    base+10, the servers base+11..13: lab/layout.py)."""
    url = str(((doc_settings.get("cluster") or {}).get("swift") or {}).get("proxy_url") or "")
    m = re.search(r":(\d+)", url.split("//", 1)[-1])
    if not m:
        return {}
    proxy = int(m.group(1))
    return {proxy: "<proxy>", proxy + 1: "<account>", proxy + 2: "<container>",
            proxy + 3: "<object>"}


# ------------------------------------------------------------------ plain faults
def _kill_osd2(lab: Any) -> str:
    import os
    import signal

    pid = lab.pid("osd.2")
    assert pid is not None, "osd.2 is not running"
    os.kill(pid, signal.SIGKILL)
    return f"kill -9 {pid} (osd.2)"


def _unkill_osd2(lab: Any) -> None:
    if lab.pid("osd.2") is None:
        lab.start_osd(2)
    wait_until(lambda: lab.osd_up(2) is True, 90, "osd.2 up")


def _out_osd2(lab: Any) -> str:
    lab.ceph("osd", "out", "2")
    return "ceph osd out 2"


def _in_osd2(lab: Any) -> None:
    lab.ceph("osd", "in", "2")


# warning lines moved (issue 38.2): the manager's scrub-stamp lines (it computes
# PG_NOT_SCRUBBED / PG_NOT_DEEP_SCRUBBED in its PGMap; set for mgr only, the OSDs keep
# their own scrub schedule) and PGs per OSD under the lab's ~49 (TOO_MANY_PGS; above a
# third of it, osd_max_pg_per_osd_hard_ratio 3: the OSDs still create their PGs)
WARN_LINES = (("mgr", "osd_scrub_max_interval", "10"),
              ("mgr", "osd_deep_scrub_interval", "10"),
              ("global", "mon_max_pg_per_osd", "30"))


def _warn_lines(lab: Any) -> str:
    for who, name, value in WARN_LINES:
        lab.ceph("config", "set", who, name, value)
    return "; ".join(f"ceph config set {w} {n} {v}" for w, n, v in WARN_LINES)


def _unwarn_lines(lab: Any) -> None:
    for who, name, _ in WARN_LINES:
        lab.ceph("config", "rm", who, name)
RATIO_NAMES = ("nearfull", "backfillfull", "full")


def _lower_ratios(lab: Any, names: tuple[str, ...]) -> str:
    """The ratios ``names`` set to half the emptiest OSD's fill (lowest first: Ceph's
    order nearfull <= backfillfull <= full holds at every step)."""
    from lab.scenarios.fill import _below_fill, _ratio

    before = {n: _ratio(lab, f"{n}_ratio") for n in RATIO_NAMES}
    if all(v is not None and v > 0.5 for v in before.values()):  # the lab's own values
        lab.write_state(plain_ratios=before)
    low = _below_fill(lab)
    for n in names:
        lab.ceph("osd", f"set-{n}-ratio", low)
    want = {"full": "OSD_FULL", "backfillfull": "OSD_BACKFILLFULL"}[names[-1]]
    wait_until(lambda: want in lab.health_checks(), 90, want)
    return "; ".join(f"ceph osd set-{n}-ratio {low}" for n in names)


def _restore_ratios(lab: Any) -> None:
    """The lab's ratios back (highest first), whatever a fix left."""
    saved = lab.read_state().get("plain_ratios") or {}
    for n, d in reversed(list(zip(RATIO_NAMES, (0.85, 0.90, 0.95), strict=True))):
        lab.ceph("osd", f"set-{n}-ratio", f"{float(saved.get(n) or d):.4f}")
    wait_until(lambda: not {"OSD_FULL", "OSD_BACKFILLFULL", "OSD_NEARFULL"}
               & set(lab.health_checks()), 90, "the full codes cleared")


QUOTA_POOL, QUOTA_OBJECTS = "rbd", 4


def _rados(lab: Any, *args: str, input: str | None = None) -> str:
    from lab.procs import run

    cc = lab.ceph_cluster
    return run(cc._argv("rados", "-c", cc._p(lab.conf), "-p", QUOTA_POOL, *args),
               "pool-quota", input=input).stdout


QUOTA_WARN = "mon_pool_quota_warn_threshold"  # percent of a quota Ceph warns at (0: off)


def _set_quota(lab: Any, near: bool = False) -> str:
    # from stdin: a file is not seen inside the Reef lab's chroot (and rados exits 0
    # when it cannot read its input file)
    names = [f"stordoc-quota-{i}" for i in range(QUOTA_OBJECTS)]
    for n in names:
        _rados(lab, "put", n, "-", input="quota")
    assert set(names) <= set(_rados(lab, "ls").split()), "rados put wrote nothing"
    made = f"{QUOTA_OBJECTS} objects put in {QUOTA_POOL}; "
    if near:
        lab.ceph("config", "set", "global", QUOTA_WARN, "50")
        made += f"ceph config set global {QUOTA_WARN} 50; "
    quota = QUOTA_OBJECTS + 2 if near else QUOTA_OBJECTS
    lab.ceph("osd", "pool", "set-quota", QUOTA_POOL, "max_objects", str(quota))
    code = "POOL_NEAR_FULL" if near else "POOL_FULL"
    wait_until(lambda: code in lab.health_checks(), 120, f"{code} (quota)")
    return made + f"ceph osd pool set-quota {QUOTA_POOL} max_objects {quota}"


def _unset_quota(lab: Any) -> None:
    lab.ceph("osd", "pool", "set-quota", QUOTA_POOL, "max_objects", "0")
    lab.ceph("config", "rm", "global", QUOTA_WARN)
    wait_until(lambda: not {"POOL_FULL", "POOL_NEAR_FULL"} & lab.health_checks(), 120,
               "POOL_FULL / POOL_NEAR_FULL cleared")
    for i in range(QUOTA_OBJECTS):
        _rados(lab, "rm", f"stordoc-quota-{i}")


RECOVERY_OBJECTS = 32


def _full_out(lab: Any) -> str:
    """Objects to recover (a PG log never trimmed: log-based recovery, which the full
    ratio holds back), the ratios under the fill, then osd.3 out."""
    for i in range(RECOVERY_OBJECTS):
        _rados(lab, "put", f"stordoc-recovery-{i}", "-", input="x" * 100)
    made = _lower_ratios(lab, RATIO_NAMES)
    lab.ceph("osd", "out", "3")
    wait_until(lambda: "PG_RECOVERY_FULL" in lab.health_checks(), 120, "PG_RECOVERY_FULL")
    return f"{RECOVERY_OBJECTS} objects put in {QUOTA_POOL}; {made}; ceph osd out 3"


def _undo_full_out(lab: Any) -> None:
    lab.ceph("osd", "in", "3")
    _restore_ratios(lab)
    for i in range(RECOVERY_OBJECTS):
        _rados(lab, "rm", f"stordoc-recovery-{i}")
    wait_until(lambda: not _pg_transient(lab), 180, "PGs active+clean")


# plain fault -> (make it, undo it)
PLAIN: dict[str, tuple[Callable[[Any], str], Callable[[Any], None]]] = {
    "kill -9 osd.2": (_kill_osd2, _unkill_osd2),
    "ceph osd out 2": (_out_osd2, _in_osd2),
    "ceph config set (warning lines)": (_warn_lines, _unwarn_lines),
    "ceph osd set-full-ratio under the fill": (
        lambda lab: _lower_ratios(lab, RATIO_NAMES), _restore_ratios),
    "ceph osd set-backfillfull-ratio under the fill": (
        lambda lab: _lower_ratios(lab, RATIO_NAMES[:2]), _restore_ratios),
    "ceph osd pool set-quota rbd max_objects": (_set_quota, _unset_quota),
    "ceph osd pool set-quota rbd max_objects (near)": (
        lambda lab: _set_quota(lab, near=True), _unset_quota),
    "ceph osd out 3 under the lowered full ratios": (_full_out, _undo_full_out),
}


def make_fault(lab: Any, case: Case) -> str:
    """Break the lab as the case says: its scenario, or its plain commands."""
    if case.plain is not None:
        return PLAIN[case.plain][0](lab)
    if case.scenario is not None:
        return str(lab.break_(case.scenario, **case.kwargs))
    return "nothing broken"


def undo_fault(lab: Any, case: Case) -> str:
    if case.plain is not None:
        PLAIN[case.plain][1](lab)
        return f"undone: {case.plain}"
    if case.scenario is not None:
        return str(lab.heal(case.scenario, **case.heal_kwargs))
    return "nothing to undo"


# ------------------------------------------------------------------ capturing
def _pg_transient(lab: Any) -> bool:
    from lab.procs import LabError

    try:
        s = lab.ceph("pg", "stat", check=False, timeout=10)
    except LabError:  # no manager answers (mgr-stopped): no PG states to wait out
        return False
    if s is None and lab.pid("mgr.x") is None:  # the same, said as no answer (check=False)
        return False
    summ = s.get("pg_summary", s) if isinstance(s, dict) else {}
    names = {str(x.get("name")) for x in summ.get("num_pg_by_state", [])}
    bad = ("peering", "activating", "unknown", "creating", "recover", "backfill")
    # objects unfound: recovery waits for them, a steady state (pg-unfound)
    # PGs waiting for space (the full ratios: cluster-full-out) wait until it is given
    steady = {"recovery_unfound", "backfill_unfound", "recovery_toofull", "backfill_toofull"}
    return not names or any(b in part for n in names for part in set(n.split("+")) - steady
                            for b in bad)


@contextmanager
def prepared(lab: Any, env: Any, case: Case) -> Iterator[None]:
    """What a case needs before its break, undone afterwards."""
    from tests.support.labtools import drop_dispersion

    conn = None
    try:
        if "dispersion" in case.prepare:
            from runbooks.api import execute, plan

            ctx = env.run_context("lab", source="fixtures")
            t0 = time.time()
            execute(ctx, plan(ctx, "swift-dispersion-populate", "dispersion",
                              {"objects": 16, "containers": 4}), confirmed_by="fixtures")
            lab.wait_replication_pass("container", t0, "dispersion containers replicated")
        if "objects" in case.prepare:
            conn = lab.swift_cluster.conn()
            conn.put_container("stordoc-lab-idle")
            for i in range(16):
                conn.put_object("stordoc-lab-idle", f"obj-{i}", contents=b"idle")
        if "journal-baseline" in case.prepare:
            Service(env).check("lab", "fixtures")  # recon samples: growth is judged against it
        yield
    finally:
        if "dispersion" in case.prepare:
            drop_dispersion(lab)
        if conn is not None:
            for i in range(16):
                conn.delete_object("stordoc-lab-idle", f"obj-{i}")
            conn.delete_container("stordoc-lab-idle")
            conn.close()


def wait_passes(lab: Any, after: float, say: Callable[[str], None]) -> None:
    """A replication pass of every running replicator that started after the fault: what
    recon reports of the passes (failures towards an unmounted device, an idle pass) is
    then the fault's, not the state before it."""
    from lab.layout import SWIFT_SERVERS

    for kind in SWIFT_SERVERS:
        if lab.pid(f"swift-{kind}-replicator") is not None:
            lab.wait_replication_pass(kind, after, "a pass after the fault", timeout=180)
    say("a replication pass of every running replicator since the fault")


def wait_steady(env: Any, lab: Any, case: Case, say: Callable[[str], None],
                since: float, timeout: float = WAIT_S) -> None:
    """Until the fault is ``MIN_AGE_S`` old (``since``: when it was made), the case's root
    tops the incidents and the findings held still."""
    deadline = time.monotonic() + timeout
    last: set[Any] | None = None
    same = 0
    ports = port_names(lab.ports)
    while time.monotonic() < deadline:
        out = Service(env).check("lab", "fixtures")  # recorded: recon history for growth
        keys = finding_keys(out.report.findings, ports, str(lab.base))
        top = out.incidents[0].root if out.incidents else None
        visible = (case.root is None and not keys) or (
            top is not None and top.code == case.root and
            (case.entity is None or normalize(top.entity, ports, str(lab.base)) == case.entity))
        old_enough = time.time() - since >= MIN_AGE_S
        if visible and keys == last and old_enough and not _pg_transient(lab):
            same += 1
            if same >= STABLE_READS - 1:
                return
        else:
            same = 0
        last = keys
        time.sleep(STABLE_GAP_S)
    raise SystemExit(f"{case.name}: not steady within {timeout:.0f} s; last findings "
                     f"{sorted(last or ())}")


def lab_metrics(lab: Any) -> list[tuple[str, str, str]]:
    """(source, URL, job) of the Prometheus targets the lab's Prometheus scrapes: the mgr
    ``prometheus`` module (job ``ceph``, only with the alert chain) and each host's
    node_exporter (job ``node``, when the host metrics run)."""
    from lab.alerts import AlertChain
    from lab.hostmetrics import NODE_JOB, HostMetrics

    out: list[tuple[str, str, str]] = []
    if lab.read_state().get("alerts"):
        out.append(("mgr", f"http://127.0.0.1:{AlertChain(lab).ports.exporter}/metrics",
                    "ceph"))
    metrics = HostMetrics(lab)
    if metrics.on():
        out += [(f"node-{h}", f"http://{t}/metrics", NODE_JOB)
                for h, t in metrics.exporters.targets().items()]
    return out


# of a node_exporter, the families Ceph's alert rules read (checks/alert_rules.py: its
# filesystems, network, bonding, CPU): the rest (disk statistics, the kernel log lines
# of scripts/stordoc-kmsg-textfile) is 95% of its text and no rule's
NODE_FAMILIES = ("node_filesystem_", "node_network_", "node_bonding_", "node_cpu_",
                 "node_uname_info")


_LAB_MOUNT = re.compile(r'mountpoint="(/var/tmp/stordoc-[^/"]+)[/"]')


def own_mounts(text: str, base: str) -> str:
    """A node_exporter's text without the filesystems of other labs on this machine
    (``/var/tmp/stordoc-*`` other than ``base``): other helpers' and CI's labs, not a
    host of this one."""
    def other(line: str) -> bool:
        m = _LAB_MOUNT.search(line)
        return m is not None and m.group(1) != base.rstrip("/")

    return "".join(ln + "\n" for ln in text.split("\n") if ln and not other(ln))


def _scrape_of(lab: Any, source: str, url: str, job: str) -> Any:
    import dataclasses

    from storage.snapshot.metrics import scrape

    if not source.startswith("node-"):
        return scrape(source, url, job)
    s = scrape(source, url, job, keep=NODE_FAMILIES)
    return s if s.text is None else dataclasses.replace(s, text=own_mounts(s.text,
                                                                         str(lab.base)))


def capture(lab: Any, out: Path, names: list[str], say: Callable[[str], None],
            metrics_only: bool = False) -> list[str]:
    from core.env import Env
    from core.service.snapshots import save
    from core.settings import load_settings
    from storage.snapshot.metrics import write_metrics

    targets = lab_metrics(lab)
    if metrics_only and not any(src == "mgr" for src, _, _ in targets):
        raise SystemExit("--metrics-only: the lab's alert chain (the mgr prometheus module) "
                         "is not running: `stordoc lab up --with-alerts`")

    written = []
    for name in names:
        case = BY_NAME[name]
        d = out / name
        if metrics_only and not (d / "snapshot.json").exists():
            raise SystemExit(f"--metrics-only: no saved snapshot {d}")
        if d.exists() and not metrics_only:
            shutil.rmtree(d)
        wait_until(lambda: lab.unsettled(frozenset({"PG_AVAILABILITY", "PG_DEGRADED",
                                                    "OSD_DOWN"})) is None,
                   600, f"a settled lab before {name}")
        journal = out.parent / f".fixtures-{lab.release}.db"
        journal.unlink(missing_ok=True)
        s = load_settings(lab.config_path)
        env = Env(s.model_copy(update={"journal": str(journal)}))
        try:
            with prepared(lab, env, case):
                t0 = time.time()
                say(f"{name}: {make_fault(lab, case)}")
                try:
                    wait_passes(lab, t0, say)
                    try:
                        wait_steady(env, lab, case, say, t0)
                    except SystemExit as e:
                        if not metrics_only:
                            raise
                        # the saved snapshot has the diagnosis; its metrics are those of
                        # the same fault, held WAIT_S (a daemon's words vary: issue 38)
                        say(f"{name}: {e}; its metrics saved all the same")
                    if not metrics_only:
                        save(env, "lab", str(d))
                    if targets:
                        write_metrics(str(d), [_scrape_of(lab, *t) for t in targets])
                finally:
                    say(f"{name}: {undo_fault(lab, case)}")
        finally:
            env.close()
            journal.unlink(missing_ok=True)
        written.append(str(d))
        manifest = json.loads((d / "snapshot.json").read_text())
        say(f"{name}: saved {d} ({len(manifest['hosts'])} hosts"
            f"{', metrics of ' + str(len(targets)) + ' targets' if targets else ''})")
    return written


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from lab import Lab

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="a running lab's base directory")
    ap.add_argument("--out", required=True, help="tests/fixtures/snapshots/<release>")
    ap.add_argument("--metrics-only", action="store_true",
                    help="add only metrics/ to each case's saved snapshot")
    ap.add_argument("cases", nargs="*", default=[c.name for c in CASES])
    a = ap.parse_args(argv)
    unknown = [c for c in a.cases if c not in BY_NAME]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    lab = Lab(a.dir)
    if not lab.state_path.exists():
        ap.error(f"no lab under {a.dir}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    done = capture(lab, out, a.cases, lambda s: print(s, flush=True), a.metrics_only)
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
