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
from dataclasses import dataclass
from typing import Any

from runbooks.base import (
    Draft,
    Runbook,
    fill_template,
    fstab_disabled,
    host_of,
    io_errors_for,
    mount_options,
    register,
)
from runbooks.model import Plan, Refused, RunbookInfo, StepEnv
from storage.model import ClusterSnapshot, SwiftState
from storage.swiftlib import RingBuilder
from storage.targets import HostTarget

DEVICE_TARGET_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,63})@([A-Za-z0-9][A-Za-z0-9._-]{0,253})$")
RING_KIND_RE = re.compile(r"^(object(-\d{1,4})?|account|container)$")
REBALANCE_SEED = 1  # the plan and the apply compute the same assignment


def _configured_host(d: Draft, host: str) -> HostTarget:
    """The cluster's configured host of that name, or a refusal that lists the known ones."""
    ht = d.ctx.target.host(host)
    if ht is None:
        known = ", ".join(h.name for h in d.ctx.target.hosts) or "none"
        raise Refused(f"host {host!r} is not configured for cluster {d.ctx.cluster} "
                      f"(hosts: {known})")
    return ht


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
        ht = _configured_host(d, host)
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


def _server_on_host(d: Draft, snap: ClusterSnapshot, target: str
                    ) -> tuple[str, SwiftState, HostTarget]:
    """SERVER@HOST parsed: (server kind, the Swift state, the configured host), or Refused."""
    m = SERVER_TARGET_RE.match(target)
    if not m:
        raise Refused(f"{target!r} is not a Swift server target like object@node1 "
                      "(object, container or account)")
    server, host = m.group(1), m.group(2)
    swift = _need_swift(snap)
    return server, swift, _configured_host(d, host)


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
        server, swift, ht = _server_on_host(d, snap, target)
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
        blocked = plan.params.get("distribution_blocked")
        if blocked:
            raise Refused(f"the new ring could not reach every server: {blocked}")

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


# --------------------------------------------------------------------------- ring push

@dataclass(frozen=True)
class RingDest:
    """One ring file a storage server reads on a configured host, as recon reported it."""

    host: str
    path: str
    md5: str | None  # what recon reported when the plan was made
    servers: tuple[str, ...]  # "object 127.0.0.2:6200", ...


def ring_destinations(snap: ClusterSnapshot, hosts: Any, file_name: str
                      ) -> tuple[list[RingDest], list[str]]:
    """Every (host, path) where an answering server reads ``file_name`` (from
    ``/recon/ringmd5``), and the problems that keep a push from reaching every server:
    servers that do not answer recon, or whose address is no configured host."""
    swift = _need_swift(snap)
    by_addr = {h.address: h.name for h in hosts}
    found: dict[tuple[str, str], tuple[str | None, list[str]]] = {}
    problems: list[str] = []
    for r in swift.recon:
        who = f"{r.server} {r.ip}:{r.port}"
        if r.error_kind is not None:
            problems.append(f"{who} does not answer recon ({r.error_kind}): where it reads "
                            "its rings is unknown")
            continue
        paths = [p for p in r.ringmd5 if os.path.basename(p) == file_name]
        if not paths:
            continue
        host = by_addr.get(r.ip)
        if host is None:
            problems.append(f"{who} is on no configured host: cannot copy to it")
            continue
        for p in paths:
            md5, servers = found.get((host, p), (r.ringmd5.get(p), []))
            servers.append(who)
            found[(host, p)] = (md5, servers)
    dests = [RingDest(h, p, md5, tuple(s)) for (h, p), (md5, s) in sorted(found.items())]
    return dests, problems


def _remote_md5(env: StepEnv, host: str, path: str) -> tuple[str | None, str]:
    """(md5 or None when the file is absent, error text when md5sum failed otherwise)."""
    r = env.runner.run(host, ["md5sum", "--", path], timeout_s=30)
    if r.ok and r.stdout.split():
        return r.stdout.split()[0], ""
    if "No such file" in r.stderr:
        return None, ""
    return None, f"md5sum {path} on {host} failed: {r.stderr.strip() or r.rc}"


