"""``stordoc init`` (core/init.py) and hosts found from the cluster (storage/discover.py):
on the lab's captured metadata (tests/fixtures/init/pacific-lab), a synthetic 1,000-host
cluster, and each bad input (no read caps, a monitor nobody answers, a host or a ring's
server SSH cannot reach, a Prometheus without node_exporter targets, a config file that
exists) on real sockets, a real HTTP server and real librados."""

from __future__ import annotations

import copy
import json
import shutil
import socket
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.init import (
    MARK,
    Facts,
    InitError,
    InitRequest,
    check_text,
    conf_paths,
    gather_ceph,
    gather_swift,
    plan,
    tcp_probe,
    write,
)
from core.settings import SettingsError, parse_settings
from storage.ceph.client import CephCommandError
from storage.discover import addr_ip, ceph_hosts, merge, ring_servers, with_found
from tests.support.cli import run_main
from tests.support.prom_server import FakeProm, Node

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "init" / "pacific-lab"
LAB_HOSTS = {f"node{n}": f"127.0.0.{n + 1}" for n in range(1, 5)}


def _load(name: str) -> Any:
    return json.loads((LAB / f"{name}.json").read_text())


def lab_facts(swift: bool = True) -> tuple[InitRequest, Facts]:
    req = InitRequest(name="lab", ceph_conf="/etc/ceph/ceph.conf", keyring="/etc/ceph/k",
                      swift_dir=str(LAB) if swift else None, ssh_port=23015,
                      ssh_key="/keys/id", known_hosts="/keys/kh", addresses=LAB_HOSTS)
    f = Facts(osd_tree=_load("osd_tree"), osd_dump=_load("osd_dump"),
              osd_metadata=_load("osd_metadata"), mon_metadata=_load("mon_metadata"),
              mgr_metadata=_load("mgr_metadata"),
              conf_paths=conf_paths(str(LAB / "ceph.conf")))  # {} without librados
    if swift:
        gather_swift(req, f)
    return req, f


def settings_of(text: str, name: str = "lab") -> Any:
    return parse_settings(tomllib.loads(text)).clusters[name]


# ------------------------------------------------------------------ the lab's metadata

def test_lab_config_is_short_and_names_only_the_exceptions() -> None:
    req, facts = lab_facts()
    p = plan(req, facts)
    assert p.lines <= 30, p.text
    check_text(p.text)
    cs = settings_of(p.text)
    assert cs.hosts_from == ["ceph", "swift"]
    # every lab host is an exception only for its address (the daemons report 127.0.0.1),
    # node4 also for its ceph-volume raw data path
    assert {h.name: h.address for h in cs.hosts} == LAB_HOSTS
    extra = {h.name: sorted(h.model_fields_set - {"name", "address"}) for h in cs.hosts}
    assert extra == {"node1": [], "node2": [], "node3": [], "node4": ["osd_data_dir"]}
    assert cs.hosts[3].osd_data_dir.endswith("/sdlab23000-{id}")
    # what every host shares comes from the cluster: the OSDs' data path and the Swift
    # servers' devices and ring dirs
    d = cs.host_defaults
    assert d.osd_data_dir == "/var/tmp/stordoc-lab-init/ceph/osd/ceph-{id}"
    assert d.swift_devices_dir == "/var/tmp/stordoc-lab-init/swift/node"
    assert len(d.swift_ring_dirs) == 3 and d.port == 23015 and d.key_file == "/keys/id"
    if facts.conf_paths:  # ceph.conf's own paths, read by librados with $id as {id}
        assert d.osd_admin_socket == "/var/tmp/stordoc-lab-init/ceph/run/ceph-osd.{id}.asok"
        assert d.osd_pid_file == "/var/tmp/stordoc-lab-init/ceph/run/ceph-osd.{id}.pid"
        assert d.osd_log_file == "/var/tmp/stordoc-lab-init/log/ceph-osd.{id}.log"


