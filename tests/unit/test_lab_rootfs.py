"""The Reef lab's seam without a lab: paths through the root filesystem, the cache key,
the mirror taken from the host's apt sources, the release chosen and remembered, and bad
input refused before anything is built or mounted."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import lab.rootfs as rootfs_mod
from lab import Lab, LabError
from lab.config import config_text
from lab.mounts import mounts_under
from lab.rootfs import (
    MARKER,
    REEF,
    ChrootSystem,
    RootfsSpec,
    cached_root,
    ensure_built,
    host_mirror,
    system_for,
)
from lab.system import HOST
from stordoc.cli import main


def test_paths_go_through_the_root_and_the_base_is_seen_at_the_same_path(
        tmp_path: Path) -> None:
    base = tmp_path / "lab"
    sysm = ChrootSystem(REEF, base)
    assert sysm.argv(["ceph-osd", "-i", "1"]) == ["chroot", str(base / "root"), "ceph-osd",
                                                  "-i", "1"]
    assert sysm.host_path("/var/lib/ceph/osd") == base / "root" / "var/lib/ceph/osd"
    for p in ("/var/lib/ceph/osd", "/etc/swift/swift.conf"):
        assert sysm.daemon_path(sysm.host_path(p)) == p  # the seam's contract
    assert sysm.daemon_path(base / "ceph" / "ceph.conf") == str(base / "ceph" / "ceph.conf")
    assert sysm.daemon_path(base / "root") == "/"


def test_reef_lab_config_points_through_the_root(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", 29000, "mixed", release="reef")
    assert lab.release == "reef" and isinstance(lab.system, ChrootSystem)
    cfg = config_text(lab)
    root = tmp_path / "lab" / "root"
    assert f'osd_data_dir = "{root}/var/lib/ceph/osd/sdlab29000-{{id}}"' in cfg
    assert sum(cfg.count(f'osd_start = ["{lab.on_host_script}", "node{n}", "chroot", "{root}", '
                         '"ceph-osd"') for n in range(1, lab.n_hosts + 1)) == lab.n_hosts
    conf = lab.ceph_cluster.conf_text()
    assert "osd_mclock_override_recovery_settings = true" in conf
    assert "mgr_disabled_modules = restful" in conf
    # Pacific: the host's packages, none of that
    pac = Lab(tmp_path / "lab2", 29000, "mixed")
    assert pac.release == "pacific" and pac.system is HOST
    assert "mclock" not in pac.ceph_cluster.conf_text()


def test_a_lab_keeps_the_release_it_was_made_with(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", 29000, "xfs", release="reef")
    lab.base.mkdir(parents=True)
    lab.write_state(release="reef", port_base=29000, osd_layout="xfs")
    again = Lab(tmp_path / "lab")  # `lab status`, `lab down`, `lab break` read it back
    assert again.release == "reef" and isinstance(again.system, ChrootSystem)


def test_unknown_release_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="unknown release 'quincy'"):
        system_for("quincy", tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["lab", "up", "--release", "réef", "--dir", str(tmp_path / "x")])
    assert e.value.code == 64
    assert "invalid choice: 'réef'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing made


def test_cache_key_follows_the_package_list(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv("STORDOC_ROOTFS_CACHE", str(tmp_path))
    same = RootfsSpec("reef", "trixie", tuple(reversed(REEF.packages)))
    more = RootfsSpec("reef", "trixie", (*REEF.packages, "gdb"))
    assert same.key == REEF.key and more.key != REEF.key
    assert cached_root(REEF) == tmp_path / REEF.key
    assert REEF.key.startswith("reef-trixie-")


def test_mirror_is_read_from_the_hosts_apt_sources(tmp_path: Path) -> None:
    d = tmp_path / "sources.list.d"
    d.mkdir()
    assert host_mirror(tmp_path) is None  # nothing configured: mmdebstrap's default
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb [signed-by=/k.gpg arch=amd64] http://m.example/debian-security "
        "bookworm-security main\ndeb [signed-by=/k.gpg] http://m.example/debian bookworm main\n")
    assert host_mirror(tmp_path) == "http://m.example/debian"
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://s.example/debian-security\nSuites: bookworm-security\n"
        "Components: main\n\nTypes: deb\n# a comment: with a colon\n"
        "URIs: http://a.example/debian\nSuites: bookworm bookworm-updates\n")
    assert host_mirror(tmp_path) == "http://a.example/debian"  # deb822 first


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")


def _fake_mmdebstrap(bin_dir: Path, rc: int) -> None:
    """A stand-in for mmdebstrap: makes the target dir with one file (or fails)."""
    bin_dir.mkdir(exist_ok=True)
    f = bin_dir / "mmdebstrap"
    f.write_text(f'#!/bin/sh\nfor a; do case "$a" in */reef-trixie-*) t="$a";; esac; done\n'
                 f'mkdir -p "$t/etc" && echo fake > "$t/etc/os-release"\nexit {rc}\n')
    f.chmod(0o755)


@needs_root
def test_a_build_killed_mid_way_is_unmounted_and_removed_by_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("STORDOC_ROOTFS_CACHE", str(cache))
    # what a killed mmdebstrap leaves: a .part of a dead pid with /proc-like mounts in it
    stale = cache / f"{REEF.key}.part-999999999"
    (stale / "proc").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(stale / "proc")], check=True)
    _fake_mmdebstrap(tmp_path / "bin", 1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    with pytest.raises(LabError, match="root filesystem"):
        ensure_built(REEF)
    assert not stale.exists() and not mounts_under(cache)  # unmounted first, then removed
    assert not list(cache.glob("*.part-*")) and not cached_root(REEF).exists()
    _fake_mmdebstrap(tmp_path / "bin", 0)
    root = ensure_built(REEF)
    assert root == cached_root(REEF) and (root / "etc" / "os-release").exists()
    marker = json.loads((root / MARKER).read_text())
    assert marker["release"] == "reef" and marker["packages"] == list(REEF.packages)
    assert ensure_built(REEF) == root  # cached: not built again
    assert not list(cache.glob("*.part-*"))


def test_a_cache_entry_stordoc_did_not_finish_is_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORDOC_ROOTFS_CACHE", str(tmp_path))
    _fake_mmdebstrap(tmp_path / "bin", 0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    theirs = cached_root(REEF)
    theirs.mkdir()
    (theirs / "notes.txt").write_text("someone's")
    with pytest.raises(LabError, match="not a complete stordoc build"):
        ensure_built(REEF)
    assert (theirs / "notes.txt").read_text() == "someone's"
    assert not list(tmp_path.glob("*.part-*"))


@needs_root
def test_a_tree_that_keeps_a_mount_is_never_removed(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A bound /dev inside a half-built root must not be deleted through: if a mount stays,
    the removal stops and says so."""
    part = tmp_path / "x.part-1"
    (part / "dev").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(part / "dev")], check=True)
    (part / "dev" / "keep").write_text("host data")
    monkeypatch.setattr(rootfs_mod.subprocess, "run", lambda *a, **k: None)  # umount fails
    try:
        with pytest.raises(LabError, match="still has mounts"):
            rootfs_mod._remove_partial(part)
        assert (part / "dev" / "keep").read_text() == "host data"
    finally:
        monkeypatch.undo()
        subprocess.run(["umount", str(part / "dev")], check=True)
