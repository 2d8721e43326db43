"""Native RADOS I/O for benchmarks: python-rados with ``-t`` asynchronous ops in flight.

Why this shape: per-op Python callbacks or asyncio cost 2-3x the CPU per op, so the
submitting thread only issues ``aio_*`` calls and a dedicated reaper thread waits for the
completions *in submission order* with ``wait_for_complete`` (which releases the GIL),
like ``rados bench`` keeps its slots full. Latency is stamped when the reaper sees the op
complete. Reads must pass a callback (python-rados delivers read data only through it); it
is a no-op. Also here: the mon commands a benchmark needs (pool create, cluster state),
and the stock ``rados bench`` command line plus a robust parser of its plain output.
"""

from __future__ import annotations

import errno as errno_mod
import json
import os
import queue
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from storage.targets import CephTarget

MODES = ("write", "seq", "rand")
OBJ_PREFIX = "stordoc_bench_"


class RadosBenchError(Exception):
    """A benchmark could not start or the cluster refused an admin command."""


@dataclass
class Tick:
    """Live progress: what the driver has completed so far."""

    elapsed_s: float
    ops: int
    bytes: int
    planned_s: float
    phase: str = ""


@dataclass
class RawRun:
    """What one timed phase measured: every latency, a per-second series, the errors."""

    mode: str
    op_size: int
    concurrency: int
    started_at: float
    elapsed_s: float = 0.0
    ops: int = 0
    bytes: int = 0
    lat_ns: list[int] = field(default_factory=list)
    sec_ops: list[int] = field(default_factory=list)
    sec_bytes: list[int] = field(default_factory=list)
    sec_lat_ns: list[int] = field(default_factory=list)  # sum of latencies per second
    errors: dict[str, int] = field(default_factory=dict)
    objects: list[str] = field(default_factory=list)  # written (for reads and cleanup)
    stopped_by: str = "duration"  # duration | ops | bytes | cancel | objects
    client_cpu_s: float = 0.0  # process CPU time used during the phase (all threads)
    submit_cpu_s: float = 0.0  # CPU of the submitting thread (our Python + aio submit)
    reap_cpu_s: float = 0.0  # CPU of the reaper thread (our Python + completion wait)

    @property
    def n_errors(self) -> int:
        return sum(self.errors.values())


def _err_name(rv: int) -> str:
    code = -rv
    return errno_mod.errorcode.get(code, f"errno {code}")


def _noop_read_cb(completion: Any, data: Any) -> None:
    """python-rados insists on a read callback; the reaper does the bookkeeping."""


def connect(target: CephTarget) -> Any:
    """A connected ``rados.Rados``; raises RadosBenchError with a one-line reason."""
    import rados

    conf: dict[str, str] = {}
    if target.keyring:
        conf["keyring"] = target.keyring
    try:
        cl = rados.Rados(conffile=target.conf, name=target.client, conf=conf)
        cl.conf_set("client_mount_timeout", str(int(max(1, target.timeout_s))))
        cl.conf_set("rados_mon_op_timeout", str(int(max(1, target.timeout_s))))
        # a full or stuck cluster must fail an op (ETIMEDOUT), never hang the benchmark
        cl.conf_set("rados_osd_op_timeout", str(int(max(30, 3 * target.timeout_s))))
        cl.connect(timeout=int(max(1, target.timeout_s)))
    except rados.Error as e:
        raise RadosBenchError(f"cannot connect to Ceph ({target.conf}): {e}") from None
    return cl


