"""Host facts from Prometheus (``storage.hostfacts.prom``) against a real loopback HTTP
server (``tests.support.prom_server``): the same findings as the SSH path for the same
state (the SSH side is the lab's saved snapshots), staleness, labels matching no host,
and every bad answer as one finding without a hang."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.engine import run_checks
from storage.hostfacts.prom import (
    QUERIES,
    HostIndex,
    collect_via_prometheus,
    mount_regex,
    split_instance,
    template_regex,
)
from storage.model import CephState, ClusterSnapshot, HostFacts, SwiftState
from storage.prometheus import PromClient, PromError
from storage.snapshot import replay
from storage.targets import ClusterTarget, HostTarget, PromTarget
from tests.support.fixture_snapshots import FIXTURES, replayed
from tests.support.prom_server import (
    GARBAGE,
    HTTP500,
    HUGE,
    HUGE_DECLARED,
    MISSING,
    NOT_VECTOR,
    STATUS_ERROR,
    TRICKLE,
    FakeProm,
    FsSeries,
    Kmsg,
    Node,
)

PROM_CODES = {"PROMETHEUS_UNREACHABLE", "PROMETHEUS_BAD_ANSWER", "HOST_FACTS_STALE",
              "PROMETHEUS_UNMATCHED", "HOST_KERNEL_LOG_STALE",
              "HOST_KERNEL_LOG_UNWATCHED"}


def saved(release: str, case: str) -> tuple[ClusterSnapshot, ClusterTarget, object]:
    rp = replayed(release, case)  # the saved check once a session; the snapshot anew
    return replay(rp.doc, rp.target), rp.target, rp


def nodes_of(hosts: Mapping[str, HostFacts]) -> list[Node]:
    """What node_exporter on each host would export for the state SSH saw: its mounts
    (read-only from the options; ``device_error`` where statfs failed, as df did), no
    unit series (the lab runs no systemd)."""
    out = []
    for name, f in sorted(hosts.items()):
        df_failed = {p.path for p in f.fs_probes if p.df_error}
        fs = [FsSeries(m.target, m.source, m.fstype,
                       readonly=int("ro" in m.options.split(",")),
                       device_error=int(m.target in df_failed))
              for m in f.mounts]
        fs.append(FsSeries("/", "/dev/sda1", "ext4"))
        # its kernel-log textfile: the lines SSH's facts kept
        kmsg = Kmsg(lines={"kmsg": [e.line for e in f.io_errors],
                           "xfslog": [e.line for e in f.xfs_events]})
        out.append(Node(f"{f.address}:9100", name, fs=fs, kmsg=kmsg))
    return out


def at(snap: ClusterSnapshot) -> Callable[[], float]:
    """The fake Prometheus's clock for a replay: the snapshot's time (the kernel lines'
    window and the samples' staleness are judged by the server's clock)."""
    return lambda: snap.taken_at + 1.0


def keys(snap: ClusterSnapshot, now: float, drop: set[str] = PROM_CODES
         ) -> set[tuple[str, str, str]]:
    rep = run_checks(snap, now=now)
    return {(f.code, f.entity, f.severity.label) for f in rep.findings if f.code not in drop}


def via_prom(snap: ClusterSnapshot, target: ClusterTarget, url: str, ssh_max: int = 64,
             max_bytes: int = 64 << 20, **pt: object) -> tuple[ClusterSnapshot, list[str]]:
    """The snapshot with Prometheus's host facts; SSH (for the hosts in question) answers
    what the saved snapshot's hosts said."""
    asked: list[str] = []

    def ssh(sub: ClusterTarget, ceph: CephState | None, swift: SwiftState | None
            ) -> dict[str, HostFacts]:
        asked.extend(h.name for h in sub.hosts)
        return {h.name: snap.hosts[h.name] for h in sub.hosts}

    pt = {"timeout_s": 3.0, "ssh_max_hosts": ssh_max, **pt}
    t = replace(target, prometheus=PromTarget(url, **pt))  # type: ignore[arg-type]
    client = PromClient(url, float(pt["timeout_s"]), max_bytes)  # type: ignore[arg-type]
    hosts, status = collect_via_prometheus(t, snap.ceph, snap.swift, client=client, ssh=ssh)
    return replace(snap, hosts=hosts, prometheus=status), asked


