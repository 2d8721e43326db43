"""Copying a ring file to every storage server that reads it: where each one reads it
(``/recon/ringmd5``), the copy steps (over SSH as a new file, backup first, md5 checked after the copy and
after the rename) and the wait until recon reports the new md5 everywhere."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from runbooks.base import Draft
from runbooks.model import Probe, Refused, StepEnv
from runbooks.swift.common import need_swift
from storage.model import ClusterSnapshot
from storage.targets import HostTarget


@dataclass(frozen=True)
class RingDest:
    """One ring file a storage server reads on a configured host, as recon reported it."""

    host: str
    path: str
    md5: str | None  # what recon reported when the plan was made
    servers: tuple[str, ...]  # "object 127.0.0.2:6200", ...


def ring_destinations(snap: ClusterSnapshot, hosts: Sequence[HostTarget], file_name: str
                      ) -> tuple[list[RingDest], list[str]]:
    """Every (host, path) where an answering server reads ``file_name`` (from
    ``/recon/ringmd5``), and the problems that keep a push from reaching every server:
    servers that do not answer recon, or whose address is no configured host."""
    swift = need_swift(snap)
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
    """The argv lists one copy runs on the host (``put``: the local file's bytes to a new
    file there, ``FabricRunner.put``, between the cp and the md5sum)."""
    tmp, bak = f"{dest}.{suffix}.tmp", f"{dest}.{suffix}.bak"
    return [["md5sum", "--", dest], ["cp", "-p", "--", dest, bak],
            ["put", local, tmp], ["md5sum", "--", tmp], ["mv", "-f", "--", tmp, dest],
            ["md5sum", "--", dest]]


def push_step(local: str, host: str, dests: list[RingDest], suffix: str,
              expect_md5: str | None) -> Probe:
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
                   timeout_s: float) -> Probe:
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
    swift = need_swift(snap)
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
           ring_md5_probe(endpoints, local, file_name, timeout), where="swift")
    d.params.setdefault("distribution", []).extend(
        {"host": x.host, "path": x.path, "md5_before": x.md5} for x in dests)
    return [f"{kind} ring {ip}:{p}" for ip, p, _ in endpoints]