class RadosIO:
    """One librados connection for a benchmark: admin commands and timed I/O phases."""

    def __init__(self, target: CephTarget) -> None:
        self.target = target
        self.cluster = connect(target)

    def close(self) -> None:
        try:
            self.cluster.shutdown()
        except Exception:
            pass

    def __enter__(self) -> RadosIO:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ mon commands

    def mon(self, cmd: dict[str, Any], timeout_s: float | None = None) -> Any:
        """Run one mon command; JSON-decoded output. Raises RadosBenchError on failure."""
        body = json.dumps({**cmd, "format": "json"})
        ret, out, err = self.cluster.mon_command(
            body, b"", timeout=int(timeout_s or self.target.timeout_s))
        if ret != 0:
            raise RadosBenchError(f"ceph {cmd.get('prefix')}: {err or os.strerror(-ret)}")
        if not out:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return out.decode(errors="replace")

    def status(self) -> dict[str, Any]:
        st = self.mon({"prefix": "status"})
        return st if isinstance(st, dict) else {}

    def state(self, pool: str | None = None) -> dict[str, Any]:
        """Cluster facts stored with a result and compared between runs."""
        st = self.status()
        osdmap = st.get("osdmap", {})
        osdmap = osdmap.get("osdmap", osdmap)  # pre-Octopus nesting
        pgmap = st.get("pgmap", {})
        out: dict[str, Any] = {
            "fsid": st.get("fsid"),
            "health": st.get("health", {}).get("status"),
            "health_checks": sorted(st.get("health", {}).get("checks", {}).keys()),
            "num_osds": osdmap.get("num_osds"),
            "num_up_osds": osdmap.get("num_up_osds"),
            "num_in_osds": osdmap.get("num_in_osds"),
            "pgs_by_state": {s["state_name"]: s["count"]
                             for s in pgmap.get("pgs_by_state", [])},
            "num_pgs": pgmap.get("num_pgs"),
        }
        try:
            versions = self.mon({"prefix": "versions"})
            out["versions"] = sorted((versions or {}).get("overall", {}).keys())
        except RadosBenchError:
            out["versions"] = []
        if pool:
            try:
                df = self.mon({"prefix": "df"}) or {}
                for p in df.get("pools", []):
                    if p.get("name") == pool:
                        out["pool_max_avail"] = int(p.get("stats", {}).get("max_avail", 0))
            except RadosBenchError:
                pass
            try:
                info = self.mon({"prefix": "osd pool get", "pool": pool, "var": "all"})
                if isinstance(info, dict):
                    out["pool"] = {k: info.get(k) for k in
                                   ("size", "min_size", "pg_num", "pgp_num", "crush_rule")
                                   if k in info}
            except RadosBenchError:
                pass
        return out

    def config_value(self, who: str, key: str) -> str | None:
        try:
            v = self.mon({"prefix": "config get", "who": who, "key": key})
        except RadosBenchError:
            return None
        return str(v).strip() if v is not None else None

    def pool_exists(self, name: str) -> bool:
        return name in self.cluster.list_pools()

    def ensure_pool(self, name: str, wait_s: float = 60.0) -> bool:
        """Create the benchmark pool if missing (size fitted to the up CRUSH hosts,
        application 'stordoc'); wait until its PGs are active+clean. True if created."""
        if self.pool_exists(name):
            return False
        tree = self.mon({"prefix": "osd tree"}) or {}
        nodes = tree.get("nodes", [])
        up_osds = {n["id"] for n in nodes if n.get("type") == "osd" and n.get("status") == "up"}
        hosts = [n for n in nodes if n.get("type") == "host"
                 and any(c in up_osds for c in n.get("children", []))]
        default_size = int(self.config_value("mon", "osd_pool_default_size") or 3)
        size = max(1, min(default_size, len(hosts) or 1))
        n_osds = max(1, len(up_osds))
        pgs = max(8, min(128, _pow2_floor(n_osds * 100 // size // 4)))
        self.mon({"prefix": "osd pool create", "pool": name, "pg_num": pgs, "pgp_num": pgs})
        self.mon({"prefix": "osd pool set", "pool": name, "var": "size", "val": str(size)})
        if size < default_size:
            self.mon({"prefix": "osd pool set", "pool": name, "var": "min_size",
                      "val": str(max(1, size - 1) if size > 2 else 1)})
        self.mon({"prefix": "osd pool application enable", "pool": name, "app": "stordoc",
                  "yes_i_really_mean_it": True})
        self.wait_clean(wait_s)
        return True

    def wait_clean(self, wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        while True:
            if pgs_all_clean(self.status()):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)

    def delete_pool(self, name: str) -> str | None:
        """Delete a pool; returns why not when the cluster refuses (mon_allow_pool_delete)."""
        try:
            self.mon({"prefix": "osd pool rm", "pool": name, "pool2": name,
                      "yes_i_really_really_mean_it": True})
        except RadosBenchError as e:
            return str(e)
        return None

    # ------------------------------------------------------------------ objects

    def list_bench_objects(self, pool: str, prefix: str = OBJ_PREFIX) -> list[str]:
        ioctx = self.cluster.open_ioctx(pool)
        try:
            return [o.key for o in ioctx.list_objects() if o.key.startswith(prefix)]
        finally:
            ioctx.close()

    def remove_objects(self, pool: str, names: Sequence[str], concurrency: int = 16) -> int:
        """Remove objects with ``concurrency`` removals in flight; returns how many."""
        if not names:
            return 0
        ioctx = self.cluster.open_ioctx(pool)
        removed = 0
        try:
            inflight: list[Any] = []
            for n in names:
                inflight.append(ioctx.aio_remove(n))
                if len(inflight) >= concurrency:
                    c = inflight.pop(0)
                    c.wait_for_complete()
                    removed += c.get_return_value() == 0
            for c in inflight:
                c.wait_for_complete()
                removed += c.get_return_value() == 0
        finally:
            ioctx.close()
        return removed

    # ------------------------------------------------------------------ timed I/O

    def run_phase(self, pool: str, mode: str, op_size: int, concurrency: int,
                  duration_s: float, *, max_ops: int | None = None,
                  max_bytes: int | None = None, objects: Sequence[str] = (),
                  prefix: str = OBJ_PREFIX + "x_", cancel: threading.Event | None = None,
                  on_tick: Callable[[Tick], None] | None = None,
                  tick_s: float = 0.5, seed: int | None = None,
                  reapers: int | None = None) -> RawRun:
        """One timed phase. ``write`` creates objects ``prefix + N``; ``seq`` reads
        ``objects`` once in order; ``rand`` reads random ones until the time is up."""
        if mode not in MODES:
            raise RadosBenchError(f"unknown mode {mode!r} (write, seq, rand)")
        if mode != "write" and not objects:
            raise RadosBenchError("nothing to read: no benchmark objects in the pool")
        ioctx = self.cluster.open_ioctx(pool)
        try:
            return _drive(ioctx, mode, op_size, concurrency, duration_s, max_ops, max_bytes,
                          list(objects), prefix, cancel, on_tick, tick_s, seed,
                          reapers or default_reapers(op_size, concurrency))
        finally:
            ioctx.close()


def _pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def pgs_all_clean(status: dict[str, Any]) -> bool:
    pgmap = status.get("pgmap", {})
    states = pgmap.get("pgs_by_state", [])
    total = pgmap.get("num_pgs", 0)
    clean = sum(s["count"] for s in states if s.get("state_name") == "active+clean")
    return clean == total


def _merge(run: RawRun, parts: Sequence[RawRun]) -> None:
    for p in parts:
        run.lat_ns.extend(p.lat_ns)
        for k, v in p.errors.items():
            run.errors[k] = run.errors.get(k, 0) + v
        for i, (o, b, ln) in enumerate(zip(p.sec_ops, p.sec_bytes, p.sec_lat_ns)):
            while len(run.sec_ops) <= i:
                run.sec_ops.append(0)
                run.sec_bytes.append(0)
                run.sec_lat_ns.append(0)
            run.sec_ops[i] += o
            run.sec_bytes[i] += b
            run.sec_lat_ns[i] += ln
        run.reap_cpu_s += p.reap_cpu_s
    run.ops = sum(run.sec_ops)
    run.bytes = sum(run.sec_bytes)


def default_reapers(op_size: int, concurrency: int) -> int:
    """One in-order reaper keeps pace for small ops (cheapest per op); large ops complete
    out of order often enough that a slow head-of-line op would idle the other slots, so
    they get a few reapers (each still waits in order on what it took)."""
    return 1 if op_size < 1024 * 1024 else max(1, min(4, concurrency))


def _drive(ioctx: Any, mode: str, op_size: int, concurrency: int, duration_s: float,
           max_ops: int | None, max_bytes: int | None, objects: list[str], prefix: str,
           cancel: threading.Event | None, on_tick: Callable[[Tick], None] | None,
           tick_s: float, seed: int | None, reapers: int = 1) -> RawRun:
    run = RawRun(mode, op_size, concurrency, time.time())
    slots = threading.Semaphore(concurrency)
    inflight: queue.SimpleQueue[tuple[Any, int] | None] = queue.SimpleQueue()
    perf_ns = time.perf_counter_ns
    data = os.urandom(op_size) if mode == "write" else b""  # made before the clock starts
    start_ns = perf_ns()
    done = [[0, 0] for _ in range(reapers)]  # per reaper: ops, bytes (progress only)
    parts: list[RawRun] = [RawRun(mode, op_size, concurrency, 0.0) for _ in range(reapers)]

    def reap(k: int) -> None:
        # each reaper keeps its own tallies (merged at the end): no lock on the hot path
        part = parts[k]
        lat, errors = part.lat_ns, part.errors
        sec_ops, sec_bytes, sec_lat = part.sec_ops, part.sec_bytes, part.sec_lat_ns
        mine = done[k]
        c0 = time.thread_time()
        while True:
            item = inflight.get()
            if item is None:
                part.reap_cpu_s = time.thread_time() - c0
                return
            comp, t0 = item
            comp.wait_for_complete()
            t1 = perf_ns()
            rv = comp.get_return_value()
            if rv < 0:
                e = _err_name(rv)
                errors[e] = errors.get(e, 0) + 1
            else:
                d = t1 - t0
                lat.append(d)
                s = (t1 - start_ns) // 1_000_000_000
                while len(sec_ops) <= s:
                    sec_ops.append(0)
                    sec_bytes.append(0)
                    sec_lat.append(0)
                sec_ops[s] += 1
                sec_bytes[s] += op_size
                sec_lat[s] += d
                mine[0] += 1
                mine[1] += op_size
            slots.release()

    threads = [threading.Thread(target=reap, args=(k,), name=f"rados-reaper-{k}", daemon=True)
               for k in range(reapers)]
    for th in threads:
        th.start()
    rng = random.Random(seed)
    end_ns = start_ns + int(duration_s * 1e9)
    next_tick = start_ns + int(tick_s * 1e9)
    cpu0 = time.process_time()
    tcpu0 = time.thread_time()
    i = 0
    submitted_bytes = 0
    n_obj = len(objects)
    try:
        while True:
            slots.acquire()
            now = perf_ns()
            if now >= end_ns:
                run.stopped_by = "duration"
            elif cancel is not None and cancel.is_set():
                run.stopped_by = "cancel"
            elif max_ops is not None and i >= max_ops:
                run.stopped_by = "ops"
            elif max_bytes is not None and submitted_bytes + op_size > max_bytes:
                run.stopped_by = "bytes"
            elif mode == "seq" and i >= n_obj:
                run.stopped_by = "objects"
            else:
                if mode == "write":
                    name = f"{prefix}{i}"
                    run.objects.append(name)
                    c = ioctx.aio_write_full(name, data)
                elif mode == "seq":
                    c = ioctx.aio_read(objects[i], op_size, 0, _noop_read_cb)
                else:
                    c = ioctx.aio_read(objects[rng.randrange(n_obj)], op_size, 0,
                                       _noop_read_cb)
                inflight.put((c, now))
                i += 1
                submitted_bytes += op_size
                if on_tick is not None and now >= next_tick:
                    next_tick = now + int(tick_s * 1e9)
                    on_tick(Tick((now - start_ns) / 1e9, sum(d[0] for d in done),
                                 sum(d[1] for d in done), duration_s, mode))
                continue
            slots.release()
            break
    finally:
        run.submit_cpu_s = time.thread_time() - tcpu0
        for _ in threads:
            inflight.put(None)
        for th in threads:
            th.join()
    run.elapsed_s = (perf_ns() - start_ns) / 1e9
    run.client_cpu_s = time.process_time() - cpu0
    _merge(run, parts)
    if on_tick is not None:
        on_tick(Tick(run.elapsed_s, run.ops, run.bytes, duration_s, mode))
    return run


# --------------------------------------------------------------------------- rados bench


def rados_bench_argv(target: CephTarget, pool: str, seconds: int, mode: str,
                     concurrency: int, op_size: int, run_name: str,
                     no_cleanup: bool = True, max_objects: int | None = None) -> list[str]:
    """The stock tool's argv (no shell): ``rados bench SECONDS write|seq|rand``."""
    argv = ["rados", "-c", target.conf, "-n", target.client]
    if target.keyring:
        argv += ["--keyring", target.keyring]
    argv += ["-p", pool, "bench", str(int(seconds)), mode, "-t", str(concurrency),
             "--run-name", run_name]
    if mode == "write":
        argv += ["-b", str(op_size), "-O", str(op_size)]
        if max_objects:
            argv += ["--max-objects", str(max_objects)]
        if no_cleanup:
            argv.append("--no-cleanup")
    return argv


def rados_cleanup_argv(target: CephTarget, pool: str, run_name: str,
                       prefix: str | None = None) -> list[str]:
    """``rados cleanup --run-name NAME`` (it reads the run's metadata object), or with
    ``prefix`` ``--prefix benchmark_data_HOST_PID`` for a run that never wrote one."""
    argv = ["rados", "-c", target.conf, "-n", target.client]
    if target.keyring:
        argv += ["--keyring", target.keyring]
    if prefix:
        return argv + ["-p", pool, "cleanup", "--prefix", prefix]
    return argv + ["-p", pool, "cleanup", "--run-name", run_name]


def parse_rados_bench_row(line: str) -> dict[str, float | None] | None:
    """One per-second row of ``rados bench`` (as it streams), or None."""
    m = _ROW.match(line)
    if not m:
        return None
    return {"sec": int(m.group(1)), "cur_ops": int(m.group(2)), "started": int(m.group(3)),
            "finished": int(m.group(4)), "avg_mb_s": float(m.group(5)),
            "cur_mb_s": float(m.group(6)), "last_lat_s": _maybe_float(m.group(7)),
            "avg_lat_s": float(m.group(8))}


@dataclass
class RadosBenchOutput:
    """What ``rados bench`` printed, as numbers (MB means MiB, as the tool uses)."""

    total_time_s: float | None = None
    ops: int | None = None
    op_size: int | None = None
    bandwidth_mb_s: float | None = None
    iops: float | None = None
    lat_avg_s: float | None = None
    lat_max_s: float | None = None
    lat_min_s: float | None = None
    lat_stddev_s: float | None = None
    per_second: list[dict[str, float | None]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # objects a seq/rand read found with other content than the write put there
    # (rados bench verifies every read unless --no-verify): "NAME is not correct!"
    mismatches: list[str] = field(default_factory=list)
    object_prefix: str | None = None  # "benchmark_data_HOST_PID" (for a cleanup by prefix)

    @property
    def complete(self) -> bool:
        return self.total_time_s is not None and self.ops is not None


_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_SUMMARY: dict[str, tuple[str, Callable[[str], Any]]] = {
    "total time run": ("total_time_s", float),
    "total writes made": ("ops", int),
    "total reads made": ("ops", int),
    "write size": ("op_size", int),
    "read size": ("op_size", int),
    "bandwidth (mb/sec)": ("bandwidth_mb_s", float),
    "average iops": ("iops", float),
    "average latency(s)": ("lat_avg_s", float),
    "average latency": ("lat_avg_s", float),
    "max latency(s)": ("lat_max_s", float),
    "min latency(s)": ("lat_min_s", float),
    "stddev latency(s)": ("lat_stddev_s", float),
}
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+" + _NUM + r"\s+" + _NUM +
                  r"\s+(\S+)\s+" + _NUM + r"\s*$")


_MISMATCH = re.compile(r"^\s*(\S+) is not correct!\s*$")
_PREFIX = re.compile(r"^\s*Object prefix:\s*(\S+)\s*$")
# what rados bench prints after a verification failure (the mismatches say it already)
_EIO_AFTER_VERIFY = re.compile(r"^error( during benchmark)?( 5)?: \(5\) Input/output error")


_CHATTER = re.compile(r"(Cleaning up \(deleting benchmark objects\)|Removed \d+ objects|"
                      r"Clean up completed and total clean up time\s*:\s*[\d.]+)\s*")


def parse_rados_bench_json(text: str) -> RadosBenchOutput:
    """``rados bench -f json`` on 16.2: every value is a string and the cleanup lines
    land inside the JSON document. Strip the chatter, decode, convert."""
    out = RadosBenchOutput()
    clean = _CHATTER.sub("", text)
    start = clean.find("{")
    if start < 0:
        return out
    try:
        d, _ = json.JSONDecoder().raw_decode(clean, start)
    except ValueError:
        return out

    def num(key: str) -> float | None:
        try:
            return float(d[key])
        except (KeyError, TypeError, ValueError):
            return None

    out.total_time_s = num("total_time_run")
    ops = num("total_writes_made") if "total_writes_made" in d else num("total_reads_made")
    out.ops = int(ops) if ops is not None else None
    sz = num("write_size") if "write_size" in d else num("read_size")
    out.op_size = int(sz) if sz is not None else None
    out.bandwidth_mb_s = num("bandwidth")
    out.iops = num("average_iops")
    out.lat_avg_s = num("average_latency")
    out.lat_max_s = num("max_latency")
    out.lat_min_s = num("min_latency")
    out.lat_stddev_s = num("stddev_latency")
    for row in d.get("datas", []):
        try:
            out.per_second.append({
                "sec": int(row["sec"]), "cur_ops": int(row["cur_ops"]),
                "started": int(row["started"]), "finished": int(row["finished"]),
                "avg_mb_s": float(row["avg_bw"]), "cur_mb_s": float(row["cur_bw"]),
                "last_lat_s": float(row["last_lat"]), "avg_lat_s": float(row["avg_lat"])})
        except (KeyError, TypeError, ValueError):
            continue
    return out


def parse_rados_bench(text: str) -> RadosBenchOutput:
    """Parse ``rados bench`` plain output line by line, ignoring what it does not know
    (repeated headers, timestamped min/max lines, cleanup chatter, warnings). JSON output
    (``-f json``) is recognised and handed to ``parse_rados_bench_json``."""
    if '"total_time_run"' in text or '"datas"' in text:
        return parse_rados_bench_json(text)
    out = RadosBenchOutput()
    for line in text.splitlines():
        mm = _MISMATCH.match(line)
        if mm:
            out.mismatches.append(mm.group(1))
            continue
        mp = _PREFIX.match(line)
        if mp:
            out.object_prefix = mp.group(1)
            continue
        row = parse_rados_bench_row(line)
        if row is not None:
            out.per_second.append(row)
            continue
        if ":" in line:
            key, _, val = line.partition(":")
            spec = _SUMMARY.get(key.strip().lower())
            if spec:
                mv = re.match(r"\s*" + _NUM, val)
                if mv:
                    try:
                        setattr(out, spec[0], spec[1](float(mv.group(1)))
                                if spec[1] is int else spec[1](mv.group(1)))
                    except ValueError:
                        pass
                continue
        low = line.lower()
        if "error" in low or "failed" in low:
            out.errors.append(line.strip())
    if out.mismatches:
        out.errors = [e for e in out.errors if not _EIO_AFTER_VERIFY.match(e)]
    return out


def _maybe_float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def client_host() -> str:
    return socket.gethostname()

