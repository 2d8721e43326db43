"""The restricted key's allowlist (storage/hostallow.py) and its forced command
(storage/hostguard.py): every command the checks and the runbooks send to a host on the
saved faults of both releases is allowed; a shell, ``id``, a look-alike, an argument out of
its type is refused, and the program itself runs nothing it refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runbooks.api import RunContext, plan_from_snapshot
from storage.hostallow import allowlist, rules_for
from storage.hostfacts.collect import plan_for
from storage.hostfacts.identity import identity_argv
from storage.hostfacts.scripts import facts_argv
from storage.hostguard import MARK, REFUSED, match
from storage.journal import Journal
from tests.support.fixture_snapshots import CASES
from tests.support.hostsent import sent
from tests.unit.test_replay import RELEASES, replay

GUARD = Path(__file__).resolve().parents[2] / "storage" / "hostguard.py"
FIXES = [(rel, c) for rel in RELEASES for c in CASES
         if c.next_step and c.next_step.startswith("stordoc fix ")]


@pytest.mark.parametrize("release", RELEASES)
def test_each_hosts_facts_and_identity_probe_are_allowed(release: str) -> None:
    rp = replay(release, "osd-unmounted-out")
    snap = rp.outcome.snapshot
    assert rp.target.hosts
    for h in rp.target.hosts:
        plan = plan_for(rp.target, h, snap.ceph, snap.swift)
        argv = facts_argv(h.fstab_path, plan.osds, plan.swift, h.swift_ring_dirs, plan.daemons)
        rules = rules_for(rp.target, h)
        assert match(argv, rules) == "facts", h.name
        assert match(identity_argv(["/dev/loop7", "/dev/vdb1"]), rules) == "identity"
        assert match(["true"], rules) == "true"
        # another host's facts (its OSDs' dirs differ only by id; its daemons do not)
        others = [o for o in rp.target.hosts if o.name != h.name and o.daemons != h.daemons]
        for o in others:
            op = plan_for(rp.target, o, snap.ceph, snap.swift)
            oargv = facts_argv(o.fstab_path, op.osds, op.swift, o.swift_ring_dirs, op.daemons)
            if any(dp not in plan.daemons for dp in op.daemons if not dp.name.startswith("osd.")):
                assert match(oargv, rules) is None, (h.name, o.name)


@pytest.mark.parametrize("release,case", FIXES, ids=[f"{r}-{c.name}" for r, c in FIXES])
def test_every_host_step_of_each_printed_fix_is_allowed(release: str, case: object) -> None:
    from tests.support.fixture_snapshots import Case

    assert isinstance(case, Case) and case.next_step
    if not (Path(__file__).parents[1] / "fixtures").exists():
        pytest.skip("no fixtures")
    rp = replay(release, case.name)
    _, _, runbook, target = case.next_step.split()[:4]
    ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, user="tester")
    plan = plan_from_snapshot(ctx, rp.outcome.snapshot, runbook, target)
    for step in plan.steps:
        host = rp.target.host(step.where)
        for argv in sent(step):  # a HostOp's argv, a remote step's commands (ring push)
            assert host is not None, step
            assert match(argv, rules_for(rp.target, host)) is not None, argv
            # a key for checks alone runs none of a fix's changes
            if argv[0] != "md5sum":
                assert match(argv, rules_for(rp.target, host, "checks")) is None, argv


def test_disk_replacement_needs_the_access_that_names_it() -> None:
    """mkfs and ceph-volume prepare make filesystems and OSDs on a device: only with
    ``--access all``; the checks' own commands under every access."""
    rp = replay(RELEASES[0], "osd-unmounted-out")
    h = rp.target.hosts[0]
    uuid = "0b6e8f0c-5c4f-4bd5-9c3e-2f6a3f1d2e4a"
    mkfs = [a.format(fs_uuid=uuid, device="/dev/vdb") for a in h.osd_mkfs_xfs]
    prep = [a.format(cluster=rp.target.ceph_cluster_name, device="/dev/vdb", id=7)
            for a in h.osd_prepare_raw]
    for argv in (mkfs, prep):
        assert match(argv, rules_for(rp.target, h, "all")) is not None, argv
        assert match(argv, rules_for(rp.target, h, "repairs")) is None, argv
        assert match(argv, rules_for(rp.target, h, "checks")) is None, argv
    for access in ("checks", "repairs", "all"):
        assert match(["true"], rules_for(rp.target, h, access)) == "true"
    with pytest.raises(ValueError, match="one of checks, repairs, all"):
        rules_for(rp.target, h, "root")


