"""Who an unmounted device is: the identity script, its parser, and which devices to ask.

A second SSH round trip happens only when an OSD data dir is not mounted: the identity
script reads what the unmounted candidate devices hold. Read-only side effect (documented
in docs/checks.md): to read ``whoami`` / ``ceph_fsid`` / ``fsid`` from an *unmounted,
unused* XFS device, the script mounts it for a moment with
``ro,norecovery,nodev,nosuid,noexec`` on a fresh ``mktemp -d`` directory inside a private
mount namespace (``unshare -m`` when available), reads three small files and unmounts.
``norecovery`` means the XFS log is not replayed, so nothing is written to the device.
Devices that are mounted, held by another device (holders), or attached as a loop device
to something mounted are never touched. A BlueStore device (ceph-volume raw) is read with
``ceph-bluestore-tool show-label`` instead, which opens it read-only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

from storage.hostfacts.parse import LsblkDevice, split_sections
from storage.model import DeviceIdentity, FstabLine, HostFacts, Mount

# Positional args: device paths (block devices or loop image files). See module docstring.
IDENTITY_SCRIPT = r"""
for dev in "$@"; do
  echo "@@dev $dev"
  if [ ! -f "$dev" ] && [ "$(head -c 22 -- "$dev" 2>/dev/null)" = "bluestore block device" ]; then
    echo "bluestore 1"
    if command -v ceph-bluestore-tool >/dev/null 2>&1; then
      printf 'label '; ceph-bluestore-tool show-label --dev "$dev" 2>/dev/null | tr -d '\n'; echo
    fi
    continue
  fi
  t=$(mktemp -d /tmp/stordoc-id.XXXXXX) || continue
  opts=ro,norecovery,nodev,nosuid,noexec
  if [ -f "$dev" ]; then opts=loop,$opts; fi
  if [ ! -f "$dev" ] && command -v blkid >/dev/null 2>&1; then
    fs=$(blkid -p -s TYPE -o value -- "$dev" 2>/dev/null)
    if [ "$fs" != xfs ]; then echo "error not xfs (${fs:-unknown})"; rmdir -- "$t"; continue; fi
  fi
  if mount -t xfs -o "$opts" -- "$dev" "$t" 2>/dev/null; then
    for f in whoami ceph_fsid fsid; do
      if [ -f "$t/$f" ]; then printf '%s %s\n' "$f" "$(head -c 200 -- "$t/$f" | tr -d '\n')"; fi
    done
    umount -- "$t"
  else
    echo "error mount failed"
  fi
  rmdir -- "$t"
done
echo "@@end"
"""


def identity_argv(devices: Sequence[str]) -> list[str]:
    """Read-only identity probe of unmounted devices (private mount namespace if possible)."""
    inner = ["sh", "-c", IDENTITY_SCRIPT, "stordoc-identity", *devices]
    # unshare keeps the brief mount invisible to the rest of the host and drops it with the
    # namespace even if the script is killed; fall back to the plain script without it.
    wrapper = ('if command -v unshare >/dev/null 2>&1 && unshare -m --propagation private true'
               ' 2>/dev/null; then exec unshare -m --propagation private "$@"; else exec "$@"; fi')
    return ["sh", "-c", wrapper, "stordoc-unshare", *inner]


def parse_bluestore_label(text: str) -> dict[str, DeviceIdentity]:
    """``ceph-bluestore-tool show-label`` JSON (device -> label) -> identities.

    The label's ``osd_key`` is a secret: only whether it is there is kept."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return {}
    out: dict[str, DeviceIdentity] = {}
    if not isinstance(data, dict):
        return out
    for dev, lab in data.items():
        if not isinstance(lab, dict):
            continue
        who = str(lab.get("whoami", ""))
        out[str(dev)] = DeviceIdentity(
            device=str(dev), whoami=int(who) if who.isdigit() else None,
            ceph_fsid=lab.get("ceph_fsid") or None, osd_fsid=lab.get("osd_uuid") or None,
            kind="bluestore",
            activatable=bool(lab.get("osd_key")) and lab.get("ready") == "ready"
            and lab.get("description", "main") == "main")
    return out


