"""Hosts found from the cluster itself instead of written by hand (``hosts_from``).

Ceph: each CRUSH host bucket with OSDs (``osd tree``) is a host of that name; its address
is the one most of its OSDs report as their public address (``osd dump``). Swift: each
storage server of the rings (its ``ip``) is a host, the Ceph host of that address when
there is one, else a host named by the address. ``resolve_hosts`` turns a target whose
``discovery`` is set into one whose ``hosts`` hold them all (the configured hosts first:
an entry in the settings is an exception to what was found, never overwritten), each
found host built from the per-deployment defaults. Read at check time, so a host that
joins the cluster is checked without editing the settings.

The parsers take the JSON Ceph prints and never raise on odd input (a missing key, a
down OSD without an address); the live readers turn every failure into a problem line.
"""

from __future__ import annotations

import glob
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from storage.targets import ClusterTarget, HostDiscovery, HostTarget, host_key, ip_of

SOURCES = ("ceph", "swift")


@dataclass(frozen=True)
class FoundHost:
    """One host as the cluster names it: ``address`` None when nothing reported one."""

    name: str
    address: str | None
    sources: tuple[str, ...]
    osd_ids: tuple[int, ...] = ()
    ports: tuple[int, ...] = ()  # Swift servers' ports on it


@dataclass
class Found:
    """What discovery found, and one line per thing it could not read."""

    hosts: dict[str, FoundHost] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def addr_ip(addr: Any) -> str | None:
    """The IP of a Ceph address in any of its spellings: ``v2:10.0.0.1:6800/123``,
    ``10.0.0.1:6800/0``, ``[v2:10.0.0.1:6800/1,v1:10.0.0.1:6789/1]``, ``[::1]:6800/0``,
    an ``addrvec`` table; None for an unset one (``-``, ``:/0``, ``0.0.0.0``)."""
    if isinstance(addr, Mapping):
        vec = addr.get("addrvec")
        if isinstance(vec, list):
            for a in vec:
                if isinstance(a, Mapping):
                    ip = addr_ip(a.get("addr"))
                    if ip:
                        return ip
        return None
    if not isinstance(addr, str):
        return None
    s = addr.strip()
    if s.startswith(("[v1:", "[v2:", "[any:")):  # an address vector: its first one
        s = s[1:].rstrip("]").split(",")[0].strip()
    for pre in ("v2:", "v1:", "any:"):
        if s.startswith(pre):
            s = s[len(pre):]
    s = s.split("/")[0]
    if s.startswith("["):  # [::1]:6800
        host = s[1:s.find("]")] if "]" in s else ""
    elif s.count(":") == 1:
        host = s.split(":")[0]
    else:
        host = s
    found = ip_of(host)
    if found is None or found.is_unspecified:
        return None
    return str(found)


def ceph_hosts(tree: Any, dump: Any) -> dict[str, FoundHost]:
    """CRUSH host buckets with their OSDs, each at the address most of them report."""
    nodes = tree.get("nodes", []) if isinstance(tree, Mapping) else []
    addrs: dict[int, str] = {}
    for o in (dump.get("osds", []) if isinstance(dump, Mapping) else []):
        if not isinstance(o, Mapping) or not isinstance(o.get("osd"), int):
            continue
        ip = addr_ip(o.get("public_addrs")) or addr_ip(o.get("public_addr"))
        if ip:
            addrs[o["osd"]] = ip
    out: dict[str, FoundHost] = {}
    for n in nodes:
        if not isinstance(n, Mapping) or n.get("type") != "host":
            continue
        name = n.get("name")
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            continue
        ids = tuple(sorted(i for i in n.get("children", []) if isinstance(i, int) and i >= 0))
        seen = Counter(addrs[i] for i in ids if i in addrs)
        out[name] = FoundHost(name, seen.most_common(1)[0][0] if seen else None, ("ceph",),
                              ids)
    return out


def ring_servers(devices: Iterable[Mapping[str, Any] | None]) -> dict[str, set[int]]:
    """Every storage server of a ring's devices: its IP and the ports it serves."""
    out: dict[str, set[int]] = {}
    for d in devices:
        if not isinstance(d, Mapping):
            continue
        ip = ip_of(str(d.get("ip", "")))
        if ip is None:
            continue
        port = d.get("port")
        out.setdefault(str(ip), set()).update([port] if isinstance(port, int) else [])
    return out