def _lab_host() -> tuple[object, object]:
    rp = replay(RELEASES[0], "osd-unmounted-out")
    return rp.target, rp.target.hosts[0]


@pytest.mark.parametrize("argv", [
    ["id"], ["sh", "-c", "id"], ["sh"], ["bash", "-i"], ["true", "x"], [],
    ["/bin/true"], ["ｔrue"], ["true\0"],
    ["mount", "-o", "bind", "/dev/loop1", "/var/lib/ceph/osd/ceph-1"],
    ["mount", "/dev/../etc/shadow", "/var/lib/ceph/osd/ceph-1"],
    ["mount", "/dev/loop1", "/etc"],
    ["umount", "/"],
    ["blkid", "-p", "-o", "export", "/etc/shadow"],
    ["ps", "-o", "pid=", "-p", "1;id"],
    ["internal-sftp"], ["sftp-server"], ["scp", "-t", "/root"],
])
def test_what_is_not_stordocs_is_refused(argv: list[str]) -> None:
    target, host = _lab_host()
    assert match(argv, rules_for(target, host)) is None  # type: ignore[arg-type]


def test_the_facts_script_with_a_foreign_group_or_text_is_refused() -> None:
    rp = replay(RELEASES[0], "osd-unmounted-out")
    h = rp.target.hosts[0]
    snap = rp.outcome.snapshot
    plan = plan_for(rp.target, h, snap.ceph, snap.swift)
    argv = facts_argv(h.fstab_path, plan.osds, plan.swift, h.swift_ring_dirs, plan.daemons)
    rules = rules_for(rp.target, h)
    assert match(argv, rules) == "facts"
    # a log file it was not configured with ("tail" of any file): refused
    bad = [a if a != plan.daemons[0].log_file else "/etc/shadow" for a in argv]
    assert bad != argv and match(bad, rules) is None
    assert match(argv + ["osd", "1", "/etc", ""], rules) is None
    assert match(argv + ["ringdir", "/root/.ssh"], rules) is None
    assert match(argv[:-1], rules) is None  # half a group
    assert match([argv[0], argv[1], argv[2] + "\nid", *argv[3:]], rules) is None


