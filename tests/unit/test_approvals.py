"""Issue #37.1: the CLI's second person is a signature by the approver's own SSH key over
the exact plan (``core.approvals``), verified with the real ``ssh-keygen -Y verify``
against the public keys of ``[approver_keys]``. On the saved pg-unfound fault (Reef lab:
8 unfound objects): root alone with the settings cannot run it (the old computed code is
refused); a signature by the right key over this plan passes; one over another PG, mode
or count, by another key, expired, valid too long, by the runner, or by someone not
authorized is refused in one line with exit 64, and nothing runs."""

from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from core import approvals
from storage.audit import Audit
from storage.journal import Journal
from tests.unit.test_pgblocks import UNFOUND_SNAP

NAME = "pg-mark-unfound-lost"


def _empty_conf(d: Path) -> Path:
    """A ceph.conf with no monitor: nothing can be reached (a regular file: /dev/null,
    a character device, is refused as a config-named file)."""
    p = d / "ceph.conf"
    p.touch()
    return p


def _keypair(d: Path, name: str) -> tuple[Path, str]:
    key = d / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@laptop",
                    "-f", str(key)], check=True, capture_output=True)
    return key, (d / f"{name}.pub").read_text().strip()


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    d = tmp_path_factory.mktemp("keys")
    return {n: _keypair(d, n) for n in ("bob", "carol", "alice", "dave", "mallory")}


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        keys: dict[str, tuple[Path, str]]) -> Any:
    """``stordoc`` in-process as alice (``SUDO_USER``) on the saved fault; bob is an admin,
    carol an operator of lab, dave has a key but no role; mallory's key is nobody's."""
    from core.service.snapshots import load
    from core.terminal import Terminal
    from runbooks import api as rb_api
    from stordoc.cli import main

    rp = load(str(UNFOUND_SNAP))
    snap = rp.outcome.snapshot
    monkeypatch.setattr(rb_api, "plan", lambda ctx, rb, target, opts=None:
                        rb_api.plan_from_snapshot(ctx, snap, rb, target, opts))
    monkeypatch.setenv("SUDO_USER", "alice")
    (unf,) = [f for f in rp.outcome.report.findings if f.entity == "ceph OBJECT_UNFOUND"]
    cfg = tmp_path / "stordoc.toml"
    ks = "\n".join(f'{n} = ["{keys[n][1]}"]' for n in ("bob", "carol", "alice", "dave"))
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   f'[clusters.lab.ceph]\nconf = "{_empty_conf(tmp_path)}"\n'
                   '[slack]\nadmins = ["bob", "alice"]\n'
                   '[slack.roles.lab]\noperators = ["carol"]\n'
                   f'[approver_keys]\n{ks}\n')

    def run(*argv: str) -> tuple[int, str, str]:
        term = Terminal.capture(width=250)
        rc = main(["--config", str(cfg), *argv], term)
        assert isinstance(term.stdout, io.StringIO) and isinstance(term.stderr, io.StringIO)
        return rc, term.stdout.getvalue(), term.stderr.getvalue()

    return SimpleNamespace(run=run, pgid=str(unf.target), journal=tmp_path / "j.db",
                           dir=tmp_path, cfg=cfg)


def _request(cli: Any, mode: str = "revert") -> str:
    req = cli.dir / f"req-{mode}-{time.monotonic_ns()}.txt"
    rc, out, err = cli.run("plan", NAME, cli.pgid, "--mode", mode,
                           "--approval-request", str(req))
    assert rc == 0, err
    assert f"stordoc approve {req} --as THEIR_ID" in out and "approval code" not in out
    return req.read_text()


def _approval(cli: Any, request: str, who: str, key: Path, **kw: Any) -> Path:
    path = cli.dir / f"approval-{who}-{time.monotonic_ns()}"
    path.write_text(approvals.sign(request, who, str(key), **kw))
    return path


def _refused(cli: Any, approval: Path | str, why: str, *extra: str) -> None:
    rc, out, err = cli.run("fix", NAME, cli.pgid, "--mode", "revert", "--yes",
                           "--approval", str(approval), *extra)
    assert rc == 64, (out, err)
    assert why in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert Audit(Journal(str(cli.journal))).runs() == []  # nothing ran


