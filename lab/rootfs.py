"""Another Ceph/Swift release for the lab: a Debian root filesystem built once by
``mmdebstrap`` into a cache, and per lab a writable overlay of it whose daemons run through
``chroot`` in the host's own mount and network namespaces.

Why chroot and one namespace: stordoc on the host must see what an operator sees (the OSD
data dirs mounted or not in ``/proc/mounts``, pid files, loopback ports), and its runbooks
mount a data dir on the host and start the daemon, which must then see that mount.

Per lab (all under its base directory, all removed by ``lab down``):

- ``base`` is bind-mounted onto itself and made *shared*, then bind-mounted at the same path
  inside the root: a mount the host makes under ``base`` (an XFS data dir, a Swift device)
  appears inside the root too, and paths are equal on both sides;
- ``base/root`` is an overlay (lower: the cached root filesystem, never written; upper:
  ``base/rootfs-rw``) with its own ``proc``, ``sysfs``, a non-recursive bind of ``/dev``
  (loop devices) and a ``tmpfs`` on ``/dev/shm``.

The cache (``/var/cache/stordoc/rootfs``, or ``STORDOC_ROOTFS_CACHE``) holds one directory
per release and package set, built into ``NAME.part-PID`` and renamed when complete, under
a lock: a build killed mid-way leaves a ``.part`` that the next build unmounts and removes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.mounts import is_mounted, mounts_under
from lab.procs import LabError, run
from lab.system import HOST, System
from storage.procs import pid_alive

HOST_RELEASE = "pacific"  # what the host's own packages (Debian 12) run
CACHE_ENV = "STORDOC_ROOTFS_CACHE"
DEFAULT_CACHE = "/var/cache/stordoc/rootfs"
MARKER = ".stordoc-rootfs.json"


@dataclass(frozen=True)
class RootfsSpec:
    """A release the lab can run from a root filesystem: its Debian suite and packages."""

    release: str
    suite: str
    packages: tuple[str, ...]

    @property
    def key(self) -> str:
        """Names the cached build: a changed package set builds a new one."""
        h = hashlib.sha256(json.dumps([self.suite, sorted(self.packages)]).encode())
        return f"{self.release}-{self.suite}-{h.hexdigest()[:10]}"


# Debian 13 carries Ceph 18.2 (Reef) and Swift 2.35; fio and rsync for the benchmarks and
# Swift's replicators inside the root
REEF = RootfsSpec("reef", "trixie", (
    "ceph-mon", "ceph-mgr", "ceph-osd", "ceph-volume", "ceph-common", "swift-proxy",
    "swift-account", "swift-container", "swift-object", "rsync", "fio", "xfsprogs", "udev"))
SPECS = {REEF.release: REEF}
RELEASES = (HOST_RELEASE, *SPECS)

Progress = Callable[[str], None]


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def cached_root(spec: RootfsSpec) -> Path:
    """Where the built root filesystem of ``spec`` lives (built or not)."""
    return cache_dir() / spec.key


def host_mirror(apt: Path = Path("/etc/apt")) -> str | None:
    """The Debian archive the host's apt uses (deb822 or one-line sources), so the root
    filesystem comes from the same place; None lets mmdebstrap choose."""
    paths = sorted((apt / "sources.list.d").glob("*.sources"))
    for p in paths:
        try:
            stanzas = p.read_text().split("\n\n")
        except OSError:
            continue
        for st in stanzas:
            fields: dict[str, str] = {}
            for line in st.splitlines():
                if ":" in line and not line.lstrip().startswith("#"):
                    k, v = line.split(":", 1)
                    fields[k.strip().lower()] = v.strip()
            suites = fields.get("suites", "").split()
            if ("deb" in fields.get("types", "").split() and fields.get("uris")
                    and suites and not any(s.endswith("-security") for s in suites)):
                return fields["uris"].split()[0]
    try:
        lines = (apt / "sources.list").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        w = line.split()
        if w[:1] == ["deb"] and len(w) > 1 and w[1].startswith("["):  # deb [opts] URI
            w = ["deb", *w[next(i for i, x in enumerate(w) if x.endswith("]")) + 1:]]
        if len(w) >= 3 and w[0] == "deb" and not w[2].endswith("-security"):
            return w[1]
    return None


def _remove_partial(part: Path) -> None:
    """A build killed mid-way: unmount what mmdebstrap mounted inside, then remove it.
    Never removes a tree with anything still mounted in it (a bound /dev would go)."""
    for target in mounts_under(part):
        subprocess.run(["umount", "-l", target], capture_output=True, check=False, timeout=30)
    if mounts_under(part):
        raise LabError("root filesystem", f"{part} still has mounts; remove it by hand")
    shutil.rmtree(part, ignore_errors=True)


def ensure_built(spec: RootfsSpec, progress: Progress | None = None) -> Path:
    """The cached root filesystem of ``spec``, built first if it is not there."""
    say = progress or (lambda s: None)
    root = cached_root(spec)
    if (root / MARKER).exists():
        return root
    if shutil.which("mmdebstrap") is None:
        raise LabError("root filesystem", "mmdebstrap not found: run scripts/setup "
                       "(it installs the lab's Debian packages)")
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".lock-{spec.release}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent build: wait for it, then reuse
        if (root / MARKER).exists():
            return root
        if root.exists():  # not ours (no marker): never removed or overwritten
            raise LabError("root filesystem", f"{root} exists but is not a complete "
                           "stordoc build (no marker): move it away, or point "
                           f"{CACHE_ENV} elsewhere")
        for part in root.parent.glob(f"{spec.key}.part-*"):
            pid = part.name.rsplit("-", 1)[-1]
            if not (pid.isdigit() and pid_alive(int(pid))):
                _remove_partial(part)
        part = root.parent / f"{spec.key}.part-{os.getpid()}"
        say(f"building the {spec.release} root filesystem (Debian {spec.suite}) in {root} "
            "(once; later labs reuse it)")
        argv = ["mmdebstrap", "--mode=root", "--variant=apt", "--quiet",
                "--include=" + ",".join(spec.packages), spec.suite, str(part)]
        mirror = host_mirror()
        if mirror:
            argv.append(mirror)
        t0 = time.monotonic()
        try:
            run(argv, "root filesystem", timeout=1800)
        except BaseException:
            _remove_partial(part)
            raise
        took = time.monotonic() - t0
        versions = subprocess.run(
            ["chroot", str(part), "dpkg-query", "-W", "-f", "${Package} ${Version}\n",
             *spec.packages], capture_output=True, text=True, check=False, timeout=60)
        (part / MARKER).write_text(json.dumps({
            "release": spec.release, "suite": spec.suite, "packages": list(spec.packages),
            "build_seconds": round(took, 1), "built": time.time(),
            "versions": dict(ln.split(" ", 1) for ln in versions.stdout.splitlines()
                             if " " in ln)}, indent=1))
        os.rename(part, root)
    return root


SHIM_DIR = "/usr/lib/stordoc-lab/python"  # inside the root: ceph-mgr's PYTHONPATH
SHIM = Path(__file__).with_name("rootfs_files") / "bcrypt_shim.py"


class ChrootSystem(System):
    """A release run from ``base/root``, an overlay of its cached root filesystem.

    Debian 13's ceph-mgr cannot load ``mgr_util`` (it imports bcrypt, built with PyO3,
    which refuses Python subinterpreters): 13 modules fail, pg_autoscaler and progress
    among them. The lab puts a bcrypt that runs the real one in a child interpreter on
    ceph-mgr's PYTHONPATH (lab/rootfs_files/bcrypt_shim.py) and does not load ``restful``
    (it imports pyOpenSSL/cryptography, also PyO3, and stordoc does not use it).
    """

    mgr_env = (f"PYTHONPATH={SHIM_DIR}",)
    mgr_disabled_modules = "restful"
    # Reef's OSDs schedule with mClock, which ignores the lab's recovery limits (ceph.conf
    # [osd]) unless told otherwise: recovery then paces as on the Pacific lab
    osd_conf_extra = "osd_mclock_override_recovery_settings = true\n"

    def __init__(self, spec: RootfsSpec, base: Path) -> None:
        self.spec = spec
        self.name = spec.release
        self.base = base
        self.root = base / "root"
        self.rw = base / "rootfs-rw"

    def argv(self, argv: Sequence[str]) -> list[str]:
        return ["chroot", str(self.root), *argv]

    def daemon_path(self, path: str | os.PathLike[str]) -> str:
        p = str(path)
        r = str(self.root)
        if p == r:
            return "/"
        if p.startswith(r + "/"):
            return p[len(r):]
        return p  # under the lab's base: bound at the same path inside

    def host_path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def attach(self, progress: Progress | None = None) -> None:
        """Build (once) and mount this lab's root: see the module docstring. The lab's
        base directory must exist; ``Mounts.cleanup`` undoes all of it (deepest first)."""
        lower = ensure_built(self.spec, progress)
        step = "root filesystem mounts"
        base = str(self.base)
        if not is_mounted(base):
            run(["mount", "--bind", base, base], step)
        run(["mount", "--make-shared", base], step)
        upper, work = self.rw / "upper", self.rw / "work"
        for d in (upper, work, self.root):
            d.mkdir(parents=True, exist_ok=True)
        run(["mount", "-t", "overlay", "overlay", "-o",
             f"lowerdir={lower},upperdir={upper},workdir={work}", str(self.root)], step)
        run(["mount", "--make-private", str(self.root)], step)
        r = self.root
        run(["mount", "-t", "proc", "proc", str(r / "proc")], step)
        run(["mount", "-t", "sysfs", "sysfs", str(r / "sys")], step)
        run(["mount", "--bind", "/dev", str(r / "dev")], step)
        run(["mount", "--make-private", str(r / "dev")], step)
        if (r / "dev" / "shm").is_dir():
            run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(r / "dev" / "shm")],
                step)
        shim = self.host_path(SHIM_DIR) / "bcrypt" / "__init__.py"
        shim.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHIM, shim)
        inside = r / base.lstrip("/")
        inside.mkdir(parents=True, exist_ok=True)
        # last, so that the bind carries none of the mounts above (no recursion)
        run(["mount", "--bind", base, str(inside)], step)

    def versions(self) -> dict[str, str]:
        """Package versions recorded when the cached root was built."""
        try:
            data = json.loads((cached_root(self.spec) / MARKER).read_text())
        except (OSError, ValueError):
            return {}
        return dict(data.get("versions", {}))


def system_for(release: str, base: Path) -> System:
    """The release seam for ``release`` (the host's own packages for Pacific)."""
    if release == HOST_RELEASE:
        return HOST
    spec = SPECS.get(release)
    if spec is None:
        raise ValueError(f"unknown release {release!r}; known: {', '.join(RELEASES)}")
    return ChrootSystem(spec, base)
