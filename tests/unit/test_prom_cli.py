"""``[clusters.X.prometheus]`` from the config to ``stordoc check`` (through Env.collect,
the one place a check reads a cluster): a bad URL or key is one line, exit 64; a real
check reads host facts from a loopback Prometheus and says what it cannot see."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.settings import SettingsError, parse_settings
from storage.hostfacts.prom import QUERIES
from tests.support.cli import run_main
from tests.support.prom_server import GARBAGE, FakeProm, FsSeries, Node

BASE = """
journal = "{j}"
[clusters.p]
[[clusters.p.hosts]]
name = "node1"
address = "127.0.0.2"
swift_devices_dir = "/srv/node"
[[clusters.p.hosts]]
name = "node2"
address = "127.0.0.3"
swift_devices_dir = "/srv/node"
[clusters.p.prometheus]
"""


@pytest.mark.parametrize("table,words", [
    ('url = "ftp://127.0.0.1:9090"', "scheme must be http or https"),
    ('url = "http://admin:pw@127.0.0.1:9090"', "credentials in the URL"),
    ('url = "http://127.0.0.1:9090/?x=1"', "a query or fragment"),
    ('url = "http://127.0.0.1:70000"', "not a URL"),
    ('url = "http:///api"', "no host in the URL"),
    ('url = " http://127.0.0.1:9090"', "blanks"),
    ('url = "http://127.0.0.1:9090"\nstale = 10', "clusters.p.prometheus.stale: unknown key"),
    ('url = "http://127.0.0.1:9090"\ntimeout_s = 0', "timeout_s"),
    ('url = "http://127.0.0.1:9090"\njob = "node\\"} or up{"', "job"),
    ('timeout_s = 3', "clusters.p.prometheus.url: required key missing"),
])
def test_bad_prometheus_settings_are_one_line_exit_64(tmp_path: Path, table: str,
                                                      words: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(BASE.format(j=tmp_path / "j.db") + table + "\n")
    rc, out, err = run_main("--config", str(cfg), "check", "--cluster", "p")
    assert rc == 64, (out, err)
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert words in err and "clusters.p.prometheus" in err
    assert "Traceback" not in err
    assert not (tmp_path / "j.db").exists()  # nothing changed


def test_settings_give_the_target_its_prometheus() -> None:
    s = parse_settings({"clusters": {"p": {"prometheus": {
        "url": "http://127.0.0.1:9090/prom", "stale_s": 60, "ssh_max_hosts": 0}}}})
    pt = s.clusters["p"].target("p").prometheus
    assert pt is not None and pt.url == "http://127.0.0.1:9090/prom"
    assert (pt.stale_s, pt.ssh_max_hosts, pt.job, pt.timeout_s) == (60, 0, "node", 10.0)
    with pytest.raises(SettingsError, match="unknown key"):
        parse_settings({"clusters": {"p": {"prometheus": {"url": "http://h", "x": 1}}}})


def _nodes() -> list[Node]:
    return [Node("127.0.0.2:9100", "node1", fs=[FsSeries("/srv/node/d1", "/dev/sdb")]),
            Node("127.0.0.3:9100", "node2", last=time.time() - 900,
                 fs=[FsSeries("/srv/node/d2", "/dev/sdb")]),
            Node("127.0.0.9:9100", "stranger")]


def test_check_reads_host_facts_from_prometheus(tmp_path: Path) -> None:
    fake = FakeProm(_nodes())
    with fake.serve() as url:
        cfg = tmp_path / "c.toml"
        cfg.write_text(BASE.format(j=tmp_path / "j.db")
                       + f'url = "{url}"\nstale_s = 300\nssh_max_hosts = 0\n')
        rc, out, err = run_main("--config", str(cfg), "check", "--cluster", "p", "--json")
    import json

    doc = json.loads(out)
    found = {(f["code"], f["entity"]): f for f in doc["findings"]}
    assert ("HOST_FACTS_STALE", "host node2") in found, found.keys()
    assert "stale since" in found["HOST_FACTS_STALE", "host node2"]["message"]
    assert any(c == "PROMETHEUS_UNMATCHED" and "127.0.0.9:9100" in f["message"]
               for (c, _), f in found.items())
    assert not any(c == "HOST_UNREACHABLE" for c, _ in found)  # no SSH was tried
    assert len(fake.queries) == len(QUERIES)
    assert rc == 1, err  # WARN


def test_check_with_prometheus_answering_garbage_is_one_line(tmp_path: Path) -> None:
    fake = FakeProm(_nodes())
    fake.bad["*"] = GARBAGE
    with fake.serve() as url:
        cfg = tmp_path / "c.toml"
        cfg.write_text(BASE.format(j=tmp_path / "j.db") + f'url = "{url}"\nssh_max_hosts = 0\n')
        rc, out, err = run_main("--config", str(cfg), "check", "--cluster", "p")
    assert rc == 1
    assert out.count("PROMETHEUS_") == 2, out  # the summary line and the incident's
    assert "1 finding (1 warn)" in out
    assert "not JSON" in out and "host facts unknown for 2: node1, node2" in out
    assert "Traceback" not in out + err
