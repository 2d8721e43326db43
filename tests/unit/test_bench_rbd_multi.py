"""RBD from many clients without a cluster: the job files fio's client sends (nothing
free-form may reach one: a job file can run commands), fio's client/server JSON (captured
from fio 3.33 with two servers on 127.0.0.2/3) split per client with fio's own sum kept,
and the per-second logs fio's client receives, produced here by a real local fio."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runbooks.bench import fio_client as F
from runbooks.bench import rbd_multi as M
from runbooks.bench.multi import aggregate_fields
from runbooks.bench.rbd import iter_json_objects
from runbooks.model import Refused

FIX = Path(__file__).parent.parent / "fixtures" / "bench"
SPECS = {"node1": "ip:127.0.0.2,19991", "node2": "ip:127.0.0.3,19991"}


def _job(**kw: object) -> str:
    args: dict[str, object] = dict(client="admin", pool="stordoc-bench", image="img-c1",
                                   mode="randread", bs=4096, iodepth=16, seconds=5,
                                   rwmixread=70, ops=None, steady=False, log_prefix=None)
    args.update(kw)
    return M.job_text(**args)  # type: ignore[arg-type]


def _opts(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_read_phase_is_verified_and_writes_carry_headers() -> None:
    r = _opts(_job(mode="randread"))
    assert r["verify"] == "crc32c" and r["verify_interval"] == "4096"
    assert "do_verify" not in r and r["rw"] == "randread" and r["ioengine"] == "rbd"
    w = _opts(_job(mode="randwrite"))
    assert w["verify"] == "crc32c" and w["do_verify"] == "0"  # headers, no verify pass
    p = _opts(_job(mode="seqwrite", prefill_size=256 << 20))
    assert p["rw"] == "write" and p["size"] == str(256 << 20) and p["bs"] == str(4 << 20)
    assert "time_based" not in p


def test_unverifiable_reads_are_not_claimed() -> None:
    assert not M.verified("randrw", 4096) and not M.verified("seqread", 6000)
    r = _opts(_job(mode="seqread", bs=6000))
    assert "verify" not in r  # fio would report every block as a mismatch


def test_steady_state_and_logs_options() -> None:
    j = _opts(_job(steady=True, log_prefix="/tmp/x/r1"))
    assert j["steadystate"].startswith("iops_slope:") and j["log_avg_msec"] == "1000"
    assert j["write_iops_log"] == "/tmp/x/r1"


@pytest.mark.parametrize("field,value", [
    ("pool", "p\nexec_prerun=touch /tmp/pwned"), ("pool", "p;id"), ("image", "${HOME}"),
    ("client", "admin\n[evil]"), ("pool", ""), ("pool", "p\u043e"),  # Cyrillic o
])
def test_free_form_values_never_reach_a_job_file(field: str, value: str) -> None:
    with pytest.raises(Refused):
        _job(**{field: value})


@given(st.text(max_size=40))
def test_any_pool_name_is_refused_or_plain(name: str) -> None:
    try:
        text = _job(pool=name)
    except Refused:
        return
    assert text.count("\n") == _job().count("\n") and "$" not in text


def test_server_listens_on_a_private_socket_never_tcp() -> None:
    d = "/tmp/stordoc-bench.abcdefghij"
    assert M.server_argv(d) == ["env", f"CEPH_CONF={d}/ceph.conf", "fio",
                                f"--server=sock:{d}/fio.sock"]
    with pytest.raises(Refused):
        M.server_socket("/tmp")  # only the run's private directory
    specs = M.client_specs(["node1", "node2"])
    assert specs == {"node1": "sock:c1.sock", "node2": "sock:c2.sock"}
    argv = M.client_argv({"node1": "/t/a.fio", "node2": "/t/b.fio"}, specs)
    assert argv == ["fio", "--output-format=json", "--client=sock:c1.sock", "/t/a.fio",
                    "--client=sock:c2.sock", "/t/b.fio"]
    assert not any("ip:" in x for x in argv)
    # fio's client names each server after the socket it connected to (seen with fio 3.33;
    # "All clients" carries the first one's name)
    doc = {"client_stats": [{"hostname": "c2.sock", "jobname": "stordoc"},
                            {"hostname": "c1.sock", "jobname": "stordoc"},
                            {"hostname": "c1.sock", "jobname": "All clients"}]}
    per, total = F.split_client_stats(doc, specs)
    assert per["node1"] is doc["client_stats"][1] and per["node2"] is doc["client_stats"][0]
    assert total is doc["client_stats"][2]


def test_client_stats_split_and_totals_equal_the_sum() -> None:
    doc = list(iter_json_objects((FIX / "fio_client_null_2clients.json").read_text()))[-1]
    per, total = F.split_client_stats(doc, SPECS)
    assert set(per) == {"node1", "node2"} and total is not None
    figs = {c: F.per_client_figures(e) for c, e in per.items()}
    assert figs["node1"]["ops"] == 5769466 + 5764360
    agg = aggregate_fields([{"client": c, **f} for c, f in figs.items()])
    fio_sum = F.per_client_figures(total)
    assert agg["ops"] == fio_sum["ops"] and agg["bytes"] == fio_sum["bytes"]


def test_series_from_real_fio_logs(tmp_path: Path) -> None:
    """fio (null engine, 3 s) writes the averaged logs; named as its client stores them."""
    prefix = tmp_path / "r1"
    subprocess.run(["fio", "--name=t", "--ioengine=null", "--rw=randrw", "--bs=4k",
                    "--size=64m", "--runtime=3", "--time_based", "--rate_iops=2000,1000",
                    f"--write_iops_log={prefix}", f"--write_bw_log={prefix}",
                    f"--write_lat_log={prefix}", "--log_avg_msec=1000",
                    "--output-format=json"], check=True, capture_output=True, timeout=60)
    for kind in ("iops", "bw", "lat"):
        (tmp_path / f"r1_{kind}.1.log").rename(tmp_path / f"r1_{kind}.1.log.127.0.0.2")
    series = F.series_from_logs(str(tmp_path), str(prefix), ["127.0.0.2", "127.0.0.9"])
    assert len(series) >= 2
    # read and write rows of the same second are summed: ~2000 + ~1000 IOPS
    assert all(2500 < s["ops_s"] < 3500 for s in series[:2])
    assert all(abs(s["mb_s"] - s["ops_s"] * 4096 / 2**20) < 0.2 * s["mb_s"] for s in series[:2])


def test_verify_examples_from_fio_text() -> None:
    text = ("<127.0.0.2> crc32c: verify failed at file stordoc-bench/img offset 8192000, "
            "length 4096\n<127.0.0.2>        Expected CRC: 2b1465d0\nother\n")
    ex = F.verify_examples(text)
    assert len(ex) == 1 and "verify failed" in ex[0]


class _Fwd:
    def __init__(self, answers: list[bool]) -> None:
        self.answers, self.remote_path = answers, "/tmp/stordoc-bench.abcdefghij/fio.sock"

    def reachable(self) -> bool:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def _fleet(socket_there: bool) -> Any:
    from types import SimpleNamespace

    from storage.runner import CommandResult

    def run(host: str, argv: list[str], timeout_s: float = 30) -> CommandResult:
        assert argv[:2] == ["test", "-S"]
        return CommandResult(host, tuple(argv), 0 if socket_there else 1, "", "", 0.0)

    return SimpleNamespace(runner=SimpleNamespace(run=run))


def test_wait_ready_names_an_sshd_that_will_not_forward(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from types import SimpleNamespace

    from runbooks.bench import fio_jobs

    monkeypatch.setattr(fio_jobs.time, "sleep", lambda s: None)
    alive = [SimpleNamespace(client="node1", running=True, proc=SimpleNamespace(lines=list))]
    # listening at the second try: ready
    fio_jobs.wait_ready(_fleet(True), {"node1": _Fwd([False, True])}, alive)  # type: ignore[dict-item]
    # the socket is there on the host, yet no channel reaches it: the sshd refuses
    with pytest.raises(Refused, match="AllowStreamLocalForwarding"):
        fio_jobs.wait_ready(_fleet(True), {"node1": _Fwd([False])}, alive)  # type: ignore[dict-item]
    # no socket and the server gone: it did not come up
    dead = [SimpleNamespace(client="node1", running=False,
                            proc=SimpleNamespace(lines=lambda: ["stordoc-ready 7", "fio: boom"]))]
    with pytest.raises(Refused, match="did not come up.*fio: boom"):
        fio_jobs.wait_ready(_fleet(False), {"node1": _Fwd([False])}, dead)  # type: ignore[dict-item]
