"""RBD workloads: fio's rbd engine on a scratch image (4 KB random read/write, 64 KB
sequential, as in the Intel RBD study), results from fio's JSON output.

fio reads ``$CEPH_CONF`` (it has no option for a conf path), so we hand it a copy of the
cluster's conf with the configured keyring added. The image is created and removed with
python-rbd; Ctrl-C sends fio (our child) SIGINT, and fio still prints its JSON.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

from runbooks.bench.common import Session
from runbooks.bench.model import MIB, BenchResult, fingerprint_fields, human_size
from runbooks.bench.rados import ceph_target
from runbooks.model import Refused
from storage.rados_io import RadosIO, client_host
from storage.safefile import read_text
from storage.targets import CephTarget

MODES = {"randrw": ("randrw", 4096), "seqwrite": ("write", 65536),
         "seqread": ("read", 65536), "randread": ("randread", 4096),
         "randwrite": ("randwrite", 4096)}


def fio_argv(pool: str, image: str, client: str, mode: str, bs: int, iodepth: int,
             seconds: float, rwmixread: int, ops: int | None = None) -> list[str]:
    rw, _ = MODES[mode]
    argv = ["fio", "--name=stordoc-rbd", "--ioengine=rbd", f"--clientname={client}",
            f"--pool={pool}", f"--rbdname={image}", f"--rw={rw}", f"--bs={bs}",
            f"--iodepth={iodepth}", "--numjobs=1", "--direct=1", "--invalidate=0",
            f"--runtime={max(1, round(seconds))}", "--time_based",
            "--output-format=json", "--status-interval=1",
            "--percentile_list=50:90:99:99.9", "--eta=never"]
    if rw == "randrw":
        argv.append(f"--rwmixread={rwmixread}")
    if ops:
        argv.append(f"--number_ios={ops}")
    return argv


def iter_json_objects(text: str) -> Iterator[dict[str, Any]]:
    """fio with --status-interval prints one JSON document per interval, back to back
    (sometimes with plain-text lines between): decode them one by one."""
    dec = json.JSONDecoder()
    i = 0
    n = len(text)
    while i < n:
        j = text.find("{", i)
        if j < 0:
            return
        try:
            obj, end = dec.raw_decode(text, j)
        except ValueError:
            i = j + 1
            continue
        if isinstance(obj, dict):
            yield obj
        i = end


def _io(job: dict[str, Any], d: str) -> dict[str, Any]:
    v = job.get(d) or {}
    return v if isinstance(v, dict) else {}


def summarize_fio(objs: list[dict[str, Any]]) -> dict[str, Any]:
    """Final numbers from the last document; a per-second series from the cumulative ones."""
    if not objs:
        raise ValueError("fio printed no JSON")
    final = objs[-1]
    job = (final.get("jobs") or [{}])[0]
    dirs = [d for d in ("read", "write") if _io(job, d).get("total_ios")]
    ops = sum(int(_io(job, d).get("total_ios", 0)) for d in dirs)
    nbytes = sum(int(_io(job, d).get("io_bytes", 0)) for d in dirs)
    runtime_s = max((float(_io(job, d).get("runtime", 0)) for d in dirs), default=0.0) / 1000
    lat_avg = (sum(float(_io(job, d).get("lat_ns", {}).get("mean", 0)) *
                   int(_io(job, d).get("total_ios", 0)) for d in dirs) / ops / 1e6) if ops else None
    lat_max = max((float(_io(job, d).get("lat_ns", {}).get("max", 0)) for d in dirs),
                  default=0.0) / 1e6 if ops else None

    def pct(key: str) -> float | None:
        vals = [float(v) for d in dirs for k, v in
                (_io(job, d).get("clat_ns", {}).get("percentile") or {}).items()
                if abs(float(k) - float(key)) < 1e-6]
        return max(vals) / 1e6 if vals else None

    per_dir = {d: {"ops": int(_io(job, d).get("total_ios", 0)),
                   "iops": float(_io(job, d).get("iops", 0)),
                   "mb_s": float(_io(job, d).get("bw_bytes", 0)) / MIB,
                   "lat_avg_ms": float(_io(job, d).get("lat_ns", {}).get("mean", 0)) / 1e6,
                   "clat_p99_ms": (float((_io(job, d).get("clat_ns", {}).get("percentile")
                                          or {}).get("99.000000", 0)) / 1e6)}
               for d in dirs}
    errors = int(job.get("error", 0) or 0)
    series = []
    prev_ops = prev_bytes = 0
    prev_lat_sum = 0.0
    prev_t = 0.0
    for o in objs[:-1]:
        j = (o.get("jobs") or [{}])[0]
        t = float(j.get("elapsed", 0) or 0)
        c_ops = sum(int(_io(j, d).get("total_ios", 0)) for d in ("read", "write"))
        c_bytes = sum(int(_io(j, d).get("io_bytes", 0)) for d in ("read", "write"))
        c_lat = sum(float(_io(j, d).get("lat_ns", {}).get("mean", 0)) *
                    int(_io(j, d).get("total_ios", 0)) for d in ("read", "write"))
        dt = t - prev_t
        if dt <= 0:
            continue
        d_ops = c_ops - prev_ops
        series.append({"t": t, "ops_s": d_ops / dt, "mb_s": (c_bytes - prev_bytes) / MIB / dt,
                       "lat_ms": ((c_lat - prev_lat_sum) / d_ops / 1e6) if d_ops > 0 else 0.0,
                       "partial": 0.0})
        prev_ops, prev_bytes, prev_lat_sum, prev_t = c_ops, c_bytes, c_lat, t
    return {"ops": ops, "bytes": nbytes, "runtime_s": runtime_s, "lat_avg_ms": lat_avg,
            "lat_max_ms": lat_max, "lat_p50_ms": pct("50"), "lat_p90_ms": pct("90"),
            "lat_p99_ms": pct("99"), "lat_p999_ms": pct("99.9"), "per_dir": per_dir,
            "errors": errors, "series": series,
            "fio_version": final.get("fio version")}


def plan_lines(s: Session, pool: str, image: str) -> list[str]:
    o = s.opts
    t = ceph_target(s)
    lines = [f"create scratch image {pool}/{image} ({human_size(o.image_size)})"]
    for rep in range(1, o.repeat + 1):
        for m in o.modes:
            bs = _bs(s, m)
            lines.append(f"rep {rep}: $ CEPH_CONF={t.conf} " + " ".join(
                fio_argv(pool, image, _client(t), m, bs, o.concurrency, o.duration_s,
                         o.rwmixread, o.ops)))
    lines.append(f"remove image {pool}/{image}")
    return lines


def _bs(s: Session, mode: str) -> int:
    # the default size (4M) is the RADOS default; fio modes have their own (4k / 64k)
    return s.opts.size if s.opts.size != 4 * MIB else MODES[mode][1]


def _client(t: CephTarget) -> str:
    return t.client.split(".", 1)[1] if t.client.startswith("client.") else t.client


def _conf_for_fio(t: CephTarget) -> str:
    text = read_text(t.conf, 1 << 20)  # the configured ceph.conf: regular, bounded
    if t.keyring:
        text += f"\n[client]\nkeyring = {t.keyring}\n"
    fd, path = tempfile.mkstemp(prefix="stordoc-fio-", suffix=".conf")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def run(s: Session, pool: str) -> list[BenchResult]:
    import rbd

    o = s.opts
    t = ceph_target(s)
    image = f"stordoc-bench-{s.group_id}"
    results: list[BenchResult] = []
    conf = _conf_for_fio(t)
    with RadosIO(t) as io:
        if io.ensure_pool(pool):
            s.step(f"create pool {pool}", f"ceph osd pool create {pool}", "created")
            try:  # tag only a pool this run created: someone else's pool is left as it is
                io.mon({"prefix": "osd pool application enable", "pool": pool, "app": "rbd",
                        "yes_i_really_mean_it": True})
            except Exception:
                pass
        state = io.state(pool)
        s.fit_space(state)
        if o.image_size > s.bytes_left():
            raise Refused(f"scratch image of {o.image_size // MIB} MiB exceeds the byte cap "
                          f"({s.bytes_left() // MIB} MiB left); use --image-size")
        ioctx = io.cluster.open_ioctx(pool)
        try:
            if image in rbd.RBD().list(ioctx):  # never remove an image this run did not make
                raise Refused(f"image {pool}/{image} already exists; not touching it")
            rbd.RBD().create(ioctx, image, o.image_size)
            s.step(f"create image {pool}/{image}", f"rbd create {pool}/{image} "
                   f"--size {o.image_size // MIB}M", "created")
            try:
                for rep in range(1, o.repeat + 1):
                    for mode in o.modes:
                        if s.cancelled:
                            break
                        bs = _bs(s, mode)
                        argv = fio_argv(pool, image, _client(t), mode, bs, o.concurrency,
                                        o.duration_s, o.rwmixread, o.ops)
                        text, rc = _run_fio(s, argv, conf, mode, rep)
                        objs = list(iter_json_objects(text))
                        if not objs:
                            s.step(f"rep {rep}: fio {mode}", " ".join(argv), text[-2000:], rc)
                            if s.cancelled:
                                break
                            raise Refused(f"fio {mode} failed (rc {rc}): "
                                          f"{text.strip()[-300:]}")
                        summ = summarize_fio(objs)
                        r = _result(s, summ, mode, pool, rep, state, bs, argv)
                        results.append(r)
                        s.step(f"rep {rep}: fio rbd {mode} bs={bs}", " ".join(argv),
                               r.headline(), rc)
                    if s.cancelled:
                        break
            finally:
                _remove_image(ioctx, image)
                s.step(f"remove image {pool}/{image}", f"rbd rm {pool}/{image}", "removed")
        finally:
            ioctx.close()
            os.unlink(conf)
    return results


def _remove_image(ioctx: Any, image: str) -> None:
    import rbd

    deadline = time.monotonic() + 60
    while True:
        try:
            rbd.RBD().remove(ioctx, image)
            return
        except rbd.ImageNotFound:
            return
        except rbd.ImageBusy:  # a watcher from the killed fio lingers for a moment
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _run_fio(s: Session, argv: list[str], conf: str, mode: str, rep: int) -> tuple[str, int]:
    env = {**os.environ, "CEPH_CONF": conf}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    chunks: list[str] = []
    t0 = time.monotonic()
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.25):
            if s.cancelled and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                return
            s.progress(mode, rep, time.monotonic() - t0, s.opts.duration_s, 0, 0)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    try:
        out, err = proc.communicate(timeout=s.opts.duration_s + 120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        stop.set()
    chunks.append(out)
    if proc.returncode != 0:
        chunks.append(err)
    return "".join(chunks), proc.returncode


def _result(s: Session, summ: dict[str, Any], mode: str, pool: str, rep: int,
            state: dict[str, Any], bs: int, argv: list[str]) -> BenchResult:
    el = summ["runtime_s"] or 1e-9
    o = s.opts
    workload = f"{mode} {human_size(bs)}"
    notes = [("latency percentiles are fio completion latency (clat); for randrw the worse "
              "of read and write")] if mode == "randrw" else \
        ["latency percentiles are fio completion latency (clat)"]
    return BenchResult(
        cluster=s.ctx.cluster, kind="rbd", engine="fio", workload=workload,
        group_id=s.group_id, rep=rep, params={**o.to_dict(), "bs": bs, "fio_argv": argv},
        fingerprint_fields=fingerprint_fields(
            s.ctx.cluster, "rbd", "fio", workload, pool, bs, o.concurrency, client_host(),
            state.get("versions") or []),
        started_at=time.time() - el, duration_s=el,
        status="cancelled" if s.cancelled else "ok", user=s.ctx.user,
        ops=summ["ops"], bytes=summ["bytes"], ops_s=summ["ops"] / el,
        mb_s=summ["bytes"] / MIB / el, lat_avg_ms=summ["lat_avg_ms"],
        lat_p50_ms=summ["lat_p50_ms"], lat_p90_ms=summ["lat_p90_ms"],
        lat_p99_ms=summ["lat_p99_ms"], lat_p999_ms=summ["lat_p999_ms"],
        lat_max_ms=summ["lat_max_ms"], errors=summ["errors"],
        error_kinds={"fio": summ["errors"]} if summ["errors"] else {},
        series=summ["series"], state=dict(state),
        extra={"per_dir": summ["per_dir"], "fio_version": summ["fio_version"]}, notes=notes)
