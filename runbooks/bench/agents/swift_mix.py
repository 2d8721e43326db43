"""stordoc's Swift mix, shipped to a benchmark client (standard library only, Python 3.7+).

Copied over SSH into the run's private directory with ``config.json`` beside it (storage
URL, token, container, object prefix, workload); started by stordoc's launcher after the
common start. It writes every object name to ``names`` before its PUT (so stordoc can
delete all of them even if this process is killed), prints one JSON line per second
(``{"sec", "ops", "bytes", "lat_ms", "err"}``) and, at the end or on SIGINT, one
``{"summary": ...}`` line. Every GET is verified: the body's MD5 must equal the MD5 of
what this process PUT under that name (and every PUT's ETag must equal the MD5 sent).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import random
import signal
import sys
import threading
import time
from typing import Any
from urllib.parse import quote, urlsplit

KINDS = ("read", "write", "delete")


class Pool:
    """Objects that exist (name -> MD5): reads pick, deletes take; a name being read is
    not handed out for deletion."""

    def __init__(self, rng: random.Random) -> None:
        self.lock = threading.Lock()
        self.names: list[str] = []
        self.md5: dict[str, str] = {}
        self.reading: dict[str, int] = {}
        self.rng = rng

    def add(self, name: str, digest: str) -> None:
        with self.lock:
            self.names.append(name)
            self.md5[name] = digest

    def pick(self) -> tuple[str | None, str | None]:
        with self.lock:
            if not self.names:
                return None, None
            n = self.names[self.rng.randrange(len(self.names))]
            self.reading[n] = self.reading.get(n, 0) + 1
            return n, self.md5[n]

    def done_reading(self, name: str) -> None:
        with self.lock:
            self.reading[name] -= 1
            if not self.reading[name]:
                del self.reading[name]

    def take(self) -> str | None:
        with self.lock:
            free = [i for i in range(min(len(self.names), 64))
                    if self.names[i] not in self.reading]
            if not free:
                return None
            n = self.names.pop(free[self.rng.randrange(len(free))])
            self.md5.pop(n, None)
            return n


def body_for(seed: object, name: str, size: int) -> bytes:
    block = hashlib.sha256(f"{seed}:{name}".encode()).digest() * 128  # 4 KiB
    reps = size // len(block) + 1
    return (block * reps)[:size]


class Agent:
    def __init__(self, cfg: dict[str, Any], here: str) -> None:
        self.cfg = cfg
        u = urlsplit(cfg["url"])
        self.scheme, self.netloc = u.scheme, u.netloc
        self.base = u.path.rstrip("/") + "/" + quote(cfg["container"], safe="")
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.names_f = open(os.path.join(here, "names"), "a")
        self.counter = 0
        self.budget = int(cfg["max_bytes"])
        self.issued = 0
        self.sec: dict[int, list[float]] = {}  # second -> [ops, bytes, lat_ms, err]
        self.lat: dict[str, list[float]] = {k: [] for k in KINDS}
        self.bytes = {k: 0 for k in KINDS}
        self.errors: dict[str, int] = {}
        self.mismatches: list[str] = []
        self.n_mismatch = 0
        self.reads_checked = 0
        self.t0: float | None = None

    def conn(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.scheme == "https" else \
            http.client.HTTPConnection
        return cls(self.netloc, timeout=30)

    def new_name(self) -> str:
        with self.lock:
            self.counter += 1
            name = f"{self.cfg['prefix']}{self.counter}"
            self.names_f.write(name + "\n")
            self.names_f.flush()
            return name

    def request(self, c: http.client.HTTPConnection, method: str, name: str,
                body: bytes | None = None) -> tuple[int, str, bytes]:
        c.request(method, self.base + "/" + quote(name, safe=""), body=body,
                  headers={"X-Auth-Token": self.cfg["token"]})
        r = c.getresponse()
        data = r.read()
        return r.status, r.getheader("etag") or "", data

    def put(self, c: http.client.HTTPConnection, rng: random.Random, pool: Pool
            ) -> int | None:
        lo, hi = int(self.cfg["size"]), int(self.cfg["size_max"] or self.cfg["size"])
        n = rng.randint(lo, hi) if hi > lo else lo
        with self.lock:
            if self.budget < n:
                return None
            self.budget -= n
        name = self.new_name()
        body = body_for(self.cfg["seed"], name, n)
        digest = hashlib.md5(body).hexdigest()
        st, etag, _ = self.request(c, "PUT", name, body)
        if st != 201:
            raise OSError(f"HTTP {st}")
        if etag.strip('"') != digest:
            self.mismatch(f"PUT {name}: ETag {etag[:40]}, sent MD5 {digest}")
        pool.add(name, digest)
        return n

    def mismatch(self, text: str) -> None:
        with self.lock:
            self.n_mismatch += 1
            if len(self.mismatches) < 3:
                self.mismatches.append(text)

    def record(self, kind: str, t0: float, t1: float, n: int, err: str | None) -> None:
        with self.lock:
            s = int(t1 - self.t0) + 1 if self.t0 is not None else 0
            row = self.sec.setdefault(s, [0, 0, 0.0, 0])
            if err:
                self.errors[err] = self.errors.get(err, 0) + 1
                row[3] += 1
                return
            ms = (t1 - t0) * 1000
            self.lat[kind].append(ms)
            self.bytes[kind] += n
            row[0] += 1
            row[1] += n
            row[2] += ms

    def prefill(self, pool: Pool) -> None:
        todo = [int(self.cfg["prefill"])]
        lock = threading.Lock()

        def worker(seed: int) -> None:
            c, rng = self.conn(), random.Random(seed)
            while not self.stop.is_set():
                with lock:
                    if todo[0] <= 0:
                        return
                    todo[0] -= 1
                try:
                    self.put(c, rng, pool)
                except Exception as e:  # noqa: BLE001
                    with self.lock:
                        self.errors["prefill " + type(e).__name__] = \
                            self.errors.get("prefill " + type(e).__name__, 0) + 1
                    c = self.conn()
        ths = [threading.Thread(target=worker, args=(i,)) for i in
               range(min(int(self.cfg["concurrency"]), 32))]
        for t in ths:
            t.start()
        for t in ths:
            t.join()

    def worker(self, seed: float, pool: Pool, deadline: float) -> None:
        c, rng = self.conn(), random.Random(seed)
        weights = list(self.cfg["mix"])
        max_ops = self.cfg.get("ops")
        while not self.stop.is_set() and time.monotonic() < deadline:
            with self.lock:
                if max_ops is not None and self.issued >= max_ops:
                    return
                self.issued += 1
            kind = rng.choices(KINDS, weights)[0]
            name, digest = (pool.pick() if kind == "read" else (None, None))
            if kind == "delete":
                name = pool.take()
            if kind != "write" and name is None:
                kind = "write"
            t0 = time.monotonic()
            n, err = 0, None
            try:
                if kind == "write" or name is None:
                    put = self.put(c, rng, pool)
                    if put is None:
                        return  # the byte cap
                    n = put
                elif kind == "read":
                    try:
                        st, _, data = self.request(c, "GET", name)
                    finally:
                        pool.done_reading(name)
                    if st != 200:
                        raise OSError(f"HTTP {st}")
                    n = len(data)
                    with self.lock:
                        self.reads_checked += 1
                    got = hashlib.md5(data).hexdigest()
                    if got != digest:
                        self.mismatch(f"GET {name}: MD5 {got}, written {digest}")
                else:
                    st, _, _ = self.request(c, "DELETE", name)
                    if st not in (204, 404):
                        raise OSError(f"HTTP {st}")
            except Exception as e:  # noqa: BLE001
                err = str(e) if isinstance(e, OSError) and str(e).startswith("HTTP") \
                    else type(e).__name__
                c.close()
                c = self.conn()
            self.record(kind, t0, time.monotonic(), n, err)

    def ticker(self, ths: list[threading.Thread], t0: float) -> None:
        last = 0
        while any(t.is_alive() for t in ths):
            time.sleep(0.2)
            now = int(time.monotonic() - t0)
            while last < now:
                last += 1
                with self.lock:
                    row = self.sec.get(last, [0, 0, 0.0, 0])
                emit({"sec": last, "ops": row[0], "bytes": row[1], "lat_ms": row[2],
                      "err": row[3]})

    def run(self) -> None:
        pool = Pool(random.Random(self.cfg["seed"]))
        mix = self.cfg["mix"]
        if (mix[0] or mix[2]) and int(self.cfg["prefill"]):
            self.prefill(pool)
            emit({"prefilled": len(pool.names)})
        self.t0 = t0 = time.monotonic()
        deadline = t0 + float(self.cfg["duration_s"])
        rng = random.Random(self.cfg["seed"])
        ths = [threading.Thread(target=self.worker, args=(rng.random(), pool, deadline))
               for _ in range(int(self.cfg["concurrency"]))]
        for t in ths:
            t.start()
        self.ticker(ths, t0)
        elapsed = time.monotonic() - t0
        emit({"summary": self.summary(elapsed)})

    def summary(self, elapsed: float) -> dict[str, Any]:
        every = sorted(x for k in KINDS for x in self.lat[k])

        def pct(p: float) -> float | None:
            return every[min(len(every) - 1, int(p / 100.0 * len(every)))] if every else None

        ops = len(every)
        return {"elapsed_s": elapsed, "ops": ops,
                "bytes": sum(self.bytes.values()),
                "per_op": {k: {"ops": len(self.lat[k]), "bytes": self.bytes[k]}
                           for k in KINDS},
                "lat_avg_ms": sum(every) / ops if ops else None,
                "lat_p50_ms": pct(50), "lat_p90_ms": pct(90), "lat_p99_ms": pct(99),
                "lat_p999_ms": pct(99.9), "lat_max_ms": every[-1] if every else None,
                "errors": dict(self.errors), "reads_checked": self.reads_checked,
                "mismatches": self.n_mismatch, "examples": self.mismatches,
                "stopped_by": "signal" if self.stop.is_set() else "duration",
                "names_tried": self.counter}


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "config.json")) as f:
        cfg = json.load(f)
    if len(sys.argv) > 1:  # this run's part of the names (e.g. the repetition)
        cfg["prefix"] = f"{cfg['prefix']}{sys.argv[1]}_"
    agent = Agent(cfg, here)
    signal.signal(signal.SIGINT, lambda *_: agent.stop.set())
    signal.signal(signal.SIGTERM, lambda *_: agent.stop.set())
    agent.run()


if __name__ == "__main__":
    main()
