"""The restricted SSH key (issue 40.3) on the lab: a second key, tied in the lab sshd's
authorized_keys to stordoc-host and the allowlist ``stordoc hostguard`` writes, checks as
the full key does, and repairs an OSD whose data dir was unmounted by plain commands
(mount, start, verify, all through the forced command); with it ``id`` and ``sh -c`` do
not run, and doctor says the key is restricted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab import Lab
from storage.hostguard import MARK, REFUSED
from tests.support.cli import run_main
from tests.support.poll import wait_until


@pytest.fixture
def restricted(lab: Lab, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the key, a config whose hosts all use it); its authorized_keys line removed after
    (the lab's file keeps the lab's own line untouched)."""
    key = tmp_path / "restricted_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "stordoc-restricted",
                    "-f", str(key)], check=True, timeout=30)
    allow = tmp_path / "host-allow.json"
    hosts = [f"node{i + 1}" for i in range(lab.n_hosts)]
    rc, out, err = run_main("--config", str(lab.config_path), "hostguard", *hosts,
                            "--output", str(allow))
    assert rc == 0 and out.startswith(f"wrote {allow}:"), out + err
    rc, line, err = run_main("hostguard", "x", "--authorized-key", f"{key}.pub")
    assert rc == 0, err
    rc, program, _ = run_main("hostguard", "x", "--program")
    # the line as printed, its program and allowlist at this lab's paths (a host has them
    # at /usr/local/lib/stordoc and /etc/stordoc)
    line = line.strip().replace("/usr/local/lib/stordoc/stordoc-host", program.strip()) \
        .replace("/etc/stordoc/host-allow.json", str(allow))
    assert line.startswith('command="/usr/bin/python3 ') and ",restrict ssh-ed25519 " in line
    ak = lab.ssh_dir / "authorized_keys"
    before = ak.read_text()
    ak.write_text(before + line + "\n")
    text = lab.config_path.read_text()
    full = str(lab.ssh_dir / "client_ed25519")
    assert text.count(f'key_file = "{full}"') == lab.n_hosts
    cfg = tmp_path / "restricted.toml"
    cfg.write_text(text.replace(f'key_file = "{full}"', f'key_file = "{key}"'))
    try:
        yield key, cfg
    finally:
        ak.write_text(before)


def _ssh(lab: Lab, key: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ssh", "-i", str(key), "-p", str(lab.ports.sshd), "-o", "BatchMode=yes",
         "-o", f"UserKnownHostsFile={lab.ssh_dir / 'known_hosts'}", "-o", "IdentitiesOnly=yes",
         "root@127.0.0.2", *argv], capture_output=True, text=True, timeout=60, check=False)


def _check(cfg: Path) -> tuple[int, list[tuple[str, str]]]:
    rc, out, err = run_main("--config", str(cfg), "check", "--json")
    assert rc in (0, 1, 2), out + err
    doc = json.loads(out)
    return rc, sorted((f["code"], f.get("entity", "")) for f in doc["findings"])


def test_restricted_key_checks_and_repairs_but_runs_no_shell(
        lab: Lab, restricted: tuple[Path, Path]) -> None:
    key, cfg = restricted
    canary = lab.base / "stordoc-hostguard-canary"
    # no shell, no `id`, no login: one line from stordoc-host each, nothing run
    for argv in (["id"], ["sh", "-c", f"touch {canary}"], [f"touch {canary}"]):
        r = _ssh(lab, key, *argv)
        assert r.returncode == REFUSED and r.stderr.startswith(MARK), (argv, r)
        assert r.stdout == ""
    assert not canary.exists()
    assert _ssh(lab, key, "true").returncode == 0
    # doctor tells the restricted key from the full one
    rc, out, _ = run_main("--config", str(cfg), "doctor", width=200)
    said = [ln for ln in out.splitlines() if ln.startswith("ok    ssh node")]
    assert len(said) == lab.n_hosts and all("stordoc's commands only" in s for s in said), out
    rc, out, _ = run_main("--config", str(lab.config_path), "doctor", width=200)
    assert "no stordoc-host forced command" in out
    # the healthy lab: the same findings with either key
    assert _check(cfg) == _check(lab.config_path)

    # osd.1's data dir unmounted by plain commands: its daemon killed, then umount
    pid = int((lab.run_dir / "ceph-osd.1.pid").read_text())
    data = lab.osd_dir(1)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 60, "osd.1 exits")
    subprocess.run(["umount", str(data)], check=True, timeout=60)
    fixed = False
    try:
        wait_until(lambda: ("OSD_DATA_UNMOUNTED", "osd.1") in _check(cfg)[1], 120,
                   "the restricted key's check names the unmounted osd.1")
        assert _check(cfg) == _check(lab.config_path)
        rc, out, err = run_main("--config", str(cfg), "fix", "osd-remount", "osd.1", "--yes")
        assert rc == 0 and "verified" in out, out[-3000:] + err[-2000:]
        fixed = True
        assert os.path.ismount(data)
    finally:
        if not fixed:
            lab.heal("osd-unmounted", osd=1)
        lab.wait_pgs_clean(300, "after the restricted key's repair")
