"""Settings: a good file loads into one typed model; bad ones name the bad key."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings import SettingsError, load_settings, parse_settings
from tests.support.cli import ROOT, cli

GOOD = """
journal = "/tmp/j.db"
default_cluster = "a"
[clusters.a.ceph]
conf = "/etc/ceph/ceph.conf"
timeout = 3
[[clusters.a.hosts]]
name = "n1"
address = "127.0.0.2"
port = 2222
osd_start = ["ceph-osd", "-i", "{id}"]
[clusters.b.swift]
swift_dir = "/etc/swift"
key = { env = "STORDOC_TEST_SWIFT_KEY" }
"""


def test_example_config_loads() -> None:
    s = load_settings(ROOT / "config.example.toml")
    assert s.cluster_name(None) == "prod"
    t = s.clusters["prod"].target("prod")
    assert t.ceph is not None and t.ceph.timeout_s == 10
    assert t.hosts[0].osd_start == ("systemctl", "start", "ceph-osd@{id}")


def test_good_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "c.toml"
    p.write_text(GOOD)
    monkeypatch.setenv("STORDOC_TEST_SWIFT_KEY", "s3cret")
    s = load_settings(p)
    a = s.clusters["a"].target("a")
    assert a.ceph is not None and a.ceph.timeout_s == 3.0
    assert a.hosts[0].port == 2222 and a.hosts[0].osd_start == ("ceph-osd", "-i", "{id}")
    b = s.clusters["b"].target("b")
    assert b.swift is not None and b.swift.key == "s3cret"
    assert s.cluster_name("b") == "b"


def test_missing_key_is_named(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('[clusters.a.ceph]\nkeyring = "/x"\n')
    with pytest.raises(SettingsError) as e:
        load_settings(p)
    assert "clusters.a.ceph.conf: required key missing" in str(e.value)


def test_wrong_type_is_named(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('[clusters.a.ceph]\nconf = "/x"\ntimeout = "soon"\n')
    with pytest.raises(SettingsError) as e:
        load_settings(p)
    assert "clusters.a.ceph.timeout" in str(e.value)
    assert "number" in str(e.value)


def test_unknown_key_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('[clusters.a.ceph]\nconf = "/x"\ntimeuot = 3\n')
    with pytest.raises(SettingsError, match=r"clusters\.a\.ceph\.timeuot: unknown key"):
        load_settings(p)


def test_bad_default_cluster_and_unknown_cluster() -> None:
    with pytest.raises(SettingsError, match="default_cluster"):
        parse_settings({"default_cluster": "zz", "clusters": {"a": {}}})
    s = parse_settings({"clusters": {"a": {}, "b": {}}})
    with pytest.raises(SettingsError, match="several clusters"):
        s.cluster_name(None)
    with pytest.raises(SettingsError, match="unknown cluster 'c'"):
        s.cluster_name("c")


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text("[clusters\n")
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_settings(p)
    with pytest.raises(SettingsError, match="no such config file"):
        load_settings(tmp_path / "nope.toml")


def test_cli_reports_bad_config_in_one_line_without_traceback(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('[clusters.a.ceph]\nconf = "/x"\ntimeout = -1\n')
    r = cli(p, "check", timeout=60, columns=None)
    assert r.returncode == 64
    assert "clusters.a.ceph.timeout" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
