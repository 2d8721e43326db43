"""Issue 10 points 3 and 7 on the real lab: one lock per OSD whatever its spelling, a
non-root user told "permission denied", `lab up` refusing to tear down a live lab, and a
running default lab's config found without --config."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import core.settings as settings_mod
from core.exitstatus import ExitStatus
from lab import Lab
from storage.audit import Audit
from storage.journal import Journal
from stordoc.cli import main
from tests.lab.test_runbooks import wait_health
from tests.support.broken import break_until_teardown
from tests.support.cli import ROOT, cli, cli_argv, cli_env
from tests.support.labtools import config_with_journal


def test_concurrent_fixes_of_one_osd_spelled_differently_take_one_lock(
        lab: Lab, cfg: Path, request: pytest.FixtureRequest) -> None:
    wait_health(lab, "HEALTH_OK")
    break_until_teardown(request, lab, "osd-unmounted", osd=1)
    spellings = ("osd.1", "osd.01", "osd.001")
    procs = [subprocess.Popen(cli_argv(cfg, "fix", "osd-remount", s, "--yes"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=ROOT, env=cli_env())
             for s in spellings]
    outs = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    ran = [o for o in outs if o[0] != ExitStatus.REFUSED]
    refused = [o for o in outs if o[0] == ExitStatus.REFUSED]
    assert len(ran) == 1 and ran[0][0] == 0, outs  # exactly one run, and it fixed osd.1
    for _, _, err in refused:  # the others met the lock, or found nothing left to do
        assert "Traceback" not in err
        assert "locked by" in err or "osd.1" in err, err
    j = Journal(_journal(cfg))
    try:
        audit = Audit(j)
        runs = audit.runs(limit=50, cluster="lab")
        assert [r.target for r in runs] == ["osd.1"]  # one run, audited canonically
        assert audit.locks("lab") == []
    finally:
        j.close()
    assert lab.osd_up(1) is True


def _journal(path: Path) -> str:
    return settings_mod.load_settings(path).journal


def test_non_root_check_against_the_lab_is_permission_denied(lab: Lab) -> None:
    if not shutil.which("setpriv"):
        pytest.skip("no setpriv")
    d = Path(tempfile.mkdtemp(prefix="stordoc-perm-", dir="/var/tmp"))
    try:
        d.chmod(0o777)
        cfg = config_with_journal(lab.config_path, d / "journal.db", d / "stordoc.toml")
        cfg.chmod(0o644)
        keyring = lab.admin_keyring
        assert keyring.stat().st_mode & 0o077 == 0  # root's, mode 600, as Ceph makes it
        for cmd in (["check"], ["audit", "--cluster", "lab"]):
            r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup",
                                "--clear-groups", str(Path(sys.executable).with_name("stordoc")),
                                *cmd, "--config", str(cfg)], capture_output=True, text=True,
                               timeout=120, cwd="/", env={"PATH": os.environ["PATH"],
                                                          "HOME": "/nonexistent"})
            assert r.returncode == ExitStatus.NOPERM, (cmd, r.returncode, r.stderr)
            assert r.stderr.strip() == f"error: permission denied: {keyring}"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_lab_up_on_a_live_lab_refuses_without_recreate(lab: Lab) -> None:
    pids = lab.status()["processes"]
    r = cli(None, "lab", "up", "--dir", str(lab.base), "--port-base", str(lab.ports.base),
            timeout=120, columns=300)
    assert r.returncode == 64, r.stderr
    assert "a lab is running" in r.stderr and str(lab.config_path) in r.stderr
    assert "--recreate" in r.stderr and "Traceback" not in r.stderr
    assert lab.status()["processes"] == pids  # nothing was stopped or restarted


def test_a_running_default_labs_config_is_found(lab: Lab, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("STORDOC_CONFIG", raising=False)
    monkeypatch.setattr(settings_mod, "DEFAULT_PATHS",
                        (None, tmp_path / "none.toml", tmp_path / "none2.toml"))
    # the pointer `stordoc lab up` writes for the default lab (stordoc/commands/lab.py)
    monkeypatch.setattr(settings_mod, "LAB_POINTER", tmp_path / "run" / "lab.json")
    pid = lab.pid("mon.a")
    assert pid
    settings_mod.announce_lab(lab.config_path, pid)
    assert main(["locks"]) == 0
    err = capsys.readouterr().err
    assert f"using the running lab's config {lab.config_path}" in err
    # no lab announced: the error names what to do, not a bare 'lab up'
    settings_mod.forget_lab()
    assert main(["locks"]) == 64
    err = capsys.readouterr().err
    assert "no config file" in err and "--config" in err
