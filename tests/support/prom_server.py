"""A fake Prometheus on 127.0.0.1 (port 0): answers the instant queries of
``storage.hostfacts.prom`` from a synthetic fleet of node_exporters, in the shapes of
Prometheus 2.x's ``/api/v1/query`` (node_exporter 1.5 metric and label names), and
misbehaves on demand (garbage, HTTP 500, ``status: error``, a trickle, a 10 GiB body
streamed from a generator, never held in memory).

Used by tests/unit/test_prom_facts.py and benchmarks/fleet_prometheus.py.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class FsSeries:
    mountpoint: str
    device: str
    fstype: str = "xfs"
    readonly: int = 0
    device_error: int = 0
    size: float = 4e12
    avail: float = 2e12


@dataclass
class Kmsg:
    """A host's kernel-log textfile (scripts/stordoc-kmsg-textfile), made at each
    evaluation: read ``age_s`` before it, these lines by section (kmsg, xfslog)."""

    readable: int = 1
    age_s: float = 10.0
    lines: dict[str, list[str]] = field(default_factory=dict)

    def series(self, now: float) -> dict[str, list[tuple[dict[str, str], float]]]:
        errors = sum(1 for ls in self.lines.values() for ln in ls
                     if re.search(r"(?i)error|corruption|shut", ln))
        return {"stordoc_kmsg_readable": [({}, self.readable)],
                "stordoc_kmsg_time": [({}, now - self.age_s)],
                "stordoc_kmsg_errors": [({}, errors)],
                "stordoc_kmsg_line": [({"section": sec, "n": str(i), "line": ln}, 1)
                                      for sec, ls in self.lines.items()
                                      for i, ln in enumerate(ls, 1)]}


@dataclass
class Node:
    """One node_exporter target: its ``instance`` label and what it exports."""

    instance: str
    nodename: str = ""
    up: float = 1.0
    last: float | None = None  # its up sample's time; None: the evaluation time
    fs: list[FsSeries] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)  # name -> current state
    # its kernel-log textfile (scripts/stordoc-kmsg-textfile) as the textfile collector
    # exports it: metric name -> [(labels, value)]; None: no such textfile
    textfile: dict[str, list[tuple[dict[str, str], float]]] | None = None
    kmsg: Kmsg | None = None  # made at each evaluation (its time follows the clock)


SYSTEM_FS = (FsSeries("/", "/dev/sda1", "ext4"), FsSeries("/boot", "/dev/sda2", "ext4"),
             FsSeries("/run", "tmpfs", "tmpfs"), FsSeries("/run/lock", "tmpfs", "tmpfs"))

_METRIC = re.compile(r"^(timestamp\()?([a-z_]*)\{(.*?)\}\)?( == 1| > 0)?$")
_AND_ON = re.compile(r"^(.*\}) and on\(instance\) (.*)$")
_MATCHER = re.compile(r'([a-z_]+)(=~|!=|=)"((?:[^"\\]|\\.)*)"')

# behaviours for ``FakeProm.bad``: metric name (or "*") -> what to send instead
GARBAGE, HTTP500, STATUS_ERROR, TRICKLE, HUGE, HUGE_DECLARED, NOT_VECTOR = (
    "garbage", "http500", "status-error", "trickle", "huge", "huge-declared", "not-vector")


MISSING = object()  # FakeProm.raw: a sample with no "value" field


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s)


class FakeProm:
    def __init__(self, nodes: list[Node], job: str = "node",
                 clock: Callable[[], float] = time.time) -> None:
        self.nodes = nodes
        self.job = job
        self.clock = clock  # the server's evaluation time (a replay: the snapshot's)
        self.bad: dict[str, str] = {}
        # a sample's "value" field sent as given instead of [time, "number"]: (metric or
        # "timestamp(up)", instance) -> any JSON value, MISSING (no "value" field)
        self.raw: dict[tuple[str, str], Any] = {}
        self.queries: list[str] = []
        self.trickle_gap_s = 0.2
        self._cache: dict[str, bytes] = {}

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, expr: str, now: float) -> list[dict[str, Any]]:
        both = _AND_ON.match(expr.strip())
        if both:  # ``a and on(instance) b``: a's samples whose instance b has
            right = {r["metric"].get("instance") for r in self.evaluate(both.group(2), now)}
            return [r for r in self.evaluate(both.group(1), now)
                    if r["metric"].get("instance") in right]
        m = _METRIC.match(expr.strip())
        if not m:
            raise ValueError(f"unsupported query {expr!r}")
        ts_of, metric, matchers, eq1 = m.group(1), m.group(2), m.group(3), m.group(4)
        sel: list[tuple[str, str, str]] = [(k, op, _unescape(v))
                                           for k, op, v in _MATCHER.findall(matchers)]
        base = {"job": self.job}
        out: list[dict[str, Any]] = []

        def keep(labels: dict[str, str]) -> bool:
            for k, op, v in sel:
                got = labels.get(k, "")
                if op == "=" and got != v or op == "!=" and got == v:
                    return False
                if op == "=~" and not re.fullmatch(v, got):
                    return False
            return True

        def add(labels: dict[str, str], value: float, name: str = metric) -> None:
            if eq1 == " > 0" and not value > 0:
                return
            if keep({"__name__": name, **labels}):
                lab = dict(labels) if ts_of or eq1 == " == 1" else {"__name__": name, **labels}
                item: dict[str, Any] = {"metric": lab, "value": [now, _fmt(value)]}
                key = (f"timestamp({name})" if ts_of else name, labels.get("instance", ""))
                if key in self.raw:
                    if self.raw[key] is MISSING:
                        del item["value"]
                    else:
                        item["value"] = self.raw[key]
                out.append(item)

        for n in self.nodes:
            common = {**base, "instance": n.instance}
            if metric == "up":
                add(common, (n.last if n.last is not None else now - 3) if ts_of else n.up)
                continue
            if n.up != 1:
                continue  # a target that is down exports nothing this scrape
            text = {**(n.textfile or {}), **(n.kmsg.series(now) if n.kmsg else {})}
            if text and (not metric or metric in text):
                for name, series in text.items():
                    if not metric or name == metric:
                        for labels, value in series:
                            add({**common, **labels}, value, name)
                continue
            if metric == "node_uname_info":
                add({**common, "nodename": n.nodename or n.instance.split(":")[0],
                     "sysname": "Linux", "release": "6.1.0-13-amd64"}, 1)
            elif metric.startswith("node_filesystem_"):
                what = metric[len("node_filesystem_"):]
                for f in n.fs:
                    val = {"readonly": f.readonly, "device_error": f.device_error,
                           "size_bytes": f.size, "avail_bytes": f.avail}[what]
                    add({**common, "device": f.device, "fstype": f.fstype,
                         "mountpoint": f.mountpoint}, val)
            elif metric == "node_systemd_unit_state":
                for name, state in n.units.items():
                    states = ("activating", "active", "deactivating", "failed", "inactive")
                    for s in states:
                        if eq1 and s != state:
                            continue
                        add({**common, "name": name, "state": s, "type": "simple"},
                            1 if s == state else 0)
        return out

    def body(self, expr: str) -> bytes:
        if expr not in self._cache:
            now = self.clock()
            doc = {"status": "success",
                   "data": {"resultType": "vector", "result": self.evaluate(expr, now)}}
            self._cache[expr] = json.dumps(doc, separators=(",", ":")).encode()
        return self._cache[expr]

    def behaviour(self, expr: str) -> str | None:
        for key, how in self.bad.items():
            if key == "*" or key in expr:
                return how
        return None

    # ------------------------------------------------------------------ serving
    @contextmanager
    def serve(self) -> Iterator[str]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                u = urlsplit(self.path)
                if u.path != "/api/v1/query":
                    self._send(404, b"404 page not found\n", "text/plain")
                    return
                expr = parse_qs(u.query).get("query", [""])[0]
                fake.queries.append(expr)
                try:
                    fake._answer(self, expr)
                except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                    pass  # the client gave up: what a hostile server gets

            def _send(self, code: int, body: bytes, ctype: str = "application/json"
                      ) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        srv.daemon_threads = True
        th = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
        th.start()
        try:
            yield f"http://127.0.0.1:{srv.server_address[1]}"
        finally:
            srv.shutdown()
            srv.server_close()
            th.join(5)

    def _answer(self, h: Any, expr: str) -> None:
        how = self.behaviour(expr)
        if how is None:
            try:
                body = self.body(expr)
            except ValueError as e:
                h._send(400, json.dumps({"status": "error", "errorType": "bad_data",
                                         "error": str(e)}).encode())
                return
            h._send(200, body)
        elif how == GARBAGE:
            h._send(200, b"<html><body>502 Bad Gateway \x00\xff</body></html>", "text/html")
        elif how == HTTP500:
            h._send(500, b"internal server error\n", "text/plain")
        elif how == STATUS_ERROR:
            h._send(422, json.dumps({"status": "error", "errorType": "execution",
                                     "error": "query timed out in expression evaluation"}
                                    ).encode())
        elif how == NOT_VECTOR:
            h._send(200, b'{"status":"success","data":{"resultType":"scalar",'
                         b'"result":[1,"1"]}}')
        elif how == TRICKLE:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "100000")
            h.end_headers()
            for _ in range(100000):  # one byte at a time: never done in any sane time
                h.wfile.write(b" ")
                h.wfile.flush()
                time.sleep(self.trickle_gap_s)
        elif how in (HUGE, HUGE_DECLARED):
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            if how == HUGE_DECLARED:
                h.send_header("Content-Length", str(10 << 30))
            else:
                h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            chunk = b"[" * (1 << 20)  # 1 MiB, the same object each time: 10 GiB never held
            for _ in range(10 << 10):
                if how == HUGE:
                    h.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                else:
                    h.wfile.write(chunk)
            if how == HUGE:
                h.wfile.write(b"0\r\n\r\n")


def _fmt(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


def fleet(n_hosts: int, osds_per_host: int = 4, swift_per_host: int = 2,
          osd_dir: Callable[[int], str] = lambda i: f"/var/lib/ceph/osd/ceph-{i}",
          swift_dir: str = "/srv/node", port: int = 9100, addr: Callable[[int], str]
          = lambda h: f"10.{h >> 16 & 255}.{h >> 8 & 255}.{h & 255}",
          kmsg: bool = True) -> list[Node]:
    """N healthy hosts: OSDs h*k..h*k+k-1 mounted from sdb.., Swift devices d1.. from
    sd(k+1).., their ``ceph-osd@N`` units active, plus the system filesystems, and (with
    ``kmsg``) a fresh kernel-log textfile with no error in it."""
    out = []
    for h in range(n_hosts):
        fs = list(SYSTEM_FS)
        units = {"ssh.service": "active"}
        for j in range(osds_per_host):
            i = h * osds_per_host + j
            fs.append(FsSeries(osd_dir(i), f"/dev/sd{chr(98 + j)}1"))
            units[f"ceph-osd@{i}.service"] = "active"
        for j in range(swift_per_host):
            fs.append(FsSeries(f"{swift_dir}/d{h * swift_per_host + j + 1}",
                               f"/dev/sd{chr(98 + osds_per_host + j)}"))
        units["swift-object-server.service"] = "active"
        out.append(Node(f"{addr(h)}:{port}", f"host{h:04d}", fs=fs, units=units,
                        kmsg=Kmsg() if kmsg else None))
    return out


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse_textfile(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """A node_exporter textfile (the exposition format's subset the textfile collector
    reads: ``name{a="v",...} value`` lines, ``#`` comments) as ``Node.textfile``; label
    values unescaped (``\\\\``, ``\\"``, ``\\n``). Raises ValueError on a line it cannot
    read, as the collector refuses the whole file."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError(f"line {i}: not a sample: {line[:80]!r}")
        labels = {k: re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), v)
                  for k, v in _LABEL.findall(m.group(2) or "")}
        if m.group(2) and _LABEL.sub("", m.group(2)).strip():
            raise ValueError(f"line {i}: bad labels: {m.group(2)[:80]!r}")
        out.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return out
