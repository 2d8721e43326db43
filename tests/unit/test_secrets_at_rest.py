"""Issue 26.7: a secret pasted into a mute reason or a bench option is never stored raw
(the journal is read back byte for byte), ``mute --list`` never prints one (not even from
a row an older version stored), and the journal, its -wal/-shm/.lock and the lab's config
are 0600 in 0700 directories; an older world-readable journal of ours is tightened, said."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

import lab.config as labconfig
from core.settings import parse_settings
from storage.journal import Journal
from storage.mutes import add_mute, list_mutes
from tests.support.cli import cli
from tests.support.fake_slack import TOKEN, BotHarness

OPERATOR = "UOPERATOR1"
CEPH_KEY = "AQBzZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo0NTY3OA"  # cephx-shaped
ALERT_TOKEN = "plain-words-secret-42"  # configured, shaped like nothing


def _dump(db: Path) -> str:
    """Every row of every table, as SQL text (what a reader of the file would get)."""
    c = sqlite3.connect(db)
    try:
        return "\n".join(c.iterdump())
    finally:
        c.close()


def _mode(p: Path | str) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    harness = BotHarness(s, {"lab": {"operators": [OPERATOR]}}, str(tmp_path / "bot.db"),
                         throttle_s=0.05)
    yield harness
    harness.close()


def test_bot_mute_reason_and_bench_options_never_stored_raw(h: BotHarness,
                                                            tmp_path: Path) -> None:
    h.slack.slash(f"mute OSD_DOWN_OUT osd.1 for 2h key {CEPH_KEY} and {TOKEN}", OPERATOR)
    h.wait_post("muted `OSD_DOWN_OUT osd.1` on lab")
    (m,) = list_mutes(h.env.journal, "lab")
    assert CEPH_KEY not in m.reason and TOKEN not in m.reason and "key ***" in m.reason
    for opt in (f"pool={CEPH_KEY}", f"container={CEPH_KEY}"):
        h.slack.slash(f"bench rados {opt}", OPERATOR)
        h.wait_post("looks like a secret", ("chat.postEphemeral",))
    h.slack.slash("mute list", OPERATOR)
    h.wait_post("OSD_DOWN_OUT osd.1")
    time.sleep(0.3)  # the audit rows of the refusals
    dump = _dump(tmp_path / "bot.db")
    assert "bot_buttons" in dump and "mutes" in dump
    assert CEPH_KEY not in dump and TOKEN not in dump
    for c in h.fake.calls:
        assert CEPH_KEY not in str(c.params)


def test_cli_mute_stores_and_lists_no_secret(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'journal = "{db}"\ndefault_cluster = "lab"\n'
                   f'[alerts.token]\nvalue = "{ALERT_TOKEN}"\n'
                   '[clusters.lab.ceph]\nconf = "/nonexistent/ceph.conf"\n')
    r = cli(cfg, "mute", "OSD_DOWN_OUT", "osd.1", "--for", "4h", "--reason",
            f"swap; old key={CEPH_KEY} token {ALERT_TOKEN}", timeout=300, columns=None)
    assert r.returncode == 0, r.stderr
    # a row an older stordoc stored raw
    c = sqlite3.connect(db)
    c.execute("insert into mutes (cluster, code, entity, until, by, reason, created_at) "
              "values ('lab', 'PGS_STUCK', null, ?, 'old', ?, ?)",
              (time.time() + 3600, f"raw {CEPH_KEY}", time.time()))
    c.commit()
    c.close()
    out = cli(cfg, "mute", "--list", timeout=300, columns=None)
    assert out.returncode == 0 and "swap; old key=***" in out.stdout, out.stdout
    assert "raw ***" in out.stdout
    assert CEPH_KEY not in out.stdout + out.stderr and ALERT_TOKEN not in out.stdout
    dump = _dump(db)
    assert ALERT_TOKEN not in dump and f"old key={CEPH_KEY}" not in dump


def test_new_journal_files_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        d = tmp_path / "new" / "dir"
        j = Journal(d / "j.db")
        add_mute(j, "lab", "OSD_DOWN_OUT", None, time.time() + 60, "me", "why")
        files = [d / n for n in ("j.db", "j.db-wal", "j.db-shm", "j.db.lock")]
        assert all(f.exists() for f in files)
        assert {str(f): _mode(f) for f in files} == {str(f): 0o600 for f in files}
        assert _mode(d) == 0o700 and _mode(d.parent) == 0o700
        assert j.tightened == []
        j.close()
    finally:
        os.umask(old)


def test_older_world_readable_journal_is_tightened_and_said(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "j.db"
    c = sqlite3.connect(db)
    c.execute("pragma journal_mode=wal")
    c.execute("create table t (a)")
    c.commit()
    for n in ("j.db", "j.db-wal", "j.db-shm"):
        os.chmod(tmp_path / n, 0o644)
    j = Journal(db)
    c.close()
    assert _mode(db) == 0o640 and _mode(tmp_path / "j.db-wal") == 0o640
    assert len(j.tightened) >= 2
    assert f"journal file {db} was readable by every user (0644); now 0640" in j.tightened[0]
    assert any("readable by every user" in r.getMessage() for r in caplog.records)
    j.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a file someone else's")
def test_someone_elses_journal_is_not_chmodded(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    sqlite3.connect(db).close()
    os.chmod(db, 0o644)
    os.chown(db, 65534, 65534)
    j = Journal(db)
    assert _mode(db) == 0o644 and j.tightened == []
    j.close()


def test_lab_config_with_its_inline_key_is_0600(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "stordoc.toml"
    p.write_text("old")
    os.chmod(p, 0o644)
    monkeypatch.setattr(labconfig, "config_text", lambda lab: 'key = { value = "k" }\n')
    monkeypatch.setattr(labconfig, "prom_config_text", lambda lab: 'key = { value = "k" }\n')
    state: dict[str, object] = {}
    prom = tmp_path / "stordoc-prom.toml"  # with the host metrics: the same key inline
    fake = SimpleNamespace(config_path=p, prom_config_path=prom, read_state=lambda: state,
                           swift_cluster=SimpleNamespace(write_start_scripts=lambda: None))
    labconfig.write_config(fake)  # type: ignore[arg-type]
    assert p.read_text() == 'key = { value = "k" }\n' and _mode(p) == 0o600
    assert not prom.exists()
    p.unlink()
    state["metrics"] = True
    labconfig.write_config(fake)  # type: ignore[arg-type]
    assert _mode(p) == 0o600 and _mode(prom) == 0o600
