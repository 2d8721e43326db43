"""``stordoc init``: a config whose hosts come from the cluster.

From a ceph.conf and a keyring (and a Swift dir, a Prometheus URL, an SSH user and key)
it reads what the cluster knows of its hosts: CRUSH host buckets and the OSDs' addresses
(``osd tree``, ``osd dump``), each daemon's metadata (``osd|mon|mgr metadata``: host
name, address, data path, deployment), the orchestrator's host list where cephadm runs
(``orch host ls``), the rings' storage servers, Prometheus's node_exporter targets. It
writes ``hosts_from`` (the hosts are read again at each check: one that joins later is
checked without editing the file), ``[clusters.NAME.host_defaults]`` for what every host
shares (SSH, the deployment's paths: from Ceph's own config and metadata), and a host
entry only for an exception (an address SSH reaches that Ceph does not report, an OSD
data path unlike the others).

``gather`` reads (every failure is one line in ``problems``, the rest still read);
``plan`` is a pure function of what was read (unit tests give it captured JSON);
``write`` never replaces a file stordoc did not write, nor one it did without ``force``.
"""

from __future__ import annotations

import configparser
import os
import socket
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.discover import FoundHost, addr_ip, ceph_hosts, merge, read_rings
from storage.targets import CephTarget, HostTarget, host_key, ip_of

MARK = "# Written by `stordoc init`"
DEFAULT_HOST = HostTarget(name="", address="")
# a sentinel OSD id: Ceph's config expands $id/$name with it, and it becomes {id}
_SENTINEL = 987654321
PROBE_TIMEOUT_S = 3.0


class InitError(Exception):
    """A request init cannot act on (one line; nothing written)."""


@dataclass(frozen=True)
class InitRequest:
    name: str = "main"
    ceph_conf: str | None = None
    keyring: str | None = None
    client: str = "client.admin"
    swift_dir: str | None = None
    prometheus_url: str | None = None
    prometheus_job: str = "node"
    ssh_user: str | None = None
    ssh_key: str | None = None
    ssh_port: int | None = None
    known_hosts: str | None = None
    # NAME=ADDRESS: where SSH reaches a host the cluster names (an exception entry)
    addresses: Mapping[str, str] = field(default_factory=dict)
    probe: bool = True
    timeout_s: float = 10.0


@dataclass
class Facts:
    """What the cluster said (the JSON Ceph prints), and what could not be read."""

    osd_tree: Any = None
    osd_dump: Any = None
    osd_metadata: Any = None
    mon_metadata: Any = None
    mgr_metadata: Any = None
    orch_hosts: Any = None  # None: no orchestrator (not cephadm)
    conf_paths: dict[str, str] = field(default_factory=dict)  # ceph.conf's OSD paths
    swift_servers: dict[str, set[int]] = field(default_factory=dict)
    swift_conf: dict[str, dict[str, str]] = field(default_factory=dict)  # server -> DEFAULT
    prom_instances: list[str] | None = None  # node_exporter targets' instance labels
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Plan:
    text: str
    hosts: dict[str, FoundHost]
    problems: list[str]
    notes: list[str]

    @property
    def lines(self) -> int:
        return len(self.text.splitlines())


# ------------------------------------------------------------------ reading

def _ceph_problem(e: Exception, what: str, client: str) -> str:
    from storage.ceph.client import CephCommandError

    if isinstance(e, CephCommandError) and abs(e.rc) == 13:
        return (f"Ceph: {client} may not read {what} (EACCES: give it caps mon 'allow r', "
                f"mgr 'allow r'): hosts from Ceph not found")
    return f"Ceph: {what}: {e}"


