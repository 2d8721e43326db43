"""The Swift mix agent stordoc ships to benchmark clients, run as the clients run it
(``python3 swift_mix.py r1`` in a directory with its config) against a small Swift-like
HTTP object store on 127.0.0.1: it verifies every GET, writes every name down before its
PUT, reports per second and a summary, and stops cleanly on SIGINT."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from runbooks.bench.swift_multi import AGENT, parse_line, per_client


class Store(BaseHTTPRequestHandler):
    objects: dict[str, bytes] = {}
    corrupt = False
    lock = threading.Lock()

    def log_message(self, *a: Any) -> None:
        pass

    def _ok_token(self) -> bool:
        if self.headers.get("X-Auth-Token") != "tok":
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False
        return True

    def do_PUT(self) -> None:
        if not self._ok_token():
            return
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.lock:
            self.objects[self.path] = body
        self.send_response(201)
        self.send_header("Etag", hashlib.md5(body).hexdigest())
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if not self._ok_token():
            return
        with self.lock:
            body = self.objects.get(self.path)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.corrupt and body:
            body = bytes([body[0] ^ 1]) + body[1:]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self) -> None:
        if not self._ok_token():
            return
        with self.lock:
            gone = self.objects.pop(self.path, None)
        self.send_response(204 if gone is not None else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def store() -> Iterator[tuple[str, type[Store]]]:
    class S(Store):
        objects: dict[str, bytes] = {}
        corrupt = False

    srv = ThreadingHTTPServer(("127.0.0.1", 0), S)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1/AUTH_t", S
    srv.shutdown()
    srv.server_close()


def _agent(tmp_path: Path, url: str, **kw: Any) -> Path:
    shutil.copy(AGENT, tmp_path / "swift_mix.py")
    cfg = {"url": url, "token": "tok", "container": "c", "prefix": "stordoc_bench_g_c1_",
           "concurrency": 4, "size": 4096, "size_max": None, "mix": [80, 15, 5],
           "duration_s": 1.5, "ops": None, "prefill": 20, "seed": 7, "max_bytes": 10**9}
    cfg.update(kw)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return tmp_path / "swift_mix.py"


def _lines(out: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = [v for v in map(parse_line, out.splitlines()) if v is not None]
    summ = [v["summary"] for v in rows if "summary" in v]
    assert len(summ) == 1, out
    return [v for v in rows if "sec" in v], summ[0]


def test_agent_mix_verified_and_every_name_written_down(tmp_path: Path, store: Any) -> None:
    url, S = store
    p = _agent(tmp_path, url)
    r = subprocess.run([sys.executable, str(p), "r1"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    secs, s = _lines(r.stdout)
    assert s["ops"] > 0 and s["mismatches"] == 0 and s["errors"] == {}
    assert s["reads_checked"] == s["per_op"]["read"]["ops"] > 0
    assert s["stopped_by"] == "duration"
    assert sum(x["ops"] for x in secs) <= s["ops"]  # whole seconds only
    names = (tmp_path / "names").read_text().split()
    assert all(n.startswith("stordoc_bench_g_c1_r1_") for n in names)
    stored = {k.rsplit("/", 1)[1] for k in S.objects}
    assert stored and stored <= set(names)  # nothing in the store that is not written down
    d = per_client("node1", s, 0, [], True)
    assert d["ops"] == s["ops"] and d["verify"]["reads"] == s["reads_checked"]


def test_agent_catches_a_wrong_body(tmp_path: Path, store: Any) -> None:
    url, S = store
    S.corrupt = True
    p = _agent(tmp_path, url, mix=[100, 0, 0])
    r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=60)
    _, s = _lines(r.stdout)
    assert s["mismatches"] == s["reads_checked"] > 0
    assert s["examples"] and s["examples"][0].startswith("GET stordoc_bench_g_c1_")
    d = per_client("node1", s, 0, [], True)
    assert d["error_kinds"]["verify"] == s["mismatches"]


def test_agent_stops_on_sigint_with_a_summary(tmp_path: Path, store: Any) -> None:
    url, _ = store
    p = _agent(tmp_path, url, duration_s=60, mix=[0, 100, 0])
    proc = subprocess.Popen([sys.executable, str(p)], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    _, s = _lines(out)
    assert s["stopped_by"] == "signal" and s["ops"] > 0 and s["elapsed_s"] < 30


def test_agent_obeys_its_byte_cap_and_bad_token(tmp_path: Path, store: Any) -> None:
    url, _ = store
    p = _agent(tmp_path, url, mix=[0, 100, 0], max_bytes=4096 * 10, duration_s=5)
    r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=60)
    _, s = _lines(r.stdout)
    assert s["per_op"]["write"]["bytes"] <= 4096 * 10
    p = _agent(tmp_path, url, token="wrong", mix=[0, 100, 0], duration_s=0.5, prefill=0)
    r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=60)
    _, s = _lines(r.stdout)
    assert s["ops"] == 0 and s["errors"].get("HTTP 401", 0) > 0


def test_missing_summary_is_incomplete() -> None:
    d = per_client("node2", None, 137, ["Killed"], True)
    assert d["status"] == "incomplete" and d["tail"] == ["Killed"]