def parse_identities(text: str) -> dict[str, DeviceIdentity | str]:
    """device -> identity, or an error string when it could not be read."""
    out: dict[str, DeviceIdentity | str] = {}
    for key, lines in split_sections(text).items():
        if not key.startswith("dev "):
            continue
        dev = key[4:]
        vals: dict[str, str] = {}
        err = None
        for ln in lines:
            k, _, v = ln.partition(" ")
            if k == "error":
                err = v
            else:
                vals[k] = v.strip()
        if vals.get("bluestore") == "1":
            got = parse_bluestore_label(vals.get("label", "")).get(dev)
            out[dev] = got if got is not None else "BlueStore label unreadable"
            continue
        if err and not vals:
            out[dev] = err
            continue
        who = vals.get("whoami", "")
        out[dev] = DeviceIdentity(device=dev, whoami=int(who) if who.isdigit() else None,
                                  ceph_fsid=vals.get("ceph_fsid") or None,
                                  osd_fsid=vals.get("fsid") or None)
    return out


def norm(p: str) -> str:
    return os.path.normpath(p) if p else p


def candidates(mounts: Sequence[Mount], devs: Sequence[LsblkDevice],
                backing: Mapping[str, str], fstab: Sequence[FstabLine],
                unmounted_osd_dirs: Sequence[str]) -> list[str]:
    """Unmounted, unused devices that might hold an unmounted OSD dir.

    First the fstab sources of those dirs (a device, a UUID=/LABEL=, or a loop image:
    the loop device it is attached to, else the image file itself). Only when fstab names
    nothing, every unmounted device without children whose filesystem is XFS or unknown
    (lsblk without udev reports no FSTYPE); the identity script probes with blkid first.
    """
    if not unmounted_osd_dirs:
        return []
    mounted = {norm(m.source) for m in mounts}
    free = [d for d in devs if not d.dev.mountpoint and not d.has_children
            and norm(d.dev.path) not in mounted and d.dev.type in ("disk", "part", "loop",
                                                                    "lvm", "crypt")]
    out: list[str] = []

    def add(p: str) -> None:
        if p not in out and norm(p) not in mounted:
            out.append(p)

    wanted = {norm(p) for p in unmounted_osd_dirs}
    for fl in fstab:
        if norm(fl.mountpoint) not in wanted:
            continue
        src = fl.device
        if src.startswith(("UUID=", "LABEL=")):
            key, _, val = src.partition("=")
            for d in free:
                if (d.dev.uuid if key == "UUID" else d.label) == val:
                    add(d.dev.path)
            continue
        loops = [d.dev.path for d in free if d.dev.backing_file
                 and norm(d.dev.backing_file) == norm(src)]
        attached = [dev for dev, f in backing.items() if norm(f) == norm(src)]
        if loops:
            for lp in loops:
                add(lp)
        elif not attached and src.startswith("/"):
            add(src)  # a block device path, or a loop image not attached anywhere
    if not out:
        for d in free:
            if d.dev.fstype in (None, "", "xfs", "ceph_bluestore") and d.dev.size > 0:
                add(d.dev.path)
    return out


def swift_identities(swift: Sequence[tuple[str, str]], facts: HostFacts,
                     labels: Mapping[str, str]) -> list[DeviceIdentity]:
    """Swift devices whose dir is not mounted: the device that would be mounted there
    (its active fstab line, the loop device of that image) or carries its name as label."""
    out: list[DeviceIdentity] = []
    unmounted = {norm(d): name for name, d in swift if facts.mount_at(d) is None}
    for fl in facts.fstab:
        name = unmounted.get(norm(fl.mountpoint))
        if name:
            loops = [b.path for b in facts.block_devices if b.mountpoint is None
                     and b.backing_file and norm(b.backing_file) == norm(fl.device)]
            out.append(DeviceIdentity(device=loops[0] if loops else fl.device, label=name))
    named = {i.device for i in out}
    for bd in facts.block_devices:
        if bd.path not in named and bd.mountpoint is None \
                and labels.get(bd.path) in unmounted.values():
            out.append(DeviceIdentity(device=bd.path, label=labels[bd.path]))
    return out
