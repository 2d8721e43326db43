"""Least privilege for Ceph (issue 40.3), on the lab of each release: checks as a
read-only user made by the very line ``stordoc doctor`` prints, changes through a second
configured user; a host that holds only the read-only key checks and refuses a fix naming
the key it lacks, changing nothing."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.service.doctor import read_only_user_line
from lab import Lab
from tests.support.cli import run_main

RO = "client.stordoc-ro"


def _admin_keyring(lab: Lab) -> str:
    found = re.search(r'^keyring = "(.*)"$', lab.config_path.read_text(), re.M)
    assert found is not None
    return found.group(1)


def _codes(config: Path) -> tuple[int, set[str]]:
    rc, out, err = run_main("--config", str(config), "check", "--json")
    assert rc in (0, 1, 2), out + err
    doc = json.loads(out)
    return rc, {f["code"] for f in doc["findings"]}


def _config(lab: Lab, path: Path, keyring: Path, fix_keyring: str) -> Path:
    """The lab's own config with checks as the read-only user and changes as admin."""
    text = lab.config_path.read_text()
    admin = re.search(r'^keyring = "(.*)"$', text, re.M)
    assert admin is not None
    text = text.replace(f'keyring = "{admin.group(1)}"\nclient = "client.admin"',
                        f'keyring = "{keyring}"\nclient = "{RO}"\n'
                        f'fix_client = "client.admin"\nfix_keyring = "{fix_keyring}"', 1)
    assert f'client = "{RO}"' in text
    path.write_text(text)
    return path


@pytest.fixture
def ro_keyring(lab: Lab, tmp_path: Path) -> Iterator[Path]:
    """The read-only user, made by running the line doctor prints (an operator runs it on
    an admin node; here with the lab's conf and admin key); removed afterwards (ours)."""
    keyring = tmp_path / "ceph.client.stordoc-ro.keyring"
    argv = shlex.split(read_only_user_line(RO, str(keyring)))
    assert argv[:3] == ["ceph", "auth", "get-or-create"]
    subprocess.run([argv[0], "-c", str(lab.conf), "-k", _admin_keyring(lab), *argv[1:]],
                   check=True, timeout=60)
    assert keyring.read_text().startswith(f"[{RO}]")
    yield keyring
    lab.ceph("auth", "del", RO, check=False)


@pytest.mark.release
def test_checks_read_only_changes_through_the_fix_user(lab: Lab, tmp_path: Path,
                                                       ro_keyring: Path) -> None:
    ro = _config(lab, tmp_path / "ro.toml", ro_keyring, _admin_keyring(lab))
    alone = _config(lab, tmp_path / "ro-alone.toml", ro_keyring,
                    str(tmp_path / "absent.keyring"))
    # the read-only user cannot change anything itself (Ceph says so)
    probe = subprocess.run(
        ["ceph", "-c", str(lab.conf), "-n", RO, "-k", str(ro_keyring),
         "osd", "set", "noout"], capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0 and "EACCES" in probe.stderr + probe.stdout
    try:
        lab.ceph("osd", "set", "noout")  # a fault made by a plain command
        # the same findings as the admin's config (the lab's own), flag and all
        rc_admin, admin_codes = _codes(lab.config_path)
        rc_ro, ro_codes = _codes(ro)
        assert "OSDMAP_FLAGS" in admin_codes, admin_codes
        assert (rc_ro, ro_codes) == (rc_admin, admin_codes)
        # the host with the read-only key alone: checks the same, refuses the fix
        assert _codes(alone) == (rc_admin, admin_codes)
        rc, out, err = run_main("--config", str(alone), "fix", "flag-unset", "noout", "--yes")
        assert rc == 4, out + err
        said = " ".join((out + err).split())
        assert "holds no key for changes to lab" in said and "absent.keyring" in said, said
        assert "noout" in json.dumps(lab.ceph("osd", "dump")["flags"])  # nothing changed
        # doctor: one line per user, and the missing key named with what is lost
        rc, out, _ = run_main("--config", str(alone), "doctor")
        said = " ".join(out.split())
        assert rc == 1, out  # a warning: the key for changes is missing
        assert f"ok ceph {RO} (checks): " in said, out
        lacks = said.split("warn ceph client.admin (changes): keyring ", 1)[-1]
        assert "no such file — without it stordoc will not: run any Ceph runbook" in lacks
        # with the fix key: the fix runs as admin and the flag is gone
        rc, out, err = run_main("--config", str(ro), "fix", "flag-unset", "noout", "--yes")
        assert rc == 0, out + err
        assert "noout" not in lab.ceph("osd", "dump")["flags"]
    finally:
        lab.ceph("osd", "unset", "noout", check=False)