def gather_ceph(req: InitRequest, facts: Facts,
                reader: Callable[[str, bool], Any] | None = None) -> None:
    """Ceph's answers into ``facts``; ``reader(prefix, to_mgr)`` (tests) or a live
    connection. An unreachable monitor is one problem line, the rest still gathered."""
    from storage.ceph.client import CephClient, CephCommandError, CephError

    assert req.ceph_conf is not None
    facts.conf_paths = conf_paths(req.ceph_conf)
    client: CephClient | None = None
    if reader is None:
        client = CephClient(CephTarget(req.ceph_conf, req.keyring, req.client, req.timeout_s))
        try:
            client.connect()
        except CephError as e:
            facts.problems.append(f"Ceph: monitors unreachable: {e}; the config still names "
                                  "them, hosts are read at each check")
            return
        c = client

        def reader(prefix: str, to_mgr: bool) -> Any:
            return c.mgr(prefix) if to_mgr else c.mon(prefix)

    try:
        for key, prefix in (("osd_tree", "osd tree"), ("osd_dump", "osd dump"),
                            ("osd_metadata", "osd metadata"),
                            ("mon_metadata", "mon metadata"),
                            ("mgr_metadata", "mgr metadata")):
            try:
                setattr(facts, key, reader(prefix, False))
            except CephError as e:
                facts.problems.append(_ceph_problem(e, f"'{prefix}'", req.client))
                if prefix == "osd tree" and isinstance(e, CephCommandError) \
                        and abs(e.rc) == 13:
                    return  # no read caps: every other command says the same
        try:
            facts.orch_hosts = reader("orch host ls", True)
        except CephCommandError as e:
            if abs(e.rc) == 2 or "orchestrator" in e.outs.lower():  # ENOENT: none set
                facts.notes.append("orchestrator: none configured (not cephadm); hosts "
                                   "from the daemons' metadata")
            else:
                facts.notes.append(f"orchestrator: 'orch host ls' failed: {e}")
        except CephError as e:
            facts.notes.append(f"orchestrator: 'orch host ls' failed: {e}")
    finally:
        if client is not None:
            client.close()


def conf_paths(conf: str) -> dict[str, str]:
    """The OSD paths ceph.conf gives (``admin_socket``, ``log_file``, ``pid_file``,
    ``crash_dir``, ``osd_data``) as templates with ``{id}``: Ceph's own config parser
    expands them for an OSD of a sentinel id. {} when librados cannot read the file."""
    try:
        import rados
    except ImportError:
        return {}
    try:
        r = rados.Rados(conffile=conf, name=f"osd.{_SENTINEL}")
    except Exception:  # noqa: BLE001  (a conf it cannot parse: no templates)
        return {}
    out: dict[str, str] = {}
    try:
        for key in ("admin_socket", "log_file", "pid_file", "crash_dir", "osd_data"):
            try:
                v = str(r.conf_get(key) or "")
            except Exception:  # noqa: BLE001
                continue
            out[key] = v.replace(str(_SENTINEL), "{id}")
    finally:
        try:
            r.shutdown()
        except Exception:  # noqa: BLE001
            pass
    return out


def gather_swift(req: InitRequest, facts: Facts) -> None:
    assert req.swift_dir is not None
    facts.swift_servers, problems = read_rings(req.swift_dir)
    facts.problems += problems
    for server in ("proxy", "object", "container", "account"):
        p = Path(req.swift_dir) / f"{server}-server.conf"
        cp = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            cp.read_string(p.read_text(errors="replace")[:1 << 20])
        except (OSError, configparser.Error):
            continue
        facts.swift_conf[server] = dict(cp.defaults())


def gather_prometheus(req: InitRequest, facts: Facts) -> None:
    from storage.prometheus import PromClient, PromError

    assert req.prometheus_url is not None
    try:
        samples = PromClient(req.prometheus_url, min(req.timeout_s, 10.0)).query(
            f'up{{job="{req.prometheus_job}"}}')
    except (PromError, ValueError) as e:
        facts.problems.append(f"Prometheus {req.prometheus_url}: {e}: [prometheus] not "
                              "written")
        return
    facts.prom_instances = sorted({s.labels.get("instance", "") for s in samples} - {""})