def test_the_resolved_target_holds_every_host_with_its_defaults() -> None:
    req, facts = lab_facts()
    cs = settings_of(plan(req, facts).text)
    t = cs.target("lab")
    assert t.discovery is not None and t.discovery.defaults.port == 23015
    found = merge(ceph_hosts(facts.osd_tree, facts.osd_dump), facts.swift_servers,
                  {h.name: h.address for h in t.hosts})
    hosts = {h.name: h for h in with_found(t, found).hosts}
    assert sorted(hosts) == ["node1", "node2", "node3", "node4"]
    assert all(h.key_file == "/keys/id" and h.port == 23015 for h in hosts.values())
    assert hosts["node4"].osd_data_dir.endswith("/sdlab23000-{id}")
    # the rings' servers are node1..node3 (by address): ring dirs there, none on node4
    assert hosts["node1"].swift_ring_dirs and not hosts["node4"].swift_ring_dirs


def test_without_hints_the_shared_loopback_address_is_said_once() -> None:
    req, facts = lab_facts(swift=False)
    req = InitRequest(name="lab", ceph_conf="/etc/ceph/ceph.conf")
    p = plan(req, facts)
    shared = [ln for ln in p.problems if "all report the address 127.0.0.1" in ln]
    assert len(shared) == 1 and "--host NAME=ADDRESS" in shared[0]
    check_text(p.text)


# ------------------------------------------------------------------ 1,000 hosts

def synthetic(n_hosts: int, osds_per_host: int = 3) -> Facts:
    """``osd tree``/``osd dump``/``osd metadata`` of a Debian-package cluster, in the
    shapes the lab's Pacific printed (one CRUSH host per server, its OSDs at its IP)."""
    tree0, dump0, meta0 = _load("osd_tree"), _load("osd_dump"), _load("osd_metadata")
    host_node = next(n for n in tree0["nodes"] if n["type"] == "host")
    osd_node = next(n for n in tree0["nodes"] if n["type"] == "osd")
    nodes: list[dict[str, Any]] = [dict(tree0["nodes"][0], children=[])]
    osds, meta = [], []
    for h in range(n_hosts):
        ip = f"10.{h // 250}.{h % 250}.{10}"
        ids = [h * osds_per_host + k for k in range(osds_per_host)]
        nodes[0]["children"].append(-(h + 2))
        nodes.append(dict(host_node, id=-(h + 2), name=f"stor{h:04d}", children=ids))
        for i in ids:
            nodes.append(dict(osd_node, id=i, name=f"osd.{i}"))
            o = copy.deepcopy(dump0["osds"][0])
            o.update(osd=i, public_addr=f"{ip}:6800/{i}",
                     public_addrs={"addrvec": [{"type": "v2", "addr": f"{ip}:6800",
                                                "nonce": i}]})
            osds.append(o)
            m = dict(meta0[0], id=i, hostname=f"stor{h:04d}", osd_data=f"/var/lib/ceph/osd/ceph-{i}",
                     front_addr=f"v2:{ip}:6800/{i}")
            meta.append(m)
    return Facts(osd_tree={"nodes": nodes, "stray": []}, osd_dump=dict(dump0, osds=osds),
                 osd_metadata=meta, mon_metadata=_load("mon_metadata"))


def test_a_thousand_hosts_write_the_same_size_as_four() -> None:
    req = InitRequest(name="big", ceph_conf="/etc/ceph/ceph.conf", keyring="/etc/ceph/k",
                      ssh_key="/keys/id")
    small, big = plan(req, synthetic(4)), plan(req, synthetic(1000))
    assert len(big.hosts) == 1000
    assert big.lines == small.lines <= 30, big.text
    assert not big.problems
    cs = settings_of(big.text, "big")
    assert cs.hosts == [] and cs.hosts_from == ["ceph"]
    t = cs.target("big")
    facts = synthetic(1000)
    resolved = with_found(t, merge(ceph_hosts(facts.osd_tree, facts.osd_dump), {}))
    assert len(resolved.hosts) == 1000
    h = {x.name: x for x in resolved.hosts}["stor0257"]
    assert h.address == "10.1.7.10" and h.key_file == "/keys/id"
    assert h.osd_data_dir == "/var/lib/ceph/osd/{cluster}-{id}"  # Debian's: not written


