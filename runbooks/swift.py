"""Swift runbooks: remount an unmounted device (after the same safety checks as an OSD),
and rebalance a ring (plan-only unless explicitly applied).

The device name must be one the ring lists for that host's IP, and the device to mount one
the host itself reported (its fstab line or its filesystem label names the device); the
ring rebalance is computed on a separate copy of the builder for the plan, and applying it
writes a backup first and refuses inside ``min_part_hours``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from typing import Any

from runbooks.base import (
    Draft,
    Runbook,
    fill_template,
    fstab_disabled,
    host_of,
    io_errors_for,
    register,
)
from runbooks.model import Plan, Refused, RunbookInfo, StepEnv
from runbooks.osd import _mount_options
from storage.model import ClusterSnapshot, SwiftState
from storage.swiftlib import RingBuilder

DEVICE_TARGET_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,63})@([A-Za-z0-9][A-Za-z0-9._-]{0,253})$")
RING_KIND_RE = re.compile(r"^(object(-\d{1,4})?|account|container)$")
REBALANCE_SEED = 1  # the plan and the apply compute the same assignment


def _need_swift(snap: ClusterSnapshot) -> SwiftState:
    if snap.swift is None:
        raise Refused(f"cannot read Swift: {snap.swift_error or 'no Swift configured'}")
    return snap.swift


def recon_probe(endpoints: list[tuple[str, int, str]], device: str, timeout_s: float) -> Any:
    """A WaitOp probe: no storage server's recon lists ``device`` as unmounted any more."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        from storage.swift import fetch_recon

        listed: list[str] = []
        for ip, port, server in endpoints:
            r = fetch_recon(ip, port, server, timeout_s)
            if r.error and not r.raw.get("unmounted") and "unmounted" not in r.raw:
                return False, f"recon {ip}:{port}: {r.error}"
            if device in r.unmounted:
                listed.append(f"{server} {ip}:{port}")
        if listed:
            return False, f"recon still lists {device} as unmounted on {', '.join(listed)}"
        return True, f"recon no longer lists {device} on {len(endpoints)} server(s)"

    return probe


@register
class SwiftDeviceRemount(Runbook):
    info = RunbookInfo(
        "swift-device-remount",
        "Mount an unmounted Swift device (not on a disk with I/O errors or a disabled fstab "
        "line) and confirm recon no longer lists it.",
        ("SWIFT_DEVICE_UNMOUNTED",), destructive=False, target_kind="swift-device",
        target_help="DEVICE@HOST, e.g. d2@node2", touches_data=True)
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        m = DEVICE_TARGET_RE.match(target)
        if not m or m.group(1) in (".", ".."):
            raise Refused(f"{target!r} is not a Swift device target like d2@node2")
        dev, host = m.group(1), m.group(2)
        swift = _need_swift(snap)
        ht = d.ctx.target.host(host)
        if ht is None:
            known = ", ".join(h.name for h in d.ctx.target.hosts) or "none"
            raise Refused(f"host {host!r} is not configured for cluster {d.ctx.cluster} "
                          f"(hosts: {known})")
        ring_devs = [(r.kind, rd) for r in swift.rings for rd in r.devices
                     if rd.device == dev and rd.ip == ht.address]
        if not ring_devs:
            raise Refused(f"no ring lists device {dev} on {ht.name} ({ht.address})")
        if not ht.swift_devices_dir:
            raise Refused(f"host {ht.name} has no swift_devices_dir configured")
        _, facts = host_of(d.ctx, snap, ht.name, f"Swift device {dev}")
        mountpoint = facts.swift_dirs.get(dev) or os.path.join(ht.swift_devices_dir, dev)
        if facts.mount_at(mountpoint) is not None:
            raise Refused(f"{mountpoint} is already mounted on {ht.name}")
        disabled = fstab_disabled(facts, mountpoint)
        if disabled:
            raise Refused(f"the fstab line for {mountpoint} on {ht.name} is commented out on "
                          f"purpose ({disabled.strip()}): drive-audit or an admin disabled it")
        cands = list(dict.fromkeys(i.device for i in facts.identities if i.label == dev))
        if not cands:
            raise Refused(f"no device on {ht.name} is known as {dev} (no active fstab line "
                          "for the mount point, no filesystem label)")
        block = {bd.path for bd in facts.block_devices}
        cands.sort(key=lambda p: (p not in block, p))
        if len([c for c in cands if c in block]) > 1:
            raise Refused(f"several devices on {ht.name} carry the label {dev}: "
                          f"{', '.join(cands)}; mount the right one by hand")
        device = cands[0]
        for c in cands:
            errs = io_errors_for(facts, c)
            if errs:
                raise Refused(f"{c} on {ht.name} shows kernel I/O errors, remounting is "
                              f"unsafe: {errs[0].strip()}")
        d.params.update(device=dev, host=ht.name, source=device, mountpoint=mountpoint,
                        rings=sorted({k for k, _ in ring_devs}))
        if facts.dirs.get(mountpoint) is False:
            d.host(f"create the mount point {mountpoint}", ht.name, ["mkdir", "-p", mountpoint])
        d.host(f"mount {device} on {mountpoint}", ht.name,
               ["mount", *_mount_options(facts, mountpoint, device, device in block),
                device, mountpoint])
        endpoints = sorted({(rd.ip, rd.port, _server(kind)) for kind, rd in ring_devs})
        timeout = d.ctx.target.swift.recon_timeout_s if d.ctx.target.swift else 5.0
        d.wait(f"wait until recon no longer lists {dev}",
               "GET " + " ".join(f"http://{ip}:{port}/recon/unmounted"
                                 for ip, port, _ in endpoints),
               recon_probe(endpoints, dev, timeout))
        d.verify_codes = ("SWIFT_DEVICE_UNMOUNTED", "SWIFT_DEVICE_NO_DIR")
        d.verify_entities = tuple(f"{k} ring {rd.endpoint}" for k, rd in ring_devs)
        d.verify_host_facts = True


