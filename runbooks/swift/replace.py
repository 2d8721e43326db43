"""Replace a Swift drive: weight 0 and rebalance (a backup of every builder and ring first),
push the rings, wait until its partitions have drained to their new primaries, unmount
it, make the new drive (XFS labelled with the device name) and mount it in its place,
remove the old device from the rings and add the new one (same name, address, zone and
weight), rebalance, push, and wait until dispersion finds every copy.

Refused with one line, before anything changes: a device no ring lists on that host, a
drive that is not failing (mounted, no I/O errors, no disk finding) unless planned
(``-o planned=yes``), a new device in use, a drive that holds the last available copy of a
partition (the other copies' drives unmounted, or one replica), a ring inside
``min_part_hours`` (unless ``-o ignore_min_part_hours=yes``, said in the plan: it
rebalances a builder stordoc backs up first).

The second rebalance moves partitions again within ``min_part_hours``: that is what the
wait for the drain makes safe (the data already sits on the new primaries), so it runs
``pretend_min_part_hours_passed`` on stordoc's copy of the builder and says so.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from typing import Any

from checks.swift_names import device_name, host_names
from runbooks.base import (
    Draft,
    Runbook,
    fstab_disabled,
    host_of,
    io_errors_for,
    mount_options,
    register,
)
from runbooks.model import InvalidRequest, Probe, Refused, RunbookInfo, StepEnv
from runbooks.replace_osd import YES, device_option, unused_device_step
from runbooks.swift.common import configured_host, need_swift
from runbooks.swift.device import DEVICE_TARGET_RE
from runbooks.swift.dispersion import DISPERSION_CODES
from runbooks.swift.ring_distribution import (
    RingDest,
    plan_distribution,
    push_step,
    ring_destinations,
    ring_md5_probe,
)
from runbooks.swift.rings import REBALANCE_SEED, _md5
from storage.model import ClusterSnapshot, HostFacts, RingState
from storage.swiftlib import RingBuilder

DATA_SUFFIXES = (".data", ".ts", ".meta", ".db")


@dataclass(frozen=True)
class RingDev:
    """The device in one ring, as the plan found it."""

    kind: str
    builder: str
    ring_file: str
    builder_md5: str
    dev_id: int
    weight: float
    spec: dict[str, Any]  # what add_dev needs for the new drive


def _dev_spec(dev: dict[str, Any]) -> dict[str, Any]:
    keep = ("region", "zone", "ip", "port", "replication_ip", "replication_port", "device",
            "weight", "meta")
    return {k: dev[k] for k in keep if k in dev}


def last_copy_parts(b: Any, dev_id: int, unavailable: set[int]) -> int:
    """Partitions whose every other replica sits on an unavailable device (or nowhere)."""
    rows = [list(r) for r in b._replica2part2dev]
    n = 0
    for part in range(b.parts):
        devs = [row[part] for row in rows if part < len(row)]
        if dev_id not in devs:
            continue
        others = [x for x in devs if x != dev_id and x not in unavailable]
        if not others:
            n += 1
    return n


def drained_probe(host: str, mountpoint: str) -> Probe:
    """No object, tombstone or database file left on the drive (the replicators moved its
    partitions to their new primaries and removed them here)."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        argv = ["find", mountpoint, "-xdev", "-type", "f", "("]
        for i, s in enumerate(DATA_SUFFIXES):
            argv += (["-o"] if i else []) + ["-name", f"*{s}"]
        argv += [")"]
        r = env.runner.run(host, argv, timeout_s=60)
        if not r.ok:
            return False, f"find on {host}: {r.stderr.strip() or r.rc}"
        left = [ln for ln in r.stdout.splitlines() if ln.strip()]
        if left:
            return False, f"{len(left)} file(s) still on {mountpoint}, e.g. {left[0]}"
        return True, f"{mountpoint} holds no object or database file"

    return probe


def umount_step(host: str, mountpoint: str) -> Probe:
    """``umount``; when the kernel says busy (a Swift server holds a file open there, as
    they do), a lazy unmount: the drive is drained, nothing is read from it any more."""

    def op(env: StepEnv) -> tuple[bool, str]:
        r = env.runner.run(host, ["umount", mountpoint], timeout_s=60)
        if r.ok:
            return True, f"unmounted {mountpoint}"
        if "busy" not in (r.stderr + r.stdout):
            return False, f"umount {mountpoint}: {r.stderr.strip() or r.rc}"
        r = env.runner.run(host, ["umount", "--lazy", mountpoint], timeout_s=60)
        if not r.ok:
            return False, f"umount --lazy {mountpoint}: {r.stderr.strip() or r.rc}"
        return True, f"{mountpoint} was busy: unmounted lazily"

    return op


def dispersion_probe(d: Draft) -> Probe:
    st = d.ctx.target.swift

    def probe(env: StepEnv) -> tuple[bool, str]:
        from storage.dispersion import sample

        if st is None:
            return False, "no Swift settings"
        rings = {k: os.path.join(st.swift_dir, f"{k}.ring.gz") for k in ("object", "container")}
        ds = sample(st, {k: p for k, p in rings.items() if os.path.isfile(p)}, time.time())
        if ds.error or not ds.populated:
            return False, ds.error or "dispersion not populated"
        said = []
        for part in (ds.objects, ds.containers):
            if part is None:
                continue
            pct = part.pct_found
            said.append(f"{part.kind} copies {pct if pct is None else round(pct, 2)}%")
            if pct is None or pct < 100.0 or part.errors:
                return False, "; ".join(said)
        return True, "; ".join(said)

    return probe


def _new_drive(d: Draft, facts: HostFacts, host: str, mountpoint: str) -> tuple[str, bool]:
    dev = device_option(d, "swift-replace-drive")
    m = facts.mount_at(mountpoint)
    if m is not None and m.source == dev:
        raise Refused(f"{dev} is the drive mounted on {mountpoint} now: give the new drive")
    used = next((x.target for x in facts.mounts if x.source == dev), None)
    if used:
        raise Refused(f"{dev} on {host} is in use: mounted on {used}")
    ident = next((i for i in facts.identities if i.device == dev), None)
    if ident is not None and (ident.label or ident.whoami is not None or ident.osd_fsid):
        raise Refused(f"{dev} on {host} is in use: it carries "
                      f"{ident.label or f'osd.{ident.whoami}'}")
    bd = next((b for b in facts.block_devices if b.path == dev), None)
    if bd is None:
        return dev, False
    if bd.mountpoint or bd.fstype:
        raise Refused(f"{dev} on {host} is in use: "
                      f"{bd.mountpoint or bd.fstype}")
    return dev, True


@register
class SwiftReplaceDrive(Runbook):
    option_keys = ("device", "planned", "ignore_min_part_hours", "weight")
    info = RunbookInfo(
        "swift-replace-drive",
        "Replace a Swift drive: weight 0, rebalance, push, wait for the drain, swap in the "
        "new drive, remove and add it in the rings, rebalance, push, verify dispersion.",
        (), destructive=True, target_kind="swift-device",
        target_help="DEVICE@HOST -o device=/dev/NEW [-o planned=yes]")
    needs_host_facts = True

    def lock_keys(self, target: str) -> list[str]:
        return [target, "ring object", "ring container", "ring account"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        m = DEVICE_TARGET_RE.match(target)
        if not m or m.group(1) in (".", ".."):
            raise Refused(f"{target!r} is not a Swift device target like d2@node2")
        name, host = m.group(1), m.group(2)
        device_option(d, self.info.name)  # a malformed request is refused first
        swift = need_swift(snap)
        ht = configured_host(d, host)
        rings = [(r, rd) for r in swift.rings for rd in r.devices
                 if rd.device == name and rd.ip == ht.address]
        if not rings:
            raise Refused(f"no ring lists device {name} on {ht.name} ({ht.address})")
        if d.ctx.offline:
            raise Refused("its plan reads the cluster's own builder files: plan it where "
                          "stordoc reaches the cluster's swift_dir")
        if not ht.swift_devices_dir:
            raise Refused(f"host {ht.name} has no swift_devices_dir configured")
        _, facts = host_of(d.ctx, snap, ht.name, f"Swift device {name}")
        mountpoint = facts.swift_dirs.get(name) or os.path.join(ht.swift_devices_dir, name)
        mount = facts.mount_at(mountpoint)
        unmounted_by_recon = {(r.ip, r.port, dv) for r in swift.recon for dv in r.unmounted}
        mine_unmounted = any((rd.ip, rd.port, name) in unmounted_by_recon for _, rd in rings)
        errs = io_errors_for(facts, mount.source) if mount is not None else []
        why: list[str] = []
        if mount is None or mine_unmounted:
            why.append(f"{mountpoint} not mounted")
        if errs:
            why.append(f"kernel I/O errors: {errs[-1].strip()}")
        why += [f"{f.code} {f.entity}" for f in self._disk_findings(snap, target)]
        planned = str(d.options.get("planned", "")).strip().lower() in YES
        if not why and not planned:
            raise Refused(f"{target} is mounted with no disk trouble on {ht.name}: not "
                          "replacing a healthy drive unless planned (-o planned=yes)")
        device, listed = _new_drive(d, facts, ht.name, mountpoint)
        drainable = mount is not None and not errs
        ignore_mph = str(d.options.get("ignore_min_part_hours", "")).strip().lower() in YES
        plans = [self._ring(d, r, rd.id, swift, ignore_mph, drainable) for r, rd in rings]
        d.params.update(device=name, host=ht.name, new_drive=device, mountpoint=mountpoint,
                        rings=[p.kind for p in plans],
                        reason="planned replacement of a healthy drive" if not why
                        else "failing: " + ", ".join(why))
        if planned and not why:
            d.warnings.append(f"planned: {target} is healthy; its partitions move off and "
                              "back")
        self._steps(d, snap, ht.name, name, device, listed, mountpoint, mount is not None,
                    drainable, facts, plans, ignore_mph)

    def _disk_findings(self, snap: ClusterSnapshot, target: str) -> list[Any]:
        from checks.engine import run_checks
        from runbooks.replace_osd import DISK_FINDING_CODES

        report = run_checks(snap, only=DISK_FINDING_CODES, now=snap.taken_at or None)
        device, _, host = target.partition("@")
        # checks/disks.py names the physical disk and lists the Swift devices on it
        return [f for f in report.findings if target in (f.entity, f.target)
                or (f.evidence.get("host") == host
                    and device in f.evidence.get("swift_devices", ()))]

    def _ring(self, d: Draft, r: RingState, dev_id: int, swift: Any, ignore_mph: bool,
              drainable: bool) -> RingDev:
        swift_dir = d.ctx.target.swift.swift_dir if d.ctx.target.swift else ""
        builder = r.builder_path or os.path.join(swift_dir, f"{r.kind}.builder")
        ring_file = r.ring_path or os.path.join(swift_dir, f"{r.kind}.ring.gz")
        if not os.path.isfile(builder):
            raise Refused(f"no builder file {builder}: the {r.kind} ring cannot be changed")
        try:
            b = RingBuilder.load(builder)
        except Exception as e:  # pickle errors, a missing swift
            raise Refused(f"cannot read {builder}: {type(e).__name__}: {e}") from None
        dev = next((x for x in b.devs if x is not None and x["id"] == dev_id), None)
        if dev is None:
            raise Refused(f"{builder} has no device id {dev_id} (ring and builder differ: "
                          "rebalance or write the ring first)")
        left = int(b.min_part_seconds_left)
        if left > 0 and not ignore_mph:
            raise Refused(f"the {r.kind} ring is inside min_part_hours ({left} s left): "
                          "partitions may not move yet (-o ignore_min_part_hours=yes to "
                          "move them anyway)")
        if left > 0:
            d.warnings.append(f"{r.kind} ring: min_part_hours ignored ({left} s left), as "
                              "asked")
        unavailable = {x["id"] for x in b.devs if x is not None and any(
            (x["ip"], x["port"], x["device"]) == (rr.ip, rr.port, dv)
            for rr in swift.recon for dv in rr.unmounted)}
        if not drainable:
            unavailable.add(dev_id)
            n = last_copy_parts(b, dev_id, unavailable)
            if n:
                raise Refused(f"{dev['device']} holds the last available copy of {n} "
                              f"partition(s) of the {r.kind} ring (their other replicas' "
                              "drives are unavailable): bring those back first")
        elif b.replicas < 2:
            d.warnings.append(f"the {r.kind} ring has {b.replicas:g} replica(s): the drain "
                              "is the only copy's move; it is waited for")
        weight = float(dev["weight"])
        raw = d.options.get("weight")
        if raw is not None:
            try:
                weight = float(str(raw))
            except ValueError:
                raise InvalidRequest(f"weight must be a number, not {raw!r}") from None
            if not 0 < weight < 1e6:
                raise InvalidRequest(f"weight must be above 0, not {raw!r}")
        if weight <= 0:
            raise Refused(f"{dev['device']} has weight 0 in the {r.kind} ring (drained "
                          "before?): give the new drive's weight (-o weight=N)")
        spec = {**_dev_spec(dev), "weight": weight}
        return RingDev(r.kind, builder, ring_file, _md5(builder), dev_id, weight, spec)

    def _steps(self, d: Draft, snap: ClusterSnapshot, host: str, name: str, device: str,
               listed: bool, mountpoint: str, mounted: bool, drainable: bool,
               facts: HostFacts, plans: list[RingDev], ignore_mph: bool) -> None:
        if not listed:
            d.remote(f"check that {device} on {host} is an unused disk", host,
                     f"lsblk -J -b -o PATH,TYPE,SIZE,MOUNTPOINT {device}; blkid -p {device}",
                     unused_device_step(host, device))
        swift_dir = os.path.dirname(plans[0].builder)
        backup_dir = os.path.join(swift_dir, "backups")
        files = [f for p in plans for f in (p.builder, p.ring_file)]

        def backup(env: StepEnv) -> tuple[bool, str]:
            os.makedirs(backup_dir, exist_ok=True)
            ts = int(time.time())
            done = []
            for src in files:
                if os.path.isfile(src):
                    dst = os.path.join(backup_dir, f"{ts}.{os.path.basename(src)}")
                    shutil.copy2(src, dst)
                    done.append(dst)
            return True, "backed up: " + ", ".join(done)

        d.local("back up the builders and rings", f"cp -p {' '.join(files)} {backup_dir}/",
                backup)
        written: dict[str, str] = {}  # ring kind -> md5 of the ring the drain wrote

        def drain_op(p: RingDev) -> Probe:
            def op(env: StepEnv) -> tuple[bool, str]:
                if _md5(p.builder) != p.builder_md5:
                    return False, f"{p.builder} changed since the plan was made; plan again"
                b = RingBuilder.load(p.builder)
                if ignore_mph:
                    b.pretend_min_part_hours_passed()
                b.set_dev_weight(p.dev_id, 0.0)
                moved, balance, _ = b.rebalance(seed=REBALANCE_SEED)
                b.save(p.builder)
                b.get_ring().save(p.ring_file)
                written[p.kind] = _md5(p.ring_file)
                left = sum(1 for row in b._replica2part2dev for x in row if x == p.dev_id)
                return True, (f"{moved} partition(s) reassigned, {left} still on "
                              f"{name}; balance {round(float(balance), 2)}%")
            return op

        for p in plans:
            d.local(f"{p.kind} ring: weight of {name} to 0, rebalance",
                    f"swift-ring-builder {p.builder} set_weight d{p.dev_id} 0; "
                    f"swift-ring-builder {p.builder} rebalance --seed {REBALANCE_SEED}",
                    drain_op(p))
        for p in plans:
            plan_distribution(d, snap, p.kind, p.ring_file, None, f"rd-{p.builder_md5[:12]}")
        for k in ("distribution", "already_current"):  # one line per file: the steps say it
            d.params.pop(k, None)
        if drainable:
            d.wait(f"wait until {name} has drained to its new primaries",
                   f"find {mountpoint} -xdev -type f -name '*.data|*.ts|*.meta|*.db' "
                   "(on the host): until none is left", drained_probe(host, mountpoint),
                   timeout_s=max(d.ctx.step_timeout_s, 900.0), interval_s=5.0, where=host)
        else:
            d.warnings.append(f"{name} is not readable: nothing drains from it; its copies "
                              "are rebuilt from the other replicas")
        if mounted:
            d.remote(f"unmount the old drive from {mountpoint}", host,
                     f"umount {mountpoint} || umount --lazy {mountpoint} (when a Swift "
                     "server still holds a file open there: its data has drained)",
                     umount_step(host, mountpoint))
        d.host(f"make an XFS filesystem labelled {name} on {device}", host,
               ["mkfs.xfs", "-q", "-L", name, device])
        d.host(f"mount {device} on {mountpoint}", host,
               ["mount", *mount_options(facts, mountpoint, device, True), device,
                mountpoint])
        if fstab_disabled(facts, mountpoint) is None:
            d.warnings.append(f"the host's fstab line for {mountpoint} still names the old "
                              f"drive: point it at {device} (or LABEL={name})")

        def swap_op(p: RingDev) -> Probe:
            def op(env: StepEnv) -> tuple[bool, str]:
                if written.get(p.kind) != _md5(p.ring_file):
                    return False, f"{p.ring_file} is not the one the drain wrote; plan again"
                b = RingBuilder.load(p.builder)
                b.remove_dev(p.dev_id)
                b.pretend_min_part_hours_passed()
                b.rebalance(seed=REBALANCE_SEED)
                new_id = b.add_dev(dict(p.spec))
                b.pretend_min_part_hours_passed()
                moved, balance, _ = b.rebalance(seed=REBALANCE_SEED)
                b.save(p.builder)
                b.get_ring().save(p.ring_file)
                return True, (f"removed d{p.dev_id}, added d{new_id} {name} weight "
                              f"{p.weight:g}; {moved} partition(s) to the new drive, balance "
                              f"{round(float(balance), 2)}%")
            return op

        for p in plans:
            d.local(f"{p.kind} ring: remove the old {name}, add the new one, rebalance",
                    f"swift-ring-builder {p.builder} remove d{p.dev_id}; "
                    f"swift-ring-builder {p.builder} add {_spec_text(p.spec)} {p.weight:g}; "
                    f"swift-ring-builder {p.builder} pretend_min_part_hours_passed; "
                    f"swift-ring-builder {p.builder} rebalance --seed {REBALANCE_SEED}",
                    swap_op(p))
        for p in plans:
            self._push_again(d, snap, p, written)
        d.wait("wait until dispersion finds every copy",
               "stordoc swift dispersion report: until objects and containers are 100%",
               dispersion_probe(d), timeout_s=max(d.ctx.step_timeout_s, 900.0),
               interval_s=5.0, where="swift")
        names = host_names(snap)
        d.verify_codes = (*DISPERSION_CODES, "SWIFT_DEVICE_UNMOUNTED",
                          "SWIFT_RING_MD5_MISMATCH")
        d.verify_entities = (f"{name}@{host}", *(
            f"{r.kind} ring {device_name(dev.device, dev.ip, names)}"
            for r in (snap.swift.rings if snap.swift else ())
            if r.kind in ("object", "container") for dev in r.devices))
        d.verify_host_facts = True
        old = facts.mount_at(mountpoint)
        d.before_after[f"{name}@{host} drive"] = (old.source if old is not None else "-",
                                                  device)

    def _push_again(self, d: Draft, snap: ClusterSnapshot, p: RingDev,
                    written: dict[str, str]) -> None:
        """The second push: each server's file must be the one the first push wrote."""
        file_name = f"{p.kind}.ring.gz"
        dests, problems = ring_destinations(snap, d.ctx.target.hosts, file_name)
        if problems:
            raise Refused(f"cannot distribute {file_name} to every server: {problems[0]}")
        suffix = f"stordoc-rn-{p.builder_md5[:12]}"
        for host in sorted({x.host for x in dests}):
            mine = [x for x in dests if x.host == host]

            def step(env: StepEnv, mine: list[RingDest] = mine, host: str = host
                     ) -> tuple[bool, str]:
                now = [RingDest(x.host, x.path, written.get(p.kind), x.servers) for x in mine]
                return push_step(p.ring_file, host, now, suffix, None)(env)

            d.remote(f"copy the new {file_name} to {host} ({len(mine)} file(s), backup, "
                     "md5 checked)", host,
                     "; ".join(f"cp -p {x.path} {x.path}.{suffix}.bak; put "
                               f"{p.ring_file} {x.path}" for x in mine), step)
        swift = need_swift(snap)
        endpoints = sorted({(r.ip, r.port, r.server) for r in swift.recon})
        timeout = d.ctx.target.swift.recon_timeout_s if d.ctx.target.swift else 5.0
        d.wait(f"wait until every server's recon reports the new {file_name}",
               "GET " + " ".join(f"http://{ip}:{pt}/recon/ringmd5" for ip, pt, _ in endpoints),
               ring_md5_probe(endpoints, p.ring_file, file_name, timeout), where="swift")


def _spec_text(spec: dict[str, Any]) -> str:
    rep = ""
    if spec.get("replication_ip"):
        rep = f"R{spec['replication_ip']}:{spec.get('replication_port', spec['port'])}"
    return (f"r{spec['region']}z{spec['zone']}-{spec['ip']}:{spec['port']}{rep}/"
            f"{spec['device']}")