def test_a_host_that_joins_later_is_checked_without_editing_the_file() -> None:
    req = InitRequest(name="c", ceph_conf="/etc/ceph/ceph.conf")
    t = settings_of(plan(req, synthetic(3)).text, "c").target("c")
    later = synthetic(4)  # stor0003 joined after init wrote the file
    hosts = with_found(t, merge(ceph_hosts(later.osd_tree, later.osd_dump), {})).hosts
    assert [h.name for h in hosts] == ["stor0000", "stor0001", "stor0002", "stor0003"]
    assert hosts[3].address == "10.0.3.10"


def test_cephadm_defaults_replace_the_package_paths() -> None:
    f = synthetic(5)
    for m in f.osd_metadata:
        m["container_image"] = "quay.io/ceph/ceph:v18"
    f.orch_hosts = [{"hostname": f"stor{h:04d}", "addr": f"192.168.0.{h + 1}"}
                    for h in range(5)] + [{"hostname": "mon-only", "addr": "192.168.0.99"}]
    p = plan(InitRequest(name="c", ceph_conf="/etc/ceph/ceph.conf"), f)
    d = settings_of(p.text, "c").host_defaults
    assert d.osd_data_dir == "/var/lib/ceph/{fsid}/osd.{id}"
    assert d.osd_unit == "ceph-{fsid}@osd.{id}.service"
    # the orchestrator's addresses are where cephadm reaches each host: kept as found
    assert p.hosts["stor0002"].address == "192.168.0.3"
    assert p.hosts["mon-only"].sources == ("orch",)


# ------------------------------------------------------------------ bad input

def test_a_keyring_without_read_caps_is_one_line_and_a_config_is_written() -> None:
    req, facts = lab_facts()
    calls: list[str] = []

    def no_caps(prefix: str, to_mgr: bool) -> Any:
        calls.append(prefix)
        raise CephCommandError(prefix, -13, "access denied")

    f = Facts()
    gather_ceph(InitRequest(ceph_conf=str(LAB / "nonexistent.conf"), client="client.ro"),
                f, reader=no_caps)
    assert calls == ["osd tree"]  # one refusal says it all
    assert len(f.problems) == 1 and "client.ro may not read" in f.problems[0] \
        and "allow r" in f.problems[0]
    f.swift_servers, f.swift_conf = facts.swift_servers, facts.swift_conf
    p = plan(req, f)
    check_text(p.text)
    cs = settings_of(p.text)
    assert cs.ceph is not None and cs.hosts_from == ["ceph", "swift"]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return int(port)


def test_an_unreachable_monitor_is_one_line_exit_3_and_a_config_is_written(
        tmp_path: Path) -> None:
    pytest.importorskip("rados")
    conf = tmp_path / "ceph.conf"
    conf.write_text(f"[global]\nmon_host = v2:127.0.0.1:{_closed_port()}\n"
                    "auth_client_required = none\n")
    swift = tmp_path / "swift"
    shutil.copytree(LAB, swift)
    out = tmp_path / "stordoc.toml"
    rc, so, se = run_main("init", "--ceph-conf", str(conf), "--swift-dir", str(swift),
                          "--timeout", "1", "--no-probe", "-o", str(out))
    assert rc == 3, (so, se)
    warn = [ln for ln in so.splitlines() if ln.startswith("warn:")]
    assert len(warn) == 1 and "monitors unreachable" in warn[0], so
    cs = settings_of(out.read_text(), "main")
    assert cs.ceph is not None and cs.swift is not None
    # what works is there: the rings' three servers (named by their address)
    assert "3 Swift" in so