def _guard(allow: Path, command: str | None, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if command is not None:
        env["SSH_ORIGINAL_COMMAND"] = command
    return subprocess.run([sys.executable, str(GUARD), str(allow)], env=env, cwd=tmp,
                          capture_output=True, text=True, timeout=30, check=False)


def test_the_forced_command_runs_an_allowed_argv_and_nothing_else(tmp_path: Path) -> None:
    target, host = _lab_host()
    allow = tmp_path / "allow.json"
    allow.write_text(json.dumps(allowlist(target, [host])))  # type: ignore[arg-type, list-item]
    assert _guard(allow, "true", tmp_path).returncode == 0
    canary = tmp_path / "ran"
    for cmd in ("id", f"sh -c 'touch {canary}'", f"touch {canary}", f"true; touch {canary}",
                f"true && touch {canary}", f"$(touch {canary})", "'unterminated"):
        r = _guard(allow, cmd, tmp_path)
        assert r.returncode == REFUSED and r.stderr.startswith(MARK), (cmd, r.stderr)
        assert r.stdout == "" and len(r.stderr.splitlines()) == 1
    r = _guard(allow, None, tmp_path)  # a login: no command
    assert r.returncode == REFUSED and "no login" in r.stderr
    assert not canary.exists()
    # an allowlist that is missing or not one: refused, nothing run
    for bad in (tmp_path / "missing.json", canary.with_name("bad.json")):
        if bad.name == "bad.json":
            bad.write_text('{"version": 99, "rules": []}')
        r = _guard(bad, "true", tmp_path)
        assert r.returncode == REFUSED and "no allowlist" in r.stderr


SUFFIX = "stordoc-rb-0123456789ab"


def _push(dest: str, suffix: str = SUFFIX) -> list[list[str]]:
    """What one ring copy runs on the host, as FabricRunner sends it (``put`` is the
    put script with the copy as its standard input)."""
    from runbooks.swift.ring_distribution import push_commands
    from storage.hostscripts import put_argv

    return [put_argv(a[2]) if a[0] == "put" else a
            for a in push_commands("/tmp/local.ring.gz", dest, suffix)]


def test_the_ring_push_runs_through_the_restricted_key_and_only_into_a_ring() -> None:
    """Every command of a ring copy into each ring dir of the host is allowed (a repairs
    key: not a checks one); a copy anywhere else, of another name, renamed over another
    ring or removing a ring is refused."""
    from storage.hostscripts import put_argv

    target, host = _lab_host()
    rules = rules_for(target, host)  # type: ignore[arg-type]
    checks = rules_for(target, host, "checks")  # type: ignore[arg-type]
    dirs = host.swift_ring_dirs  # type: ignore[attr-defined]
    assert dirs
    for rd in dirs:
        for kind in ("object", "container", "account", "object-1"):
            for suffix in (SUFFIX, "stordoc-rd-ffffffffffff", "stordoc-rn-000000000000",
                           "stordoc-66d88498ffe1"):
                for argv in _push(f"{rd}/{kind}.ring.gz", suffix):
                    assert match(argv, rules) is not None, argv
                    if argv[0] != "md5sum":
                        assert match(argv, checks) is None, argv
    rd = dirs[0]
    ring, tmp = f"{rd}/object.ring.gz", f"{rd}/object.ring.gz.{SUFFIX}.tmp"
    for argv in (put_argv("/etc/passwd"), put_argv(f"{rd}/object.ring.gz"),
                 put_argv(f"{rd}/object.builder.{SUFFIX}.tmp"),
                 put_argv(f"{rd}/../../../etc/object.ring.gz.{SUFFIX}.tmp"),
                 put_argv(f"{rd}/object.ring.gz.stordoc-rb-0123.tmp"),
                 put_argv(f"/etc/object.ring.gz.{SUFFIX}.tmp"),
                 ["sh", "-c", "cat > \"$1\"", "stordoc-put", tmp],
                 ["mv", "-f", "--", tmp, "/etc/passwd"],
                 ["mv", "-f", "--", tmp, f"{rd}/container.ring.gz"],
                 ["mv", "-f", "--", "/root/x", ring], ["rm", "-f", "--", ring],
                 ["rm", "-rf", "--", rd], ["cp", "-p", "--", "/etc/shadow", f"{ring}.{SUFFIX}.bak"],
                 ["cp", "-p", "--", ring, "/root/.ssh/authorized_keys"]):
        assert match(argv, rules) is None, argv


def test_the_put_script_writes_a_new_file_and_never_over_one(tmp_path: Path) -> None:
    """Through the forced command, as a restricted key runs it: the copy's bytes (any
    bytes) land in a new file; a file already there is left as it was (exit 3, one line);
    a copy that cannot be written leaves nothing behind."""
    import shlex
    from dataclasses import replace

    from storage.hostscripts import put_argv

    target, host = _lab_host()
    rd = tmp_path / "rings"
    rd.mkdir()
    host = replace(host, swift_ring_dirs=(str(rd),))  # type: ignore[type-var]
    allow = tmp_path / "allow.json"
    allow.write_text(json.dumps(allowlist(target, [host])))  # type: ignore[arg-type, list-item]
    data = bytes(range(256)) * 1000 + b"\0end"
    tmp = rd / f"object.ring.gz.{SUFFIX}.tmp"

    def put(path: Path, payload: bytes) -> subprocess.CompletedProcess[bytes]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "SSH_ORIGINAL_COMMAND": shlex.join(put_argv(str(path)))}
        return subprocess.run([sys.executable, str(GUARD), str(allow)], env=env,
                              cwd=tmp_path, input=payload, capture_output=True, timeout=30,
                              check=False)

    r = put(tmp, data)
    assert r.returncode == 0, r.stderr
    assert tmp.read_bytes() == data
    r = put(tmp, b"other")
    assert r.returncode == 3 and b"exists" in r.stderr and len(r.stderr.splitlines()) == 1
    assert tmp.read_bytes() == data
    # a directory that is not there: the copy fails, nothing is left
    r = put(rd / "gone", b"x")
    assert r.returncode == REFUSED  # not a ring copy's name: refused before it runs
    missing = tmp_path / "rings-gone"
    host2 = replace(host, swift_ring_dirs=(str(missing),))  # type: ignore[type-var]
    allow.write_text(json.dumps(allowlist(target, [host2])))  # type: ignore[arg-type, list-item]
    r = put(missing / f"object.ring.gz.{SUFFIX}.tmp", data)
    assert r.returncode == 1 and r.stderr.strip().endswith(b"cannot create it")
    assert not missing.exists()