CASES = ["healthy", "swift-device-readonly", "osd-unmounted-in", "swift-device-unmounted",
         "osd-not-activated", "osd-killed", "swift-device-shutdown"]


@pytest.mark.parametrize("case", CASES)
def test_same_findings_as_ssh_with_ssh_for_the_hosts_in_question(case: str) -> None:
    snap, target, rp = saved("reef", case)
    fake = FakeProm(nodes_of(snap.hosts), clock=at(snap))
    now = snap.taken_at
    with fake.serve() as url:
        got, asked = via_prom(snap, target, url)
    assert keys(got, now) == keys(snap, now)
    assert keys(got, now, set()) == keys(snap, now)  # and no Prometheus finding of its own
    if case == "healthy":
        assert asked == []  # a healthy fleet: no SSH at all
        assert got.prometheus is not None
        assert got.prometheus.from_prometheus == tuple(sorted(snap.hosts))
    else:
        assert 0 < len(asked) < len(snap.hosts), asked
    # one query per fact family for all hosts
    assert len(fake.queries) == len(QUERIES)


# what only a host's process list and addresses over SSH tell (node_exporter has no such
# metric): found through Prometheus once the host is in question (with the systemd
# collector, a replicator unit stopped beside its running server sends it to SSH)
# A stopped manager's process is seen in a host's process list only: with host facts from
# Prometheus its outage is MGR_NO_ACTIVE, and DAEMON_STOPPED mgr.x (with daemon-start)
# needs SSH to its host (not asked: no OSD of that host is in question). Left open.
SSH_ONLY = {"SWIFT_REPLICATOR_NOT_RUNNING", "SWIFT_REPLICATOR_IDLE", "DAEMON_STOPPED"}


@pytest.mark.parametrize("release", ["pacific", "reef"])
@pytest.mark.parametrize("case", sorted(p.name for p in (FIXTURES / "reef").iterdir()))
def test_every_saved_scenario_gives_ssh_findings_through_prometheus(release: str, case: str
                                                                    ) -> None:
    """Every scenario the lab saved, on both releases: Prometheus's facts (with its
    kernel-log textfile) and SSH for the hosts in question give the SSH path's findings,
    none more, and none fewer but SSH_ONLY's."""
    if not (FIXTURES / release / case).is_dir():
        pytest.skip("not saved for this release")
    snap, target, _ = saved(release, case)
    with FakeProm(nodes_of(snap.hosts), clock=at(snap)).serve() as url:
        got, asked = via_prom(snap, target, url)
    ssh, prom = keys(snap, snap.taken_at), keys(got, snap.taken_at)
    assert prom - ssh == set(), asked
    assert {k[0] for k in ssh - prom} <= SSH_ONLY, (sorted(ssh - prom), asked)
    if case == "healthy":
        assert asked == []  # a healthy cluster: no SSH at all


def test_a_replicator_unit_stopped_beside_its_server_gets_ssh_and_its_finding() -> None:
    snap, target, _ = saved("pacific", "swift-replication-stalled")
    want = {k for k in keys(snap, snap.taken_at) if k[0] == "SWIFT_REPLICATOR_NOT_RUNNING"}
    assert len(want) == 3
    nodes = nodes_of(snap.hosts)
    with FakeProm(nodes, clock=at(snap)).serve() as url:
        blind, asked = via_prom(snap, target, url)
    assert asked == [] and not {k for k in keys(blind, snap.taken_at) if k in want}
    for n in nodes:  # the systemd collector's word: the server runs, its replicator not
        n.units = {"swift-object-server.service": "active",
                   "swift-object-replicator.service": "inactive"}
    with FakeProm(nodes, clock=at(snap)).serve() as url:
        got, asked = via_prom(snap, target, url)
    assert sorted(asked) == ["node1", "node2", "node3", "node4"]
    assert keys(got, snap.taken_at) == keys(snap, snap.taken_at)


@pytest.mark.parametrize("release", ["pacific", "reef"])
@pytest.mark.parametrize("case", sorted(p.name for p in (FIXTURES / "reef").iterdir()))
def test_prometheus_alone_never_says_what_ssh_does_not(release: str, case: str) -> None:
    """No SSH at all (ssh_max_hosts 0): whatever node_exporter cannot tell stays unknown,
    so every finding is one the SSH path gives too."""
    if not (FIXTURES / release / case).is_dir():
        pytest.skip("not saved for this release")
    snap, target, _ = saved(release, case)
    with FakeProm(nodes_of(snap.hosts), clock=at(snap)).serve() as url:
        got, asked = via_prom(snap, target, url, ssh_max=0)
    assert asked == []
    assert keys(got, snap.taken_at) <= keys(snap, snap.taken_at)


