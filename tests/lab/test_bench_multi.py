"""Multi-client benchmarks on the real lab: the lab's loopback "hosts" (node1..node3 over
the lab's real sshd) are the clients. Proven here: the totals are the sums of what each
client's engine printed (and what the cluster holds afterwards), reads are verified (a
real corruption fails the run), Ctrl-C cleans up on every client (no engine process, no
object, image or private directory left, looked for on the machine itself), and an
unreachable client refuses the run before anything starts, and a foreign job sent to
the fio servers during a run never runs. Runs are short: the machine is
shared."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab import Lab
from runbooks.bench import api
from runbooks.bench.api import BenchOptions
from runbooks.bench.clients import STAGE_RE
from runbooks.bench.common import Session
from runbooks.bench.rados import cleanup_objects
from storage.audit import Audit
from storage.benchstore import BenchStore
from storage.rados_io import RadosIO
from tests.support.cli import cli, cli_argv
from tests.support.labtools import wait_osds_up_pgs_clean
from tests.support.poll import wait_until

pytestmark = pytest.mark.timeout(600)

POOL = "labtest-bench-multi"  # named in the tests' settings (named_pool)
CLIENTS = ("node1", "node2", "node3")


@pytest.fixture(scope="module")
def named_pool(lab: Lab) -> Iterator[str]:
    """The pool the settings name ([bench] pool) for these runs, made by the test: the
    tests look into it while a run goes (a run's own pool has a name of its own)."""
    from core.env import Env
    from core.settings import load_settings

    e = Env(load_settings(lab.config_path))
    t = e.run_context(None, source="test").target.ceph
    e.close()
    with RadosIO(t) as io:
        io.ensure_pool(POOL, wait_s=120)
        io.mon({"prefix": "osd pool application enable", "pool": POOL, "app": "rbd",
                "yes_i_really_mean_it": True})
    yield POOL
    with RadosIO(t) as io:
        io.delete_pool(POOL)


@pytest.fixture
def ctx(env: Any, lab: Lab, named_pool: str) -> Any:
    c = env.run_context(None, source="test")
    c.bench_limits = {**c.bench_limits, "pool": named_pool}

    wait_osds_up_pgs_clean(c.target.ceph, lab.n_osds)  # a fresh lab is still peering
    return c


def _objects(ctx: Any, prefix: str = "") -> list[str]:
    with RadosIO(ctx.target.ceph) as io:
        if not io.pool_exists(POOL):
            return []
        ioctx = io.cluster.open_ioctx(POOL)
        try:
            return [o.key for o in ioctx.list_objects()
                    if o.key.startswith(prefix or ("benchmark_data", "stordoc_rb_"))]
        finally:
            ioctx.close()


def _pools(ctx: Any) -> list[str]:
    with RadosIO(ctx.target.ceph) as io:
        return sorted(io.cluster.list_pools())


def _cmdlines(lab: Lab | None = None) -> dict[int, str]:
    """Command lines of every process, or with ``lab`` only of those below its sshd: the
    other release's lab runs its own benchmarks beside this one in CI."""
    mine = _descendants(lab.pid("sshd") or -1) if lab is not None else None
    out = {}
    for d in os.listdir("/proc"):
        if mine is not None and (not d.isdigit() or int(d) not in mine):
            continue
        if d.isdigit():
            try:
                out[int(d)] = Path(f"/proc/{d}/cmdline").read_bytes().replace(
                    b"\0", b" ").decode(errors="replace")
            except OSError:
                pass
    return out


def _stages_left(ctx: Any) -> list[str]:
    """The private directories this test's benchmark runs made that still exist (the
    journal is this test's own; another lab's runs stage beside it in /tmp)."""
    dirs = [d for r in Audit(ctx.journal).runs(50) if r.runbook.startswith("bench-")
            for d in _stage_dirs(ctx.journal, r.id)]
    assert dirs and all(STAGE_RE.match(d) for d in dirs), dirs
    return [d for d in dirs if os.path.exists(d)]


def _stage_dirs(journal: Any, run_id: int) -> list[str]:
    """The private directories the run made on its clients (from its audit steps)."""
    steps = Audit(journal).steps(run_id)
    dirs: list[str] = []
    for st in steps:
        if st.title == "stage client files":
            dirs += [x.split(":", 1)[1] for x in str(st.stdout).split(", ") if ":" in x]
    return dirs


def test_rados_from_three_clients_sums_what_each_rados_bench_printed(lab: Lab, ctx: Any
                                                                     ) -> None:
    o = BenchOptions(modes=("write", "seq"), duration_s=3, size=4096, concurrency=8,
                     clients=CLIENTS, keep=True)
    rep = api.run_bench(ctx, "rados", o)
    try:
        assert rep.status == "ok", rep.message
        w, sq = rep.results
        assert (w.workload, sq.workload) == ("write", "seq")
        for r in (w, sq):
            cl = r.extra["clients"]
            assert [c["client"] for c in cl] == list(CLIENTS)
            # totals are the sums of each client's own rados bench summary
            assert r.ops == sum(c["engine"]["ops"] for c in cl) > 0
            assert r.mb_s == pytest.approx(sum(c["engine"]["bandwidth_mb_s"] for c in cl),
                                           rel=1e-9)
            assert r.ops_s == pytest.approx(sum(c["engine"]["ops"] / c["engine"]["total_time_s"]
                                                for c in cl), rel=1e-9)
            assert r.extra["slowest_client"]["client"] in CLIENTS
            assert r.fingerprint_fields["client"] == "clients:node1,node2,node3"
            assert r.extra["orchestration"]["command_to_first_io_s"] > 0
            lines = api.detail_lines(r)
            assert any("3 clients: node1" in x and "slowest" in x for x in lines), lines
        assert w.extra["osd_latency"]["osds"]  # per-OSD latency sampled while it ran
        # what the cluster holds: as many objects per client as its rados bench said it
        # wrote, under its own object prefix, and its run's metadata object (--keep)
        for c in w.extra["clients"]:
            assert len(_objects(ctx, c["object_prefix"] + "_object")) == c["engine"]["ops"]
            assert _objects(ctx, c["run_name"]) == [c["run_name"]]
        written = [x for x in _objects(ctx) if x.startswith("benchmark_data")]
        assert len(written) == w.ops
        # the seq phase read them all back and rados bench compared each one
        assert sq.extra["verify"]["checked"] and sq.extra["verify"]["mismatches"] == 0
        assert sq.ops == w.ops
        assert any("reads verified" in x for x in api.detail_lines(sq))
        # history and the verdict work on multi-client runs (same fingerprint next time)
        o2 = o.with_(keep=False, modes=("write",))
        rep2 = api.run_bench(ctx, "rados", o2)
        assert rep2.status == "ok", rep2.message
        hist = api.history(ctx, 10, "rados")
        assert {h.group_id for h in hist} >= {rep.group_id, rep2.group_id}
        comps = api.compare(ctx, rep2)
        assert comps and comps[0].base_ids == [w.id]
        assert comps[0].verdict in ("faster", "slower", "no significant change",
                                    "inconclusive")
    finally:  # --keep left them: remove this run's objects the way the run would
        s = Session(ctx, o, api.BenchLimits(), rep.group_id, threading.Event())
        for c in rep.results[0].extra.get("clients", []) if rep.results else []:
            cleanup_objects(s, ctx.target.ceph, POOL, c["run_name"], c["object_prefix"],
                            "test cleanup")
    assert _objects(ctx) == []
    assert _stages_left(ctx) == []


def test_rados_read_of_corrupted_object_fails_the_run(lab: Lab, ctx: Any) -> None:
    """An object overwritten behind rados bench's back between its write and its seq read
    is a verification failure: the run fails, the result says so, nothing is left."""
    done: list[str] = []

    def corrupt(p: Any) -> None:
        if p.phase != "write" or done or p.ops < 200:
            return
        with RadosIO(ctx.target.ceph) as io:
            ioctx = io.cluster.open_ioctx(POOL)
            try:
                for x in _objects(ctx):
                    if x.endswith("_object0"):
                        ioctx.write_full(x, b"not what rados bench wrote" * 100)
                        done.append(x)
            finally:
                ioctx.close()

    o = BenchOptions(modes=("write", "seq"), duration_s=4, size=4096, concurrency=8,
                     clients=CLIENTS)
    rep = api.run_bench(ctx, "rados", o, on_progress=corrupt)
    assert done, "the write phase never reported progress"
    assert rep.status == "failed"
    assert rep.message.startswith("DATA VERIFICATION FAILED"), rep.message
    seq = [r for r in rep.results if r.workload == "seq"][0]
    assert seq.status == "failed"
    assert seq.extra["verify"]["mismatches"] >= 1
    assert set(seq.extra["verify"]["examples"]) <= set(done)
    assert seq.error_kinds.get("verify", 0) >= 1
    assert any(x.startswith("seq rep 1: DATA VERIFICATION FAILED")
               for x in api.detail_lines(seq))
    assert _objects(ctx) == []
    # a failed run never becomes a comparison basis
    assert BenchStore(ctx.journal).group(rep.group_id)[-1]["status"] == "failed"


def _cli(lab: Lab, cfg: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(cli_argv(cfg, "bench", *args, "--yes"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _images(ctx: Any) -> list[str]:
    import rbd

    with RadosIO(ctx.target.ceph) as io:
        if not io.pool_exists(POOL):
            return []
        ioctx = io.cluster.open_ioctx(POOL)
        try:
            return [i for i in rbd.RBD().list(ioctx) if i.startswith("stordoc-bench-")]
        finally:
            ioctx.close()


def _fio_servers(lab: Lab) -> list[int]:
    return [pid for pid, c in _cmdlines(lab).items()
            if "fio --server=" in c and "/tmp/stordoc-bench." in c]


def test_rbd_from_three_clients_through_fio_client_server(lab: Lab, ctx: Any) -> None:
    o = BenchOptions(modes=("seqwrite", "randread"), duration_s=3, concurrency=8,
                     image_size=64 * 1024 * 1024, clients=CLIENTS, steady=True)
    rep = api.run_bench(ctx, "rbd", o)
    assert rep.status == "ok", rep.message
    w, rd = rep.results
    assert (w.workload, rd.workload) == ("seqwrite 64K", "randread 4K")
    for r in (w, rd):
        assert r.engine == "fio-client"
        cl = r.extra["clients"]
        assert [c["client"] for c in cl] == list(CLIENTS)
        # totals are the sums of each client's figures in fio's JSON, and equal fio's own
        # "All clients" sum
        assert r.ops == sum(c["engine"]["total_ios"] for c in cl) > 0
        assert r.bytes == sum(c["engine"]["io_bytes"] for c in cl)
        assert r.ops == r.extra["fio_all_clients"]["ops"]
        assert r.mb_s == pytest.approx(sum(c["mb_s"] for c in cl), rel=1e-9)
        assert r.series and r.series[0]["ops_s"] > 0  # per-second logs from every server
        assert r.extra["slowest_client"]["client"] in CLIENTS
        assert set(r.extra["fio_steadystate"]) == set(CLIENTS)
        assert r.extra["steady_state"]["stop_enabled"]
        assert r.fingerprint_fields["client"] == "clients:node1,node2,node3"
        assert any("3 clients: node1" in x for x in api.detail_lines(r))
    assert rd.extra["verify"]["checked"] and rd.extra["verify"]["mismatches"] == 0
    assert any("reads verified" in x for x in api.detail_lines(rd))
    assert rd.extra["osd_latency"]["osds"]
    # everything this run made is gone: images, fio servers, private directories
    assert _images(ctx) == []
    assert _fio_servers(lab) == []
    assert _stages_left(ctx) == []
    rep2 = api.run_bench(ctx, "rbd", o.with_(modes=("randread",), steady=False))
    assert rep2.status == "ok", rep2.message
    comps = api.compare(ctx, rep2)
    assert comps and comps[0].base_ids == [rd.id]


def test_rbd_read_of_corrupted_block_fails_the_run(lab: Lab, ctx: Any) -> None:
    """A data object of one client's image overwritten behind fio's back (at the RADOS
    level) before its read phase: fio's verify catches it, the run fails."""
    import rbd

    done: list[str] = []

    def corrupt(p: Any) -> None:
        if p.phase != "randread" or done:
            return
        with RadosIO(ctx.target.ceph) as io:
            ioctx = io.cluster.open_ioctx(POOL)
            try:
                name = sorted(_images(ctx))[0]
                with rbd.Image(ioctx, name, read_only=True) as img:
                    prefix = img.stat()["block_name_prefix"]
                for k in range(4):
                    ioctx.write_full(f"{prefix}.{k:016x}", b"\xa5" * (4 << 20))
                done.append(name)
            finally:
                ioctx.close()

    o = BenchOptions(modes=("randread",), duration_s=4, concurrency=8,
                     image_size=32 * 1024 * 1024, clients=CLIENTS)
    rep = api.run_bench(ctx, "rbd", o, on_progress=corrupt)
    assert done, "the read phase never reported progress"
    assert rep.status == "failed"
    assert rep.message.startswith("DATA VERIFICATION FAILED"), rep.message
    rd = rep.results[0]
    assert rd.status == "failed" and rd.extra["verify"]["mismatches"] >= 1
    bad = [c for c in rd.extra["clients"] if c["verify"]["mismatches"]]
    assert [c["image"] for c in bad] == done
    assert any("DATA VERIFICATION FAILED" in x for x in api.detail_lines(rd))
    assert _images(ctx) == [] and _fio_servers(lab) == []


@pytest.mark.parametrize("kind,extra", [("rados", ["-b", "4k"]),
                                        ("rbd", ["--image-size", "32M"]),
                                        ("swift", ["-s", "4k", "-c", "4"])])
def test_ctrl_c_cleans_up_on_every_client(lab: Lab, ctx: Any, cfg: Path, kind: str,
                                          extra: list[str]) -> None:
    before = set(_cmdlines(lab))
    pools_before = _pools(ctx)
    # the CLI on the lab's settings names no pool: rados and rbd make their own
    p = _cli(lab, cfg, kind, "--clients", ",".join(CLIENTS), "--duration", "60", *extra)
    pattern = {"rados": r"rados .*bench 60 write", "rbd": r"fio --server=",
               "swift": r"python3 .*swift_mix\.py r1"}[kind]

    def engines() -> list[int]:
        return [pid for pid, c in _cmdlines(lab).items()
                if pid not in before and re.search(pattern, c) and "/tmp/stordoc-bench." in c]

    try:
        wait_until(lambda: len(engines()) >= len(CLIENTS) or p.poll() is not None, 120,
                   "the engine running on every client", 0.3)
        assert p.poll() is None, p.communicate()
        time.sleep(1.5)  # let the I/O run for a moment (not a wait for a condition)
        running = engines()
        os.kill(p.pid, signal.SIGINT)  # Ctrl-C, as a terminal sends it
        out, err = p.communicate(timeout=240)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, (out, err)
    assert "cancelled" in out
    live = _cmdlines(lab)
    assert not [pid for pid in running if pid in live and "/tmp/stordoc-bench." in live[pid]]
    assert not [c for c in live.values() if "/tmp/stordoc-bench." in c]
    assert _objects(ctx) == [] and _images(ctx) == []
    assert _bench_containers(_swift(ctx)) == []
    assert _pools(ctx) == pools_before  # the run's own pool removed after Ctrl-C too
    if kind != "swift":
        assert "creates pool stordoc-bench-<run>" in out + err
    from core.settings import load_settings
    from storage.journal import Journal
    j = Journal(load_settings(cfg).journal)
    try:
        run = [r for r in Audit(j).runs(5) if r.runbook == f"bench-{kind}"][0]
        dirs = _stage_dirs(j, run.id)
    finally:
        j.close()
    assert len(dirs) == len(CLIENTS) and all(STAGE_RE.match(d) for d in dirs)
    assert not [d for d in dirs if os.path.exists(d)]


def test_unreachable_client_refuses_and_starts_nothing(lab: Lab, ctx: Any, cfg: Path
                                                       ) -> None:
    ghost = f"""
[[clusters.lab.hosts]]
name = "ghost"
address = "127.0.0.9"
port = {lab.ports.base + 31}
user = "root"
key_file = "{lab.ssh_dir / 'client_ed25519'}"
known_hosts = "{lab.ssh_dir / 'known_hosts'}"
timeout = 5
"""
    text = cfg.read_text()
    cut = text.index("\n[bench]") if "\n[bench]" in text else len(text)
    cfg.write_text(text[:cut] + ghost + text[cut:])
    before = _objects(ctx)
    r = cli(cfg, "bench", "rados", "--clients", "node1,ghost,node2", "--yes", timeout=120,
            columns=None)
    assert r.returncode == 4  # refused: nothing was run (README's exit status table)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "client ghost is unreachable" in lines[0], r.stderr
    assert "nothing was started" in lines[0] and "Traceback" not in r.stderr
    assert _objects(ctx) == before
    from core.settings import load_settings
    from storage.journal import Journal
    j = Journal(load_settings(cfg).journal)
    try:
        assert BenchStore(j).history("lab", 5) == []
        assert [x for x in Audit(j).runs(5) if str(x.runbook).startswith("bench")] == []
    finally:
        j.close()


def _swift(ctx: Any) -> Any:
    from swiftclient.client import Connection

    sw = ctx.target.swift
    return Connection(authurl=sw.auth_url, user=sw.user, key=sw.key, retries=2)


def _bench_containers(conn: Any) -> list[str]:
    _, containers = conn.get_account()
    return [c["name"] for c in containers if c["name"].startswith("stordoc-bench")]


def test_swift_from_three_clients_sums_the_agents_and_cleans_up(lab: Lab, ctx: Any) -> None:
    conn = _swift(ctx)
    assert _bench_containers(conn) == []
    o = BenchOptions(modes=("mix",), mix=(80, 15, 5), duration_s=3, size=4096,
                     concurrency=4, prefill=50, clients=CLIENTS, steady=True)
    rep = api.run_bench(ctx, "swift", o)
    assert rep.status == "ok", rep.message
    (r,) = rep.results
    assert r.engine == "swift-mix-agent"
    cl = r.extra["clients"]
    assert [c["client"] for c in cl] == list(CLIENTS)
    # totals are the sums of each agent's own summary
    assert r.ops == sum(c["engine"]["ops"] for c in cl) > 0
    assert r.bytes == sum(c["engine"]["bytes"] for c in cl)
    assert r.extra["per_op"]["read"]["ops"] > 0 and r.extra["per_op"]["write"]["ops"] > 0
    # every GET checked against the MD5 written
    v = r.extra["verify"]
    assert v["checked"] and v["mismatches"] == 0
    assert v["reads"] == r.extra["per_op"]["read"]["ops"]
    assert any("reads verified" in x for x in api.detail_lines(r))
    assert r.extra["steady_state"]["stop_enabled"]
    assert r.extra["slowest_client"]["client"] in CLIENTS
    # the run's container and every object it wrote are gone; no agent, no private dir
    assert _bench_containers(conn) == []
    assert not [c for c in _cmdlines(lab).values() if "/tmp/stordoc-bench." in c]
    assert _stages_left(ctx) == []
    rep2 = api.run_bench(ctx, "swift", o.with_(steady=False))
    assert rep2.status == "ok", rep2.message
    comps = api.compare(ctx, rep2)
    assert comps and comps[0].base_ids == [r.id]


def test_swift_read_of_overwritten_object_fails_the_run(lab: Lab, ctx: Any) -> None:
    """Objects overwritten behind the agents' backs while they read: the MD5 check of
    their GETs catches it and the run fails; everything is still cleaned up."""
    conn = _swift(ctx)
    done: list[str] = []

    def corrupt(p: Any) -> None:
        if done or p.ops < 50:
            return
        for cont in _bench_containers(conn):
            _, objs = conn.get_container(cont, prefix="stordoc_bench_", full_listing=True)
            for x in objs[:60]:
                conn.put_object(cont, x["name"], b"not what the agent wrote")
                done.append(x["name"])

    o = BenchOptions(modes=("mix",), mix=(95, 5, 0), duration_s=5, size=4096,
                     concurrency=4, prefill=30, clients=CLIENTS)
    rep = api.run_bench(ctx, "swift", o, on_progress=corrupt)
    assert done, "the mix never reported progress"
    assert rep.status == "failed"
    assert rep.message.startswith("DATA VERIFICATION FAILED"), rep.message
    (r,) = rep.results
    assert r.status == "failed" and r.extra["verify"]["mismatches"] >= 1
    assert any(ex.split(":")[0].split()[-1] in done for ex in r.extra["verify"]["examples"])
    assert _bench_containers(conn) == []


def test_efficiency_against_the_limits_of_every_host(lab: Lab, ctx: Any) -> None:
    """`bench limits` on every host (disks at once, networks in turn), then a run from
    three clients is stated against the summed ceiling for its pool's replication."""
    lim = api.run_bench(ctx, "limits", BenchOptions(modes=("disk", "net"),
                                                    limit_size=16 * 2**20))
    assert lim.status == "ok", lim.message
    by_host = {r.extra["host"]: r.extra for r in lim.results}
    assert set(by_host) == {h.name for h in ctx.target.hosts}
    for x in by_host.values():
        assert x["disk"]["write_mb_s"] > 0 and x["net"]["mb_s"] > 0, x
    rep = api.run_bench(ctx, "rados", BenchOptions(duration_s=2, size=4 * 2**20,
                                                   concurrency=4, clients=CLIENTS))
    assert rep.status == "ok", rep.message
    r = rep.results[0]
    eff = r.extra["efficiency"]
    size = r.state["pool"]["size"]
    assert eff["replicas"] == size
    assert eff["bounds"]["clients' network"] == pytest.approx(
        sum(by_host[c]["net"]["mb_s"] for c in CLIENTS))
    osd = [x for x in by_host.values() if x["osds"]]
    assert eff["bounds"]["disks"] == pytest.approx(
        sum(x["disk"]["write_mb_s"] for x in osd) / size)
    assert eff["limit_mb_s"] == min(eff["bounds"].values())
    assert eff["efficiency"] == pytest.approx(r.mb_s / eff["limit_mb_s"])
    assert any("efficiency" in x and "limit" in x for x in api.detail_lines(r))


def _ppids() -> dict[int, int]:
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            out[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def _descendants(root: int) -> set[int]:
    """Every process below ``root`` (the lab's sshd: whatever runs on the lab's hosts)."""
    pp = _ppids()
    out: set[int] = set()
    for pid in pp:
        p, seen = pid, 0
        while p > 1 and seen < 64:
            p, seen = pp.get(p, 0), seen + 1
            if p == root:
                out.add(pid)
                break
    return out


def _socket_inodes(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                out.add(int(link[8:-1]))
    return out


def _tcp_listeners(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state held by one of ``pids``."""
    import ipaddress

    inodes = _socket_inodes(pids)
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A" or int(f[9]) not in inodes:
                continue
            hexaddr, hexport = f[1].split(":")
            raw = bytes.fromhex(hexaddr)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            out.add((str(ipaddress.ip_address(raw)), int(hexport, 16)))
    return out


def _unix_listeners(pids: set[int]) -> set[str]:
    """Paths of the listening Unix sockets held by one of ``pids``."""
    inodes = _socket_inodes(pids)
    out = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        f = line.split()
        if len(f) >= 8 and int(f[6]) in inodes and int(f[3], 16) & 0x10000:  # ACCEPTCON
            out.add(f[7])
    return out


def _send_foreign_job(job: Path, tcp: set[tuple[str, int]], socks: set[str]) -> list[str]:
    """Submit ``job`` the ways a process on the network (or a local non-root user) could:
    to every listening TCP port (a wildcard one at every lab address) and, as user
    nobody, to every listening Unix socket. Returns what was tried, with fio's answer."""
    tried = []
    for addr, port in sorted(tcp):
        for a in ([f"127.0.0.{i}" for i in range(1, 5)] if addr in ("0.0.0.0", "::")
                  else [addr]):
            spec = f"{'ip6' if ':' in a else 'ip'}:{a},{port}"
            r = subprocess.run(["fio", f"--client={spec}", str(job)], capture_output=True,
                               text=True, timeout=60)
            tried.append(f"tcp {spec}: rc {r.returncode} {r.stderr.strip()[-120:]}")
    for path in sorted(socks):
        r = subprocess.run(["runuser", "-u", "nobody", "--", "fio", f"--client=sock:{path}",
                            str(job)], capture_output=True, text=True, timeout=60,
                           cwd=job.parent)
        tried.append(f"unix {path} (as nobody): rc {r.returncode} {r.stderr.strip()[-120:]}")
    return tried


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may use (the foreign job, the control server's socket)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="stordoc-foreign-"))
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.on_reef
def test_rbd_fio_servers_run_no_foreign_job(lab: Lab, ctx: Any, cfg: Path, open_dir: Path
                                            ) -> None:
    """While a two-client RBD benchmark runs, a foreign fio client tries every way in: every
    TCP port anything on the lab's hosts (or stordoc) listens on, the configured
    ``fio_port`` on every client address, and, as a non-root user, every Unix socket the
    fio servers or stordoc listen on; its job (``exec_prerun=touch``) never runs, and the
    benchmark reports its own figures. The same attack on an exposed fio server (TCP, and a
    socket in an open directory) does run: the attack itself works."""
    port = int(re.search(r"fio_port = (\d+)", cfg.read_text()).group(1))  # type: ignore[union-attr]
    marker = open_dir / "pwned"
    job = open_dir / "job.fio"
    job.write_text(f"[pwn]\nioengine=null\nsize=1m\nexec_prerun=touch {marker}\n")
    os.chmod(job, 0o644)
    sshd = lab.pid("sshd")
    assert sshd is not None
    mine_before = _tcp_listeners({os.getpid()})
    o = BenchOptions(modes=("randread",), duration_s=3, concurrency=4,
                     image_size=16 * 1024 * 1024, clients=("node1", "node2"))
    got: list[Any] = []
    bench = threading.Thread(target=lambda: got.append(api.run_bench(ctx, "rbd", o)))
    seen: dict[str, Any] = {}
    try:
        bench.start()

        def servers() -> list[int]:
            cl = _cmdlines()
            return [p for p in _descendants(sshd) if "--server" in cl.get(p, "")
                    and cl.get(p, "").startswith("fio ")]

        wait_until(lambda: len(servers()) >= 2 or not bench.is_alive(), 120,
                   "both fio servers running", 0.3)
        assert bench.is_alive(), got[0].message if got else "the benchmark ended early"

        def listening() -> set[Any]:
            """What the servers listen on (whichever the kind of socket)."""
            d = _descendants(sshd)
            return _tcp_listeners(d) | {u for u in _unix_listeners(d)
                                        if u.endswith("/fio.sock")}

        wait_until(lambda: len(listening()) >= 2 or not bench.is_alive(), 60,
                   "both fio servers listening", 0.3)
        before = listening()
        pids = _descendants(sshd) | {os.getpid()}
        seen["tcp"] = _tcp_listeners(pids) - mine_before
        seen["unix"] = _unix_listeners(pids)
        seen["tried"] = _send_foreign_job(
            job, seen["tcp"] | {(f"127.0.0.{i}", port) for i in (2, 3)}, seen["unix"])
        # the attack happened while the run's servers listened
        assert listening() >= before, "the fio servers ended before the attack did"
    finally:
        bench.join(240)
    assert not marker.exists(), seen
    # nothing on the hosts (below the lab's sshd) or in stordoc listened on TCP
    assert seen["tcp"] == set(), seen
    # the attack reached for both servers' sockets and stordoc's two forwarded ones, and
    # was turned away at their private directories
    remote = [u for u in seen["unix"] if re.fullmatch(r"/tmp/stordoc-bench\.\w{10}/fio\.sock", u)]
    local = [u for u in seen["unix"] if re.fullmatch(r"/tmp/stordoc-fio-\w+/c[12]\.sock", u)]
    assert len(remote) == 2 and len(local) == 2, seen
    assert all("Permission denied" in x for x in seen["tried"]
               if any(u in x for u in remote + local)), seen
    rep = got[0]
    assert rep.status == "ok", rep.message
    rd = rep.results[0]
    cl = rd.extra["clients"]
    assert [c["client"] for c in cl] == ["node1", "node2"]
    assert rd.ops == sum(c["engine"]["total_ios"] for c in cl) > 0
    assert rd.ops == rd.extra["fio_all_clients"]["ops"]  # no foreign client in fio's sum
    assert rd.extra["verify"]["checked"] and rd.extra["verify"]["mismatches"] == 0
    assert _images(ctx) == [] and _fio_servers(lab) == []
    # control: the same attack on exposed fio servers runs the job
    (open_dir / "ctl").mkdir(mode=0o755)
    ctl = [subprocess.Popen(["fio", f"--server=ip:127.0.0.2,{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
           subprocess.Popen(["fio", f"--server=sock:{open_dir}/ctl/fio.sock"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        cpids = {p.pid for p in ctl}
        wait_until(lambda: len(_tcp_listeners(cpids)) == 1 and len(_unix_listeners(cpids)) == 1,
                   20, "the control servers listening", 0.3)
        for vector in ("tcp", "unix"):
            marker.unlink(missing_ok=True)
            _send_foreign_job(job, _tcp_listeners(cpids) if vector == "tcp" else set(),
                              _unix_listeners(cpids) if vector == "unix" else set())
            wait_until(marker.exists, 10, f"the control job over {vector} to run", 0.3)
    finally:
        for p in ctl:
            p.kill()
            p.wait(10)