def _cfg(tmp_path: Path) -> Path:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path}/j.db"\n'
                   f'[clusters.c.ceph]\nconf = "{conf}"\ntimeout = 1\n'
                   '[[clusters.c.hosts]]\nname = "n1"\naddress = "127.0.0.2"\n'
                   'swift_devices_dir = "/srv/node"\n'
                   '[[clusters.c.hosts]]\nname = "n2"\naddress = "127.0.0.3"\n')
    return cfg


def test_cli_writes_an_allowlist_and_refuses_bad_input(tmp_path: Path) -> None:
    from tests.support.cli import run_main

    cfg = _cfg(tmp_path)
    out = tmp_path / "allow.json"
    rc, so, se = run_main("--config", str(cfg), "hostguard", "n1", "-o", str(out))
    assert rc == 0 and so.startswith(f"wrote {out}: ") and "(repairs) for n1" in so, so + se
    doc = json.loads(out.read_text())
    assert doc["host"] == "n1" and doc["access"] == "repairs" and doc["version"] == 3
    assert match(["umount", "/srv/node/d1"], doc["rules"]) == "umount swift"
    # again over its own file: fine; the two hosts of one machine: one list
    rc, so, _ = run_main("--config", str(cfg), "hostguard", "n1", "127.0.0.3", "-o", str(out),
                         "--access", "checks")
    assert rc == 0 and "(checks) for n1, n2" in so
    assert match(["umount", "/srv/node/d1"], json.loads(out.read_text())["rules"]) is None
    # bad input: one line each, exit 64, nothing written
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"mine": 1}\n')
    pub = tmp_path / "k.pub"
    pub.write_text('ssh-ed25519 AAAA x\nssh-rsa BBBB y\n')
    for argv, said in (
            (["hostguard", "n9"], "host 'n9' is unknown in cluster c (hosts: n1, n2)"),
            (["hostguard", "ｎ1"], "is unknown"),
            (["hostguard", "n1", "-o", str(foreign)], "is not an allowlist stordoc wrote"),
            (["hostguard", "x", "--authorized-key", str(pub)], "not one OpenSSH public key"),
            (["hostguard", "x", "--authorized-key", str(tmp_path / "none.pub")],
             "No such file")):
        rc, so, se = run_main("--config", str(cfg), *argv)
        assert rc == 64 and said in se and "Traceback" not in so + se, (argv, rc, so, se)
        assert len(se.strip().splitlines()) <= 3, se
    assert foreign.read_text() == '{"mine": 1}\n'
    from tests.support.cli import cli

    r = cli(cfg, "hostguard", "n1", "--access", "root", "-o", str(foreign))
    assert r.returncode == 64 and "invalid choice: 'root'" in r.stderr
    assert "Traceback" not in r.stderr and foreign.read_text() == '{"mine": 1}\n'
    pub.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJy x@y\n")
    rc, so, _ = run_main("hostguard", "x", "--authorized-key", str(pub))
    assert rc == 0 and so.strip() == ('command="/usr/bin/python3 /usr/local/lib/stordoc/'
                                      'stordoc-host /etc/stordoc/host-allow.json",restrict '
                                      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJy x@y')