def gather(req: InitRequest) -> Facts:
    """Everything init reads, live."""
    if req.ceph_conf is None and req.swift_dir is None:
        raise InitError("give --ceph-conf (with --keyring) or --swift-dir: init reads the "
                        "hosts from the cluster")
    for what, path in (("--ceph-conf", req.ceph_conf), ("--keyring", req.keyring),
                       ("--swift-dir", req.swift_dir), ("--ssh-key", req.ssh_key),
                       ("--known-hosts", req.known_hosts)):
        if path is not None and not os.path.exists(path):
            raise InitError(f"{what} {path}: no such file or directory")
    facts = Facts()
    if req.ceph_conf:
        gather_ceph(req, facts)
    if req.swift_dir:
        gather_swift(req, facts)
    if req.prometheus_url:
        gather_prometheus(req, facts)
    return facts


# ------------------------------------------------------------------ deciding

def _template(path: str, osd_id: int) -> str:
    """``/var/lib/ceph/osd/ceph-3`` of osd.3 -> ``/var/lib/ceph/osd/ceph-{id}``."""
    tail = str(osd_id)
    if path.endswith(tail) and not path[-len(tail) - 1:-len(tail)].isdigit():
        return path[:-len(tail)] + "{id}"
    return path


def _metadata_by_id(metadata: Any) -> dict[int, Mapping[str, Any]]:
    out: dict[int, Mapping[str, Any]] = {}
    for m in metadata if isinstance(metadata, list) else []:
        if isinstance(m, Mapping) and isinstance(m.get("id"), int):
            out[m["id"]] = m
    return out


def deployment(metadata: Any) -> tuple[str, str]:
    """(``cephadm`` or ``packages``, ``debian``/``rpm``/...): what most OSDs report."""
    kinds: Counter[str] = Counter()
    distros: Counter[str] = Counter()
    for m in _metadata_by_id(metadata).values():
        kinds["cephadm" if m.get("container_image") else "packages"] += 1
        d = str(m.get("distro", "")).lower()
        distros["debian" if d in ("debian", "ubuntu") else
                "rpm" if d in ("centos", "rhel", "rocky", "almalinux", "fedora", "opensuse")
                else d or "unknown"] += 1
    return (kinds.most_common(1)[0][0] if kinds else "packages",
            distros.most_common(1)[0][0] if distros else "unknown")


def _osd_kind(m: Mapping[str, Any]) -> str:
    if m.get("osd_objectstore") == "filestore":
        return "filestore"
    dev = str(m.get("bluestore_bdev_dev_node", "")) + str(m.get("devices", ""))
    # ceph-volume lvm puts BlueStore on a device-mapper volume; raw (and the ceph-disk
    # era's layouts) on the device itself
    return "on LVM" if "dm-" in dev or "/dev/mapper" in dev else "on a plain device"


def _host_data_dirs(hosts: Mapping[str, FoundHost], metadata: Any) -> dict[str, str]:
    """Each CRUSH host's OSD data path template (the one most of its OSDs report)."""
    by_id = _metadata_by_id(metadata)
    out: dict[str, str] = {}
    for name, h in hosts.items():
        seen = Counter(_template(str(by_id[i]["osd_data"]), i) for i in h.osd_ids
                       if i in by_id and by_id[i].get("osd_data"))
        if seen:
            out[name] = seen.most_common(1)[0][0]
    return out


def _daemon_hosts(metadata: Any, kind: str) -> dict[str, str]:
    """``mon|mgr metadata``: daemon name -> its host name."""
    out: dict[str, str] = {}
    for m in metadata if isinstance(metadata, list) else []:
        if isinstance(m, Mapping) and m.get("name") and m.get("hostname"):
            out[f"{kind}.{m['name']}"] = str(m["hostname"])
    return out


