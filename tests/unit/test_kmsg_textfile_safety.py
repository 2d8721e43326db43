"""scripts/stordoc-kmsg-textfile runs as root from cron: it must never write through a
link another user planted. Run for real as root, with the links planted for real by
``nobody`` (``setpriv``), in directories under a 0755 temporary directory that user can
reach (issue 37.2)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "stordoc-kmsg-textfile"
T0 = "2026-11-27T15:20:31,000000+00:00"
LINE = f"{T0} kernel: blk_update_request: I/O error, dev sdc, sector 8 op 0x0:(READ)"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root (the script's real user) and setpriv to act as nobody")


@pytest.fixture
def base() -> Iterator[Path]:
    """A 0755 directory ``nobody`` can reach (pytest's tmp_path is under a 0700 one),
    with a fake ``dmesg`` in base/bin, and a root-only secret file base/secret (0600)."""
    d = Path(tempfile.mkdtemp(prefix="stordoc-kmsg-"))
    try:
        d.chmod(0o755)
        (d / "bin").mkdir()
        (d / "dmesg.out").write_text(LINE + "\n")
        (d / "bin" / "dmesg").write_text(f"#!/bin/sh\ncat '{d / 'dmesg.out'}'\n")
        (d / "bin" / "dmesg").chmod(0o755)
        secret = d / "secret"
        secret.write_text("root's own\n")
        secret.chmod(0o600)
        yield d
    finally:
        shutil.rmtree(d)


def as_nobody(script: str) -> None:
    nobody = pwd.getpwnam("nobody")
    subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                    "--clear-groups", "sh", "-c", script], check=True, timeout=60)


def run(base: Path, *dirs: Path, umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{base / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    return subprocess.run(["sh", "-c", f'umask {umask:03o}; exec sh "$@"', "sh", str(SCRIPT),
                           *map(str, dirs)], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def plant(d: Path, target: Path) -> None:
    """As nobody, in ``d``: the old script's temp names for 500 pids and the textfile's
    own name, all links to ``target``."""
    as_nobody(f"cd '{d}' && i=0; while [ $i -lt 500 ]; do "
              f"ln -s '{target}' .stordoc_kmsg.prom.$(( $$ + i )); "
              f"ln -s '{target}' .stordoc_kmsg.prom.$i; i=$((i + 1)); done; "
              f"ln -s '{target}' stordoc_kmsg.prom")


def test_a_directory_nobody_owns_is_refused_and_its_links_not_followed(base: Path) -> None:
    d = base / "theirs"
    d.mkdir()
    nobody = pwd.getpwnam("nobody")
    os.chown(d, nobody.pw_uid, nobody.pw_gid)
    secret = base / "secret"
    plant(d, secret)
    before = {p.name for p in d.iterdir()}
    r = run(base, d)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(d) in lines[0] and "refused" in lines[0], r.stderr
    assert "owned by uid" in lines[0]
    assert secret.read_text() == "root's own\n"  # unchanged
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert {p.name for p in d.iterdir()} == before  # nothing written, nothing removed
    assert (d / "stordoc_kmsg.prom").is_symlink()


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775, 0o757])
def test_a_directory_others_may_write_is_refused(base: Path, mode: int) -> None:
    d = base / "shared"
    d.mkdir()
    d.chmod(mode)
    if mode & 0o002:
        plant(d, base / "secret")
    before = {p.name for p in d.iterdir()}
    good = base / "good"
    good.mkdir()
    r = run(base, good, d)  # the good one is not written either: all or nothing
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "writable by group or others" in lines[0], r.stderr
    assert (base / "secret").read_text() == "root's own\n"
    assert {p.name for p in d.iterdir()} == before
    assert list(good.iterdir()) == []


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_a_good_directory_gets_the_file_atomically_with_the_old_mode(
        base: Path, umask: int) -> None:
    d = base / "textfile"
    d.mkdir()
    # an old textfile, held open as node_exporter would read it mid-write, and a link of
    # our own left where the file goes in a second directory
    (d / "stordoc_kmsg.prom").write_text("old\n")
    old = (d / "stordoc_kmsg.prom").open()
    d2 = base / "textfile2"
    d2.mkdir()
    (d2 / "stordoc_kmsg.prom").symlink_to(base / "secret")
    r = run(base, d, d2, umask=umask)
    assert r.returncode == 0, r.stderr
    assert old.read() == "old\n"  # a rename: the old inode is never rewritten in place
    old.close()
    for x in (d, d2):
        out = x / "stordoc_kmsg.prom"
        st = out.lstat()
        assert stat.S_ISREG(st.st_mode)  # the link was replaced, not followed
        assert stat.S_IMODE(st.st_mode) == 0o666 & ~umask  # as a plain `>` made it
        text = out.read_text()
        assert "stordoc_kmsg_readable 1" in text and "I/O error, dev sdc" in text
        assert [p.name for p in x.iterdir()] == ["stordoc_kmsg.prom"]  # no temp left
    assert (base / "secret").read_text() == "root's own\n"


# ---------------------------------------------------------------- the lab (root, /var/tmp)


def test_a_lab_base_another_user_made_is_refused_before_anything_in_it_is_used(
        base: Path) -> None:
    from lab import Lab
    from lab.hostmetrics import NodeExporters
    from lab.procs import LabError

    nobody = pwd.getpwnam("nobody")
    theirs = base / "theirs-lab"
    theirs.mkdir()
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    # nobody's pid file for a lab daemon: `lab down` would stop that pid as root
    as_nobody(f"mkdir -p '{theirs}/run' && echo 1 > '{theirs}/run/mon.a.pid' && "
              f"echo '{{}}' > '{theirs}/state.json'")
    before = sorted(str(p) for p in theirs.rglob("*"))
    for b in (theirs, base / "link-to-theirs"):
        if b.name.startswith("link"):  # a link of theirs (as /var/tmp lets them make)
            b.symlink_to(theirs)
            os.lchown(b, nobody.pw_uid, nobody.pw_gid)
        lab = Lab(b, 29000, "mixed")
        with pytest.raises(LabError, match="owned by uid"):
            lab.down()
        with pytest.raises(LabError, match="owned by uid"):
            lab.up()
    assert sorted(str(p) for p in theirs.rglob("*")) == before
    shared = base / "shared-lab"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(LabError, match="writable by group or others"):
        Lab(shared, 29000, "mixed").down()
    # a lab's textfiles: its own 0755 directory whatever the umask, files the exporter
    # can read, a link left where one goes replaced, not followed
    mine = Lab(base / "mine", 29000, "mixed")
    mine.base.mkdir(mode=0o700)
    old = os.umask(0o002)
    try:
        d = NodeExporters(mine).make_textfile_dir("node1")
    finally:
        os.umask(old)
    assert stat.S_IMODE(d.stat().st_mode) == 0o755
    (d / "x.prom").symlink_to(base / "secret")
    p = NodeExporters(mine).write_textfile("node1", "x.prom", "a 1\n")
    assert not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) == 0o644
    assert (base / "secret").read_text() == "root's own\n"
