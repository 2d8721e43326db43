"""Recon collection for a ring of 2,000 devices on 200 storage servers, against one server.

A child process serves simulated recon endpoints with asyncio: one listener per server on
its own loopback address (127.1.0.1, 127.1.0.2, ...), each answering every /recon/<check>
stordoc asks (10 devices per server in diskusage/unmounted), HTTP/1.1 keep-alive, with a
small per-request delay standing in for the stat calls a real server makes. The parent
runs the real ``storage.swift.collect_recon`` (the path ``stordoc check`` uses) on one
server and on all of them, and prints both times and their ratio (same run, same machine:
the ratio is what to compare).

Usage: .venv/bin/python benchmarks/recon_fleet.py [--servers 200] [--devices 2000]
       [--delay-ms 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")


def _answers(devs: int, idx: int) -> dict[str, bytes]:
    names = [f"d{idx * devs + k}" for k in range(devs)]
    a: dict[str, object] = {
        "unmounted": [],
        "diskusage": [{"device": n, "mounted": True, "size": 4 * 10**12, "used": 10**12,
                       "avail": 3 * 10**12} for n in names],
        "ringmd5": {"/etc/swift/object.ring.gz": "0" * 32},
        "swiftconfmd5": {"/etc/swift/swift.conf": "1" * 32},
        "load": {"1m": 1.0, "5m": 1.0, "15m": 1.0, "tasks": "1/100", "processes": 100},
        "sockstat": {"tcp_in_use": 10, "orphan": 0, "time_wait": 0},
        "driveaudit": {"drive_audit_errors": 0},
        "quarantined": {"objects": 0, "containers": 0, "accounts": 0, "policies": {}},
        "replication/object": {"object_replication_last": None, "replication_stats": None},
        "async": {"async_pending": 0},
        "updater/object": {"object_updater_sweep": 1.0},
        "auditor/object": {"object_auditor_stats_ALL": None},
        "expirer/object": {"object_expiration_pass": 1.0},
    }
    return {k: json.dumps(v).encode() for k, v in a.items()}


def _serve(n: int, devs: int, delay_s: float, conn: mp.connection.Connection) -> None:
    async def main() -> None:
        ports: list[tuple[str, int]] = []

        def handler(idx: int):  # type: ignore[no-untyped-def]
            answers = _answers(devs, idx)

            async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                try:
                    while True:
                        line = await r.readline()
                        if not line:
                            break
                        while (await r.readline()) not in (b"\r\n", b"\n", b""):
                            pass
                        path = line.split()[1].decode()
                        if path == "/recon/time":
                            body = json.dumps(time.time()).encode()
                        else:
                            body = answers.get(path.removeprefix("/recon/"), b"null")
                        await asyncio.sleep(delay_s)
                        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                        await w.drain()
                except (ConnectionError, IndexError):
                    pass
                finally:
                    w.close()

            return handle

        servers = []
        for i in range(n):
            ip = f"127.1.{i // 250}.{i % 250 + 1}"
            srv = await asyncio.start_server(handler(i), ip, 0)
            servers.append(srv)
            ports.append((ip, srv.sockets[0].getsockname()[1]))
        conn.send(ports)
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until told

    asyncio.run(main())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--servers", type=int, default=200)
    ap.add_argument("--devices", type=int, default=2000)
    ap.add_argument("--delay-ms", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if a.servers < 1 or a.devices < a.servers or a.rounds < 1 or a.delay_ms < 0:
        print("need servers >= 1, devices >= servers, rounds >= 1, delay >= 0")
        return 64
    from storage.swift import RECON_WORKERS, collect_recon

    parent, child = mp.Pipe()
    proc = mp.Process(target=_serve, args=(a.servers, a.devices // a.servers,
                                           a.delay_ms / 1000, child), daemon=True)
    proc.start()
    try:
        eps = [(ip, port, "object") for ip, port in parent.recv()]
        collect_recon(eps[:1], 5.0)  # warm up (imports, first connection)
        one = [0.0] * a.rounds
        full = [0.0] * a.rounds
        for k in range(a.rounds):
            t0 = time.perf_counter()
            r1 = collect_recon(eps[:1], 5.0)
            one[k] = time.perf_counter() - t0
            t0 = time.perf_counter()
            rall = collect_recon(eps, 5.0)
            full[k] = time.perf_counter() - t0
            bad = [h for h in r1 + rall if h.error_kind is not None]
            if bad:
                print(f"recon failed: {bad[0].error}")
                return 1
        devs = sum(len(h.diskusage) for h in rall)
        t1, tn = statistics.median(one), statistics.median(full)
        print(f"recon of 1 server: {t1 * 1000:.1f} ms (median of {a.rounds})")
        print(f"recon of {len(eps)} servers / {devs} devices: {tn * 1000:.1f} ms "
              f"({RECON_WORKERS} workers)")
        print(f"ratio all/one: {tn / t1:.1f}x for {len(eps)}x the servers "
              f"(one by one would be ~{len(eps)}x)")
        return 0
    finally:
        parent.send("stop")
        proc.join(5)
        if proc.is_alive():
            proc.terminate()


if __name__ == "__main__":
    raise SystemExit(main())