@contextmanager
def ssh_like(addresses: list[str], banner: bytes = b"SSH-2.0-OpenSSH_9.2\r\n"
             ) -> Iterator[int]:
    """A port on which each of ``addresses`` answers like sshd (its banner)."""
    port = _closed_port()
    socks = []
    for a in addresses:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((a, port))
        s.listen(8)
        s.settimeout(0.2)
        socks.append(s)
    stop = threading.Event()

    def serve(s: socket.socket) -> None:
        while not stop.is_set():
            try:
                c, _ = s.accept()
            except OSError:
                continue
            with c:
                c.sendall(banner)

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in socks]
    for th in threads:
        th.start()
    try:
        yield port
    finally:
        stop.set()
        for th in threads:
            th.join(2)
        for s in socks:
            s.close()


def test_an_unreachable_host_is_one_line_and_stays_in_the_config() -> None:
    req, facts = lab_facts(swift=False)
    with ssh_like(["127.0.0.2", "127.0.0.3", "127.0.0.4"]) as port:
        req = InitRequest(name="lab", ceph_conf="/etc/ceph/ceph.conf", ssh_port=port,
                          addresses=LAB_HOSTS)
        p = plan(req, facts, probe=tcp_probe)
    down = [ln for ln in p.problems if "SSH" in ln]
    assert len(down) == 1 and down[0].startswith("host node4: SSH 127.0.0.5:"), p.problems
    assert "node4" in {h.name for h in settings_of(p.text).hosts}


def test_a_ring_naming_a_host_ssh_cannot_reach_is_one_line() -> None:
    f = Facts()
    req = InitRequest(name="s", swift_dir=str(LAB))
    gather_swift(req, f)
    assert sorted(f.swift_servers) == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    with ssh_like(["127.0.0.2", "127.0.0.3"]) as port:
        req = InitRequest(name="s", swift_dir=str(LAB), ssh_port=port)
        p = plan(req, f, probe=tcp_probe)
    assert p.problems == [p.problems[0]] and p.problems[0].startswith(
        "Swift server 127.0.0.4: SSH 127.0.0.4:"), p.problems
    cs = settings_of(p.text, "s")
    assert cs.hosts_from == ["swift"] and cs.ceph is None


def test_something_else_on_the_ssh_port_is_said() -> None:
    with ssh_like(["127.0.0.1"], banner=b"HTTP/1.1 400 Bad Request\r\n") as port:
        assert tcp_probe("127.0.0.1", port) == "answers, but not as an SSH server"
    assert tcp_probe("127.0.0.1", _closed_port())  # refused: a reason


def test_a_prometheus_without_node_exporter_targets_is_one_line(tmp_path: Path) -> None:
    from core.init import gather_prometheus

    with FakeProm([]).serve() as url:
        req = InitRequest(name="lab", swift_dir=str(LAB), prometheus_url=url)
        f = Facts()
        gather_swift(req, f)
        gather_prometheus(req, f)
    p = plan(req, f)
    assert [ln for ln in p.problems if "Prometheus" in ln] == [
        f'Prometheus {url}: no node_exporter targets (job "node"): [prometheus] not written']
    assert settings_of(p.text).prometheus is None
    with FakeProm([Node("127.0.0.2:9100"), Node("127.0.0.9:9100")]).serve() as url:
        req = InitRequest(name="lab", swift_dir=str(LAB), prometheus_url=url)
        gather_prometheus(req, f)
        p = plan(req, f)
    assert settings_of(p.text).prometheus is not None
    assert any("127.0.0.9" in n for n in p.notes)  # a target that is no host: said


# ------------------------------------------------------------------ the file

def test_an_existing_file_is_never_overwritten_unless_stordoc_wrote_it(tmp_path: Path) -> None:
    mine = tmp_path / "hand.toml"
    mine.write_text("# my own config\n[clusters.x]\n")
    for force in (False, True):
        with pytest.raises(InitError, match="did not write it"):
            write(mine, f"{MARK}\n", force)
    assert mine.read_text() == "# my own config\n[clusters.x]\n"
    ours = tmp_path / "ours.toml"
    write(ours, f"{MARK}: one\n", False)
    with pytest.raises(InitError, match="--force"):
        write(ours, f"{MARK}: two\n", False)
    write(ours, f"{MARK}: two\n", True)
    assert ours.read_text() == f"{MARK}: two\n"


