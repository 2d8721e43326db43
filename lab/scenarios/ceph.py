"""Ceph faults: an OSD whose data dir is gone (unmounted xfs, not activated raw), a
misconfigured cache tier, a pool with too few PGs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab.procs import wait
from lab.scenarios.base import OSD_ANY, OSD_RAW, OSD_XFS, OUT, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

CACHE_BASE_POOL = "lab-base"
CACHE_POOL = "lab-cache"
FEW_PG_POOL = "lab-fewpg"


class OsdDataGone(Scenario):
    """osd.N stopped and its data dir unmounted; heal mounts (xfs) or activates (raw) it,
    starts it, marks it in and waits for active+clean."""

    kind = "xfs"
    heal_options = (OSD_ANY,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"break {self.name} osd.{osd}"
        lab.stop(f"osd.{osd}")
        lab.ceph("osd", "down", str(osd), check=False, step=step)
        lab.mounts.umount(lab.osd_dir(osd), step)
        wait(lambda: lab.osd_up(osd) is False, 60, step, f"osd.{osd} down")
        if args.out:
            lab.ceph("osd", "out", str(osd), step=step)
        what = "tmpfs unmounted (as after a reboot whose activation did not run)" \
            if self.kind == "raw" else "unmounted"
        return (f"osd.{osd} stopped and {lab.osd_dir(osd)} {what}"
                + (", marked out" if args.out else ""))

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        osd = args.osd
        step = f"heal {self.name} osd.{osd}"
        if lab.kinds[osd] == "raw":
            lab.ceph_cluster.activate_raw(osd, step)
        else:
            lab.mounts.mount_image(lab.images / f"osd-{osd}.xfs", lab.osd_dir(osd), step)
        if lab.pid(f"osd.{osd}") is None:
            lab.start_osd(osd)
        wait(lambda: lab.osd_up(osd) is True, 60, step, f"osd.{osd} up",
             str(lab.log_dir / f"ceph-osd.{osd}.log"))
        lab.ceph("osd", "in", str(osd), step=step)
        lab.wait_pgs_clean(300, step)
        return f"osd.{osd} {'activated' if lab.kinds[osd] == 'raw' else 'mounted'}, " \
            "started and in"


class OsdUnmounted(OsdDataGone):
    name = "osd-unmounted"
    summary = "an xfs OSD stopped, its data dir unmounted"
    kind = "xfs"
    options = (OSD_XFS, OUT)


class OsdNotActivated(OsdDataGone):
    name = "osd-not-activated"
    summary = "a raw OSD stopped, its tmpfs data dir gone as after a reboot"
    kind = "raw"
    options = (OSD_RAW, OUT)


class CacheTierMisconfigured(Scenario):
    name = "cache-tier-misconfigured"
    summary = f"a writeback cache {CACHE_POOL} over {CACHE_BASE_POOL} with bad targets"

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = "break cache-tier-misconfigured"
        if {CACHE_BASE_POOL, CACHE_POOL} & set(lab.ceph_cluster.pool_names()):
            # left by an earlier (maybe partial) break: start over, or the second
            # `application enable` on what is already a tier fails (EINVAL)
            self.heal(lab, args)
        for pool in (CACHE_BASE_POOL, CACHE_POOL):
            lab.ceph("osd", "pool", "create", pool, "8", "8", "replicated", step=step)
            lab.ceph("osd", "pool", "application", "enable", pool, "rbd", step=step)
        lab.ceph("osd", "tier", "add", CACHE_BASE_POOL, CACHE_POOL, step=step)
        lab.ceph("osd", "tier", "cache-mode", CACHE_POOL, "writeback", step=step)
        lab.ceph("osd", "tier", "set-overlay", CACHE_BASE_POOL, CACHE_POOL, step=step)
        for k, v in (("cache_target_dirty_ratio", "0.8"),
                     ("cache_target_dirty_high_ratio", "0.9"),
                     ("cache_target_full_ratio", "0.5")):
            lab.ceph("osd", "pool", "set", CACHE_POOL, k, v, step=step)
        wait(lab.pgs_clean, 60, step, "PGs active+clean")
        return (f"writeback cache {CACHE_POOL} over {CACHE_BASE_POOL}: no target_max_*, "
                "dirty 0.8 > full 0.5, no hit set")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal cache-tier-misconfigured"
        pools = lab.ceph_cluster.pool_names()
        if CACHE_POOL in pools and CACHE_BASE_POOL in pools:
            lab.ceph("osd", "tier", "remove-overlay", CACHE_BASE_POOL, check=False,
                     step=step)
            lab.ceph("osd", "tier", "cache-mode", CACHE_POOL, "none",
                     "--yes-i-really-mean-it", check=False, step=step)
            lab.ceph("osd", "tier", "remove", CACHE_BASE_POOL, CACHE_POOL, check=False,
                     step=step)
        for pool in (CACHE_POOL, CACHE_BASE_POOL):
            if pool in pools:
                lab.ceph_cluster.delete_pool(pool, step)
        wait(lab.pgs_clean, 60, step, "PGs active+clean")
        return "cache tier and its pools removed"


class PoolFewPgs(Scenario):
    name = "pool-few-pgs"
    summary = f"a pool {FEW_PG_POOL} with pg_num 2"

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = "break pool-few-pgs"
        lab.ceph("osd", "pool", "create", FEW_PG_POOL, "2", "2", "replicated", step=step)
        lab.ceph("osd", "pool", "application", "enable", FEW_PG_POOL, "rbd", step=step)
        wait(lab.pgs_clean, 60, step, "PGs active+clean")
        return f"pool {FEW_PG_POOL} with pg_num 2"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal pool-few-pgs"
        if FEW_PG_POOL in lab.ceph_cluster.pool_names():
            lab.ceph_cluster.delete_pool(FEW_PG_POOL, step)
        wait(lab.pgs_clean, 60, step, "PGs active+clean")
        return f"pool {FEW_PG_POOL} removed"