def push_commands(local: str, dest: str, suffix: str) -> list[list[str]]:
    """The argv lists one copy runs on the host (SFTP put between the cp and the md5sum)."""
    tmp, bak = f"{dest}.{suffix}.tmp", f"{dest}.{suffix}.bak"
    return [["md5sum", "--", dest], ["cp", "-p", "--", dest, bak],
            ["sftp-put", local, tmp], ["md5sum", "--", tmp], ["mv", "-f", "--", tmp, dest],
            ["md5sum", "--", dest]]


def push_step(local: str, host: str, dests: list[RingDest], suffix: str,
              expect_md5: str | None) -> Any:
    """Copy ``local`` over each destination on ``host``: only a file whose md5 is still the
    one recon reported at plan time (or already the new one), a backup first, the md5
    checked after the copy and again after the rename."""

    def step(env: StepEnv) -> tuple[bool, str]:
        from storage.swift import file_md5

        new = file_md5(local)
        if new is None:
            return False, f"cannot read {local}"
        if expect_md5 is not None and new != expect_md5:
            return False, f"{local} changed since the plan (md5 {new}, planned {expect_md5})"
        said: list[str] = []
        for d in dests:
            cur, err = _remote_md5(env, host, d.path)
            if err:
                return False, "; ".join([*said, err])
            if cur == new:
                said.append(f"{d.path}: already {new}")
                continue
            if cur != d.md5:
                return False, "; ".join([*said, (
                    f"{d.path} on {host} has md5 {cur} but {d.md5} when planned: not "
                    "replacing a file stordoc did not plan to replace")])
            tmp, bak = f"{d.path}.{suffix}.tmp", f"{d.path}.{suffix}.bak"
            if cur is not None:
                r = env.runner.run(host, ["cp", "-p", "--", d.path, bak], timeout_s=30)
                if not r.ok:
                    return False, "; ".join([*said, f"backup {bak} failed: {r.stderr.strip()}"])
            try:
                env.runner.put(host, local, tmp)
            except OSError as e:
                return False, "; ".join([*said, f"copy to {host}:{tmp} failed: {e}"])
            got, err = _remote_md5(env, host, tmp)
            if got != new:
                env.runner.run(host, ["rm", "-f", "--", tmp], timeout_s=30)
                return False, "; ".join([*said, f"{host}:{tmp} has md5 {got} after the copy, "
                                         f"not {new} ({err or 'removed'})"])
            r = env.runner.run(host, ["mv", "-f", "--", tmp, d.path], timeout_s=30)
            if not r.ok:
                return False, "; ".join([*said, f"mv {tmp} failed: {r.stderr.strip()}"])
            got, err = _remote_md5(env, host, d.path)
            if got != new:
                return False, "; ".join([*said, f"{host}:{d.path} has md5 {got} after the "
                                         f"rename, not {new} {err}".strip()])
            said.append(f"{d.path}: {cur or 'absent'} -> {new}"
                        + (f" (backup {bak})" if cur is not None else ""))
        return True, "; ".join(said)

    return step