def test_the_cli_refuses_before_reading_the_cluster(tmp_path: Path) -> None:
    mine = tmp_path / "c.toml"
    mine.write_text("journal = 'x'\n")
    rc, so, se = run_main("init", "--swift-dir", str(LAB), "-o", str(mine), "--force")
    assert rc == 64 and "did not write it" in se and so == ""
    rc, so, se = run_main("init", "-o", str(tmp_path / "new.toml"))
    assert rc == 64 and "--ceph-conf" in se and not (tmp_path / "new.toml").exists()
    rc, so, se = run_main("init", "--swift-dir", str(LAB), "--host", "node1",
                          "-o", str(tmp_path / "new.toml"))
    assert rc == 64 and "NAME=ADDRESS" in se


# ------------------------------------------------------------------ the settings

def test_host_defaults_and_exceptions_in_the_settings() -> None:
    base = {"clusters": {"c": {"ceph": {"conf": "/etc/ceph/ceph.conf"}}}}

    def cluster(**kw: Any) -> Any:
        doc = copy.deepcopy(base)
        doc["clusters"]["c"].update(kw)
        return parse_settings(doc).clusters["c"]

    with pytest.raises(SettingsError, match="no address"):
        cluster(hosts=[{"name": "n1"}])
    with pytest.raises(SettingsError, match="per host only"):
        cluster(host_defaults={"address": "10.0.0.1"})
    cs = cluster(hosts_from=["ceph"], host_defaults={"user": "ops", "port": 2222},
                 hosts=[{"name": "n1", "port": 22}, {"name": "n2", "address": "10.0.0.2"}])
    t = cs.target("c")
    assert [(h.name, h.address, h.user, h.port) for h in t.hosts] == [
        ("n1", "", "ops", 22), ("n2", "10.0.0.2", "ops", 2222)]
    # without hosts_from nothing is looked for; hand-written hosts work as before
    plain = cluster(hosts=[{"name": "n1", "address": "10.0.0.1"}]).target("c")
    assert plain.discovery is None and plain.hosts[0].user == "root"


@given(st.ip_addresses(v=4), st.integers(1, 65535), st.integers(0, 2**31))
def test_addr_ip_reads_every_spelling(ip: Any, port: int, nonce: int) -> None:
    s = str(ip)
    want = None if ip.is_unspecified else s
    assert addr_ip(f"v2:{s}:{port}/{nonce}") == want
    assert addr_ip(f"[v2:{s}:{port}/{nonce},v1:{s}:{port}/{nonce}]") == want
    assert addr_ip(f"{s}:{port}/{nonce}") == want
    assert addr_ip({"addrvec": [{"type": "v2", "addr": f"{s}:{port}", "nonce": nonce}]}) \
        == want


def test_odd_ceph_and_ring_input_never_raises() -> None:
    assert ceph_hosts(None, None) == {}
    assert ceph_hosts({"nodes": [{"type": "host", "name": "a b"}, "x", {"type": "host"}]},
                      {"osds": ["y", {"osd": "0"}]}) == {}
    assert ceph_hosts({"nodes": [{"type": "host", "name": "h", "children": [0]}]},
                      {"osds": [{"osd": 0, "public_addr": "-"}]})["h"].address is None
    assert addr_ip("[::1]:6800/0") == "::1" and addr_ip(":/0") is None
    assert ring_servers([None, {"ip": "nonsense"}, {"ip": "10.0.0.1", "port": 6200}]) == {
        "10.0.0.1": {6200}}


# ------------------------------------------------------------------ saved snapshots