def test_readonly_swift_device_from_prometheus_alone_is_the_ssh_finding() -> None:
    snap, target, _ = saved("reef", "swift-device-readonly")
    with FakeProm(nodes_of(snap.hosts), clock=at(snap)).serve() as url:
        got, _ = via_prom(snap, target, url, ssh_max=0)
    ro = {k for k in keys(got, snap.taken_at) if k[0] == "FS_READONLY"}
    assert ro == {k for k in keys(snap, snap.taken_at) if k[0] == "FS_READONLY"}
    assert len(ro) == 1


def test_an_unmounted_osd_dir_gets_ssh_and_its_diagnosis() -> None:
    snap, target, _ = saved("reef", "osd-unmounted-in")
    with FakeProm(nodes_of(snap.hosts), clock=at(snap)).serve() as url:
        got, asked = via_prom(snap, target, url)
    assert asked == ["node3"]  # osd.2's host, named by Ceph (osd.2 down)
    assert ("OSD_DATA_UNMOUNTED", "osd.2", "crit") in keys(got, snap.taken_at)
    assert got.prometheus is not None and got.prometheus.ssh_hosts == ("node3 (osd.2 down)",)


def test_a_stale_host_is_unknown_never_healthy() -> None:
    snap, target, _ = saved("reef", "swift-device-unmounted")
    nodes = nodes_of(snap.hosts)
    n2 = next(n for n in nodes if n.nodename == "node2")
    n2.last = snap.taken_at - 3600  # its exporter stopped an hour ago
    n4 = next(n for n in nodes if n.nodename == "node4")
    n4.up = 0
    with FakeProm(nodes, clock=at(snap)).serve() as url:
        got, asked = via_prom(snap, target, url, ssh_max=0, stale_s=120.0)
    assert asked == []
    assert "node2" not in got.hosts and "node4" not in got.hosts  # no facts: unknown
    rep = run_checks(got, now=snap.taken_at)
    stale = {f.entity: f for f in rep.findings if f.code == "HOST_FACTS_STALE"}
    assert set(stale) == {"host node2", "host node4"}
    assert "stale since" in stale["host node2"].message
    assert "3600 s old" in stale["host node2"].message or "360" in stale["host node2"].message
    assert "up == 0" in stale["host node4"].message
    assert "unknown" in stale["host node2"].message
    # the unmounted device of the stale host is still said, from recon (never "healthy")
    assert any(f.code == "SWIFT_DEVICE_UNMOUNTED" for f in rep.findings)
    # with SSH allowed, the stale hosts are looked at over SSH
    with FakeProm(nodes, clock=at(snap)).serve() as url:
        got2, asked2 = via_prom(snap, target, url, stale_s=120.0)
    assert set(asked2) == {"node2", "node4"}
    assert got2.hosts["node2"] is snap.hosts["node2"]
    assert "facts come from SSH" in next(
        f.message for f in run_checks(got2, now=snap.taken_at).findings
        if f.code == "HOST_FACTS_STALE" and f.entity == "host node2")


def test_a_label_matching_no_host_is_one_line_naming_it() -> None:
    snap, target, _ = saved("reef", "healthy")
    nodes = nodes_of(snap.hosts) + [Node("10.9.9.9:9100", "stranger",
                                         fs=[FsSeries("/srv/node/d9", "/dev/sdz")])]
    with FakeProm(nodes, clock=at(snap)).serve() as url:
        got, _ = via_prom(snap, target, url)
    rep = run_checks(got, now=snap.taken_at)
    um = [f for f in rep.findings if f.code == "PROMETHEUS_UNMATCHED"]
    assert len(um) == 1 and "10.9.9.9:9100 (nodename stranger)" in um[0].message
    assert keys(got, snap.taken_at) == keys(snap, snap.taken_at) == set()


def test_nodename_maps_a_series_when_the_instance_is_a_name() -> None:
    ix = HostIndex.of([HostTarget("node1", "10.0.0.1"), HostTarget("node2", "::1")])
    assert ix.match("10.0.0.1:9100") == "node1"
    assert ix.match("[::1]:9100") == "node2"
    assert ix.match("[0:0::1]:9100") == "node2"
    assert ix.match("node1.example:9100", "node1") == "node1"
    assert ix.match("NODE1:9100") == "node1"
    assert ix.match("10.0.0.9:9100", "stranger") is None


