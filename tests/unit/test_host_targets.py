"""Issue #26.4: one host, one spelling. Every host-qualified target (``DEVICE@HOST``,
``SERVER@HOST``) names its host as configured before plan, lock and audit: an address,
another case or a trailing dot are that host; a look-alike (Cyrillic о, fullwidth digits,
the Kelvin sign) is refused in one line with the closest configured name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import grammar as g
from runbooks.api import RunContext, plan_from_snapshot
from runbooks.catalog import registry
from runbooks.model import InvalidRequest, Refused
from runbooks.targets import HOST_QUALIFIED, canonical_target_on, resolve_host
from storage.journal import Journal
from storage.model import ClusterSnapshot
from storage.targets import ClusterTarget, HostTarget
from tests.support.cli import cli
from tests.unit.test_replace_plans import NEW, with_builders
from tests.unit.test_replay import replay

HOSTS = (HostTarget("node1", "127.0.0.2"), HostTarget("node2", "127.0.0.3"),
         HostTarget("Stor-A", "stor-a.example.com"), HostTarget("v6", "fd00::1"))
CLUSTER = ClusterTarget("lab", hosts=HOSTS)

# look-alikes of node1: each must be refused, never mapped to node1 (or another host)
LOOK_ALIKES = ["n\u043ede1",  # Cyrillic o
               "node\uff11",  # fullwidth 1
               "\uff4eode1",  # fullwidth n
               "nod\u0435" + "1",  # Cyrillic e
               "node\u0661",  # Arabic-Indic 1
               "node1\u200b",  # zero-width space
               "no\u0257e1",  # d with hook
               "NODE\u0031\u0307"]  # combining dot above


def _spellings(name: str) -> st.SearchStrategy[str]:
    """Ways a person writes a configured host name: any case, a trailing dot, blanks."""
    cased = st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda up: "".join(c.upper() if u else c.lower() for c, u in zip(name, up)))
    return st.builds(lambda pad, c, dot: pad + c + dot + pad,
                     st.sampled_from(["", " "]), cased, st.sampled_from(["", "."]))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), i=st.integers(0, len(HOSTS) - 1))
def test_every_spelling_of_a_host_is_its_configured_name(data: st.DataObject, i: int) -> None:
    h = HOSTS[i]
    spelt = data.draw(_spellings(h.name))
    assert resolve_host(spelt, CLUSTER) == h.name
    assert CLUSTER.host(spelt) is h
    addr = data.draw(_spellings(h.address))
    assert resolve_host(addr, CLUSTER) == h.name


@pytest.mark.parametrize("addr,name", [("127.0.0.2", "node1"), ("::ffff:127.0.0.2", "node1"),
                                       ("FD00:0:0::1", "v6"), ("[fd00::1]", "v6"),
                                       ("STOR-A.example.com.", "Stor-A")])
def test_addresses_map_to_their_host(addr: str, name: str) -> None:
    assert resolve_host(addr, CLUSTER) == name


@pytest.mark.parametrize("spelt", LOOK_ALIKES)
def test_look_alikes_are_refused_with_the_closest_name(spelt: str) -> None:
    assert CLUSTER.host(spelt) is None
    with pytest.raises(InvalidRequest) as e:
        resolve_host(spelt, CLUSTER)
    msg = str(e.value)
    assert msg.startswith("unknown host ") and "did you mean node1?" in msg, msg
    assert "\n" not in msg and msg.isascii()  # the look-alike is shown escaped


def test_the_kelvin_sign_is_not_a_k() -> None:
    c = ClusterTarget("lab", hosts=(HostTarget("kvm1", "127.0.0.5"),))
    assert "\u212avm1".lower() == "kvm1"  # what a naive case fold would accept
    with pytest.raises(InvalidRequest, match="unknown host"):
        resolve_host("\u212aVM1", c)


def test_unknown_and_ambiguous_hosts_are_refused() -> None:
    with pytest.raises(InvalidRequest, match="unknown host '127.0.0.9' in cluster lab"):
        resolve_host("127.0.0.9", CLUSTER)
    for bad in ("node1..", "127.0.0.02", ""):
        with pytest.raises(InvalidRequest):
            resolve_host(bad, CLUSTER)
    shared = ClusterTarget("lab", hosts=(HostTarget("a", "127.0.0.1", port=2201),
                                         HostTarget("b", "127.0.0.1", port=2202)))
    with pytest.raises(InvalidRequest, match="ambiguous.*a, b"):
        resolve_host("127.0.0.1", shared)
    assert shared.host("127.0.0.1") is None and shared.host("b") is shared.hosts[1]
    # a name wins over an address that happens to spell it
    odd = ClusterTarget("lab", hosts=(HostTarget("10.0.0.1", "127.0.0.7"),
                                      HostTarget("x", "10.0.0.1")))
    assert resolve_host("10.0.0.1", odd) == "10.0.0.1"


@pytest.mark.parametrize("kind,raw,want", [
    ("swift-device", "d1@127.0.0.2", "d1@node1"), ("swift-device", "d1@NODE1.", "d1@node1"),
    ("device", " d1@node1 ", "d1@node1"), ("swift-server", "Object@127.0.0.3", "object@node2"),
    ("server", "account@Node2.", "account@node2"), ("host", "127.0.0.3", "node2")])
def test_canonical_target_on_a_cluster(kind: str, raw: str, want: str) -> None:
    assert canonical_target_on(kind, raw, CLUSTER) == want


def test_device_names_keep_their_case_and_stay_ascii() -> None:
    assert canonical_target_on("swift-device", "D1@node1", CLUSTER) == "D1@node1"
    with pytest.raises(Refused, match="ASCII"):
        canonical_target_on("swift-device", "d\u0661@node1", CLUSTER)
    with pytest.raises(Refused, match="not a Swift server"):
        canonical_target_on("swift-server", "proxy@node1", CLUSTER)


# every runbook whose target names a host, with a saved fault it plans on
CASES = {"swift-device-remount": ("swift-device-unmounted", "d2", "node2"),
         "swift-server-start": ("swift-object-server-stopped", "object", "node1"),
         "swift-replicator-start": ("swift-replication-stalled", "object", "node1"),
         "swift-replace-drive": ("swift-device-unmounted", "d2", "node2"),
         "daemon-restart": ("osd-crash", "swift-object-server", "node1"),
         "daemon-start": ("osd-crash", "swift-object-server", "node1")}


def _object_server_killed(snap: ClusterSnapshot) -> ClusterSnapshot:
    """The osd-crash snapshot with node1's object server killed by the OOM killer (pid
    file left): a daemon daemon-restart restarts."""
    hf = snap.hosts["node1"]
    dfs = tuple(dataclasses.replace(
        d, alive=False, proc_state="", probe="",
        oom_lines=(f"Out of memory: Killed process {d.pid} (swift-object-se)",))
        if d.name == "swift-object-server" else d for d in hf.daemon_facts)
    return dataclasses.replace(snap, hosts={**snap.hosts,
                                            "node1": dataclasses.replace(hf, daemon_facts=dfs)})


def _object_server_stopped(snap: ClusterSnapshot) -> ClusterSnapshot:
    """The osd-crash snapshot with node1's object server stopped by a plain kill (pid file
    left, no crash, its port free): a daemon daemon-start starts."""
    hf = snap.hosts["node1"]
    dfs = tuple(dataclasses.replace(d, alive=False, proc_state="", probe="")
                if d.name == "swift-object-server" else d for d in hf.daemon_facts)
    pid = next(d.pid for d in hf.daemon_facts if d.name == "swift-object-server")
    free = {port: held for port, held in (hf.listeners or {}).items() if held[0] != pid}
    return dataclasses.replace(snap, hosts={**snap.hosts, "node1": dataclasses.replace(
        hf, daemon_facts=dfs, listeners=free)})


def test_every_host_qualified_runbook_is_covered() -> None:
    assert {n for n, rb in registry().items() if rb.info.target_kind in HOST_QUALIFIED} == \
        set(CASES)


@pytest.mark.parametrize("runbook", sorted(CASES))
def test_every_host_qualified_runbook_plans_locks_and_audits_the_configured_name(
        runbook: str, tmp_path: Path) -> None:
    case, left, host = CASES[runbook]
    rp = replay("reef", case)
    ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, user="tester")
    ht = rp.target.host(host)
    assert ht is not None
    snap, opts = rp.outcome.snapshot, None
    if runbook == "swift-replace-drive":  # builders of its own, and the new drive
        snap, opts = with_builders(snap, tmp_path, 3), {"device": NEW}
    if runbook == "daemon-restart":
        snap = _object_server_killed(snap)
    if runbook == "daemon-start":
        snap = _object_server_stopped(snap)
    base = plan_from_snapshot(ctx, snap, runbook, f"{left}@{host}", opts)
    for spelt in (ht.address, host.upper(), host + ".", f"::ffff:{ht.address}"):
        p = plan_from_snapshot(ctx, snap, runbook, f"{left}@{spelt}", opts)
        assert (p.target, p.locks) == (base.target, base.locks) == (
            f"{left}@{host}", base.locks)
        assert f"{left}@{host}" in p.locks
        assert p.lines() == base.lines() and p.params == base.params  # what is shown
        assert p.params.get("host") == host
    with pytest.raises(InvalidRequest, match=f"did you mean {host}"):
        plan_from_snapshot(ctx, snap, runbook, f"{left}@{host.replace('o', chr(0x43e))}",
                           opts)


def test_bot_grammar_keeps_syntax_and_refuses_look_alikes() -> None:
    assert g.parse("fix swift-device-remount d1@127.0.0.2") == \
        g.Fix("swift-device-remount", "d1@127.0.0.2")  # resolved when planned
    assert g.parse("fix swift-device-remount d1@node1.").target == "d1@node1"  # type: ignore[union-attr]
    assert g.parse("fix swift-server-start object@127.0.0.2").target == "object@127.0.0.2"  # type: ignore[union-attr]
    for t in LOOK_ALIKES[:2]:
        with pytest.raises(g.GrammarError) as e:
            g.parse(f"fix swift-device-remount d1@{t}")
        assert "\n" not in str(e.value)


def test_cli_refuses_a_look_alike_host_before_any_io(tmp_path: Path) -> None:
    """The hosts' SSH ports are closed and Ceph is absent: a refusal that came after
    collecting would take the SSH timeouts and say something else."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   '[clusters.lab.swift]\nproxy_url = "http://127.0.0.1:1"\n'
                   '[[clusters.lab.hosts]]\nname = "node1"\naddress = "127.0.0.2"\nport = 1\n')
    for target, needle in (("d1@n\u043ede1", "unknown host 'n\\u043ede1' (not plain ASCII) "
                                             "in cluster lab: did you mean node1?"),
                           ("d1@127.0.0.9", "unknown host '127.0.0.9' in cluster lab")):
        r = cli(cfg, "fix", "swift-device-remount", target, "--yes", timeout=120)
        assert r.returncode == 64, (r.stdout, r.stderr)
        assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert "Traceback" not in r.stderr


