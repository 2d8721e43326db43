"""Plans built from captured lab JSON and host facts: exact commands, refusals, quoting.

The host facts are the captured output of the facts script (tests/fixtures/hosts) parsed by
the real ``storage.hostfacts.collect_one``; Ceph state is captured JSON parsed by
``storage.ceph.build_state``. Host steps are then run through ``DryRunRecorder`` and
``LocalRunner`` to show that argv elements arrive intact and no shell interprets them.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from checks.model import REGISTRY
from runbooks.api import (
    Refused,
    RunContext,
    _run_step,
    list_runbooks,
    plan_from_snapshot,
    runbook_for_code,
)
from runbooks.model import HostOp, StepEnv
from storage.ceph import build_state, load_raw_dir
from storage.hostfacts import HostPlan, collect_one
from storage.journal import Journal
from storage.model import ClusterSnapshot, DeviceIdentity, FstabLine, HostFacts, IoError
from storage.runner import CommandResult, DryRunRecorder, LocalRunner
from storage.targets import CephTarget, ClusterTarget, HostTarget

FIX = Path(__file__).resolve().parent.parent / "fixtures"
LAB = "/var/tmp/sd-lab-hosts"  # where the host fixtures were captured
START = ("ceph-osd", "-c", f"{LAB}/ceph/ceph.conf", "-i", "{id}")


class Replay:
    """Answers the facts and identity scripts with captured output."""

    def __init__(self, facts: str, identity: str) -> None:
        self.facts, self.identity = facts, identity

    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        out = self.identity if "stordoc-unshare" in argv else self.facts
        return CommandResult(host, tuple(argv), 0, out, "", 0.01)

    def close(self) -> None:
        pass


def host(name: str, address: str, start: tuple[str, ...] = START) -> HostTarget:
    return HostTarget(name=name, address=address, osd_start=start,
                      osd_data_dir=f"{LAB}/ceph/osd/ceph-{{id}}",
                      osd_pid_file=f"{LAB}/ceph/run/ceph-osd.{{id}}.pid",
                      swift_devices_dir=f"{LAB}/swift/node",
                      fstab_path=f"{LAB}/hosts/{name}.fstab")


def facts(name: str, ht: HostTarget) -> HostFacts:
    meta = json.loads((FIX / "hosts" / f"{name}.json").read_text())
    ident = FIX / "hosts" / f"{name}.identity.txt"
    plan = HostPlan(ht, tuple((int(o[0]), o[1], o[2]) for o in meta["osds"]),
                    tuple((s[0], s[1]) for s in meta["swift"]))
    r = Replay((FIX / "hosts" / f"{name}.facts.txt").read_text(),
               ident.read_text() if ident.exists() else "")
    return collect_one(plan, r, window_s=1e12)


def ctx_for(tmp_path: Path, start: tuple[str, ...] = START) -> RunContext:
    hosts = (host("node1", "127.0.0.2"), host("node2", "127.0.0.3", start),
             host("node3", "127.0.0.4"))
    target = ClusterTarget("lab", ceph=CephTarget(f"{LAB}/ceph/ceph.conf"), hosts=hosts)
    return RunContext("lab", target, Journal(tmp_path / "journal.db"), user="tester")


def osd1_unmounted(ctx: RunContext, edit_facts=None) -> ClusterSnapshot:  # type: ignore[no-untyped-def]
    ceph = build_state(load_raw_dir(str(FIX / "hosts" / "osd1-unmounted-ceph")))
    f = facts("osd1-unmounted-node2", ctx.target.hosts[1])
    if edit_facts is not None:
        f = edit_facts(f)
    return ClusterSnapshot("lab", 0.0, ceph=ceph, hosts={"node2": f},
                           host_facts_collected=True)


def pacific(name: str) -> ClusterSnapshot:
    return ClusterSnapshot("lab", 0.0,
                           ceph=build_state(load_raw_dir(str(FIX / "ceph-pacific" / name))))


# ------------------------------------------------------------------ catalogue


def test_runbooks_and_codes_agree_with_the_checks() -> None:
    import checks.catalog  # noqa: F401

    names = {i.name for i in list_runbooks()}
    assert names == {"osd-remount", "osd-activate", "osd-start", "osd-in", "cache-tier-tune",
                     "pool-pg-num", "swift-device-remount", "swift-ring-rebalance",
                     "swift-server-start", "swift-ring-push", "swift-dispersion-populate",
                     "crash-archive", "swift-replicator-start", "mgr-failover", "osd-replace-disk",
                     "swift-replace-drive", "daemon-restart", "daemon-start",
                     "osd-reweight-by-utilization", "balancer-upmap", "full-ratio-raise",
                     "maintenance-start", "maintenance-end", "pg-repair",
                     "pg-mark-unfound-lost", "flag-unset", "pool-app-enable",
                     "global-id-reclaim-off", "ratio-restore", "config-restore",
                     "quota-restore"}  # issue 38
    codes = REGISTRY.codes
    for info in list_runbooks():
        for code in info.fixes:
            assert code in codes, f"{info.name} fixes unknown code {code}"
            assert runbook_for_code(code) in names
    # the code's documented runbook is the one that declares it
    for code, ci in codes.items():
        if ci.runbook:
            assert ci.runbook in names, (code, ci.runbook)
    assert runbook_for_code("OSD_DATA_UNMOUNTED") == "osd-remount"
    assert runbook_for_code("OSD_NOT_ACTIVATED") == "osd-activate"
    assert runbook_for_code("osd_up_out") == "osd-in"
    assert runbook_for_code("CEPH_HEALTH") is None
    assert runbook_for_code("SWIFT_SERVER_DOWN") == "swift-server-start"
    assert runbook_for_code("MGR_NOT_ANSWERING") == "mgr-failover"
    assert runbook_for_code("OSD_DAEMON_CRASHED") == "daemon-restart"
    assert runbook_for_code("FULL_RATIO_LOWERED") == "ratio-restore"
    assert runbook_for_code("CONFIG_OPTION_CAUSE") == "config-restore"
    assert runbook_for_code("POOL_QUOTA_CAUSE") == "quota-restore"


# ------------------------------------------------------------------ osd-remount


def test_osd_remount_plan_from_captured_facts(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    snap = osd1_unmounted(ctx)
    p = plan_from_snapshot(ctx, snap, "osd-remount", "osd.1")
    assert p.params["device"] == "/dev/loop54" and p.params["host"] == "node2"
    cmds = [(s.where, s.command) for s in p.steps]
    assert cmds[0] == ("ceph", "ceph osd set noout")
    assert cmds[1] == ("node2", f"mount -t xfs -o noatime /dev/loop54 {LAB}/ceph/osd/ceph-1")
    assert cmds[2] == ("node2", f"ceph-osd -c {LAB}/ceph/ceph.conf -i 1")
    assert cmds[3][1].startswith("ceph osd dump: wait until osd.1 is up")
    assert cmds[-1] == ("ceph", "ceph osd unset noout") and p.steps[-1].cleanup_of == 1
    assert p.locks == ("osd.1", "flag noout")
    assert "OSD_DATA_UNMOUNTED" in p.verify_codes and p.verify_host_facts
    text = "\n".join(p.lines())
    assert "$ mount -t xfs -o noatime /dev/loop54" in text
    d = json.loads(json.dumps(p.to_dict()))
    assert d["steps"][1]["argv"] == ["mount", "-t", "xfs", "-o", "noatime", "/dev/loop54",
                                     f"{LAB}/ceph/osd/ceph-1"]
    assert d["steps"][0]["mon"] == {"prefix": "osd set", "key": "noout"}


def _with(f: HostFacts, **kw: object) -> HostFacts:
    return dataclasses.replace(f, **kw)  # type: ignore[arg-type]


def test_osd_remount_refusals(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    with pytest.raises(Refused, match=r"osd\.9 does not exist in the osdmap"):
        plan_from_snapshot(ctx, osd1_unmounted(ctx), "osd-remount", "osd.9")
    for bad in ("osd.1; reboot", "osd.1 && rm -rf /", "$(reboot)", "osd.-1", "1"):
        with pytest.raises(Refused, match="not an OSD name"):
            plan_from_snapshot(ctx, osd1_unmounted(ctx), "osd-remount", bad)
    with pytest.raises(Refused, match="osd.0 is up"):
        plan_from_snapshot(ctx, osd1_unmounted(ctx), "osd-remount", "osd.0")
    io = osd1_unmounted(ctx, lambda f: _with(f, io_errors=(IoError(
        "loop54", "blk_update_request: I/O error, dev loop54, sector 2048"),)))
    with pytest.raises(Refused, match="kernel I/O errors"):
        plan_from_snapshot(ctx, io, "osd-remount", "osd.1")
    mp = f"{LAB}/ceph/osd/ceph-1"
    commented = osd1_unmounted(ctx, lambda f: _with(f, fstab=(FstabLine(
        "/dev/loop54", mp, "xfs", "noatime", True, f"#/dev/loop54 {mp} xfs noatime 0 0"),)))
    with pytest.raises(Refused, match="commented out on purpose"):
        plan_from_snapshot(ctx, commented, "osd-remount", "osd.1")
    other = osd1_unmounted(ctx, lambda f: _with(f, identities=(DeviceIdentity(
        "/dev/loop54", whoami=1, ceph_fsid="00000000-0000-0000-0000-000000000000"),)))
    with pytest.raises(Refused, match="no device on node2 names osd.1 of cluster"):
        plan_from_snapshot(ctx, other, "osd-remount", "osd.1")
    unreachable = osd1_unmounted(ctx, lambda f: HostFacts("node2", "127.0.0.3",
                                                          error="Connection refused"))
    with pytest.raises(Refused, match="host node2 did not answer"):
        plan_from_snapshot(ctx, unreachable, "osd-remount", "osd.1")
    with pytest.raises(Refused, match="unknown runbook"):
        plan_from_snapshot(ctx, osd1_unmounted(ctx), "rm -rf", "osd.1")


# ------------------------------------------------------------------ quoting


HOSTILE = "/dev/loop54; touch {canary} #$(touch {canary})`touch {canary}`"


def test_hostile_strings_never_reach_a_shell(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    dev = HOSTILE.format(canary=canary)
    start = ("ceph-osd", "-i", "{id}", f"--name=$(touch {canary})")
    ctx = ctx_for(tmp_path, start=start)

    def hostile(f: HostFacts) -> HostFacts:
        idents = tuple(dataclasses.replace(i, device=dev) for i in f.identities)
        bdevs = tuple(dataclasses.replace(b, path=dev) if b.path == "/dev/loop54" else b
                      for b in f.block_devices)
        return _with(f, identities=idents, block_devices=bdevs)

    p = plan_from_snapshot(ctx, osd1_unmounted(ctx, hostile), "osd-remount", "osd.1")
    mount, startstep = p.steps[1], p.steps[2]
    assert isinstance(mount.op, HostOp) and isinstance(startstep.op, HostOp)
    assert mount.op.argv[-2] == dev  # one element, exactly as the host reported it
    assert f"'{dev}'" in mount.command  # shown quoted
    assert startstep.op.argv == ("ceph-osd", "-i", "1", f"--name=$(touch {canary})")
    # the dry-run recorder sees the same argv
    rec = DryRunRecorder()
    env = StepEnv(ctx, rec)
    for s in (mount, startstep):
        assert _run_step(env, s, threading.Event())[0] == "done"
    assert rec.calls == [("node2", mount.op.argv), ("node2", startstep.op.argv)]
    # run the very same argv elements locally (printf instead of mount/ceph-osd): each
    # arrives as one literal argument and nothing is executed
    for s in (mount, startstep):
        assert isinstance(s.op, HostOp)
        probe = dataclasses.replace(s, op=HostOp("node2", ("printf", "%s\\n",
                                                            *s.op.argv[1:])))
        status, rc, out, _ = _run_step(StepEnv(ctx, LocalRunner()), probe, threading.Event())
        assert (status, rc) == ("done", 0)
        assert out.splitlines() == list(s.op.argv[1:])
    assert not canary.exists()


def test_bad_start_template_is_refused(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path, start=("ceph-osd", "-i", "{osd}"))
    with pytest.raises(Refused, match="cannot fill template element"):
        plan_from_snapshot(ctx, osd1_unmounted(ctx), "osd-remount", "osd.1")


def test_pool_names_go_to_the_monitor_as_data(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    snap = pacific("cache-tier-misconfigured")
    assert snap.ceph is not None
    evil = "lab-cache; rm -rf /"
    pools = tuple(dataclasses.replace(p, name=evil) if p.name == "lab-cache" else p
                  for p in snap.ceph.pools)
    snap = dataclasses.replace(snap, ceph=dataclasses.replace(snap.ceph, pools=pools))
    p = plan_from_snapshot(ctx, snap, "cache-tier-tune", evil)
    assert all(s.op is not None and getattr(s.op, "args", {}).get("pool") == evil
               for s in p.steps)
    assert p.steps[0].command.startswith("ceph osd pool set 'lab-cache; rm -rf /' ")
    with pytest.raises(Refused, match="does not exist"):
        plan_from_snapshot(ctx, snap, "cache-tier-tune", "lab-cache")


# ------------------------------------------------------------------ pools


def test_cache_tier_tune_plan_from_captured_json(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    snap = pacific("cache-tier-misconfigured")
    assert snap.ceph is not None
    pool = snap.ceph.pool("lab-cache")
    assert pool is not None
    p = plan_from_snapshot(ctx, snap, "cache-tier-tune", "lab-cache")
    cap = pool.stored_bytes + pool.max_avail_bytes
    step = 64 * 1024**2  # rounded down to 64 MiB so a rebuilt plan comes out the same
    assert p.before_after["target_max_bytes"] == (0, max(step, int(cap * 0.8) // step * step))
    assert p.before_after["cache_target_dirty_ratio"] == (0.8, 0.4)
    assert p.before_after["cache_target_dirty_high_ratio"] == (0.9, 0.6)
    assert p.before_after["cache_target_full_ratio"] == (0.5, 0.8)
    assert p.before_after["hit_set_type"] == ("none", "bloom")
    assert "ceph osd pool set lab-cache hit_set_type bloom" in [s.command for s in p.steps]
    assert p.locks == ("pool lab-cache",) and p.destructive
    # configured ratios are used, and must be in order
    p2 = plan_from_snapshot(ctx, snap, "cache-tier-tune", "lab-cache",
                            {"dirty_ratio": "0.5", "dirty_high_ratio": 0.7, "full_ratio": .9})
    assert p2.before_after["cache_target_full_ratio"] == (0.5, 0.9)
    with pytest.raises(Refused, match="not in order"):
        plan_from_snapshot(ctx, snap, "cache-tier-tune", "lab-cache",
                           {"dirty_ratio": 0.9, "full_ratio": 0.5})
    with pytest.raises(Refused, match="not a cache tier"):
        plan_from_snapshot(ctx, snap, "cache-tier-tune", "lab-base")


def test_pool_pg_num_steps_in_powers_of_two(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    snap = pacific("pool-few-pgs")
    p = plan_from_snapshot(ctx, snap, "pool-pg-num", "lab-fewpg")
    sets = [s.command for s in p.steps if s.command.startswith("ceph osd pool set")]
    want = p.params["target"]
    n, expect = 4, []
    while n <= want:
        expect += [f"ceph osd pool set lab-fewpg pg_num {n}",
                   f"ceph osd pool set lab-fewpg pgp_num {n}"]
        n *= 2
    assert want >= 16 and sets == expect
    waits = [s for s in p.steps if s.title.startswith("wait")]
    assert len(waits) == len(expect) // 2
    # not clean -> refused
    assert snap.ceph is not None
    dirty = dataclasses.replace(snap.ceph, pgs=dataclasses.replace(
        snap.ceph.pgs, by_state={"active+clean": 30, "active+undersized+degraded": 3}))
    with pytest.raises(Refused, match="not all PGs are active\\+clean"):
        plan_from_snapshot(ctx, dataclasses.replace(snap, ceph=dirty), "pool-pg-num",
                           "lab-fewpg")
    with pytest.raises(Refused, match="power of two"):
        plan_from_snapshot(ctx, snap, "pool-pg-num", "lab-fewpg", {"pg_num": 48})