@given(st.one_of(st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(str),
                 st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,3}",
                               fullmatch=True)),
       st.one_of(st.none(), st.integers(1, 65535)))
def test_instance_parser_round_trips(host: str, port: int | None) -> None:
    v6 = ":" in host
    inst = host if port is None else (f"[{host}]:{port}" if v6 else f"{host}:{port}")
    got_host, got_port = split_instance(inst)
    assert got_port == port
    assert got_host == host
    ix = HostIndex.of([HostTarget("h", host)])
    assert ix.match(inst) == "h"


@given(st.text(max_size=40))
def test_instance_parser_never_raises(text: str) -> None:
    host, port = split_instance(text)
    assert isinstance(host, str) and (port is None or 1 <= port <= 65535)


def test_mount_regex_matches_every_planned_dir_and_escapes() -> None:
    import re

    t = ClusterTarget("x", hosts=(
        HostTarget("a", "10.0.0.1", osd_data_dir="/var/lib/ceph/osd/{cluster}-{id}",
                   swift_devices_dir="/srv/node"),
        HostTarget("b", "10.0.0.2", osd_data_dir="/data+x/ceph.{id}")))
    rx = mount_regex(t)
    for p in ("/var/lib/ceph/osd/ceph-12", "/srv/node/d1", "/data+x/ceph.3"):
        assert re.fullmatch(rx, p), p
    for p in ("/", "/srv/node", "/data+x/cephX3", "/var/lib/ceph/osd/ceph-1/sub"):
        assert not re.fullmatch(rx, p), p
    assert template_regex("/a.{id}") == "/a\\.[^/]+"


# ------------------------------------------------------------------ bad answers


@pytest.fixture
def healthy() -> Iterator[tuple[ClusterSnapshot, ClusterTarget, FakeProm]]:
    snap, target, _ = saved("reef", "healthy")
    yield snap, target, FakeProm(nodes_of(snap.hosts), clock=at(snap))


@pytest.mark.parametrize("how,code,words", [
    (GARBAGE, "PROMETHEUS_BAD_ANSWER", "not JSON"),
    (HTTP500, "PROMETHEUS_BAD_ANSWER", "HTTP 500"),
    (STATUS_ERROR, "PROMETHEUS_BAD_ANSWER", "query timed out in expression evaluation"),
    (NOT_VECTOR, "PROMETHEUS_BAD_ANSWER", "not an instant vector"),
    (HUGE, "PROMETHEUS_BAD_ANSWER", "over 1 MiB: cut off"),
    (HUGE_DECLARED, "PROMETHEUS_BAD_ANSWER", "refused"),
    (TRICKLE, "PROMETHEUS_UNREACHABLE", "not complete within 1 s"),
])
def test_prometheus_down_is_one_finding_and_ssh_takes_over(
        healthy: tuple[ClusterSnapshot, ClusterTarget, FakeProm], how: str, code: str,
        words: str) -> None:
    snap, target, fake = healthy
    fake.bad["*"] = how
    t0 = time.monotonic()
    with fake.serve() as url:
        got, asked = via_prom(snap, target, url, max_bytes=1 << 20, timeout_s=1.0)
    assert time.monotonic() - t0 < 30  # bounded: not a hang (never a timing assertion)
    rep = run_checks(got, now=snap.taken_at)
    mine = [f for f in rep.findings if f.code in PROM_CODES]
    assert [f.code for f in mine] == [code], [(f.code, f.message) for f in mine]
    assert words in mine[0].message and url in mine[0].message
    assert len(fake.queries) == 1  # up failed: nothing else asked
    # a small cluster: every host over SSH instead, the SSH path's findings
    assert sorted(asked) == sorted(snap.hosts)
    assert keys(got, snap.taken_at) == keys(snap, snap.taken_at)


