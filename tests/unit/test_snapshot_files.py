"""A snapshot directory as hostile input: `stordoc check --from DIR` on a missing,
truncated, oversized or hostile directory is one line and exit 64, and nothing outside the
directory is read; a newer format is refused saying so, the older capture format is read.
Every case goes through the real CLI entry point (``stordoc.cli.main``)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.cli import run_main

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
HEALTHY = FIX / "snapshots" / "pacific" / "healthy"
BROKEN = FIX / "snapshots" / "pacific" / "osd-unmounted-out"


def refused(d: Path | str, why: str) -> None:
    rc, out, err = run_main("check", "--from", str(d))
    assert rc == 64, (rc, out, err)
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert why in err, err


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    d = tmp_path / "snap"
    shutil.copytree(BROKEN, d)
    return d


def test_a_saved_snapshot_is_diagnosed_without_any_settings(
        snap: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORDOC_CONFIG", "/nonexistent/stordoc.toml")  # never read
    rc, out, err = run_main("check", "--from", str(snap))
    assert rc in (1, 2), err
    lines = out.splitlines()
    assert lines[0].startswith(f"from snapshot {snap} (taken ")
    assert "OSD_DATA_UNMOUNTED osd.1" in lines[1]
    assert "next: stordoc fix osd-remount osd.1" in out


def test_missing_not_a_dir_empty_and_foreign_dirs(tmp_path: Path) -> None:
    refused(tmp_path / "nope", "no such directory")
    f = tmp_path / "file"
    f.write_text("x")
    refused(f, "not a directory")
    refused(tmp_path, "is not a stordoc snapshot")
    (tmp_path / "snapshot.json").write_text('{"format": "sosreport"}')
    refused(tmp_path, "is not a stordoc snapshot")


def test_truncated_and_invalid_json(snap: Path) -> None:
    m = snap / "snapshot.json"
    text = m.read_text()
    m.write_text(text[: len(text) // 2])
    refused(snap, "snapshot.json is not valid JSON")
    m.write_text(text)
    osd = snap / "ceph" / "osd_dump.json"
    osd.write_text('{"epoch": NaN}')
    refused(snap, "ceph/osd_dump.json is not valid JSON (NaN is not standard JSON)")
    osd.write_bytes(b"\xff\xfe{}")
    refused(snap, "ceph/osd_dump.json is not UTF-8 text")
    osd.write_text("[" * 100_000 + "]" * 100_000)
    refused(snap, "nests too deeply")


def test_a_listed_file_missing_is_an_incomplete_snapshot(snap: Path) -> None:
    (snap / "hosts" / "1.json").unlink()
    refused(snap, "hosts/1.json is missing (an incomplete snapshot)")


def test_a_2gib_file_is_refused_before_it_is_read(snap: Path) -> None:
    big = snap / "swift.json"
    with open(big, "r+b") as f:
        f.truncate(2 * 1024**3)  # sparse: costs no disk
    refused(snap, "swift.json is 2147483648 bytes, more than a snapshot file may hold")


def test_symlinks_out_of_the_directory_are_refused(snap: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside.json"
    secret.write_text('{"osds": []}')
    os.chmod(secret, 0)  # were it opened as root it would still read: the refusal is earlier
    osd = snap / "ceph" / "osd_dump.json"
    keep = osd.read_bytes()
    osd.unlink()
    osd.symlink_to(secret)
    refused(snap, "ceph/osd_dump.json is a symlink or not where a file should be")
    osd.unlink()
    osd.write_bytes(keep)
    shutil.rmtree(snap / "hosts")
    (snap / "hosts").symlink_to("/etc")
    refused(snap, "a symlink or not where a file should be")


def test_a_fifo_is_not_read(snap: Path) -> None:
    p = snap / "swift.json"
    p.unlink()
    os.mkfifo(p)
    refused(snap, "swift.json is not a regular file")


def test_paths_in_the_manifest_stay_inside(snap: Path) -> None:
    m = json.loads((snap / "snapshot.json").read_text())
    for bad in ("../../etc/passwd", "/etc/passwd", "ceph/../../x.json", "ceph/.hidden.json"):
        m2 = dict(m, swift=bad)
        (snap / "snapshot.json").write_text(json.dumps(m2))
        refused(snap, "names a file it may not")
    m2 = dict(m, ceph={"collected_at": 1.0, "answers": {"hosts/0.json": "osd dump"}})
    (snap / "snapshot.json").write_text(json.dumps(m2))
    refused(snap, "is not a file under ceph/")


@pytest.mark.parametrize("version,why", [
    (2, "snapshot format 2 is newer than this stordoc reads (format 1 and older)"),
    ("1", "unknown format version '1'"), (0, "unknown format version '0'"),
    (True, "unknown format version 'True'"), (None, "unknown format version 'None'")])
def test_versions(snap: Path, version: object, why: str) -> None:
    m = json.loads((snap / "snapshot.json").read_text())
    m["version"] = version
    (snap / "snapshot.json").write_text(json.dumps(m))
    refused(snap, why)


def test_the_older_capture_format_is_read_as_cephs_answers() -> None:
    rc, out, err = run_main("check", "--from", str(FIX / "ceph-pacific" / "osd1-down-out"))
    assert rc in (1, 2), err
    assert "format 0" in out.splitlines()[0]
    assert "OSD_DOWN_OUT osd.1" in out


def test_hostile_cluster_settings_are_refused_like_a_hostile_config(snap: Path) -> None:
    c = json.loads((snap / "cluster.json").read_text())
    c["cluster"]["hosts"][0]["osd_start"] = ["sh", "-c", "{id.__class__}"]
    (snap / "cluster.json").write_text(json.dumps(c))
    refused(snap, "cluster.json: hosts.0.osd_start")
    c["cluster"]["hosts"][0]["osd_start"] = ["ceph-osd", "-i", "{id}"]
    c["cluster"]["surprise"] = 1
    (snap / "cluster.json").write_text(json.dumps(c))
    refused(snap, "cluster.json: surprise: Extra inputs are not permitted")
    c["cluster"].pop("surprise")
    c["name"] = "other"
    (snap / "cluster.json").write_text(json.dumps(c))
    refused(snap, "cluster.json names another cluster than snapshot.json")


def test_a_snapshot_a_user_may_not_read_is_permission_denied() -> None:
    """As nobody, a snapshot saved by root (files 0600): exit 77 naming the file, as for
    any file stordoc cannot read, never 'not a snapshot'."""
    import subprocess
    import sys
    import tempfile

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as nobody")
    d = Path(tempfile.mkdtemp(prefix="stordoc-snapperm-", dir="/var/tmp"))
    try:
        d.chmod(0o755)
        snap = d / "snap"
        shutil.copytree(BROKEN, snap)
        snap.chmod(0o755)  # the directory may be listed, its files (0600, root's) not read
        for f in snap.rglob("*.json"):
            f.chmod(0o600)
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                            sys.executable, "-m", "stordoc", "check", "--from", str(snap)],
                           capture_output=True, text=True, timeout=120, cwd=str(ROOT),
                           env={"PATH": os.environ["PATH"], "HOME": "/nonexistent",
                                "PYTHONPATH": str(ROOT)})
        assert r.returncode == 77, (r.returncode, r.stderr)
        assert r.stderr.strip() == f"error: permission denied: {snap / 'snapshot.json'}"
    finally:
        shutil.rmtree(d, ignore_errors=True)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                           allow_infinity=False) | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids,
                                                              max_size=4),
    max_leaves=20)
FILES = ["snapshot.json", "cluster.json", "swift.json", "hosts/0.json", "hosts/1.json",
         "ceph/osd_dump.json", "ceph/osd_tree.json", "ceph/status.json",
         "ceph/health_detail.json", "ceph/pg_stat.json", "ceph/config_dump.json"]


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(FILES), value=json_values)
def test_any_json_in_any_file_is_a_diagnosis_or_one_line(snap: Path, which: str,
                                                          value: object) -> None:
    p = snap / which
    keep = p.read_bytes()
    p.write_text(json.dumps(value))
    try:
        rc, out, err = run_main("check", "--from", str(snap))
        assert "Traceback" not in out + err
        if rc == 64:
            assert out == "" and len(err.strip().splitlines()) == 1, err
        else:
            assert rc in (0, 1, 2, 3), (rc, err)
            assert out.splitlines()[1].split(" ")[0] in ("OK", "WARN", "CRIT", "UNREACHABLE"), out
    finally:
        p.write_bytes(keep)
        p.chmod(stat.S_IRUSR | stat.S_IWUSR)


class _Evil:
    """A pickle that would write a marker file when loaded."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Path.write_text, (Path(self.marker), "pwned"))  # type: ignore[return-value]