def test_the_plan_prints_what_the_approver_signs_and_no_code(cli: Any) -> None:
    rc, out, err = cli.run("plan", NAME, cli.pgid, "--mode", "revert")
    assert rc == 0, err
    assert "approval request (the approver signs this text):" in out
    assert "param num_unfound: 8" in out and f"param pgid: {cli.pgid}" in out
    assert f"step 1: ceph pg {cli.pgid} mark_unfound_lost revert" in out
    assert "approval code" not in out and "approval_code" not in out
    req = _request(cli)
    assert req.startswith("stordoc approval v1\ncluster: lab\nrunbook: pg-mark-unfound-lost\n")


def test_root_alone_with_the_settings_cannot_run_it(cli: Any) -> None:
    """What root could do before: compute the unkeyed code and name an admin."""
    old = hashlib.sha256(f"{NAME}|lab|{cli.pgid}|revert|8|bob".encode()).hexdigest()[:10]
    rc, out, err = cli.run("fix", NAME, cli.pgid, "--mode", "revert", "--yes")
    assert rc == 64 and "needs two people: --approval FILE" in err, err
    _refused(cli, old, f"cannot read the approval file {old}", "--approved-by", "bob")
    code_file = cli.dir / "code"
    code_file.write_text(old + "\n")
    _refused(cli, code_file, "not a stordoc approval")
    # a statement written by hand without a signature by bob's key: refused
    req = _request(cli)
    forged = cli.dir / "forged"
    forged.write_text(approvals.statement(req, "bob", time.time() + 600)
                      + "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n")
    _refused(cli, forged, "signature is not by a key of bob")


def test_a_signature_by_the_approvers_key_over_this_plan_passes(
        cli: Any, keys: dict[str, tuple[Path, str]]) -> None:
    from core.env import Env
    from core.settings import load_settings
    from core.terminal import Terminal
    from stordoc.commands.runbooks import _plan, _second_person

    for who in ("bob", "carol"):  # an admin, an operator of the cluster
        approval = _approval(cli, _request(cli), who, keys[who][0])
        env = Env(load_settings(str(cli.cfg)), term=Terminal.capture())
        try:
            args = argparse.Namespace(cluster=None, option=["mode=revert"], mode=None,
                                      apply=False, approval=str(approval), approved_by=None)
            _, ap, plan = _plan(env, args, NAME, cli.pgid)
            assert ap.user == "alice"
            assert _second_person(env, args, ap.cluster, plan, ap.user) == who
            args.approved_by = "dave"
            with pytest.raises(Exception, match=f"the approval is by {who}, not dave"):
                _second_person(env, args, ap.cluster, plan, ap.user)
        finally:
            env.close()


def test_every_other_approval_is_refused_in_one_line(
        cli: Any, keys: dict[str, tuple[Path, str]]) -> None:
    req = _request(cli)
    bob = keys["bob"][0]
    # over another mode (another plan of the same PG)
    _refused(cli, _approval(cli, _request(cli, "delete"), "bob", bob),
             "is for another plan: this plan has 'param mode: revert', the approval "
             "'param mode: delete'")
    # over another unfound count (objects found or lost since) and another PG
    _refused(cli, _approval(cli, req.replace("param num_unfound: 8", "param num_unfound: 9"),
                            "bob", bob), "'param num_unfound: 8', the approval "
                                         "'param num_unfound: 9'")
    other = req.replace(f"target: {cli.pgid}\n", "target: 1.0\n")
    _refused(cli, _approval(cli, other, "bob", bob), "the approval 'target: 1.0'")
    # by another key than the approver's own
    _refused(cli, _approval(cli, req, "bob", keys["mallory"][0]),
             "signature is not by a key of bob")
    _refused(cli, _approval(cli, req, "bob", keys["carol"][0]),
             "signature is not by a key of bob")
    # expired; valid for too long (made to look signed tomorrow for an hour)
    _refused(cli, _approval(cli, req, "bob", bob, now=time.time() - 7200),
             "the approval by bob expired at")
    _refused(cli, _approval(cli, req, "bob", bob, now=time.time() + 86400),
             "at most 24 h is accepted")
    # by the runner themself (an admin with a key), by someone with no role
    _refused(cli, _approval(cli, req, "alice", keys["alice"][0]),
             "alice cannot approve their own run")
    _refused(cli, _approval(cli, req, "dave", keys["dave"][0]),
             "dave is not an admin or operator of this cluster")
    # a signature over the right text, but for the wrong namespace (an SSH login key's
    # signature of something else must not count)
    st = cli.dir / "st.txt"
    st.write_text(approvals.statement(req, "bob", time.time() + 600))
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(bob), "-n", "file",
                    str(st)], check=True, capture_output=True)
    wrong_ns = cli.dir / "wrong-ns"
    wrong_ns.write_text(st.read_text() + Path(f"{st}.sig").read_text())
    _refused(cli, wrong_ns, "signature is not by a key of bob")