def test_one_family_failing_is_one_finding_and_judges_nothing_from_it(
        healthy: tuple[ClusterSnapshot, ClusterTarget, FakeProm]) -> None:
    snap, target, fake = healthy
    fake.bad["node_filesystem_readonly"] = GARBAGE
    with fake.serve() as url:
        got, asked = via_prom(snap, target, url)
    rep = run_checks(got, now=snap.taken_at)
    mine = [f for f in rep.findings if f.code in PROM_CODES]
    assert [f.code for f in mine] == ["PROMETHEUS_BAD_ANSWER"]
    assert "node_filesystem_readonly" in mine[0].entity
    assert asked == []  # an unknown family is no reason to suspect a host
    assert all(not f.disks_collected and not f.mounts for f in got.hosts.values())
    assert keys(got, snap.taken_at) == set()


def test_refused_connection_is_unreachable_and_a_big_fleet_is_not_all_sshd() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    snap, target, _ = saved("reef", "osd-unmounted-in")
    got, asked = via_prom(snap, target, f"http://127.0.0.1:{port}", ssh_max=1)
    assert asked == ["node3"]  # the host Ceph names, not the whole fleet
    rep = run_checks(got, now=snap.taken_at)
    un = [f for f in rep.findings if f.code == "PROMETHEUS_UNREACHABLE"]
    assert len(un) == 1 and "connection refused" in un[0].message and "Error" not in un[0].message
    assert "host facts unknown for 3: node1, node2, node4" in un[0].message
    assert ("OSD_DATA_UNMOUNTED", "osd.2", "crit") in keys(got, snap.taken_at)
    assert not any(f.code == "HOST_FACTS_STALE" for f in rep.findings)  # one line, not 4


def test_client_streams_a_huge_body_without_holding_it() -> None:
    import tracemalloc

    fake = FakeProm([])
    fake.bad["*"] = HUGE
    with fake.serve() as url:
        tracemalloc.start()
        with pytest.raises(PromError) as e:
            PromClient(url, 20.0, max_bytes=8 << 20).query("up")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert e.value.kind == "bad_answer" and "cut off" in e.value.reason
    assert peak < 64 << 20, peak  # ~8 MiB read, never 10 GiB


def test_a_server_that_never_answers_times_out() -> None:
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    held: list[socket.socket] = []
    th = threading.Thread(target=lambda: held.append(srv.accept()[0]), daemon=True)
    th.start()
    try:
        with pytest.raises(PromError) as e:
            PromClient(f"http://127.0.0.1:{srv.getsockname()[1]}", 0.5).query("up")
        assert e.value.kind == "unreachable"
    finally:
        for c in held:
            c.close()
        srv.close()


# ------------------------------------------------------------------ odd sample values

ODD_METRICS = ["up", "timestamp(up)", "node_uname_info", "node_filesystem_readonly",
               "node_filesystem_device_error", "node_filesystem_size_bytes",
               "node_filesystem_avail_bytes", "stordoc_kmsg_readable", "stordoc_kmsg_time",
               "stordoc_kmsg_errors"]
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8)
                     | st.floats(allow_nan=True, allow_infinity=True),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)
# Prometheus's own spellings and what a broken proxy or exporter may put there
_VALUE_TEXT = st.one_of(
    st.sampled_from(["NaN", "+Inf", "-Inf", "nan", "inf", "-1", "7", "1e300", "-0", "0",
                     "1", "0x1", "", " 1", "1,0", "１"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=6))
_VALUE = st.one_of(
    st.tuples(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                        st.text(max_size=4), st.none()), _VALUE_TEXT).map(list),
    _JSON, st.just(MISSING))


def _evidently_odd(value: object) -> bool:
    """What no Prometheus sends for any metric: not a [time, "number"] pair, or a time or
    number that is not finite (an oracle of its own, not the code's rule)."""
    import math

    if not isinstance(value, list) or len(value) != 2:
        return True
    t, v = value
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
        return True
    try:
        return not isinstance(v, str) or not math.isfinite(float(v))
    except ValueError:
        return True