def ring_md5_probe(endpoints: list[tuple[str, int, str]], local: str, file_name: str,
                   timeout_s: float) -> Any:
    """A WaitOp probe: every storage server's recon reports the local ring's md5."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        from storage.swift import fetch_recon, file_md5

        want = file_md5(local)
        for ip, port, server in endpoints:
            r = fetch_recon(ip, port, server, timeout_s, full=False)
            if r.error_kind is not None:
                return False, f"{server} {ip}:{port}: {r.error_kind}: {r.error}"
            got = {m for p, m in r.ringmd5.items() if os.path.basename(p) == file_name}
            if got != {want}:
                return False, (f"{server} {ip}:{port} reports {file_name} md5 "
                               f"{', '.join(sorted(str(g) for g in got)) or 'none'}, "
                               f"want {want}")
        return True, f"{len(endpoints)} server(s) report {file_name} md5 {want}"

    return probe


def plan_distribution(d: Draft, snap: ClusterSnapshot, kind: str, local: str,
                      expect_md5: str | None, tag: str) -> list[str]:
    """Add the copy steps (one per host) and the recon wait for ring ``kind``; returns
    the entities whose SWIFT_RING_MD5_MISMATCH the run clears. Refused when a server is
    out of reach (the push could not be verified everywhere)."""
    swift = _need_swift(snap)
    file_name = f"{kind}.ring.gz"
    dests, problems = ring_destinations(snap, d.ctx.target.hosts, file_name)
    if problems:
        raise Refused(f"cannot distribute {file_name} to every server: {problems[0]}"
                      + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    if not dests:
        raise Refused(f"no storage server reports {file_name} in /recon/ringmd5")
    if expect_md5 is not None:  # files that already hold it are left alone (and said so)
        current = [x for x in dests if x.md5 == expect_md5]
        dests = [x for x in dests if x.md5 != expect_md5]
        d.params["already_current"] = [f"{x.host}:{x.path}" for x in current]
    suffix = f"stordoc-{tag}"  # from the plan's inputs: planning again gives the same steps
    hosts = sorted({x.host for x in dests})
    for host in hosts:
        mine = [x for x in dests if x.host == host]
        lines = [" ".join(argv) for x in mine for argv in push_commands(local, x.path, suffix)]
        d.remote(f"copy {file_name} to {host} ({len(mine)} file(s), backup, md5 checked)",
                 host, "; ".join(lines), push_step(local, host, mine, suffix, expect_md5))
    endpoints = sorted({(r.ip, r.port, r.server) for r in swift.recon})
    timeout = d.ctx.target.swift.recon_timeout_s if d.ctx.target.swift else 5.0
    d.wait(f"wait until every server's recon reports the new {file_name}",
           "GET " + " ".join(f"http://{ip}:{p}/recon/ringmd5" for ip, p, _ in endpoints),
           ring_md5_probe(endpoints, local, file_name, timeout))
    d.params.setdefault("distribution", []).extend(
        {"host": x.host, "path": x.path, "md5_before": x.md5} for x in dests)
    return [f"{kind} ring {ip}:{p}" for ip, p, _ in endpoints]


@register
class SwiftRingPush(Runbook):
    info = RunbookInfo(
        "swift-ring-push",
        "Copy the local ring.gz to every server that reads an older one (SFTP, backup "
        "first, md5 checked) and wait until recon reports the new md5 everywhere.",
        ("SWIFT_RING_MD5_MISMATCH",), destructive=False, target_kind="swift-ring",
        target_help="object, account or container")

    def lock_keys(self, target: str) -> list[str]:
        return [f"ring {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        if not RING_KIND_RE.match(target):
            raise Refused(f"{target!r} is not a ring kind (object, account, container)")
        swift = _need_swift(snap)
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


# --------------------------------------------------------------------------- dispersion

DISPERSION_CODES = ("SWIFT_DISPERSION_OBJECT_COPIES", "SWIFT_DISPERSION_CONTAINER_COPIES")


def _count_option(d: Draft, key: str, default: int) -> int:
    from storage.dispersion import MAX_COUNT

    raw = d.options.get(key, default)
    text = str(raw).strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_COUNT:
        raise Refused(f"{key} must be a whole number from 1 to {MAX_COUNT}, not {raw!r}")
    return int(text)


@register
class SwiftDispersionPopulate(Runbook):
    option_keys = ("objects", "containers")
    info = RunbookInfo(
        "swift-dispersion-populate",
        "Create stordoc's dispersion container, objects and containers through the proxy "
        "(existing ones are left as they are), so that checks can sample whether every "
        "copy exists.",
        (), destructive=False, target_kind="swift-dispersion",
        target_help="dispersion")

    def lock_keys(self, target: str) -> list[str]:
        return ["swift dispersion"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        from storage.dispersion import (
            CONTAINER_PREFIX,
            DEFAULT_CONTAINERS,
            DEFAULT_OBJECTS,
            OBJECT_CONTAINER,
            OBJECT_PREFIX,
            populate,
        )

        if target != "dispersion":
            raise Refused(f"{target!r}: the target of swift-dispersion-populate is "
                          "'dispersion'")
        _need_swift(snap)
        st = d.ctx.target.swift
        if st is None or not (st.auth_url and st.user and st.key):
            raise Refused("dispersion needs auth_url, user and key in the cluster's Swift "
                          "settings")
        objects = _count_option(d, "objects", DEFAULT_OBJECTS)
        containers = _count_option(d, "containers", DEFAULT_CONTAINERS)
        disp = snap.swift.dispersion if snap.swift else None
        if disp is not None and disp.populated and disp.objects is not None:
            d.warnings.append(f"already populated ({disp.objects.sampled} objects): only "
                              "missing names are created")
        d.params.update(container=OBJECT_CONTAINER, objects=objects, containers=containers,
                        account=disp.account if disp else None)

        def run(env: StepEnv) -> tuple[bool, str]:
            made = populate(st, objects, containers)
            return True, (f"account {made.get('account')}: {made['objects']} object(s) "
                          f"created ({made['existing_objects']} already there), "
                          f"{made['containers']} container(s) ensured")

        d.local(f"create {OBJECT_CONTAINER} with {objects} objects and {containers} "
                "containers",
                f"swift post {OBJECT_CONTAINER}; swift upload {OBJECT_CONTAINER} "
                f"{OBJECT_PREFIX}0..{objects - 1} (only those missing); swift post "
                f"{CONTAINER_PREFIX}0..{containers - 1}", run)
        d.verify_codes = DISPERSION_CODES
        d.verify_entities = tuple(f"{r.kind} ring {dev.endpoint}" for r in (
            snap.swift.rings if snap.swift else ()) if r.kind in ("object", "container")
            for dev in r.devices)


# --------------------------------------------------------------------------- replicator


def replication_pass_probe(endpoints: list[tuple[str, int, str]], after: float,
                           timeout_s: float) -> Any:
    """A WaitOp probe: recon of every endpoint reports a replication pass completed after
    ``after`` (the replicator runs and gets through a pass)."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        from checks.swift_recon import replication
        from storage.swift import fetch_recon

        for ip, port, server in endpoints:
            r = fetch_recon(ip, port, server, timeout_s)
            rep = replication(r) if r.error_kind is None else None
            last = rep["last"] if rep else None
            if not isinstance(last, float) or last <= after:
                return False, (f"{server} {ip}:{port}: last replication pass "
                               f"{'never' if last is None else f'at {last:.0f}'}, "
                               f"waiting for one after {after:.0f}")
        return True, f"a replication pass completed on {len(endpoints)} endpoint(s)"

    return probe


