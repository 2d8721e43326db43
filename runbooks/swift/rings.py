"""Ring runbooks: rebalance a ring (plan-only unless explicitly applied) and push the
local ring.gz to every server that reads an older one.

The rebalance is computed on a separate copy of the builder for the plan; applying it
writes a backup first and refuses inside ``min_part_hours``. Both copy the ring to the
servers with ``runbooks.swift.ring_distribution``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from typing import Any

from runbooks.base import Draft, Runbook, register
from runbooks.model import Plan, Refused, RunbookInfo, StepEnv
from runbooks.swift.common import need_swift
from runbooks.swift.ring_distribution import plan_distribution
from storage.model import ClusterSnapshot
from storage.safefile import check_regular
from storage.swiftlib import RingBuilder

RING_KIND_RE = re.compile(r"^(object(-\d{1,4})?|account|container)$")
MAX_RING_BYTES = 1 << 30  # a builder of part power 24 is ~100 MB
REBALANCE_SEED = 1  # the plan and the apply compute the same assignment


def _md5(path: str) -> str:
    h = hashlib.md5(usedforsecurity=False)
    check_regular(path, MAX_RING_BYTES)  # a FIFO would block, a device never end
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _rebalance_copy(builder_path: str) -> tuple[Any, dict[str, Any]]:
    """Load a separate copy of the builder and rebalance it in memory (nothing written)."""
    check_regular(builder_path, MAX_RING_BYTES)
    b = RingBuilder.load(builder_path)
    before = {"balance": round(float(b.get_balance()), 2),
              "dispersion": round(float(b.dispersion or 0.0), 2),
              "min_part_seconds_left": int(b.min_part_seconds_left),
              "devs_changed": bool(b.devs_changed)}
    parts, balance, removed = b.rebalance(seed=REBALANCE_SEED)
    after = {"balance": round(float(balance), 2),
             "dispersion": round(float(b.dispersion or 0.0), 2),
             "parts_moved": int(parts), "removed_devices": int(removed)}
    return b, {"before": before, "after": after}


@register
class SwiftRingRebalance(Runbook):
    option_keys = ("apply",)
    info = RunbookInfo(
        "swift-ring-rebalance",
        "Rebalance a Swift ring (plan-only unless applied; backup first; refused inside "
        "min_part_hours).",
        ("SWIFT_RING_UNBALANCED", "SWIFT_DISPERSION_HIGH", "SWIFT_BUILDER_NEWER_THAN_RING"),
        destructive=True, target_kind="swift-ring", target_help="object, account or container")

    def lock_keys(self, target: str) -> list[str]:
        return [f"ring {target}"]

    def check_run(self, plan: Plan) -> None:
        if not plan.options.get("apply"):
            raise Refused("swift-ring-rebalance is plan-only by default: apply it explicitly "
                          "(--apply on the command line)")
        left = int(plan.params.get("min_part_seconds_left") or 0)
        if left > 0:
            raise Refused(f"inside min_part_hours: {left} s left before partitions may move "
                          "again")
        blocked = plan.params.get("distribution_blocked")
        if blocked:
            raise Refused(f"the new ring could not reach every server: {blocked}")

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        if not RING_KIND_RE.match(target):
            raise Refused(f"{target!r} is not a ring kind (object, account, container)")
        swift = need_swift(snap)
        ring = swift.ring(target)
        if d.ctx.offline:
            # the plan rebalances a copy of the builder file (a pickle): never one a saved
            # snapshot names
            raise Refused("its plan reads the cluster's own builder file: plan it where "
                          "stordoc reaches the cluster's swift_dir "
                          f"(`stordoc plan swift-ring-rebalance {target}`)")
        swift_dir = d.ctx.target.swift.swift_dir if d.ctx.target.swift else ""
        builder_path = (ring.builder_path if ring else None) or \
            os.path.join(swift_dir, f"{target}.builder")
        if ring is None and not os.path.isfile(builder_path):
            raise Refused(f"no {target} ring in {swift_dir} (rings: "
                          f"{', '.join(r.kind for r in swift.rings) or 'none'})")
        if not os.path.isfile(builder_path):
            raise Refused(f"no builder file {builder_path}: a ring cannot be rebalanced "
                          "without its builder")
        ring_path = (ring.ring_path if ring else None) or \
            os.path.join(os.path.dirname(builder_path), f"{target}.ring.gz")
        try:
            _, res = _rebalance_copy(builder_path)
        except Exception as e:  # RingBuilderError, EmptyRingError, pickle errors
            raise Refused(f"the {target} ring cannot be rebalanced: {type(e).__name__}: {e}") \
                from None
        before, after = res["before"], res["after"]
        md5 = _md5(builder_path)
        left = before["min_part_seconds_left"]
        d.params.update(ring=target, builder=builder_path, ring_file=ring_path,
                        builder_md5=md5, min_part_seconds_left=left,
                        parts_moved=after["parts_moved"], seed=REBALANCE_SEED)
        d.before_after["balance %"] = (before["balance"], after["balance"])
        d.before_after["dispersion %"] = (before["dispersion"], after["dispersion"])
        d.before_after["partitions moved"] = (0, after["parts_moved"])
        if left > 0:
            d.warnings.append(f"inside min_part_hours: {left} s left; applying is refused "
                              "until then")
        if not d.options.get("apply"):
            d.warnings.append("plan only: nothing is written unless applied (--apply)")
        if after["parts_moved"] == 0 and not before["devs_changed"]:
            d.warnings.append("no partition would move: the ring needs no rebalance")
        backup_dir = os.path.join(os.path.dirname(builder_path), "backups")

        def backup(env: StepEnv) -> tuple[bool, str]:
            os.makedirs(backup_dir, exist_ok=True)
            ts = int(time.time())
            done = []
            for src in (builder_path, ring_path):
                if os.path.isfile(src):
                    dst = os.path.join(backup_dir, f"{ts}.{os.path.basename(src)}")
                    shutil.copy2(src, dst)
                    done.append(dst)
            return True, "backed up: " + ", ".join(done)

        def apply(env: StepEnv) -> tuple[bool, str]:
            if _md5(builder_path) != md5:
                return False, f"{builder_path} changed since the plan was made; plan again"
            b, r = _rebalance_copy(builder_path)
            if r["before"]["min_part_seconds_left"] > 0:
                return False, "inside min_part_hours; nothing written"
            b.save(builder_path)
            b.get_ring().save(ring_path)
            a = r["after"]
            return True, (f"{a['parts_moved']} partitions moved; balance {a['balance']}%, "
                          f"dispersion {a['dispersion']}%; wrote {builder_path} and {ring_path}")

        d.local(f"back up {os.path.basename(builder_path)} and {os.path.basename(ring_path)}",
                f"cp -p {builder_path} {ring_path} {backup_dir}/", backup)
        d.local(f"rebalance the {target} ring and write {os.path.basename(ring_path)}",
                f"swift-ring-builder {builder_path} rebalance --seed {REBALANCE_SEED}", apply)
        ents: list[str] = []
        try:
            if swift.recon and d.ctx.target.hosts:
                ents = plan_distribution(d, snap, target, ring_path, None, f"rb-{md5[:12]}")
            elif swift.recon:
                d.warnings.append(f"no hosts configured for SSH: copy {ring_path} to every "
                                  "Swift node yourself (SWIFT_RING_MD5_MISMATCH names the "
                                  "servers that still read the old one)")
            else:
                d.warnings.append("no storage server to copy the new ring to")
        except Refused as e:
            d.params["distribution_blocked"] = str(e)
            d.warnings.append(f"{e}: applying is refused until every server answers")
        d.verify_codes = (*self.info.fixes, "SWIFT_RING_MD5_MISMATCH")
        d.verify_entities = (f"{target} ring", *ents)


@register
class SwiftRingPush(Runbook):
    info = RunbookInfo(
        "swift-ring-push",
        "Copy the local ring.gz to every server that reads an older one (over SSH, backup "
        "first, md5 checked) and wait until recon reports the new md5 everywhere.",
        ("SWIFT_RING_MD5_MISMATCH",), destructive=False, target_kind="swift-ring",
        target_help="object, account or container")

    def lock_keys(self, target: str) -> list[str]:
        return [f"ring {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        if not RING_KIND_RE.match(target):
            raise Refused(f"{target!r} is not a ring kind (object, account, container)")
        swift = need_swift(snap)
        ring = swift.ring(target)
        if ring is None or ring.ring_path is None or ring.ring_md5 is None:
            raise Refused(f"no {target}.ring.gz in the local swift_dir to push")
        if ring.builder_matches_ring is False:
            raise Refused(f"{target}.ring.gz does not match {target}.builder: rebalance or "
                          "write the ring first (swift-ring-rebalance), then push")
        stale = [r for r in swift.recon if r.error_kind is None and any(
            os.path.basename(p) == f"{target}.ring.gz" and m != ring.ring_md5
            for p, m in r.ringmd5.items())]
        if not stale:
            d.warnings.append(f"every answering server already reports {target}.ring.gz "
                              f"md5 {ring.ring_md5}: nothing to copy")
        d.params.update(ring=target, ring_file=ring.ring_path, md5=ring.ring_md5,
                        stale_servers=[f"{r.server} {r.ip}:{r.port}" for r in stale])
        ents = plan_distribution(d, snap, target, ring.ring_path, ring.ring_md5,
                                 ring.ring_md5[:12])
        d.verify_codes = ("SWIFT_RING_MD5_MISMATCH",)
        d.verify_entities = tuple(ents)