def test_odd_sample_values_are_a_bad_answer_and_their_host_goes_to_ssh() -> None:
    """Any value a sample of one host can carry (NaN, +Inf, a string, a missing field, a
    list...): never an internal error; the SSH path's findings; a value that is evidently
    not a number is PROMETHEUS_BAD_ANSWER naming that host, which SSH looked at."""
    from hypothesis import HealthCheck, settings

    snap, target, _ = saved("reef", "healthy")
    nodes = nodes_of(snap.hosts)
    victim = nodes[1]
    want = keys(snap, snap.taken_at)
    fake = FakeProm(nodes, clock=at(snap))
    with fake.serve() as url:

        @settings(max_examples=80, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(st.sampled_from(ODD_METRICS), _VALUE)
        def one(metric: str, value: object) -> None:
            fake.raw = {(metric, victim.instance): value}
            fake._cache.clear()
            got, asked = via_prom(snap, target, url)
            rep = run_checks(got, now=snap.taken_at)
            assert not [f for f in rep.findings if f.code == "CHECK_INTERNAL_ERROR"], \
                [f.message for f in rep.findings]
            assert keys(got, snap.taken_at) == want
            bad = [f for f in rep.findings if f.code == "PROMETHEUS_BAD_ANSWER"]
            if _evidently_odd(value):
                assert len(bad) == 1, [(f.code, f.message) for f in rep.findings]
                assert victim.nodename in bad[0].message
                assert victim.instance in bad[0].message
            for f in bad:
                assert victim.nodename in asked and victim.nodename in f.message

        one()


@pytest.mark.parametrize("up,stamp", [(0.0, "NaN"), (0.0, "+Inf"), (1.0, "NaN"),
                                      (1.0, "1e300"), (0.0, "-1e12")])
def test_an_odd_time_of_a_host_is_no_internal_error(up: float, stamp: str) -> None:
    """The issue's case: a NaN sample (``timestamp(up)`` of a host whose exporter is
    down) made HOST_FACTS_STALE's date fail (CHECK_INTERNAL_ERROR: ValueError), and a
    NaN or far-future time read as fresh."""
    snap, target, _ = saved("reef", "healthy")
    nodes = nodes_of(snap.hosts)
    nodes[1].up = up
    fake = FakeProm(nodes, clock=at(snap))
    fake.raw[("timestamp(up)", nodes[1].instance)] = [snap.taken_at, stamp]
    with fake.serve() as url:
        got, asked = via_prom(snap, target, url, ssh_max=0)
    rep = run_checks(got, now=snap.taken_at)
    assert not [f.message for f in rep.findings if f.code == "CHECK_INTERNAL_ERROR"]
    bad = [f for f in rep.findings if f.code == "PROMETHEUS_BAD_ANSWER"]
    assert len(bad) == 1 and "timestamp(up" in bad[0].message
    assert "node2" in bad[0].message and "not looked at over SSH" in bad[0].message
    assert "node2" not in got.hosts  # unknown, never vouched for as healthy
    assert got.prometheus is not None and "node2" in got.prometheus.unknown


@pytest.mark.parametrize("server_time", [-1.0, 0.0, 5e8, 1e15])
def test_a_server_time_that_cannot_be_now_vouches_for_no_host(server_time: float) -> None:
    """Every staleness is measured from the server's evaluation time: at -1 every host's
    last scrape was "in the future", so fresh, and a check said OK from facts it could not
    date (hostile run). Such an answer is a bad answer and no host is vouched for."""
    snap, target, _ = saved("reef", "healthy")
    with FakeProm(nodes_of(snap.hosts), clock=lambda: server_time).serve() as url:
        got, asked = via_prom(snap, target, url, ssh_max=0)
    rep = run_checks(got, now=snap.taken_at)
    bad = [f for f in rep.findings if f.code == "PROMETHEUS_BAD_ANSWER"]
    assert len(bad) == 1 and "evaluation time" in bad[0].message, rep.findings
    assert not got.hosts and got.prometheus is not None
    assert rep.verdict.name != "OK"


def test_a_nan_readonly_flag_sends_its_host_to_ssh_which_finds_it_readonly() -> None:
    snap, target, _ = saved("reef", "swift-device-readonly")
    want = keys(snap, snap.taken_at)
    ro = next(k for k in want if k[0] == "FS_READONLY")
    nodes = nodes_of(snap.hosts)
    host = next(n for n in nodes if any(f.readonly for f in n.fs))
    fake = FakeProm(nodes, clock=at(snap))
    fake.raw[("node_filesystem_readonly", host.instance)] = [snap.taken_at, "NaN"]
    with fake.serve() as url:
        got, asked = via_prom(snap, target, url)
    assert host.nodename in asked
    assert ro in keys(got, snap.taken_at) and keys(got, snap.taken_at) == want
    bad = [f for f in run_checks(got, now=snap.taken_at).findings
           if f.code == "PROMETHEUS_BAD_ANSWER"]
    assert len(bad) == 1 and f"over SSH instead: {host.nodename}" in bad[0].message