@register
class SwiftReplicatorStart(Runbook):
    info = RunbookInfo(
        "swift-replicator-start",
        "Start the stopped replicator of a Swift storage server on a host with the host's "
        "swift_replicator_start template; wait until recon reports a new pass.",
        ("SWIFT_REPLICATOR_NOT_RUNNING",), destructive=False, target_kind="swift-server",
        target_help="SERVER@HOST, e.g. object@node1")
    needs_host_facts = True

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        from checks.swift_recon import replicator_findings

        server, swift, ht = _server_on_host(d, snap, target)
        host_of(d.ctx, snap, ht.name, f"{server} replicator")
        recon = [r for r in swift.recon if r.server == server and r.ip == ht.address]
        if not recon:
            raise Refused(f"no {server} ring lists a device on {ht.name} ({ht.address})")
        now = time.time()
        stopped = [r for r in recon if replicator_findings(r, snap, now)]
        if not stopped:
            raise Refused(f"the {server} replicator on {ht.name} is not known to be stopped "
                          "(its server does not answer, or a replicator on its config "
                          "runs): nothing to start")
        argv = fill_template(ht.swift_replicator_start, {"server": server},
                             f"host {ht.name} swift_replicator_start")
        d.params.update(server=server, host=ht.name)
        d.host(f"start the {server} replicator on {ht.name}", ht.name, argv)
        endpoints = sorted({(r.ip, r.port, server) for r in stopped})
        timeout = d.ctx.target.swift.recon_timeout_s if d.ctx.target.swift else 5.0
        d.wait(f"wait until recon reports a {server} replication pass after now",
               "GET " + " ".join(f"http://{ip}:{p}/recon/replication/{server}"
                                 for ip, p, _ in endpoints),
               replication_pass_probe(endpoints, now, timeout))
        d.verify_codes = ("SWIFT_REPLICATOR_NOT_RUNNING", "SWIFT_REPLICATION_STALE",
                          "SWIFT_REPLICATION_NEVER")
        d.verify_entities = tuple(f"{server} server {ip}:{p}" for ip, p, _ in endpoints)
        d.verify_host_facts = True
