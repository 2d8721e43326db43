"""``check --all`` over 50 clusters from a real TOML: two are dead (a monitor port nobody
listens on, one that accepts TCP and never answers: real librados against them), the
others are served by saved snapshots through the ``Env.collect`` seam. Every healthy line
is printed, before the dead ones' (configured first), each dead one is one line, the exit
status is the worst; bad timeouts and no clusters are one line, exit 64."""

from __future__ import annotations

import base64
import os
import socket
import struct
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.env import Env
from core.service import fleet
from storage.targets import ClusterTarget
from tests.support.cli import run_main
from tests.support.fixture_snapshots import FIXTURES

HEALTHY = 48


def _keyring(path: Path) -> None:
    """A well-formed cephx key nobody knows (librados needs one to try the monitors)."""
    key = struct.pack("<HIIH", 1, 0, 0, 16) + os.urandom(16)
    path.write_text(f"[client.admin]\n\tkey = {base64.b64encode(key).decode()}\n")


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()  # nobody listens on it now
    return port


@pytest.fixture
def silent_mon() -> Any:
    """Accepts TCP connections (the kernel's backlog) and never says a word."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    yield int(s.getsockname()[1])
    s.close()


def _write_config(tmp: Path, silent_port: int) -> Path:
    _keyring(tmp / "keyring")
    parts = [f'journal = "{tmp / "j.db"}"\n', "[check]\nparallel = 8\n"]
    for name, port in (("dead-refused", _free_port()), ("dead-silent", silent_port)):
        conf = tmp / f"{name}.conf"
        conf.write_text(f"[global]\nmon_host = 127.0.0.1:{port}\n"
                        "auth_client_required = cephx\n")
        parts.append(f"[clusters.{name}]\ncheck_timeout_s = 2\n"
                     f'[clusters.{name}.ceph]\nconf = "{conf}"\n'
                     f'keyring = "{tmp / "keyring"}"\ntimeout = 6\n')
    for n in range(HEALTHY):
        parts.append(f'[clusters.c{n:02d}.swift]\nswift_dir = "{tmp}"\n')
    cfg = tmp / "stordoc.toml"
    cfg.write_text("".join(parts))
    return cfg


def test_fifty_clusters_one_dead_one_silent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            silent_mon: int) -> None:
    from core.service.snapshots import load

    cfg = _write_config(tmp_path, silent_mon)
    snaps = [load(str(FIXTURES / "reef" / n)).outcome.snapshot
             for n in ("healthy", "osd-out")]
    real = Env.collect

    def collect(self: Env, target: ClusterTarget, host_facts: bool = True) -> Any:
        if target.name.startswith("dead-"):
            return real(self, target, host_facts)  # librados against a dead monitor
        return replace(snaps[int(target.name[1:]) % 2], cluster=target.name)

    monkeypatch.setattr(Env, "collect", collect)
    done: list[tuple[int, str, str]] = []
    th = threading.Thread(target=lambda: done.append(
        run_main("check", "--config", str(cfg), "--all", "--no-record")), daemon=True)
    th.start()
    th.join(120)  # not a timing goal: a hang must fail the test, not the whole session
    assert done, "check --all did not finish"
    rc, out, err = done[0]
    lines = [ln for ln in out.splitlines() if not ln.startswith("  ")]  # not wrapped rows
    assert rc == 3, out + err
    healthy = [ln for ln in lines if ln.split(" ", 2)[1:2] and
               ln.split(" ", 2)[1].rstrip(":").startswith("c")]
    assert sorted(ln.split(" ", 2)[1].rstrip(":") for ln in healthy) == \
        [f"c{n:02d}" for n in range(HEALTHY)], out
    dead = [ln for ln in lines if ln.startswith("dead-")]
    assert sorted(dead) == [
        "dead-refused: unreachable after 2s (no answer within its check timeout)",
        "dead-silent: unreachable after 2s (no answer within its check timeout)"], out
    # configured first, printed last: a dead cluster delays no other line
    assert lines.index(dead[0]) > max(lines.index(ln) for ln in healthy), out
    assert len(lines) == HEALTHY + 2, out
    assert fleet.abandoned(), "the dead clusters' checks were given up on"


def test_json_lists_every_cluster_in_config_order(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path, silent_mon: int) -> None:
    import json

    from core.service.snapshots import load

    cfg = _write_config(tmp_path, silent_mon)
    snap = load(str(FIXTURES / "reef" / "healthy")).outcome.snapshot
    real = Env.collect

    def collect(self: Env, target: ClusterTarget, host_facts: bool = True) -> Any:
        if target.name.startswith("dead-"):
            return real(self, target, host_facts)
        return replace(snap, cluster=target.name)

    monkeypatch.setattr(Env, "collect", collect)
    rc, out, _ = run_main("check", "--config", str(cfg), "--all", "--json", "--no-record")
    d = json.loads(out)
    assert rc == 3 and d["exit_code"] == 3
    assert [c["cluster"] for c in d["clusters"]] == \
        ["dead-refused", "dead-silent"] + [f"c{n:02d}" for n in range(HEALTHY)]
    assert d["clusters"][0]["status"] == "unreachable" and "after 2s" in \
        d["clusters"][0]["error"]
    assert all(c["status"] != "unreachable" and "findings" in c for c in d["clusters"][2:])


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "-inf", "1e20",
                                   "100000000000000000000"])
@pytest.mark.parametrize("where", ["cluster", "default"])
def test_bad_check_timeout_is_one_settings_line(tmp_path: Path, value: str,
                                                where: str) -> None:
    cfg = tmp_path / "stordoc.toml"
    body = f'journal = "{tmp_path / "j.db"}"\n'
    if where == "cluster":
        body += f"[clusters.a]\ncheck_timeout_s = {value}\n"
    else:
        body += f"[check]\ncluster_timeout_s = {value}\n[clusters.a]\n"
    cfg.write_text(body)
    rc, out, err = run_main("check", "--config", str(cfg), "--all")
    key = "clusters.a.check_timeout_s" if where == "cluster" else "check.cluster_timeout_s"
    assert rc == 64 and out == "", (out, err)
    assert len(err.strip().splitlines()) == 1 and key in err and "Traceback" not in err, err
    assert not (tmp_path / "j.db").exists()


def test_all_with_no_clusters_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\n[clusters]\n')
    rc, out, err = run_main("check", "--config", str(cfg), "--all")
    assert rc == 64 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
    assert "no clusters configured" in err


def test_check_many_yields_each_when_ready_and_bounds_parallelism() -> None:
    """The scheduler alone: a cluster that never answers is cut at its timeout, the
    others are not held behind it, at most ``parallel`` run at once."""
    gate = threading.Event()
    live: list[int] = [0, 0]  # now, most at once
    lock = threading.Lock()

    def check(name: str) -> Any:  # the scheduler passes it through untouched
        with lock:
            live[0] += 1
            live[1] = max(live[1], live[0])
        try:
            if name == "hang":
                gate.wait(30)
            return name
        finally:
            with lock:
                live[0] -= 1

    names = ["hang"] + [f"n{i}" for i in range(20)]
    got = list(fleet.check_many(names, check, lambda n: 0.5 if n == "hang" else 30, 3))
    gate.set()
    assert [r.cluster for r in got][-1] == "hang" and got[-1].timed_out
    assert sorted(r.cluster for r in got[:-1]) == sorted(names[1:])
    assert all(r.outcome == r.cluster for r in got[:-1])
    assert live[1] <= 3


def test_a_timeout_is_said_while_other_results_keep_coming() -> None:
    """Results waiting one after another (a slow terminal) must not hide a deadline that
    passed: the hung cluster's line comes when its time is up, not after the last one."""
    gate = threading.Event()

    def check(name: str) -> Any:
        if name == "hang":
            gate.wait(30)
        return name

    names = ["hang"] + [f"s{i}" for i in range(60)]
    got = []
    for r in fleet.check_many(names, check, lambda n: 0.3 if n == "hang" else 30, 8):
        got.append(r.cluster)
        time.sleep(0.02)  # the caller prints it; the others' results queue up meanwhile
    gate.set()
    assert sorted(got) == sorted(names)
    assert got.index("hang") < len(got) - 10, got


def test_the_process_exits_without_waiting_for_an_abandoned_check(
        tmp_path: Path, silent_mon: int) -> None:
    """The real process: a dead cluster whose librados call would block for a minute
    (its Ceph timeout) is cut at its 1 s budget and the process exits then, not when
    the abandoned call ends (the interpreter joins thread pools at exit)."""
    import subprocess
    import sys

    _keyring(tmp_path / "keyring")
    (tmp_path / "dead.conf").write_text(f"[global]\nmon_host = 127.0.0.1:{silent_mon}\n")
    cfg = tmp_path / "stordoc.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\n'
                   f"[clusters.dead]\ncheck_timeout_s = 1\n[clusters.dead.ceph]\n"
                   f'conf = "{tmp_path / "dead.conf"}"\nkeyring = "{tmp_path / "keyring"}"\n'
                   "timeout = 60\n")
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-m", "stordoc", "check", "--config", str(cfg),
                        "--all", "--no-record"], capture_output=True, text=True,
                       timeout=40, env={**os.environ, "PYTHONPATH": str(root)}, cwd=root)
    assert r.returncode == 3, r.stderr
    assert r.stdout.strip() == \
        "dead: unreachable after 1s (no answer within its check timeout)", r.stdout