@pytest.mark.parametrize("case", ["healthy", "osd-unmounted-in", "osd-not-activated"])
def test_a_snapshot_of_found_hosts_replays_like_one_of_listed_hosts(case: str,
                                                                    tmp_path: Path) -> None:
    """A snapshot saved with ``hosts_from`` names only the exceptions in cluster.json:
    the other hosts replay from ``host_defaults`` at the address they were read at, with
    the findings (host facts: OSD_DATA_UNMOUNTED, OSD_NOT_ACTIVATED) of the same snapshot
    whose settings list every host."""
    from core.service.snapshots import load
    from tests.support.fixture_snapshots import FIXTURES

    src = FIXTURES / "pacific" / case
    dst = tmp_path / case
    shutil.copytree(src, dst)
    doc = json.loads((dst / "cluster.json").read_text())
    c = doc["cluster"]
    hosts = {h["name"]: h for h in c["hosts"]}
    c["host_defaults"] = {k: v for k, v in hosts["node1"].items()
                          if k not in ("name", "address", "daemons", "fstab_path")}
    c["hosts_from"] = ["ceph", "swift"]
    c["hosts"] = [{"name": "node1", "fstab_path": hosts["node1"]["fstab_path"]},
                  {"name": "node4", "osd_data_dir": hosts["node4"]["osd_data_dir"]}]
    (dst / "cluster.json").write_text(json.dumps(doc))

    def codes(d: Path) -> list[tuple[str, str]]:
        return sorted((f.code, f.entity) for f in load(str(d)).outcome.report.findings)

    assert codes(dst) == codes(src)
    if case != "healthy":
        assert codes(dst) != []


def test_the_saved_settings_hold_each_host_as_checked() -> None:
    from checks.model import Thresholds
    from core.service.snapshots import settings_doc

    cs = parse_settings({"clusters": {"c": {
        "ceph": {"conf": "/etc/ceph/ceph.conf"}, "hosts_from": ["ceph"],
        "host_defaults": {"port": 2222, "key_file": "/keys/id"},
        "hosts": [{"name": "n1", "address": "10.0.0.1"}]}}}).clusters["c"]
    d = settings_doc("c", cs, Thresholds(), [])["cluster"]
    assert d["host_defaults"] == {"port": 2222}  # no key path in a snapshot
    assert d["hosts"][0]["port"] == 2222 and "key_file" not in d["hosts"][0]


def test_env_finds_the_hosts_at_check_time_and_a_front_end_start_does_no_io(
        tmp_path: Path) -> None:
    """``Env.target`` reads the hosts (here: Ceph's monitor does not answer, the rings
    still name three servers: a check reaches them and says Ceph is unreachable); a front
    end's start-up (``discover=False``) reads nothing and gets the settings' hosts."""
    pytest.importorskip("rados")
    from core.env import Env

    conf = tmp_path / "ceph.conf"
    conf.write_text(f"[global]\nmon_host = v2:127.0.0.1:{_closed_port()}\n"
                    "auth_client_required = none\n")
    cfg = {"journal": str(tmp_path / "j.db"), "clusters": {"c": {
        "ceph": {"conf": str(conf), "timeout": 1}, "swift": {"swift_dir": str(LAB)},
        "hosts_from": ["ceph", "swift"], "host_defaults": {"user": "ops"},
        "hosts": [{"name": "127.0.0.3", "port": 2200}]}}}
    env = Env(parse_settings(cfg))
    try:
        assert env.target("c", discover=False).hosts[0].address == ""  # nothing read yet
        t = env.target("c")
        assert [(h.name, h.address, h.user, h.port) for h in t.hosts] == [
            ("127.0.0.3", "127.0.0.3", "ops", 2200), ("127.0.0.2", "127.0.0.2", "ops", 22),
            ("127.0.0.4", "127.0.0.4", "ops", 22)]
        assert [p.split(":")[0] for p in env.discovery_problems("c")] == ["Ceph"]
        assert env.target("c", discover=False) is t  # the hosts found last time
    finally:
        env.close()