def test_the_bot_refuses_an_unknown_host_with_the_closest_name(tmp_path: Path) -> None:
    """Slack plans through the same function: a misspelt host or a foreign address is
    refused before anything is collected (the SSH port here is closed)."""
    from core.settings import parse_settings
    from tests.support.fake_slack import BotHarness

    s = parse_settings({"journal": str(tmp_path / "j.db"), "default_cluster": "lab",
                        "clusters": {"lab": {
                            "swift": {"proxy_url": "http://127.0.0.1:1"},
                            "hosts": [{"name": "node1", "address": "127.0.0.2", "port": 1}]}}})
    op = "UOPERATOR1"
    h = BotHarness(s, {"lab": {"viewers": [op], "operators": [op]}},
                   str(tmp_path / "bot.db"), throttle_s=0.05)
    try:
        h.slack.slash("fix swift-device-remount d1@nodee1", op)
        h.wait_post("did you mean node1?",
                    ("chat.postEphemeral", "chat.postMessage"))
        h.slack.slash("fix swift-server-start object@127.0.0.9", op)
        h.wait_post("unknown host '127.0.0.9' in cluster lab",
                    ("chat.postEphemeral", "chat.postMessage"))
    finally:
        h.close()


def test_a_lock_is_named_by_any_spelling_of_its_host(tmp_path: Path) -> None:
    from core.env import Env
    from core.service import Service
    from core.service.errors import InvalidAction
    from core.settings import parse_settings
    from storage.audit import Audit

    e = Env(parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {"lab": {
        "swift": {"proxy_url": "http://127.0.0.1:1"},
        "hosts": [{"name": "node1", "address": "127.0.0.2", "port": 1}]}}}))
    try:
        Audit(e.journal).acquire("lab", "d1@node1", "alice", "swift-device-remount")
        locks = Service(e).locks
        for spelt in ("d1@node1", "d1@127.0.0.2", "d1@NODE1."):
            assert locks.lock_named("lab", spelt).target == "d1@node1"
        with pytest.raises(InvalidAction):
            locks.lock_named("lab", "d1@n\u043ede1")
    finally:
        e.close()