def _server(kind: str) -> str:
    return "object" if kind.startswith("object") else kind


SERVER_TARGET_RE = re.compile(r"^(object|container|account)@([A-Za-z0-9][A-Za-z0-9._-]{0,253})$")


def recon_answers_probe(endpoints: list[tuple[str, int, str]], timeout_s: float) -> Any:
    """A WaitOp probe: every one of these storage servers answers recon again."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        from storage.swift import fetch_recon

        for ip, port, server in endpoints:
            r = fetch_recon(ip, port, server, timeout_s, full=False)
            if r.error_kind is not None:
                return False, f"{server} server {ip}:{port}: {r.error_kind}: {r.error}"
        return True, f"recon answers on {len(endpoints)} endpoint(s)"

    return probe


@register
class SwiftServerStart(Runbook):
    info = RunbookInfo(
        "swift-server-start",
        "Start a stopped Swift storage server (account/container/object) on a host with the "
        "host's swift_server_start template; refused when its port is held by another "
        "process.",
        ("SWIFT_SERVER_DOWN",), destructive=False, target_kind="swift-server",
        target_help="SERVER@HOST, e.g. object@node1")
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        m = SERVER_TARGET_RE.match(target)
        if not m:
            raise Refused(f"{target!r} is not a Swift server target like object@node1 "
                          "(object, container or account)")
        server, host = m.group(1), m.group(2)
        swift = _need_swift(snap)
        ht = d.ctx.target.host(host)
        if ht is None:
            known = ", ".join(h.name for h in d.ctx.target.hosts) or "none"
            raise Refused(f"host {host!r} is not configured for cluster {d.ctx.cluster} "
                          f"(hosts: {known})")
        recon = [r for r in swift.recon if r.server == server and r.ip == ht.address]
        if not recon:
            raise Refused(f"no {server} ring lists a device on {ht.name} ({ht.address})")
        down = [r for r in recon if r.error_kind in ("refused", "unreachable")]
        if not down:
            kinds = ", ".join(sorted({r.error_kind or "answers" for r in recon}))
            raise Refused(f"the {server} server on {ht.name} is not down ({kinds}): nothing "
                          "to start")
        _, facts = host_of(d.ctx, snap, ht.name, f"{server} server")
        ports = sorted({r.port for r in down})
        if facts.listeners is None:
            raise Refused(f"cannot see the listening sockets on {ht.name} (no ss): refusing to "
                          "start a server whose port may be in use")
        for port in ports:
            held = facts.listeners.get(port)
            if held is not None:
                raise Refused(f"port {port} on {ht.name} is held by pid {held[0]} "
                              f"({held[1] or '?'}): not starting a second {server} server")
        argv = fill_template(ht.swift_server_start, {"server": server},
                             f"host {ht.name} swift_server_start")
        d.params.update(server=server, host=ht.name, ports=ports)
        d.host(f"start the {server} server on {ht.name}", ht.name, argv)
        endpoints = sorted({(r.ip, r.port, server) for r in down})
        timeout = d.ctx.target.swift.recon_timeout_s if d.ctx.target.swift else 5.0
        d.wait(f"wait until the {server} server answers recon",
               "GET " + " ".join(f"http://{ip}:{p}/recon/unmounted" for ip, p, _ in endpoints),
               recon_answers_probe(endpoints, timeout))
        d.verify_codes = ("SWIFT_SERVER_DOWN", "SWIFT_SERVER_TIMEOUT")
        d.verify_entities = tuple(f"{server} server {ip}:{p}" for ip, p, _ in endpoints)
        d.verify_host_facts = True


def _md5(path: str) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _rebalance_copy(builder_path: str) -> tuple[Any, dict[str, Any]]:
    """Load a separate copy of the builder and rebalance it in memory (nothing written)."""
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

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        if not RING_KIND_RE.match(target):
            raise Refused(f"{target!r} is not a ring kind (object, account, container)")
        swift = _need_swift(snap)
        ring = swift.ring(target)
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
        d.warnings.append(f"after applying, copy {ring_path} to every Swift node")
        d.verify_codes = self.info.fixes
        d.verify_entities = (f"{target} ring",)
