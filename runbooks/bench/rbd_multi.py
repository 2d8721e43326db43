"""RBD from many clients: fio's own client/server mode.

Each client runs ``fio --server`` for the length of the run (started over SSH through the
common launcher, with ``CEPH_CONF`` pointing at its private conf and key, listening on a
Unix socket in its private 0700 directory: never on TCP); this host reaches each server
only through the SSH connection it holds (the socket forwarded to a local socket in a
0700 directory, ``storage.ssh_forward``) and runs one ``fio --client`` per phase that
sends every server its job file (its own scratch image, so clients never fight over an
image's exclusive lock) and collects fio's JSON: one entry per client plus fio's own
"All clients" sum. Totals are the sums of the per-client figures fio printed;
fio's aggregate is kept beside them (fidelity is checked against it).

- **steady state**: fio's ``steadystate`` options (the slope part of stordoc's rule) stop
  each client's job once its IOPS are steady; ``--duration`` is then the maximum;
- **verified reads**: every write (the prefill and the write phases) carries fio's
  crc32c verify headers every 4 KiB; read phases (``seqread``, ``randread``) verify each
  block they read (fio stops a job on the first mismatch with error 84, EILSEQ): a
  mismatch fails the run. ``randrw`` reads are not verified (fio checks only pure reads);
- **per-second series**: fio's IOPS/bandwidth/latency logs, which fio's client receives
  from each server (``<name>_iops.1.log.<address>``), summed per second.

The job files and the servers' command lines are in ``runbooks.bench.fio_jobs``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from typing import Any

from runbooks.bench.client_hosts import ceph_client_files
from runbooks.bench.clients import Fleet
from runbooks.bench.common import Session
from runbooks.bench.fio_client import (
    per_client_figures,
    series_from_logs,
    split_client_stats,
    verify_examples,
)
from runbooks.bench.fio_jobs import (
    PREFILL_BS,
    READ_MODES,
    VERIFY_INTERVAL,
    client_argv,
    client_specs,
    forward_sockets,
    job_text,
    safe_value,
    server_argv,
    server_socket,
    verified,
    wait_ready,
    write_jobs,
)
from runbooks.bench.model import MIB, BenchResult, human_size
from runbooks.bench.multi import PhaseOutcome, multi_result
from runbooks.bench.rados import ceph_target
from runbooks.bench.rbd import MODES, _bs, _client, _remove_image, iter_json_objects
from runbooks.model import Refused
from storage.rados_io import RadosIO
from storage.targets import CephTarget

__all__ = ["TOOLS", "client_argv", "client_specs", "image_name",
           "job_text", "plan_lines", "run_multi", "server_argv", "server_socket", "verified"]

TOOLS = (["fio", "--version"], ["timeout", "--version"], ["env", "--version"])


def image_name(s: Session, i: int) -> str:
    return f"stordoc-bench-{s.group_id}-c{i + 1}"


def plan_lines(s: Session, pool: str, clients: list[str]) -> list[str]:
    o = s.opts
    t = ceph_target(s)
    lines = [f"clients {', '.join(clients)} (over SSH): private dir <DIR> per client with a "
             f"minimal ceph.conf and the key of {t.client} (copied over SSH), removed after",
             "on every client: $ env CEPH_CONF=<DIR>/ceph.conf fio --server=sock:<DIR>/"
             "fio.sock (a Unix socket, no TCP port; for the run's length, then stopped), "
             "reached only through this host's SSH connection (socket forwarding)",
             f"create one scratch image per client {pool}/stordoc-bench-<group>-c<N> "
             f"({human_size(o.image_size)} each)"]
    if any(verified(m, _bs(s, m)) for m in o.modes):
        lines.append("prefill each image (sequential 4 MiB writes with fio crc32c verify "
                     "headers every 4 KiB), so read phases check what they read")
    for rep in range(1, o.repeat + 1):
        for m in o.modes:
            bs = _bs(s, m)
            lines.append(f"rep {rep}: $ fio --output-format=json --client=sock:c1.sock job "
                         "--client=sock:c2.sock "
                         f"job ... (fio rbd {MODES[m][0]} bs={bs} iodepth={o.concurrency}"
                         + (", reads verified" if verified(m, bs) else "")
                         + (", stop when steady" if o.steady else "") + ")")
    lines.append("remove the scratch images; stop the fio servers")
    return lines


def run_multi(s: Session, pool: str, fleet: Fleet) -> list[BenchResult]:
    import rbd

    o = s.opts
    t = ceph_target(s)
    names = fleet.names
    images = {c: image_name(s, i) for i, c in enumerate(names)}
    specs = client_specs(names)
    safe_value(pool, "pool")
    results: list[BenchResult] = []
    with RadosIO(t) as io:
        if io.ensure_pool(pool):
            s.step(f"create pool {pool}", f"ceph osd pool create {pool}", "created")
            try:
                io.mon({"prefix": "osd pool application enable", "pool": pool, "app": "rbd",
                        "yes_i_really_mean_it": True})
            except Exception:  # noqa: BLE001  (a tag only)
                pass
        state = io.state(pool)
        s.fit_space(state)
        need = o.image_size * len(names)
        if need > s.bytes_left():
            raise Refused(f"{len(names)} scratch images of {o.image_size // MIB} MiB exceed "
                          f"the byte cap ({s.bytes_left() // MIB} MiB left); use --image-size")
        fleet.stage(lambda d: ceph_client_files(t, io.cluster, d))
        ioctx = io.cluster.open_ioctx(pool)
        made: list[str] = []
        logdir = tempfile.mkdtemp(prefix="stordoc-fio-")
        try:
            existing = set(rbd.RBD().list(ioctx))
            for c in names:
                if images[c] in existing:  # never touch an image this run did not make
                    raise Refused(f"image {pool}/{images[c]} already exists; not touching it")
            for c in names:
                rbd.RBD().create(ioctx, images[c], o.image_size)
                made.append(images[c])
            s.step(f"create {len(made)} images in {pool}", "rbd create "
                   + " ".join(f"{pool}/{i}" for i in made)
                   + f" --size {o.image_size // MIB}M", "created")
            cap = o.repeat * (len(o.modes) + 1) * (o.duration_s + 120) + 120
            servers = fleet.launch({c: server_argv(fleet.dirs[c]) for c in names}, cap)
            wait_ready(fleet, forward_sockets(fleet, specs, logdir), servers)
            s.step("start fio servers", "env CEPH_CONF=<DIR>/ceph.conf fio --server=sock:"
                   "<DIR>/fio.sock; forwarded over SSH to <TMP>/cN.sock",
                   ", ".join(f"{c}:{server_socket(fleet.dirs[c])}" for c in names))
            prefilled = False
            for rep in range(1, o.repeat + 1):
                for mode in o.modes:
                    if s.cancelled or s.integrity:
                        break
                    bs = _bs(s, mode)
                    if not prefilled and any(verified(m, _bs(s, m)) for m in o.modes):
                        _prefill(s, t, pool, images, specs, logdir)
                        s.bytes_written += o.image_size * len(names)
                        prefilled = True
                        if s.cancelled:
                            break
                    r = _phase(s, t, pool, images, specs, fleet, mode, bs, rep, state,
                               logdir)
                    if r is not None:
                        results.append(r)
                if s.cancelled or s.integrity:
                    break
        finally:
            fleet.stop([b for b in fleet.launched if b.running], grace_s=10)
            for f in list(fleet.forwards):
                fleet.unforward(f)
            for img in made:
                _remove_image(ioctx, img)
            if made:
                s.step(f"remove {len(made)} images", "rbd rm "
                       + " ".join(f"{pool}/{i}" for i in made), "removed")
            ioctx.close()
            shutil.rmtree(logdir, ignore_errors=True)
    return results


def _run_client(s: Session, argv: list[str], cwd: str, phase: str, rep: int,
                planned_s: float, max_s: float) -> tuple[str, str, int, float, float]:
    """Run ``fio --client`` here, in ``cwd`` (where the forwarded sockets are); Ctrl-C (the session's cancel) becomes SIGINT, which fio
    forwards to every server and still prints its JSON. Returns stdout, stderr, rc, the
    start time and the elapsed seconds."""
    started = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd)
    if s.first_io_at is None:
        s.first_io_at = started
    t0 = time.monotonic()
    stop = threading.Event()

    def watch() -> None:
        signalled = False
        while not stop.wait(0.25):
            el = time.monotonic() - t0
            if not signalled and (s.cancelled or el > max_s):
                proc.send_signal(signal.SIGINT)
                signalled = True
            s.progress(phase, rep, el, planned_s, 0, 0)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    try:
        out, err = proc.communicate(timeout=max_s + 90)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=30)
    finally:
        stop.set()
        w.join(2)
    return out, err, proc.returncode, started, time.monotonic() - t0


def _prefill(s: Session, t: CephTarget, pool: str, images: Mapping[str, str],
             specs: Mapping[str, str], logdir: str) -> None:
    o = s.opts
    texts = {c: job_text(client=_client(t), pool=pool, image=images[c], mode="seqwrite",
                         bs=PREFILL_BS, iodepth=o.concurrency, seconds=0, rwmixread=0,
                         ops=None, steady=False, log_prefix=None, prefill_size=o.image_size)
             for c in images}
    argv = client_argv(write_jobs(logdir, "prefill", texts), specs)
    out, err, rc, _, el = _run_client(s, argv, logdir, "prefill", 1,
                                      o.image_size / (50 * MIB), 600.0)
    docs = list(iter_json_objects(out))
    bad = [e for e in (docs[-1].get("client_stats") or []) if e.get("error")] if docs else []
    if rc != 0 and not s.cancelled or bad:
        s.step("prefill images (fio verify headers)", " ".join(argv), (err or out)[-2000:],
               rc or 1)
        raise Refused(f"fio prefill failed (rc {rc}): {(err or out).strip()[-300:]}")
    s.step("prefill images (fio verify headers)", " ".join(argv),
           f"{len(images)} x {human_size(o.image_size)} in {el:.1f} s", rc)


def _phase(s: Session, t: CephTarget, pool: str, images: Mapping[str, str],
           specs: Mapping[str, str], fleet: Fleet, mode: str, bs: int, rep: int,
           state: Mapping[str, Any], logdir: str) -> BenchResult | None:
    o = s.opts
    tag = f"r{rep}-{mode}"
    prefix = os.path.join(logdir, tag)
    texts = {c: job_text(client=_client(t), pool=pool, image=images[c], mode=mode, bs=bs,
                         iodepth=o.concurrency, seconds=o.duration_s, rwmixread=o.rwmixread,
                         ops=o.ops, steady=o.steady, log_prefix=prefix) for c in images}
    argv = client_argv(write_jobs(logdir, tag, texts), specs)
    shown = " ".join(argv).replace(logdir, "<TMP>")
    out, err, rc, started, el = _run_client(s, argv, logdir, mode, rep, o.duration_s,
                                            o.duration_s + 60)
    docs = list(iter_json_objects(out))
    if not docs:
        s.step(f"rep {rep}: fio {mode} on {len(images)} clients", shown, (err or out)[-2000:],
               rc or 1)
        if s.cancelled:
            return None
        raise Refused(f"fio {mode} failed (rc {rc}): {(err or out).strip()[-300:]}")
    per_e, total_e = split_client_stats(docs[-1], specs)
    missing = [c for c in images if c not in per_e]
    if missing:
        raise Refused(f"fio reported nothing for client {missing[0]}: "
                      f"{(err or out).strip()[-200:]}")
    check = verified(mode, bs)
    examples = verify_examples(err + "\n" + out)
    per: list[dict[str, Any]] = []
    for c in images:
        f = per_client_figures(per_e[c])
        mism = 1 if check and f["error"] == 84 else 0
        d: dict[str, Any] = {
            "client": c, "image": images[c], "rc": rc, **{k: v for k, v in f.items()
                                                           if k != "error"},
            "errors": 0 if mism else (1 if f["error"] else 0),
            "error_kinds": {"verify": 1} if mism else ({"fio": 1} if f["error"] else {}),
            "status": "cancelled" if s.cancelled else ("verify-failed" if mism else
                                                       "failed" if f["error"] else "ok"),
        }
        if check:
            d["verify"] = {"checked": True, "reads": f["ops"], "mismatches": mism,
                           "examples": examples if mism else []}
        if f["error"] and not mism:
            d["error_lines"] = [ln for ln in err.splitlines() if "err=" in ln][:5]
        per.append(d)
    failed = [p for p in per if p["status"] == "failed"]
    if failed and not s.cancelled:
        s.step(f"rep {rep}: fio {mode} on {len(images)} clients", shown, err[-2000:], rc or 1)
        raise Refused(f"fio {mode} failed on client {failed[0]['client']}: "
                      + " | ".join(failed[0].get("error_lines") or [err.strip()[-200:]]))
    attained = [p.get("steady_attained") for p in per]
    stopped_by = "cancel" if s.cancelled else (
        "steady" if o.steady and attained and all(attained) else "duration")
    outcome = PhaseOutcome([], started, el, stopped_by, {}, {c: rc for c in images})
    series = series_from_logs(logdir, prefix, [specs[c].split(":", 1)[1].rsplit(",", 1)[0]
                                               for c in images])
    agg_fio = per_client_figures(total_e) if total_e is not None else None
    extra: dict[str, Any] = {"fio_all_clients": {k: agg_fio[k] for k in ("ops", "bytes",
                                                                         "ops_s", "mb_s")}
                             } if agg_fio else {}
    if o.steady:
        extra["fio_steadystate"] = {p["client"]: p.get("steady_attained") for p in per}
    r = multi_result(s, "rbd", "fio-client", f"{mode} {human_size(bs)}", pool, rep, bs,
                     o.concurrency, state, fleet, per, outcome, series, extra=extra,
                     notes=["totals are the sums of each client's figures in fio's JSON "
                            "(fio's own 'All clients' sum kept beside them)"])
    if check:
        mism = sum(int(p["verify"]["mismatches"]) for p in per)
        r.extra["verify"] = {"checked": True, "engine": "fio verify=crc32c (every block "
                             "read checked against the header its write put there)",
                             "reads": r.ops, "mismatches": mism,
                             "examples": examples if mism else []}
        if mism:
            bad = [p["client"] for p in per if p["verify"]["mismatches"]]
            s.integrity.append(f"fio {mode} read blocks back with other content than written "
                               f"(on {', '.join(bad)}; e.g. "
                               f"{examples[0] if examples else 'fio error 84'})")
            r.status = "failed"
    elif MODES[mode][0] == "randrw":
        r.extra["verify"] = {"checked": False, "why": "fio verifies pure read phases only "
                             "(randrw reads are not checked)"}
    elif mode in READ_MODES:
        r.extra["verify"] = {"checked": False, "why": f"block size {bs} is not a multiple of "
                             f"{VERIFY_INTERVAL} (fio's verify headers are every "
                             f"{VERIFY_INTERVAL} bytes)"}
    if MODES[mode][0] in ("write", "randwrite", "randrw"):
        s.bytes_written += r.bytes if MODES[mode][0] != "randrw" else r.bytes // 2
    s.step(f"rep {rep}: fio rbd {mode} on {len(images)} clients bs={bs}", shown,
           r.headline(), rc)
    return r