def merge(ceph: Mapping[str, FoundHost], swift: Mapping[str, set[int]],
          addresses: Mapping[str, str] | None = None) -> dict[str, FoundHost]:
    """Ceph's hosts, then Swift's servers: a server at a Ceph host's address is that host
    (``addresses`` overrides a host's address first: the settings' exceptions)."""
    hosts = {n: replace(h, address=(addresses or {}).get(n) or h.address)
             for n, h in ceph.items()}
    by_addr: dict[str, list[str]] = {}
    for n, h in hosts.items():
        if h.address:
            by_addr.setdefault(host_key(h.address), []).append(n)
    for ip, ports in sorted(swift.items()):
        names = by_addr.get(host_key(ip), [])
        if len(names) == 1:
            h = hosts[names[0]]
            hosts[h.name] = replace(h, sources=(*h.sources, "swift"),
                                    ports=tuple(sorted(set(h.ports) | ports)))
        elif ip not in hosts:
            hosts[ip] = FoundHost(ip, ip, ("swift",), (), tuple(sorted(ports)))
    return hosts


def read_ceph(target: ClusterTarget) -> tuple[Any, Any, str | None]:
    """(``osd tree``, ``osd dump``, problem) read live; never raises."""
    if target.ceph is None:
        return None, None, "no [ceph] settings"
    from storage.ceph.client import CephClient, CephError

    try:
        with CephClient(target.ceph) as c:
            return c.mon("osd tree"), c.mon("osd dump"), None
    except (CephError, OSError) as e:
        return None, None, f"Ceph: {e}"


def read_rings(swift_dir: str) -> tuple[dict[str, set[int]], list[str]]:
    """Every storage server of the rings under ``swift_dir`` (one problem per bad ring)."""
    from storage.ringfile import RingFileError, load_ring

    out: dict[str, set[int]] = {}
    problems: list[str] = []
    paths = sorted(glob.glob(os.path.join(glob.escape(swift_dir), "*.ring.gz")))
    if not paths:
        problems.append(f"Swift: no *.ring.gz in {swift_dir}")
    for p in paths:
        try:
            ring = load_ring(p)
        except (RingFileError, OSError) as e:
            problems.append(f"Swift: {p}: {e}")
            continue
        for ip, ports in ring_servers(ring.devs).items():
            out.setdefault(ip, set()).update(ports)
    return out, problems


def found_hosts(target: ClusterTarget) -> Found:
    """The hosts ``target.discovery`` names, read live (Ceph and the rings)."""
    d = target.discovery
    found = Found()
    if d is None:
        return found
    ceph: dict[str, FoundHost] = {}
    swift: dict[str, set[int]] = {}
    if "ceph" in d.sources:
        tree, dump, problem = read_ceph(target)
        if problem:
            found.problems.append(problem)
        else:
            ceph = ceph_hosts(tree, dump)
    if "swift" in d.sources and target.swift is not None:
        swift, problems = read_rings(target.swift.swift_dir)
        found.problems += problems
    known = {h.name: h.address for h in target.hosts if h.address}
    found.hosts = merge(ceph, swift, known)
    return found


def with_found(target: ClusterTarget, found: Mapping[str, FoundHost]) -> ClusterTarget:
    """``target`` with every found host it does not configure, from the defaults; a
    configured host without an address takes the one found (or its name)."""
    d = target.discovery
    if d is None:
        return target
    hosts: list[HostTarget] = []
    names = set()

    def rings_only_on_servers(h: HostTarget, f: FoundHost | None) -> HostTarget:
        """The default ring dirs are read on the rings' storage servers only (a Ceph
        host without Swift has none to compare); a host's own setting is kept."""
        if f is not None and "swift" not in f.sources \
                and h.swift_ring_dirs == d.defaults.swift_ring_dirs:
            return replace(h, swift_ring_dirs=())
        return h

    for h in target.hosts:
        names.add(h.name)
        f = found.get(h.name)
        if not h.address:
            h = replace(h, address=(f.address if f and f.address else h.name))
        hosts.append(rings_only_on_servers(h, f))
    for name, f in sorted(found.items()):
        if name not in names:
            hosts.append(rings_only_on_servers(
                replace(d.defaults, name=name, address=f.address or name), f))
    return replace(target, hosts=tuple(hosts))


def resolve_hosts(target: ClusterTarget) -> tuple[ClusterTarget, list[str]]:
    """``target`` with its discovered hosts, and the problems of finding them."""
    if target.discovery is None:
        return target, []
    found = found_hosts(target)
    return with_found(target, found.hosts), found.problems


__all__ = ["SOURCES", "Found", "FoundHost", "HostDiscovery", "addr_ip", "ceph_hosts",
           "found_hosts", "merge", "read_ceph", "read_rings", "resolve_hosts",
           "ring_servers", "with_found"]