def test_a_swift_daemon_restart_takes_its_servers_lock() -> None:
    """daemon-restart of swift-object-server@node1 and swift-server-start object@node1 act
    on one daemon: they share a lock key, however the host is spelt."""
    rp = replay("reef", "osd-crash")
    ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, user="tester")
    p = plan_from_snapshot(ctx, _object_server_killed(rp.outcome.snapshot), "daemon-restart",
                           "swift-object-server@127.0.0.2")
    assert p.locks == ("swift-object-server@node1", "object@node1")


@pytest.mark.parametrize("raw,want", [
    # issue #37.14: a ring device as Swift prints it, with its port: suggested without the
    # port, never a look-alike host (node2 was suggested)
    ("d1@node1:22", "d1@node1:22: a swift-device target names its host without a port: "
                    "did you mean d1@node1?"),
    ("d1@127.0.0.3:6200", "d1@127.0.0.3:6200: a swift-device target names its host "
                          "without a port: did you mean d1@node2?"),
    ("d1@node7:22", "d1@node7:22: a swift-device target names its host without a port "
                    "(and no host 'node7' in cluster lab)"),
])
def test_a_host_with_a_port_is_refused_with_the_target_without_it(raw: str, want: str) -> None:
    with pytest.raises(InvalidRequest) as e:
        canonical_target_on("swift-device", raw, CLUSTER)
    assert str(e.value) == want
    assert "node2?" not in str(e.value) or raw.startswith("d1@127.0.0.3")
    # an IPv6 address is still an address, not HOST:PORT
    assert canonical_target_on("swift-device", "d1@fd00::1", CLUSTER) == "d1@v6"
