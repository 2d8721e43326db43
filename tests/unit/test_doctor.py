"""``stordoc doctor`` (issue 40.2): one line per access, what works and what stordoc will
not do without it, exit status by the worst. Real parts: librados against a monitor
address nobody answers (127.0.0.1:1), a keyring path that does not exist, paramiko
against a closed port and an empty known_hosts, a Prometheus and the fake Slack over
real HTTP on loopback, the runbook registry as it is."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from core.service.doctor import (
    Access,
    RunbookNeeds,
    _from_caps,
    cap_perms,
    runbook_needs,
    worst,
)
from tests.support.cli import run_main
from tests.support.fake_slack import TOKEN, FakeSlack
from tests.support.prom_server import FakeProm, Node


@pytest.fixture(autouse=True)
def _no_slack_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for n in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(n, raising=False)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the test connects


def _doctor(cfg: Path, *args: str) -> tuple[int, list[str]]:
    rc, out, err = run_main("--config", str(cfg), "doctor", *args)
    assert "Traceback" not in out + err
    lines = out.splitlines()
    if "--json" not in args:
        assert all(len(ln) <= 80 for ln in lines), [ln for ln in lines if len(ln) > 80]
    return rc, lines


def _line(lines: list[str], access: str) -> str:
    """The access's line with its continuation lines joined."""
    out: list[str] = []
    for ln in lines:
        if out and ln.startswith("      "):
            out.append(ln.strip())
        elif out:
            break
        elif ln[6:].startswith(access + ":"):
            out.append(ln)
    assert out, f"no line for {access!r} in {lines}"
    return " ".join(out)


def test_unreachable_monitor_and_closed_ssh_port_are_fail_lines_exit_2(tmp_path: Path) -> None:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    keyring = tmp_path / "ceph.client.admin.keyring"
    keyring.write_text("[client.admin]\n\tkey = AQBfakefakefakefakefakefakefakefakefake==\n")
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    port = _closed_port()
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path}/j.db"\n'
                   f'[clusters.c.ceph]\nconf = "{conf}"\nkeyring = "{keyring}"\ntimeout = 1\n'
                   f'[[clusters.c.hosts]]\nname = "n1"\naddress = "127.0.0.1"\nport = {port}\n'
                   f'key_file = "{tmp_path}/none"\ntimeout = 2\n'
                   f'[[clusters.c.hosts]]\nname = "n2"\naddress = "127.0.0.1"\nport = {port}\n'
                   f'known_hosts = "{kh}"\n')
    rc, lines = _doctor(cfg)
    assert rc == 2
    ceph = _line(lines, "ceph client.admin")
    assert ceph.startswith("fail  ceph client.admin: monitors unreachable: ")
    assert str(conf) in ceph
    assert "without it stordoc will not: check Ceph" in ceph
    n1 = _line(lines, "ssh n1")
    assert n1.startswith(f"fail  ssh n1: root@127.0.0.1:{port}: connection refused")
    assert "without it stordoc will not: read its host facts or run osd-remount" in n1
    n2 = _line(lines, "ssh n2")
    assert n2.startswith(f"fail  ssh n2: root@127.0.0.1:{port}: host key not in {kh}")
    assert _line(lines, "swift").startswith("off   swift: not configured")
    assert _line(lines, "slack").startswith("off   slack: no bot token")


def test_missing_keyring_is_named_at_once(tmp_path: Path) -> None:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path}/j.db"\n[clusters.c.ceph]\nconf = "{conf}"\n'
                   f'keyring = "{tmp_path}/no.keyring"\ntimeout = 30\n')
    rc, lines = _doctor(cfg)
    assert rc == 2
    assert _line(lines, "ceph client.admin") == (
        f"fail  ceph client.admin: keyring {tmp_path}/no.keyring: no such file — without "
        "it stordoc will not: check Ceph or run any Ceph runbook")


