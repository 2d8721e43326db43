"""The restricted SSH key (issue 40.3) on the lab: with it ``id``, ``sh -c`` and a login
do not run (one line from stordoc-host, exit 126), doctor says the key is restricted, and a
check finds what the full key finds. Every live fault of tests/lab/test_scenarios.py is
checked and repaired through this key too, the Swift ring push among them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lab import Lab
from storage.hostguard import MARK, REFUSED
from tests.support.cli import run_main
from tests.support.init_config import findings
from tests.support.restricted import restricted_key, with_key


def _ssh(lab: Lab, key: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ssh", "-T", "-i", str(key), "-p", str(lab.ports.sshd), "-o", "BatchMode=yes",
         "-o", f"UserKnownHostsFile={lab.ssh_dir / 'known_hosts'}", "-o", "IdentitiesOnly=yes",
         "root@127.0.0.2", *argv], capture_output=True, text=True, timeout=60, check=False)


def test_restricted_key_runs_no_shell_and_checks_alike(lab: Lab, tmp_path: Path) -> None:
    canary = lab.base / "stordoc-hostguard-canary"
    with restricted_key(lab, tmp_path) as key:
        cfg = tmp_path / "restricted.toml"
        cfg.write_text(with_key(lab, lab.config_path.read_text(), key))
        for argv in (["id"], ["sh", "-c", f"touch {canary}"], [f"touch {canary}"],
                     ["true;", "touch", str(canary)], []):
            r = _ssh(lab, key, *argv)
            assert r.returncode == REFUSED and r.stderr.startswith(MARK), (argv, r)
            assert r.stdout == "" and len(r.stderr.splitlines()) == 1, (argv, r)
        assert not canary.exists()
        assert _ssh(lab, key, "true").returncode == 0
        rc, out, _ = run_main("--config", str(cfg), "doctor", width=200)
        said = " ".join(out.split())  # its lines wrap at 80 columns
        for i in range(lab.n_hosts):
            assert f"ok ssh node{i + 1}: root@127.0.0.{i + 2}:{lab.ports.sshd} reachable, " \
                   "host key known, stordoc's commands only (stordoc-host)" in said, out
        rc, out, _ = run_main("--config", str(lab.config_path), "doctor", width=200)
        said = " ".join(out.split())
        assert said.count("no stordoc-host forced command on this key") == lab.n_hosts, out
        assert findings(cfg) == findings(lab.config_path)
