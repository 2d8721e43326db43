"""``stordoc snapshot save`` says the real problem with the name it is given (issue
#37.14): an empty name is no "already exists", a name under a file is no "does not
exist"; both before anything is collected. SIGTERM stops a save as Ctrl-C does: exit 130
(README's exit status table), nothing left behind; the real CLI in its own process,
against a monitor that accepts TCP and never answers (real librados)."""

from __future__ import annotations

import base64
import os
import signal
import socket
import struct
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import ROOT, cli, cli_argv, cli_env, unreachable_config


@pytest.mark.parametrize("name,why", [
    ("", "no directory given: name a new directory to write the snapshot to"),
    ("   ", "no directory given"),
    ("{cfg}/x", "{cfg} is not a directory: {cfg}/x cannot be made under it"),
    ("{cfg}/x/y", "{cfg} is not a directory"),
    ("{tmp}/nope/x", "{tmp}/nope does not exist: create it first"),
    ("{cfg}", "{cfg} already exists"),
])
def test_each_name_says_its_real_problem(tmp_path: Path, name: str, why: str) -> None:
    cfg = unreachable_config(tmp_path)
    before = sorted(os.listdir(tmp_path))
    p = cli(cfg, "snapshot", "save", name.format(cfg=cfg, tmp=tmp_path), timeout=120)
    assert p.returncode == 64, (p.returncode, p.stderr)
    assert p.stdout == "" and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert why.format(cfg=cfg, tmp=tmp_path) in p.stderr, p.stderr
    if name.strip():
        assert "already exists" not in p.stderr or name == "{cfg}"
    assert sorted(os.listdir(tmp_path)) == before  # nothing collected, nothing written


def test_sigterm_mid_save_exits_130_and_leaves_nothing(tmp_path: Path) -> None:
    key = struct.pack("<HIIH", 1, 0, 0, 16) + os.urandom(16)  # a key nobody knows
    (tmp_path / "keyring").write_text(
        f"[client.admin]\n\tkey = {base64.b64encode(key).decode()}\n")
    with socket.socket() as mon:  # accepts (the kernel's backlog), never says a word
        mon.bind(("127.0.0.1", 0))
        mon.listen(8)
        (tmp_path / "c.conf").write_text(f"[global]\nmon_host = 127.0.0.1:"
                                         f"{mon.getsockname()[1]}\n"
                                         "auth_client_required = cephx\n")
        cfg = tmp_path / "s.toml"
        cfg.write_text(f'journal = "{tmp_path / "j.db"}"\n[clusters.c.ceph]\n'
                       f'conf = "{tmp_path / "c.conf"}"\nkeyring = "{tmp_path / "keyring"}"\n'
                       "timeout = 5\n")
        before = sorted(os.listdir(tmp_path))
        p = subprocess.Popen(cli_argv(cfg, "snapshot", "save", str(tmp_path / "snap")),
                             cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            mon.settimeout(120)  # a hang guard: librados reaching the monitor = saving
            conn, _ = mon.accept()
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=120)
            conn.close()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert p.returncode == 130, (p.returncode, err)
    assert err.strip() == "interrupted" and out == ""
    assert sorted(os.listdir(tmp_path)) == before  # no snapshot, no temporary sibling