def test_prometheus_and_slack_over_http_exit_by_the_worst(tmp_path: Path) -> None:
    prom = FakeProm([Node("10.0.0.1:9100"), Node("10.0.0.2:9100", up=0.0)])
    slack = FakeSlack().start()
    try:
        with prom.serve() as url:
            cfg = tmp_path / "stordoc.toml"
            cfg.write_text(f'journal = "{tmp_path}/j.db"\n'
                           f'[clusters.c.prometheus]\nurl = "{url}"\n'
                           f'[slack]\napi_base_url = "{slack.base_url}"\n'
                           f'bot_token = {{ value = "{TOKEN}" }}\n'
                           f'signing_secret = {{ value = "s" }}\n')
            rc, lines = _doctor(cfg)
            assert _line(lines, "prometheus") == (
                f"warn  prometheus: {url}: node 1/2 up — without it stordoc will not: take "
                "those 1 hosts' facts from node_exporter")
            assert _line(lines, "slack bot token") == (
                "ok    slack bot token: auth.test: stordoc in team fake")
            assert _line(lines, "ssh").startswith("warn  ssh: no hosts configured")
            assert rc == 1
            assert slack.of("auth.test")

            prom.nodes[1].up = 1.0
            prom._cache.clear()
            rc, lines = _doctor(cfg)
            assert _line(lines, "prometheus") == f"ok    prometheus: {url}: node 2/2 up"

            cfg.write_text(cfg.read_text().replace(TOKEN, "xoxb-wrong"))
            rc, lines = _doctor(cfg)
            assert _line(lines, "slack bot token") == (
                "fail  slack bot token: auth.test: invalid_auth — without it stordoc will "
                "not: answer in Slack or post alerts (stordoc bot)")
            assert rc == 2
    finally:
        slack.stop()


def test_unreachable_prometheus_and_swift_without_rings(tmp_path: Path) -> None:
    port = _closed_port()
    (tmp_path / "swift").mkdir()
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path}/j.db"\n'
                   f'[clusters.c.prometheus]\nurl = "http://127.0.0.1:{port}"\n'
                   f'[clusters.c.swift]\nswift_dir = "{tmp_path}/swift"\n'
                   f'proxy_url = "http://127.0.0.1:{port}"\nrecon_timeout = 2\n')
    rc, lines = _doctor(cfg, "--json")
    import json

    got = {a["access"]: a for a in json.loads("\n".join(lines))}
    assert got["prometheus"]["status"] == "warn"
    assert "SSH reads every host instead" in got["prometheus"]["without"]
    assert got["swift rings"] == {"status": "fail", "access": "swift rings",
                                  "works": f"no rings in {tmp_path}/swift",
                                  "without": "check Swift or run swift-device-remount, "
                                  "swift-server-start, swift-ring-rebalance, "
                                  "swift-ring-push and 3 more"}
    assert got["swift proxy"]["status"] == "warn"
    assert got["swift auth"]["status"] == "off"
    assert rc == 2


def test_caps_say_what_stordoc_reads_and_which_runbooks_it_may_run() -> None:
    needs = runbook_needs()
    assert "osd-in" in needs.ceph and "osd-remount" in needs.hosts
    assert "swift-ring-rebalance" in needs.swift and "swift-ring-rebalance" not in needs.ceph
    assert cap_perms("allow *") == frozenset("rwx")
    assert cap_perms("allow r") == frozenset("r")
    assert cap_perms("allow rw pool=rbd, allow r") == frozenset("rw")
    assert cap_perms("profile rbd") == frozenset("r")
    assert cap_perms('allow command "osd tree"') == frozenset()

    admin = _from_caps("ceph client.admin", {"mon": "allow *", "mgr": "allow *",
                                             "osd": "allow *"}, needs)
    assert admin.status == "ok" and admin.without == ""
    assert f"runs every Ceph runbook ({len(needs.ceph)})" in admin.works

    ro = _from_caps("ceph client.stordoc", {"mon": "allow r", "mgr": "allow r",
                                            "osd": "allow r"}, needs)
    assert ro.status == "warn"
    assert "runs no Ceph runbook (read-only)" in ro.works
    assert f"run {needs.ceph[0]}" in ro.without and "(mon 'allow rw')" in ro.without
    assert all(len(ln) <= 80 for ln in ro.lines())

    mon_only = _from_caps("ceph client.x", {"mon": "allow r"}, needs)
    assert "read PG and usage stats (mgr 'allow r')" in mon_only.without

    none = _from_caps("ceph client.x", {"osd": "allow rw"}, needs)
    assert none.status == "fail" and "no monitor reads" in none.works


