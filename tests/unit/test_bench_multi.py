"""Multi-client benchmarks without a cluster: client names against the configured hosts,
the launcher's start barrier and pid-checked signals with real local processes, rados
bench output captured on the lab (a verification failure, a run stopped by SIGINT), the
aggregation and the minimal client configuration."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from runbooks.bench import clients as C
from runbooks.bench.measure import fio_steadystate_options, steady_reached
from runbooks.bench.model import BenchResult
from runbooks.bench.multi import LiveSeries, aggregate_fields, clients_line, slowest
from runbooks.bench.rados import from_last_row
from runbooks.model import Refused, RunContext
from storage.journal import Journal
from storage.rados_io import parse_rados_bench
from storage.runner import LocalRunner
from storage.targets import CephTarget, ClusterTarget, HostTarget
from stordoc.cli import main

FIX = Path(__file__).parent.parent / "fixtures" / "bench"
HOSTS = tuple(HostTarget(f"node{i}", f"127.0.0.{i + 1}") for i in range(1, 5))


@pytest.fixture
def ctx(tmp_path: Path) -> RunContext:
    return RunContext("c1", ClusterTarget("c1", hosts=HOSTS), Journal(str(tmp_path / "j.db")))


# ---------------------------------------------------------------- client names


def test_clients_are_configured_hosts(ctx: RunContext) -> None:
    assert [h.address for h in C.resolve_clients(ctx, ["node3", "node1"])] == \
        ["127.0.0.4", "127.0.0.2"]
    assert [h.name for h in C.resolve_clients(ctx, ["*"])] == ["node1", "node2", "node3",
                                                               "node4"]
    assert [h.name for h in C.resolve_clients(ctx, ["*"], ["node2"])] == ["node2"]


@pytest.mark.parametrize("names,msg", [
    (["node1", "nodeX"], "unknown client 'nodeX'"),
    (["n\u043ede1"], "unknown client 'n\\u043ede1'"),  # Cyrillic o: a look-alike
    (["node1", "node1"], "named twice"),
    (["127.0.0.2"], "unknown client '127.0.0.2'"),  # names, not addresses
    (["node1; rm -rf /"], "unknown client"),
    ([], "no clients named"),
    (["node1"] * 65, "at most 64"),
])
def test_bad_client_names_refused(ctx: RunContext, names: list[str], msg: str) -> None:
    with pytest.raises(Refused) as e:
        C.resolve_clients(ctx, names)
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_no_hosts_configured(tmp_path: Path) -> None:
    c = RunContext("c1", ClusterTarget("c1"), Journal(str(tmp_path / "j.db")))
    with pytest.raises(Refused, match="no hosts configured"):
        C.resolve_clients(c, ["*"])


# ---------------------------------------------------------------- the launcher


def _fleet(tmp_path: Path, n: int = 3) -> C.Fleet:
    return C.Fleet(list(HOSTS[:n]), LocalRunner(), owns_runner=True)


def test_common_start_and_private_dirs(tmp_path: Path) -> None:
    """Every command waits for its "go"; all are released back to back; the private
    directories hold the staged files and are gone after close()."""
    fleet = _fleet(tmp_path)
    with fleet:
        fleet.stage(lambda d: {"x.conf": f"dir={d}\n".encode()})
        assert all(C.STAGE_RE.match(d) for d in fleet.dirs.values())
        d1 = fleet.dirs["node1"]
        assert Path(d1, "x.conf").read_text() == f"dir={d1}\n"
        assert oct(os.stat(d1).st_mode & 0o777) == "0o700"
        cmds = {n: ["sh", "-c", 'date +%s.%N; cat "$1/x.conf"', "x", fleet.dirs[n]]
                for n in fleet.names}
        batch = fleet.launch(cmds, 30, release=False)
        time.sleep(0.5)
        assert all(b.running and b.pid for b in batch)  # ready, waiting for "go"
        t_go = fleet.release(batch)
        assert fleet.wait_all(batch, 30)
        out = {b.client: [x for x in b.proc.lines() if not x.startswith("stordoc-ready ")]
               for b in batch}
        assert all(b.proc.lines()[0] == f"stordoc-ready {b.pid}" for b in batch)
        starts = [float(out[b.client][0]) for b in batch]
        assert all(s >= t_go - 0.05 for s in starts)
        assert max(starts) - min(starts) < 0.5  # released together (loaded machine)
        assert [out[n][1] for n in fleet.names] == [f"dir={fleet.dirs[n]}"
                                                    for n in fleet.names]
        dirs = list(fleet.dirs.values())
    assert not [d for d in dirs if os.path.exists(d)]


def test_signal_only_our_command_and_stop(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, 2)
    with fleet:
        fleet.stage({})
        cmds = {n: ["sh", "-c", 'trap "echo got-int; exit 5" INT; while :; do sleep 0.1; done',
                    "x", fleet.dirs[n]] for n in fleet.names}
        batch = fleet.launch(cmds, 60)
        # a pid whose command line does not name the run's directory is never signalled
        other = C.Launched("node1", batch[1].proc, batch[1].pid)
        fleet.dirs["node1"], saved = "/tmp/stordoc-bench.notthisone", fleet.dirs["node1"]
        fleet.signal([other], "INT")
        time.sleep(0.5)
        assert batch[1].running
        fleet.dirs["node1"] = saved
        assert sorted(fleet.still_running(batch)) == ["node1", "node2"]
        fleet.signal(batch, "INT")
        assert fleet.wait_all(batch, 20)
        assert [b.proc.lines()[-1] for b in batch] == ["got-int", "got-int"]
        assert fleet.still_running(batch) == []


def test_a_client_that_cannot_start_stops_the_others(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, 2)
    with fleet:
        fleet.stage({})
        cmds = {"node1": ["sleep", "30"], "node2": ["sleep", "30"]}
        # node2's launcher never says ready: its sh exits at once (bad timeout value)
        real = fleet.runner.spawn

        def spawn(host: str, argv: Any, on_line: Any = None) -> Any:
            if host == "node2":
                argv = ["sh", "-c", "echo no such tool; exit 127"]
            return real(host, argv, on_line)

        fleet.runner.spawn = spawn  # type: ignore[method-assign]
        with pytest.raises(Refused, match="client node2 did not start sleep: no such tool"):
            fleet.launch(cmds, 60)
        assert not any(b.running for b in fleet.launched)
        assert fleet.launched[0].proc.rc == 97  # released with "no": never ran sleep


def test_probe_refuses_a_missing_tool(tmp_path: Path) -> None:
    with _fleet(tmp_path, 2) as fleet, \
            pytest.raises(Refused, match="client node1 cannot run no-such-tool-xyz.*nothing "
                                         "was started"):
        fleet.probe([["true"], ["no-such-tool-xyz", "--version"]])


# ---------------------------------------------------------------- client configuration


class FakeRados:
    def __init__(self, conf: dict[str, str]) -> None:
        self.conf = conf

    def get_fsid(self) -> str:
        return "cee6aee5-ab64-4329-926e-19fc4acece91"

    def conf_get(self, k: str) -> str:
        return self.conf.get(k, "")


def test_minimal_conf_and_one_key(tmp_path: Path) -> None:
    kr = tmp_path / "kr"
    kr.write_text("[client.other]\n\tkey = AQBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB==\n"
                  "[client.admin]\n\tkey = AQDKYwZrIxjAEBAASElQGmJP+bVb/zqPv4EpGw==\n"
                  '\tcaps mon = "allow *"\n')
    t = CephTarget("/etc/ceph/ceph.conf", str(kr), "client.admin")
    files = C.ceph_client_files(t, FakeRados({"mon_host": "[v2:127.0.0.1:24000]",
                                              "auth_client_required": "cephx"}), "/tmp/D")
    conf = files["ceph.conf"].decode()
    assert "mon_host = [v2:127.0.0.1:24000]" in conf and "fsid = cee6aee5" in conf
    assert "keyring = /tmp/D/keyring" in conf and "AQ" not in conf
    assert files["keyring"].decode() == \
        "[client.admin]\n\tkey = AQDKYwZrIxjAEBAASElQGmJP+bVb/zqPv4EpGw==\n"  # only its key
    with pytest.raises(Refused, match="no key for client.nobody"):
        C.ceph_client_files(CephTarget("x", str(kr), "client.nobody"),
                            FakeRados({"mon_host": "a"}), "/tmp/D")
    with pytest.raises(Refused, match="line break"):
        C.ceph_client_files(t, FakeRados({"mon_host": "a\n[client.admin]\nkeyring=/x"}),
                            "/tmp/D")
    with pytest.raises(Refused, match="cannot read the keyring"):
        C.ceph_client_files(CephTarget("x", str(tmp_path / "none"), "client.admin"),
                            FakeRados({"mon_host": "a"}), "/tmp/D")


# ---------------------------------------------------------------- rados bench output


def test_verification_failure_is_parsed() -> None:
    out = parse_rados_bench((FIX / "rados_bench_seq_mismatch_pacific.txt").read_text())
    assert out.complete and out.ops == 4807
    assert out.mismatches == ["benchmark_data_vm_13952_object4703"]
    assert out.errors == []  # the EIO lines only repeat the mismatch


def test_sigint_run_takes_its_last_row() -> None:
    text = (FIX / "rados_bench_write_sigint_pacific.txt").read_text()
    out = parse_rados_bench(text)
    assert not out.complete and out.object_prefix == "benchmark_data_vm_6101"
    last = from_last_row(out)
    row = out.per_second[-1]
    assert last.complete and last.ops == row["finished"] and last.total_time_s == row["sec"]
    assert last.bandwidth_mb_s == row["avg_mb_s"] and last.lat_avg_s == row["avg_lat_s"]
    full = parse_rados_bench((FIX / "rados_bench_write_4k.txt").read_text())
    assert from_last_row(full) is full


# ---------------------------------------------------------------- aggregation


def test_live_series_sums_seconds_every_client_reported() -> None:
    ls = LiveSeries(["a", "b"])
    for k in range(1, 5):
        ls.add("a", k, 100, 100 * 4096, 100 * 2.0)
    for k in range(1, 3):
        ls.add("b", k, 50, 50 * 4096, 50 * 4.0)
    assert ls.whole_seconds() == 2 and ls.ops_per_second() == [150, 150]
    ls.done("b")  # b ended early (e.g. a seq read that ran out of objects)
    assert ls.ops_per_second() == [150, 150, 100, 100]
    ser = ls.series(3.2)
    assert ser[0]["lat_ms"] == pytest.approx((200 + 200) / 150)
    assert [x["partial"] for x in ser] == [0.0, 0.0, 0.0, 1.0]
    assert ls.totals() == (500, 500 * 4096)


def test_totals_are_sums_and_the_slowest_is_named() -> None:
    per = [{"client": "n1", "ops": 300, "bytes": 300 * 4096, "ops_s": 100.0, "mb_s": 0.39,
            "lat_avg_ms": 10.0, "lat_max_ms": 50.0, "elapsed_s": 3.0},
           {"client": "n2", "ops": 100, "bytes": 100 * 4096, "ops_s": 33.3, "mb_s": 0.13,
            "lat_avg_ms": 30.0, "lat_max_ms": 90.0, "elapsed_s": 3.01}]
    agg = aggregate_fields(per)
    assert agg["ops"] == 400 and agg["mb_s"] == pytest.approx(0.52)
    assert agg["ops_s"] == pytest.approx(133.3) and agg["lat_max_ms"] == 90.0
    assert agg["lat_avg_ms"] == pytest.approx((300 * 10 + 100 * 30) / 400)
    assert agg["elapsed_s"] == 3.01
    slow = slowest(per)
    assert slow is not None and slow["client"] == "n2" and slow["below_mean_pct"] == 50.0
    assert slowest(per[:1]) is None
    r = BenchResult("c", "rados", "rados-bench", "write", "g", 1, {}, {}, 0.0, ops_s=133.3,
                    mb_s=0.52, extra={"clients": per, "slowest_client": slow})
    line = clients_line(r)
    assert line is not None and line.startswith("2 clients: n1 100.0 ops/s")
    assert "slowest n2 (50.0% below the mean)" in line
    assert clients_line(BenchResult("c", "rados", "native", "write", "g", 1, {}, {}, 0.0)) \
        is None


def test_steady_rule_live_and_for_fio() -> None:
    assert not steady_reached([100, 400, 800])
    assert steady_reached([50, 400, 402, 398, 401])
    assert not steady_reached([50, 100, 200, 400, 800, 1600])
    assert fio_steadystate_options() == {"steadystate": "iops_slope:2%",
                                         "steadystate_duration": "3",
                                         "steadystate_ramp_time": "1"}


# ---------------------------------------------------------------- CLI and settings

CONF = """
journal = "{j}"
[clusters.c1.ceph]
conf = "/nonexistent/ceph.conf"
timeout = 1
[[clusters.c1.hosts]]
name = "node1"
address = "127.0.0.9"
port = 9
timeout = 1
[bench]
clients = {clients}
"""


def test_cli_clients_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "c.toml"
    p.write_text(CONF.format(j=tmp_path / "j.db", clients='["node1"]'))
    for argv, msg in (
            (["--clients", "node1,nodeX"], "unknown client 'nodeX'"),
            (["--clients", "node1,"], "clients are configured host names"),
            (["--clients", "node1", "--engine", "native"], "--engine native runs on this "
                                                           "host only"),
            (["--clients"], "client node1 is unreachable")):  # [bench] clients
        with pytest.raises(SystemExit) if msg.startswith("clients are") else \
                _nothing():
            rc = main(["-c", str(p), "bench", "rados", *argv, "--yes"])
            # a malformed request is a usage error; an unreachable client is a refusal
            assert rc == (4 if "unreachable" in msg else 64), (argv, rc)
        out = capsys.readouterr()
        assert msg in out.err and "Traceback" not in out.err, (argv, out.err)
    with pytest.raises(SystemExit) as e:  # limits measures hosts (--host), no clients
        main(["-c", str(p), "bench", "limits", "--clients", "node1", "--yes"])
    assert e.value.code == 64


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def test_settings_bench_clients_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    for bad, msg in (('["node1", "node1"]', "a host named twice"),
                     ('["node 1"]', "not a host name")):
        p = tmp_path / "c.toml"
        p.write_text(CONF.format(j=tmp_path / "j.db", clients=bad))
        assert main(["-c", str(p), "bench", "history"]) == 64
        assert msg in capsys.readouterr().err


# ---------------------------------------------------------------- efficiency


def _limit_row(host: str, net: float, w: float, r: float, osds: list[int]) -> dict[str, Any]:
    return {"group_id": "g1", "extra": {"host": host, "osds": osds, "net": {"mb_s": net},
                                        "disk": {"write_mb_s": w, "read_mb_s": r}}}


def test_efficiency_of_many_clients_against_the_summed_limits() -> None:
    from runbooks.bench.limits import efficiency, efficiency_line

    rows = [_limit_row("node1", 100, 50, 80, [0]), _limit_row("node2", 100, 50, 80, [1]),
            _limit_row("node3", 100, 50, 80, [2]), _limit_row("client9", 40, 0, 0, [])]
    base: dict[str, Any] = {"params": {}, "fingerprint_fields": {}, "started_at": 0.0}
    w = BenchResult(cluster="c", kind="rados", engine="rados-bench", workload="write",
                    group_id="g", rep=1, mb_s=30.0, **base,
                    extra={"clients": [{"client": "node1"}, {"client": "client9"}]})
    e = efficiency(w, rows, 3)
    assert e is not None
    # clients 100 + 40; OSD hosts' network 300 / 3 replicas; disks 150 / 3 replicas
    assert e["bounds"] == {"clients' network": 140.0, "OSD hosts' network": 100.0,
                           "disks": 50.0}
    assert e["bound_by"] == "disks" and e["efficiency"] == pytest.approx(0.6)
    line = efficiency_line(e)
    assert line and line.startswith("efficiency 60% of 50.0 MB/s (disks limit;")
    rd = BenchResult(cluster="c", kind="rbd", engine="fio-client", workload="randread 4K",
                     group_id="g", rep=1, mb_s=70.0, extra=w.extra, **base)
    e2 = efficiency(rd, rows, 3)
    assert e2 is not None and e2["bound_by"] == "clients' network"  # reads: no division
    assert e2["bounds"]["disks"] == 240.0
    # a client without a measured network limit is named, not guessed
    e3 = efficiency(BenchResult(cluster="c", kind="rados", engine="x", workload="write",
                                group_id="g", rep=1, mb_s=1.0, **base,
                                extra={"clients": [{"client": "node7"}]}), rows, 3)
    assert e3 is not None and e3["unmeasured_clients"] == ["node7"]
    assert "no network limit for node7" in (efficiency_line(e3) or "")
    assert efficiency(w, [], 3) is None