def test_stordoc_approve_signs_with_ssh_keygen(cli: Any,
                                               keys: dict[str, tuple[Path, str]]) -> None:
    """The approver's helper: shows the plan, signs it (argv, no shell), writes the file
    the runner passes; no settings are read."""
    req = cli.dir / "req.txt"
    req.write_text(_request(cli))
    from core.terminal import Terminal
    from stordoc.cli import main

    term = Terminal.capture(width=250)
    rc = main(["approve", str(req), "--as", "carol", "--key", str(keys["carol"][0]),
               "--for", "30m", "--yes"], term)
    assert isinstance(term.stdout, io.StringIO)
    out = term.stdout.getvalue()
    assert rc == 0, out
    assert f"step 1: ceph pg {cli.pgid} mark_unfound_lost revert" in out
    text = Path(f"{req}.approval").read_text()
    a = approvals.parse_approval(text)
    assert a.approver == "carol" and 0 < a.expires - time.time() <= 1800
    assert "-----BEGIN SSH SIGNATURE-----" in a.signature


@pytest.mark.parametrize("kind", ["fifo", "dir", "devzero"])
def test_a_request_or_approval_that_is_no_regular_file_is_one_line(
        cli: Any, keys: dict[str, tuple[Path, str]], kind: str) -> None:
    """A FIFO named as the request hung `stordoc approve` for good (tried by hand); a
    FIFO, a directory or a device named as the request or the approval is one line, exit
    64, nothing signed or run."""
    import os
    import subprocess as sp
    import sys

    p = cli.dir / f"odd-{kind}"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "dir":
        p.mkdir()
    else:
        p.symlink_to("/dev/zero")
    r = sp.run([sys.executable, "-m", "stordoc", "approve", str(p), "--as", "carol", "--key",
                str(keys["carol"][0]), "--yes"], capture_output=True, text=True, timeout=60,
               stdin=sp.DEVNULL, check=False)
    assert r.returncode == 64 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert str(p) in r.stderr and "Traceback" not in r.stderr
    assert not Path(f"{p}.approval").exists()
    rc, out, err = cli.run("fix", "pg-mark-unfound-lost", cli.pgid, "-o", "mode=revert",
                           "--approval", str(p), "--yes")
    assert rc == 64 and str(p) in err and "Traceback" not in err, err


def test_the_two_person_setting_gates_every_destructive_runbook() -> None:
    """A runbook that needs a second person, on a cluster whose role sets two_person, needs
    an approval in the CLI too; pg-mark-unfound-lost always; others not."""
    from core.settings_model import Role, SlackSettings

    def settings(two: bool) -> Any:
        return SimpleNamespace(slack=SlackSettings(roles={"lab": Role(two_person=two)}))

    def needs(s: Any, cluster: str, runbook: str, second: bool) -> bool:
        from core.policy import Authorizer, SecondPerson

        return Authorizer.from_settings(s).second_person(
            cluster, runbook, second, "alice", None) is not SecondPerson.NOT_NEEDED

    assert needs(settings(True), "lab", "osd-remount", True)
    assert not needs(settings(False), "lab", "osd-remount", True)
    assert not needs(settings(True), "lab", "osd-start", False)
    assert not needs(settings(True), "prod", "osd-remount", True)
    assert needs(settings(False), "lab", NAME, True)


@pytest.mark.parametrize("table,why", [
    ('"*" = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB"]', "is not a user id"),
    ('"U1,U2" = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB"]', "is not a user id"),
    ('U1 = ["not a key"]', "not an OpenSSH public key"),
    ('U1 = []', "a public key or a list of them"),
])
def test_approver_keys_are_checked_when_the_settings_load(tmp_path: Path, table: str,
                                                          why: str) -> None:
    from core.settings import load_settings
    from core.settings_model import SettingsError

    cfg = tmp_path / "s.toml"
    cfg.write_text(f'[clusters.lab.ceph]\nconf = "{_empty_conf(tmp_path)}"\n[approver_keys]\n' + table + "\n")
    with pytest.raises(SettingsError, match=why):
        load_settings(str(cfg))
