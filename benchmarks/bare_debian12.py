"""From a bare Debian 12 host to the first correct check, following README's "On your own
cluster" line by line (issue 40's goal: <= 10 minutes).

The bare host is a Debian 12 (bookworm) ``minbase`` root filesystem made by ``mmdebstrap``
(not timed: it is the machine a team starts from), entered with ``chroot`` in this
machine's network namespace, so the running lab's monitors and sshd on loopback are its
cluster. It is given, as a team would copy them to it: the lab's ceph.conf and keyring,
its Swift dir, the SSH key and known_hosts (the lab's directory is bound at its own path,
since the lab's ceph.conf names files there), and the wheel built from this checkout by
README's first line (run here, timed). apt and pip inside use the archive and the package
index this machine's are configured with (its apt sources, its pip.conf, /opt/wheels and
/opt/pypi* bound read-only, its local certificate authorities). Then each line of README's block, timed: ``apt-get update``
(a fresh host's package lists are empty) and the ``apt-get install``, ``useradd``, the
venv, ``pip install`` of the wheel, ``stordoc init``, and the first ``stordoc check``.
The check is correct when it finds what the lab's own config finds (the same command on
this machine): printed beside the times.

    .venv/bin/python benchmarks/bare_debian12.py --lab-config /var/tmp/stordoc-lab/stordoc.toml

Everything it makes (the root filesystem, its mounts) is under one temporary directory,
removed at the end, mounts first.

Measured (2026-11-29, Pacific lab, this 2-core machine at load 10-13, a CI run beside it):
wheel 19.6 s, apt-get update 12.0 s, apt-get install (python3-rados, ceph-common, swift,
python3-swiftclient and what they need, from the Debian archive) 268.3 s, venv 29.2 s,
pip install with every dependency 167.9 s, init 0.9 s, the first check 3.0 s (exit 0,
HEALTH_OK, the same findings as the lab's own config): 501.0 s from the bare host to the
first check (goal <= 600 s: met). A run before it at load 14: 105 s to make the bare host,
then the same steps within 10% each until pip stopped at the proxy's certificate authority
(now copied in, as a site's own would be).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.rootfs import host_mirror  # noqa: E402

GOAL_S = 600.0
PIP_DIRS = ("/opt/wheels", "/opt/pypi", "/opt/pypi-more")


def timed(name: str, argv: list[str], env: dict[str, str] | None = None,
          ok: tuple[int, ...] = (0,)) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    took = time.monotonic() - t0
    print(f"{name:<44} {took:6.1f} s  exit {r.returncode}", flush=True)
    if r.returncode not in ok:
        print(r.stdout[-3000:], r.stderr[-3000:], sep="\n")
        raise SystemExit(f"{name} failed")
    return took, r


def settled(check_json: str) -> tuple[str, list[tuple[str, str]]]:
    """Ceph's health and the findings but the PGs' (they re-peer between two checks)."""
    doc = json.loads(check_json)
    return doc["ceph_health"], sorted((f["code"], f["entity"]) for f in doc["findings"]
                                      if not f["code"].startswith(("PG_", "POOL_")))


class Bare:
    """A Debian 12 minbase root under ``base``, with the mounts a host has."""

    def __init__(self, base: Path, lab_dir: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.lab_dir = lab_dir
        self.mounts: list[Path] = []

    def build(self) -> None:
        argv = ["mmdebstrap", "--mode=root", "--variant=minbase", "--quiet", "bookworm",
                str(self.root)]
        mirror = host_mirror()
        if mirror:
            argv.append(mirror)
        timed("(bare host: mmdebstrap minbase, not counted)", argv)

    def _bind(self, src: str, ro: bool = False) -> None:
        dst = self.root / src.lstrip("/")
        dst.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "--bind", src, str(dst)], check=True)
        self.mounts.append(dst)
        if ro:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(dst)], check=True)

    def enter(self) -> None:
        for src, fs in (("proc", "proc"), ("sys", "sysfs")):
            d = self.root / src
            subprocess.run(["mount", "-t", fs, fs, str(d)], check=True)
            self.mounts.append(d)
        self._bind("/dev")
        self._bind("/dev/pts")
        for d in PIP_DIRS:
            if os.path.isdir(d):
                self._bind(d, ro=True)
        self._bind(str(self.lab_dir))
        shutil.copy("/etc/resolv.conf", self.root / "etc" / "resolv.conf")
        for f in ("/etc/pip.conf", "/etc/xdg/pip/pip.conf", "/etc/xdg/pip/constraints.txt"):
            if os.path.exists(f):
                (self.root / f.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, self.root / f.lstrip("/"))
        for f in Path("/etc/apt/apt.conf.d").glob("99*"):
            shutil.copy(f, self.root / "etc" / "apt" / "apt.conf.d" / f.name)
        # the site's own certificate authorities (a proxy's), taken in by ca-certificates
        # when apt installs it
        cas = self.root / "usr" / "local" / "share" / "ca-certificates"
        cas.mkdir(parents=True, exist_ok=True)
        for f in Path("/usr/local/share/ca-certificates").glob("*.crt"):
            shutil.copy(f, cas / f.name)

    def run(self, line: str) -> list[str]:
        """A README line as root in the bare host (its own shell: the lines are this
        script's constants and paths it made)."""
        return ["chroot", str(self.root), "/bin/sh", "-c", line]

    def close(self) -> None:
        for d in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(d)], check=False)
        left = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], capture_output=True,
                              text=True, check=False).stdout.split()
        if any(t.startswith(str(self.root)) for t in left):
            print(f"mounts left under {self.root}: not removed", file=sys.stderr)
            return
        shutil.rmtree(self.base, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lab-config", required=True, help="a running lab's stordoc.toml")
    ap.add_argument("--cluster", default="lab")
    a = ap.parse_args()
    cfg = tomllib.loads(Path(a.lab_config).read_text())
    cl = cfg["clusters"][a.cluster]
    conf, keyring = cl["ceph"]["conf"], cl["ceph"]["keyring"]
    swift_dir = cl["swift"]["swift_dir"]
    h0 = cl["hosts"][0]
    key, known, port = h0["key_file"], h0["known_hosts"], int(h0.get("port", 22))
    lab_dir = Path(a.lab_config).resolve().parent

    own = subprocess.run([sys.executable, "-m", "stordoc", "--config", a.lab_config,
                          "check", "--json"], capture_output=True, text=True, cwd=ROOT,
                         check=False)
    base = Path(tempfile.mkdtemp(prefix="stordoc-bare12-", dir="/var/tmp"))
    bare = Bare(base, lab_dir)
    total = 0.0
    try:
        bare.build()
        bare.enter()
        r = bare.root
        # what the team copies to its new operations host
        for src, dst in ((conf, "etc/ceph/ceph.conf"),
                         (keyring, "etc/ceph/ceph.client.admin.keyring"),
                         (key, "etc/stordoc/id_ed25519"), (known, "etc/stordoc/known_hosts")):
            (r / dst).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, r / dst)
        shutil.copytree(swift_dir, r / "etc" / "swift")
        src = base / "src"
        src.mkdir()
        subprocess.run(f"git -C {shlex.quote(str(ROOT))} archive HEAD | tar -x -C "
                       f"{shlex.quote(str(src))}", shell=True, check=True)
        took, _ = timed("python3 -m pip wheel --no-deps -w dist .",
                        ["/usr/bin/python3", "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                         str(src / "dist"), str(src)])
        total += took
        wheel = next((src / "dist").glob("stordoc-*.whl"))
        shutil.copy(wheel, r / "root" / wheel.name)
        env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
        env.update(PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   HOME="/root", LANG="C.UTF-8", DEBIAN_FRONTEND="noninteractive")
        init = ("stordoc init --name prod --ceph-conf /etc/ceph/ceph.conf --keyring "
                "/etc/ceph/ceph.client.admin.keyring --client client.admin --swift-dir "
                "/etc/swift --ssh-user root --ssh-key /etc/stordoc/id_ed25519 "
                f"--known-hosts /etc/stordoc/known_hosts --ssh-port {port} "
                "-o /etc/stordoc/config.toml")
        lines = [
            "apt-get update -q",
            "apt-get install -y -q python3-rados python3-venv ceph-common sudo swift "
            "python3-swiftclient",
            "useradd --system --home-dir /var/lib/stordoc --shell /usr/sbin/nologin stordoc",
            "install -d -o stordoc -g stordoc -m 0750 /var/lib/stordoc",
            "python3 -m venv --system-site-packages /opt/stordoc",
            f"/opt/stordoc/bin/pip install -q /root/{wheel.name}",
            "ln -s /opt/stordoc/bin/stordoc /usr/local/bin/stordoc",
            "install -d /etc/stordoc",
            init,
        ]
        for line in lines:
            took, _ = timed(line[:44], bare.run(line), env, ok=(0, 1) if line == init
                            else (0,))
            total += took
        took, chk = timed("stordoc --config ... check --json",
                          bare.run("cd /root && stordoc --config /etc/stordoc/config.toml "
                                   "check --json"), env, ok=(0, 1, 2))
        total += took
        got, want = settled(chk.stdout), settled(own.stdout)
        print(f"{'total, bare Debian 12 to the first check':<44} {total:6.1f} s "
              f"(goal <= {GOAL_S:.0f} s: {'met' if total <= GOAL_S else 'not met'})")
        print(f"first check: exit {chk.returncode}, {got[0]}, {len(got[1])} finding(s) but "
              f"the PGs'; the lab's own config: exit {own.returncode}, {want[0]}, "
              f"{len(want[1])}: {'the same' if got == want else 'DIFFERENT'}")
        if got != want:
            print(f"  bare host: {got}\n  lab's own: {want}")
        return 0 if got == want else 1
    finally:
        bare.close()


if __name__ == "__main__":
    sys.exit(main())