def test_a_builder_path_in_a_snapshot_is_never_loaded(snap: Path, tmp_path: Path) -> None:
    """Swift's builders are pickles: a snapshot naming one (or any local file) must not get
    it loaded, not by the checks and not by planning the next steps."""
    import pickle

    marker = tmp_path / "pwned"
    evil = tmp_path / "object.builder"
    evil.write_bytes(pickle.dumps(_Evil(str(marker))))
    doc = json.loads((snap / "swift.json").read_text())
    for ring in doc["rings"]:
        ring["builder_path"] = str(evil)
        ring["ring_path"] = str(tmp_path / "object.ring.gz")
        ring["builder_matches_ring"] = False  # asks for a rebalance
    (snap / "swift.json").write_text(json.dumps(doc))
    c = json.loads((snap / "cluster.json").read_text())
    c["cluster"]["swift"]["swift_dir"] = str(tmp_path)
    (snap / "cluster.json").write_text(json.dumps(c))
    rc, out, err = run_main("check", "--from", str(snap))
    assert "Traceback" not in err and rc in (1, 2), err
    assert "SWIFT_BUILDER_NEWER_THAN_RING" in out
    assert not marker.exists(), "a builder named by a snapshot was unpickled"


def test_a_save_never_writes_over_what_it_did_not_create(tmp_path: Path) -> None:
    from storage.snapshot.files import SnapshotError, Writer

    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "keep.txt").write_text("theirs")
    with pytest.raises(SnapshotError, match="already exists"):
        Writer(str(mine))
    assert [p.name for p in mine.iterdir()] == ["keep.txt"]

    empty = tmp_path / "empty"  # an empty directory made for it is taken
    empty.mkdir()
    w = Writer(str(empty))
    w.write_json("a.json", {"a": 1})
    w.commit()
    assert json.loads((empty / "a.json").read_text()) == {"a": 1}

    # two saves to one new name at once: the first lands, the second is refused whole
    race = tmp_path / "race"
    first, second = Writer(str(race)), Writer(str(race))
    second.tmp = first.tmp + "-other"  # another process's temporary sibling
    os.mkdir(second.tmp)
    first.write_json("first.json", {"n": 1})
    second.write_json("second.json", {"n": 2})
    first.commit()
    with pytest.raises(SnapshotError, match="created meanwhile"):
        second.commit()
    second.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "notes", "race"]
    assert [p.name for p in race.iterdir()] == ["first.json"]


def test_a_name_the_filesystem_refuses_is_one_line(tmp_path: Path) -> None:
    """``snapshot save 999...9`` (400 characters, hypothesis found it in
    test_cli_hostile): an OSError traceback once, one line and exit 64 now."""
    from storage.snapshot.files import SnapshotError, Writer

    with pytest.raises(SnapshotError, match="^cannot create .*/9+: File name too long$"):
        Writer(str(tmp_path / ("9" * 400)))
    assert list(tmp_path.iterdir()) == []
