"""Native RADOS for benchmarks: one python-rados connection (``RadosIO``) with the mon
commands a benchmark needs (pool create and delete, cluster state), its objects, and timed
I/O phases driven by ``storage.rados_load``. The stock ``rados bench`` command line and the
parser of its output are in ``storage.rados_bench``; their names are importable from here
too.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from storage.ceph.client import CephClient, CephUnreachable, ceph_files
from storage.ceph.parse_settle import settle_to_json, worth_comparing
from storage.ceph.settle import read_pg_settle
from storage.rados_bench import RadosBenchOutput as RadosBenchOutput
from storage.rados_bench import parse_rados_bench as parse_rados_bench
from storage.rados_bench import parse_rados_bench_row as parse_rados_bench_row
from storage.rados_bench import rados_bench_argv as rados_bench_argv
from storage.rados_bench import rados_cleanup_argv as rados_cleanup_argv
from storage.rados_load import MODES as MODES
from storage.rados_load import RawRun as RawRun
from storage.rados_load import Tick as Tick
from storage.rados_load import default_reapers, drive
from storage.safefile import FileRefused, check_named
from storage.targets import CephTarget

OBJ_PREFIX = "stordoc_bench_"


class RadosBenchError(Exception):
    """A benchmark could not start or the cluster refused an admin command."""


def connect(target: CephTarget) -> Any:
    """A connected ``rados.Rados``; raises RadosBenchError with a one-line reason."""
    import rados

    try:
        check_named(ceph_files(target))
    except FileRefused as e:
        raise RadosBenchError(str(e)) from None
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
        # have the PGs reported on the current osdmap (``checks.settle`` judges it): PG
        # states read right after an OSD up/down/in/out may be the map before it; asked
        # only when they all read clean (else the gate refuses on them anyway)
        t = self.target
        if worth_comparing(out["pgs_by_state"]):
            try:
                out["pg_settle"] = settle_to_json(read_pg_settle(
                    CephClient.over(t, self.cluster), t.osdmaptool, t.timeout_s))
            except CephUnreachable as e:
                raise RadosBenchError(f"cannot read the PGs' reports: {e}") from None
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
            return drive(ioctx, mode, op_size, concurrency, duration_s, max_ops, max_bytes,
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
    total: int = pgmap.get("num_pgs", 0)
    clean: int = sum(s["count"] for s in states if s.get("state_name") == "active+clean")
    return clean == total


def client_host() -> str:
    return socket.gethostname()

