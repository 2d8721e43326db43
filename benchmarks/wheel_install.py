"""README's "On your own cluster", the Python part, timed (issue 40.4): build the wheel
from this checkout as README says (``python3 -m pip wheel --no-deps -w dist .``, build
isolation on), make a fresh ``python3 -m venv --system-site-packages`` (Debian's
python3-rados seen), ``pip install`` the wheel with its dependencies from the package
index pip is configured with, then run ``stordoc check --from`` a saved healthy snapshot
from a directory outside the checkout. Printed: each step's seconds and the first check's
verdict line. Needs the package index (unlike tests/unit/test_wheel_install.py, which
installs offline with --no-deps).

    .venv/bin/python benchmarks/wheel_install.py

Measured (2026-11-28, this 2-core machine shared with six other jobs): build 16.6 s,
venv 9.2 s, pip install with every dependency 72.1 s, the first check 1.5 s (exit 0,
"Ceph says HEALTH_OK"): 99 s in all. The apt-get part (python3-rados, ceph-common) is not
timed here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEALTHY = ROOT / "tests" / "fixtures" / "snapshots" / "pacific" / "healthy"


def step(name: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    t0 = time.monotonic()
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    print(f"{name:<28} {time.monotonic() - t0:6.1f} s  exit {r.returncode}")
    if r.returncode not in (0, 1, 2):
        print(r.stdout[-2000:], r.stderr[-2000:], sep="\n")
        sys.exit(1)
    return r


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="stordoc-wheel-") as d:
        tmp = Path(d)
        src = tmp / "src"
        src.mkdir()
        subprocess.run(f"git -C {ROOT} archive HEAD | tar -x -C {src}", shell=True, check=True)
        t0 = time.monotonic()
        step("build the wheel", ["/usr/bin/python3", "-m", "pip", "wheel", "-q", "--no-deps",
                                 "-w", str(tmp / "dist"), "."], src)
        wheel = next((tmp / "dist").glob("stordoc-*.whl"))
        step("venv --system-site-packages", ["/usr/bin/python3", "-m", "venv",
                                             "--system-site-packages", str(tmp / "venv")], tmp)
        step("pip install (with deps)", [str(tmp / "venv" / "bin" / "pip"), "install", "-q",
                                         str(wheel)], tmp)
        work = tmp / "work"
        work.mkdir()
        r = step("stordoc check --from", [str(tmp / "venv" / "bin" / "stordoc"), "check",
                                           "--from", str(HEALTHY)], work)
        verdict = next((ln for ln in r.stdout.splitlines() if "HEALTH" in ln), "?")
        print(f"{'total':<28} {time.monotonic() - t0:6.1f} s")
        print(f"first check: {verdict.strip()}")
        shutil.rmtree(tmp / "venv", ignore_errors=True)


if __name__ == "__main__":
    main()