def test_worst_and_lines() -> None:
    assert worst([]) == 0
    assert worst([Access("ok", "a", "x"), Access("off", "b", "y")]) == 0
    assert worst([Access("ok", "a", "x"), Access("warn", "b", "y")]) == 1
    assert worst([Access("fail", "a", "x"), Access("warn", "b", "y")]) == 2
    long = Access("warn", "ceph client.x", "w " * 60, "z " * 40)
    assert all(len(ln) <= 80 for ln in long.lines())
    assert all(ln.startswith("      ") for ln in long.lines()[1:])
    assert RunbookNeeds((), (), ()).ceph == ()


def test_unknown_cluster_is_one_line_exit_64(tmp_path: Path) -> None:
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path}/j.db"\n[clusters.c.ceph]\nconf = "/nonexistent"\n')
    rc, out, err = run_main("--config", str(cfg), "doctor", "--cluster", "nope")
    assert (rc, out, err.strip()) == (64, "", "error: unknown cluster 'nope'; configured: c")


# ------------------------------------------------------------------ least privilege (40.3)
def test_a_user_for_checks_and_one_for_changes_are_judged_apart() -> None:
    """Checks as a read-only user are ok (what they cannot read is said); checks as a user
    that can write are a warning carrying the line that makes a read-only one."""
    from core.service.doctor import READ_ONLY_CAPS, read_only_user_line

    needs = runbook_needs()
    ro = _from_caps("ceph client.stordoc-ro (checks)",
                    {"mon": 'allow r, allow command "config get"', "mgr": "allow r",
                     "osd": "allow r"}, needs, "checks")
    assert ro.status == "ok" and "changes through the fix user" in ro.works
    assert ro.without == "read slow-op details and PG queries (osd 'allow *')"
    admin = _from_caps("ceph client.admin (checks)", {"mon": "allow *", "mgr": "allow *",
                                                      "osd": "allow *"}, needs, "checks")
    assert admin.status == "warn" and read_only_user_line() in admin.without
    assert read_only_user_line("client.x", "/k") == (
        f"ceph auth get-or-create client.x {READ_ONLY_CAPS} -o /k")


def _two_users(tmp_path: Path, fix_keyring: Path) -> Path:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    key = tmp_path / "ro.keyring"
    key.write_text("[client.stordoc-ro]\n\tkey = x\n")
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path}/j.db"\n[clusters.c.ceph]\nconf = "{conf}"\n'
                   f'keyring = "{key}"\nclient = "client.stordoc-ro"\n'
                   f'fix_client = "client.admin"\nfix_keyring = "{fix_keyring}"\n')
    return cfg


@pytest.mark.parametrize("kind", ["absent", "fifo"])
def test_a_fix_without_the_change_key_is_refused_naming_it(tmp_path: Path, kind: str) -> None:
    """The host holds only the read-only key: a Ceph fix or benchmark is refused (exit 4)
    with the key's name and path, before any monitor is asked (127.0.0.1:1 answers none);
    a FIFO in its place is refused without being opened (it would block)."""
    import os

    fix_key = tmp_path / "admin.keyring"
    if kind == "fifo":
        os.mkfifo(fix_key)
    cfg = _two_users(tmp_path, fix_key)
    for argv in (["plan", "flag-unset", "noout"], ["fix", "osd-in", "3", "--yes"],
                 ["bench", "rados", "--yes"]):
        rc, out, err = run_main("--config", str(cfg), *argv)
        said = " ".join((out + err).split())
        assert rc == 4, (argv, out + err)
        assert "Traceback" not in said
        assert str(fix_key) in said and "changes to c" in said, said


def test_settings_of_the_two_users_are_checked() -> None:
    from pydantic import ValidationError

    from core.settings_clusters import CephSettings

    with pytest.raises(ValidationError, match="fix_keyring needs fix_client"):
        CephSettings(conf="/c", fix_keyring="/k")
    for bad in ("admin", "client.", "client.a b", "client.аdmin"):  # Cyrillic а
        with pytest.raises(ValidationError, match="client.NAME"):
            CephSettings(conf="/c", fix_client=bad)
    same = CephSettings(conf="/c", keyring="/k", fix_client="client.admin", fix_keyring="/k")
    assert not same.separate_fix_user
    assert CephSettings(conf="/c", client="client.ro", fix_client="client.admin"
                        ).separate_fix_user
