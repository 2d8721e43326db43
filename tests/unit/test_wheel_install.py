"""The wheel a team installs on an operations host (issue 40.4): built from this source
tree, installed into a fresh venv beside Debian's python3-rados (``--system-site-packages``),
its ``stordoc`` console script runs a check from outside any checkout, and the lab is not
part of it.

Offline: the wheel is built with the running interpreter's setuptools
(``--no-build-isolation --no-index``) and installed with ``--no-deps --no-index``; the
fresh venv sees the running venv's third-party packages (slack-bolt, rich, ...) through a
``.pth`` line, so the test needs no package index. That directory holds no package of
ours (the development install is an editable finder whose own ``.pth`` is not processed
there), so ``stordoc`` comes from the wheel alone: the test asserts it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("stordoc", "core", "bot", "tui", "runbooks", "checks", "storage", "lab")
HEALTHY = ROOT / "tests" / "fixtures" / "snapshots" / "pacific" / "healthy"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "STORDOC_", "VIRTUAL_ENV"))}
    env["HOME"] = str(home)
    env["PATH"] = "/usr/bin:/bin"
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the wheel, the venv, a working directory outside the checkout)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src)
    for name in SOURCES:  # the lab too: pyproject.toml, not the copy, keeps it out
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index",
                    "--no-build-isolation", "-w", str(dist), str(src)],
                   check=True, cwd=tmp, capture_output=True, text=True)
    wheel = next(dist.glob("stordoc-*.whl"))
    venv = tmp / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True, capture_output=True, text=True)
    vpy = venv / "bin" / "python"
    purelib = subprocess.run([str(vpy), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "--python", str(vpy), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, text=True)
    # the third-party dependencies, from the running venv (see the module's docstring)
    Path(purelib, "_stordoc_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp / "work"
    work.mkdir()
    return wheel, venv, work


def test_the_wheel_holds_the_product_and_no_lab(installed: tuple[Path, Path, Path]) -> None:
    wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names if "/" in n and ".dist-info/" not in n}
    assert tops == {"stordoc", "core", "bot", "tui", "runbooks", "checks", "storage"}
    assert "checks/ceph_cmdtables/" in "".join(names)  # package data comes along
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "stordoc = stordoc.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_console_script_checks_a_snapshot_outside_the_checkout(
        installed: tuple[Path, Path, Path]) -> None:
    _, venv, work = installed
    env = _env(work)
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import stordoc, rados; print(stordoc.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr  # rados: Debian's, through the system site
    assert Path(where.stdout.strip()).is_relative_to(venv)
    helped = subprocess.run([str(venv / "bin" / "stordoc"), "--help"], cwd=work, env=env,
                            capture_output=True, text=True)
    assert helped.returncode == 0, helped.stderr
    assert "check" in helped.stdout
    assert re.search(r"lab\s+not in this install", helped.stdout), helped.stdout
    checked = subprocess.run([str(venv / "bin" / "stordoc"), "check", "--from", str(HEALTHY)],
                             cwd=work, env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "HEALTH_OK" in checked.stdout
    assert "Traceback" not in checked.stderr


def test_the_lab_is_not_installed(installed: tuple[Path, Path, Path]) -> None:
    _, venv, work = installed
    env = _env(work)
    imp = subprocess.run([str(venv / "bin" / "python"), "-c", "import lab"], cwd=work, env=env,
                         capture_output=True, text=True)
    assert imp.returncode == 1
    assert "No module named 'lab'" in imp.stderr
    up = subprocess.run([str(venv / "bin" / "stordoc"), "lab", "up"], cwd=work, env=env,
                        capture_output=True, text=True)
    assert up.returncode == 64, up.stdout + up.stderr
    err = up.stderr.strip()
    assert "no lab" in err and "\n" not in err and "Traceback" not in err
