"""Remount an unmounted Swift device, after the same safety checks as an OSD.

The device name must be one the ring lists for that host's IP, and the device to mount one
the host itself reported (its fstab line or its filesystem label names the device); a disk
with kernel I/O errors or an fstab line commented out on purpose is refused.
"""

from __future__ import annotations

import os
import re

from runbooks.base import (
    Draft,
    Runbook,
    fstab_disabled,
    host_of,
    io_errors_for,
    mount_options,
    register,
)
from runbooks.model import Probe, Refused, RunbookInfo, StepEnv
from runbooks.swift.common import configured_host, need_swift
from storage.model import ClusterSnapshot

DEVICE_TARGET_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,63})@([A-Za-z0-9][A-Za-z0-9._-]{0,253})$")


def recon_probe(endpoints: list[tuple[str, int, str]], device: str,
                timeout_s: float) -> Probe:
    """A WaitOp probe: no storage server's recon lists ``device`` as unmounted any more."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        from storage.swift import fetch_recon

        listed: list[str] = []
        for ip, port, server in endpoints:
            r = fetch_recon(ip, port, server, timeout_s)
            if r.error and not r.unmounted_answered:
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
        swift = need_swift(snap)
        ht = configured_host(d, host)
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
        sd = facts.swift_devices.get(dev)
        if sd is not None and sd.path == mountpoint and not sd.exists:
            d.host(f"create the mount point {mountpoint}", ht.name, ["mkdir", "-p", mountpoint])
        d.host(f"mount {device} on {mountpoint}", ht.name,
               ["mount", *mount_options(facts, mountpoint, device, device in block),
                device, mountpoint])
        endpoints = sorted({(rd.ip, rd.port, _server(kind)) for kind, rd in ring_devs})
        timeout = d.ctx.target.swift.recon_timeout_s if d.ctx.target.swift else 5.0
        d.wait(f"wait until recon no longer lists {dev}",
               "GET " + " ".join(f"http://{ip}:{port}/recon/unmounted"
                                 for ip, port, _ in endpoints),
               recon_probe(endpoints, dev, timeout), where="swift")
        d.verify_codes = ("SWIFT_DEVICE_UNMOUNTED", "SWIFT_DEVICE_NO_DIR")
        d.verify_entities = (f"{dev}@{ht.name}",)
        d.verify_host_facts = True


def _server(kind: str) -> str:
    return "object" if kind.startswith("object") else kind