def _orch(orch: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for h in orch if isinstance(orch, list) else []:
        if isinstance(h, Mapping) and h.get("hostname"):
            out[str(h["hostname"])] = str(h.get("addr") or h["hostname"])
    return out


def tcp_probe(address: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when something accepts a TCP connection there, else why not."""
    try:
        with socket.create_connection((address, port), timeout=timeout_s) as s:
            s.settimeout(timeout_s)
            banner = s.recv(64)
    except OSError as e:
        return e.strerror or type(e).__name__
    if banner and not banner.startswith(b"SSH-"):
        return "answers, but not as an SSH server"
    return None


def _toml(v: Any) -> str:
    """A TOML value: strings and lists of strings as JSON spells them (a subset of TOML's
    basic strings), numbers as themselves."""
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(v, ensure_ascii=False)


def _swift_defaults(facts: Facts) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """([swift] keys, host defaults, notes) from the servers' configs in the Swift dir."""
    swift: dict[str, Any] = {}
    host: dict[str, Any] = {}
    notes: list[str] = []
    proxy = facts.swift_conf.get("proxy", {})
    ip, port = proxy.get("bind_ip", ""), proxy.get("bind_port", "")
    if port.isdigit() and ip and ip_of(ip) and not ip_of(ip).is_unspecified:  # type: ignore[union-attr]
        h = f"[{ip}]" if ":" in ip else ip
        swift["proxy_url"] = f"http://{h}:{port}"
    elif port:
        notes.append(f"Swift: the proxy binds {ip or '*'}:{port}: set [swift] proxy_url "
                     "to the address stordoc reaches it at")
    devices = {c.get("devices", "/srv/node") for k, c in facts.swift_conf.items()
               if k != "proxy"} or {"/srv/node"}
    if len(devices) == 1:
        host["swift_devices_dir"] = devices.pop()
    ring_dirs = sorted({c.get("swift_dir", "/etc/swift") for k, c in facts.swift_conf.items()
                        if k != "proxy"})
    if ring_dirs:
        host["swift_ring_dirs"] = ring_dirs
    return swift, host, notes


def plan(req: InitRequest, facts: Facts,
         probe: Callable[[str, int], str | None] | None = None) -> Plan:
    """The config text for what was read, the hosts found, and one line per problem."""
    problems = list(facts.problems)
    notes = list(facts.notes)
    ceph = ceph_hosts(facts.osd_tree, facts.osd_dump) if facts.osd_tree else {}
    orch = _orch(facts.orch_hosts)
    if orch:
        notes.append(f"orchestrator: cephadm lists {len(orch)} hosts")
    addresses = {**{n: a for n, a in orch.items() if n in ceph}, **req.addresses}
    unknown = sorted(set(req.addresses) - set(ceph) - set(orch))
    if unknown and ceph:
        problems.append(f"--host {unknown[0]}: Ceph has no host of that name (CRUSH hosts: "
                        f"{', '.join(sorted(ceph)[:8]) or 'none'})")
    hosts = merge(ceph, facts.swift_servers, addresses)
    for n, a in orch.items():  # cephadm's hosts without OSDs (mons, gateways)
        if n not in hosts and not any(host_key(h.address or "") == host_key(a)
                                      for h in hosts.values()):
            hosts[n] = FoundHost(n, a, ("orch",))
    # several hosts at one address: the daemons report a shared address (NAT, a lab)
    at: dict[str, list[str]] = {}
    for n, h in hosts.items():
        if h.address and n not in req.addresses:
            at.setdefault(h.address, []).append(n)
    for a, names in sorted(at.items()):
        if len(names) > 1:
            problems.append(f"hosts {', '.join(sorted(names))} all report the address {a}: "
                            f"give --host NAME=ADDRESS for each (where SSH reaches it)")
    # Prometheus: each target's host should be one found; others are named
    prom_ok = facts.prom_instances is not None and bool(facts.prom_instances)
    if facts.prom_instances is not None and not facts.prom_instances:
        problems.append(f"Prometheus {req.prometheus_url}: no node_exporter targets (job "
                        f"\"{req.prometheus_job}\"): [prometheus] not written")
    elif facts.prom_instances:
        from storage.hostfacts.prom import split_instance

        known = {host_key(h.address or "") for h in hosts.values()} | \
            {host_key(n) for n in hosts}
        extra = sorted({split_instance(i)[0] for i in facts.prom_instances}
                       - {""} - known)
        if extra:
            notes.append(f"Prometheus: {len(extra)} node_exporter targets are no host of "
                         f"the cluster ({', '.join(extra[:4])}): not added")
    # deployment defaults
    kind, distro = deployment(facts.osd_metadata)
    data_dirs = _host_data_dirs(hosts, facts.osd_metadata)
    defaults: dict[str, Any] = {}
    if req.ssh_user and req.ssh_user != DEFAULT_HOST.user:
        defaults["user"] = req.ssh_user
    if req.ssh_port and req.ssh_port != DEFAULT_HOST.port:
        defaults["port"] = req.ssh_port
    if req.ssh_key:
        defaults["key_file"] = os.path.abspath(req.ssh_key)
    if req.known_hosts:
        defaults["known_hosts"] = os.path.abspath(req.known_hosts)
    common_dir = Counter(data_dirs.values()).most_common(1)[0][0] if data_dirs else None
    if kind == "cephadm":
        defaults.update(osd_data_dir="/var/lib/ceph/{fsid}/osd.{id}",
                        osd_admin_socket="/var/run/ceph/{fsid}/ceph-osd.{id}.asok",
                        osd_unit="ceph-{fsid}@osd.{id}.service", osd_log_file=None)
    else:
        cluster = "ceph"
        wanted = {"osd_data_dir": common_dir,
                  "osd_pid_file": facts.conf_paths.get("pid_file") or None,
                  "osd_log_file": facts.conf_paths.get("log_file") or None,
                  "osd_admin_socket": facts.conf_paths.get("admin_socket") or None,
                  "ceph_crash_dir": facts.conf_paths.get("crash_dir") or None}
        for k, v in wanted.items():
            base = getattr(DEFAULT_HOST, k)
            if isinstance(base, str):
                base = base.replace("{cluster}", cluster)
            if v is not None and v != base:
                defaults[k] = v
    by_id = _metadata_by_id(facts.osd_metadata)
    kinds = Counter(_osd_kind(m) for m in by_id.values())
    swift_keys: dict[str, Any] = {}
    if req.swift_dir:
        swift_keys, swift_host, swift_notes = _swift_defaults(facts)
        defaults.update(swift_host)
        notes += swift_notes
    # exceptions: an address given, a data path unlike the others
    exceptions: dict[str, dict[str, Any]] = {}
    for n in sorted(hosts):
        ex: dict[str, Any] = {}
        if n in req.addresses:
            ex["address"] = req.addresses[n]
        if kind != "cephadm" and data_dirs.get(n) and data_dirs[n] != common_dir:
            ex["osd_data_dir"] = data_dirs[n]
        if ex:
            exceptions[n] = ex
    # SSH: each host found, in parallel
    port = req.ssh_port or DEFAULT_HOST.port
    if probe is not None and hosts:
        def one(h: FoundHost) -> tuple[FoundHost, str | None]:
            addr = exceptions.get(h.name, {}).get("address") or h.address or h.name
            return h, probe(addr, port)

        with ThreadPoolExecutor(max_workers=min(32, len(hosts))) as ex_:
            for h, why in ex_.map(one, hosts.values()):
                if why:
                    what = "Swift server" if h.sources == ("swift",) else "host"
                    addr = exceptions.get(h.name, {}).get("address") or h.address or h.name
                    problems.append(f"{what} {h.name}: SSH {addr}:{port} unreachable: {why} "
                                    "(kept: checked once it answers)")
    sources = [s for s, on in (("ceph", bool(req.ceph_conf)), ("swift", bool(req.swift_dir)))
               if on]
    n_ceph = sum(1 for h in hosts.values() if "ceph" in h.sources)
    n_swift = sum(1 for h in hosts.values() if "swift" in h.sources)
    mons = {**_daemon_hosts(facts.mon_metadata, "mon"), **_daemon_hosts(facts.mgr_metadata,
                                                                          "mgr")}
    summary = (f"{len(hosts)} hosts: {n_ceph} Ceph, {n_swift} Swift; "
               + (f"{kind}, {distro}; OSDs " + ", ".join(f"{v} {k}" for k, v
                                                        in sorted(kinds.items()))
                  if kinds else "no OSD metadata read"))
    notes.insert(0, summary)
    if mons:
        notes.append("mon/mgr on " + ", ".join(sorted(set(mons.values()))) + " (host "
                     "facts of their daemons need a [[hosts.daemons]] entry)")
    text = _render(req, sources, exceptions, defaults, swift_keys, prom_ok, summary)
    return Plan(text, hosts, problems, notes)


def _render(req: InitRequest, sources: list[str], exceptions: Mapping[str, Mapping[str, Any]],
            defaults: Mapping[str, Any], swift_keys: Mapping[str, Any], prom: bool,
            summary: str) -> str:
    c = f"clusters.{req.name}"
    out = [f"{MARK}: hosts come from the cluster at each check ({summary})",
           f"[{c}]", f"hosts_from = {_toml(sources)}"]
    if exceptions:
        out.append("hosts = [  # only where a host differs from host_defaults")
        for n, ex in exceptions.items():
            inner = ", ".join(f"{k} = {_toml(v)}" for k, v in {"name": n, **ex}.items())
            out.append(f"  {{ {inner} }},")
        out.append("]")
    if req.ceph_conf:
        out += [f"[{c}.ceph]", f"conf = {_toml(os.path.abspath(req.ceph_conf))}"]
        if req.keyring:
            out.append(f"keyring = {_toml(os.path.abspath(req.keyring))}")
        if req.client != "client.admin":
            out.append(f"client = {_toml(req.client)}")
    if req.swift_dir:
        out += [f"[{c}.swift]", f"swift_dir = {_toml(os.path.abspath(req.swift_dir))}"]
        out += [f"{k} = {_toml(v)}" for k, v in swift_keys.items()]
    if prom and req.prometheus_url:
        out += [f"[{c}.prometheus]", f"url = {_toml(req.prometheus_url)}"]
        if req.prometheus_job != "node":
            out.append(f"job = {_toml(req.prometheus_job)}")
    if defaults:
        out += [f"[{c}.host_defaults]"]
        for k, v in defaults.items():
            if v is None:  # TOML has no null: an empty string turns the probe off
                out.append(f"{k} = \"\"")
            else:
                out.append(f"{k} = {_toml(v)}")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ writing

def write(path: Path, text: str, force: bool) -> None:
    """``text`` to ``path``; an existing file only with ``force`` and only when stordoc
    init wrote it (its first line), never one a person wrote."""
    from storage.private import write_private

    if path.exists() or path.is_symlink():
        try:
            first = path.read_text(errors="replace").split("\n", 1)[0]
        except OSError as e:
            raise InitError(f"{path} exists and cannot be read ({e.strerror}): not "
                            "overwritten") from None
        if not first.startswith(MARK):
            raise InitError(f"{path} exists and stordoc init did not write it: not "
                            "overwritten (write elsewhere with --output)")
        if not force:
            raise InitError(f"{path} exists: not overwritten (--force replaces a config "
                            "stordoc init wrote)")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, text)


def check_text(text: str) -> None:
    """The text loads as settings (a bug here must not leave an unusable file)."""
    import tomllib

    from core.settings import Settings

    Settings.model_validate(tomllib.loads(text))


def run_init(req: InitRequest, output: Path, force: bool,
             probe: Callable[[str, int], str | None] | None = tcp_probe) -> Plan:
    """Read, decide, check the text loads, write; the plan says what was found."""
    if output.exists() and not force:
        write(output, "", False)  # refuses before the cluster is read
    facts = gather(req)
    p = plan(req, facts, probe if req.probe else None)
    check_text(p.text)
    write(output, p.text, force)
    return p


def parse_addresses(items: Iterable[str]) -> dict[str, str]:
    """``--host NAME=ADDRESS`` items; InitError for a malformed one."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, addr = item.partition("=")
        if not sep or not name.strip() or not addr.strip() or any(
                c.isspace() for c in name.strip() + addr.strip()):
            raise InitError(f"--host {item!r}: give NAME=ADDRESS (the host as Ceph names "
                            "it, where SSH reaches it)")
        out[name.strip()] = addr.strip()
    return out


__all__ = ["MARK", "Facts", "InitError", "InitRequest", "Plan", "addr_ip", "check_text",
           "gather", "parse_addresses", "plan", "run_init", "tcp_probe", "write"]
