"""Physical limits: what the disks under the OSDs and the network path can do at best, so
a benchmark can be stated as an efficiency (measured / limit), as the seed studies do.

Disk: fio (or dd when fio is missing) on a *scratch file* on the filesystem of an OSD's
data directory, over SSH, after checking free space; the file is removed afterwards,
whatever happens. The live OSD data (the ``block`` device, the object store) is never
touched. Network: the host sends a fixed number of bytes to a TCP sink on this client (the
client address as the host sees it, from ``$SSH_CONNECTION``); we time what arrives.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

from runbooks.bench.common import Session
from runbooks.bench.model import MIB, BenchResult, fingerprint_fields, human_size
from runbooks.model import Refused
from storage.rados_io import RadosIO, client_host
from storage.runner import HostUnreachable, Runner
from storage.targets import HostTarget

SCRATCH = ".stordoc-bench-limit.tmp"
# sender run on the host: argv, never a shell; its inputs are positional arguments
SENDER = ("import socket,sys\n"
          "s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=30)\n"
          "n=int(sys.argv[3]);b=bytes(1<<20)\n"
          "while n>0:\n k=min(n,len(b));s.sendall(b[:k]);n-=k\n"
          "s.close()\n")


def osd_hosts(s: Session) -> list[tuple[HostTarget, list[int]]]:
    """Configured hosts with the OSD ids CRUSH puts on them (their names match)."""
    hosts = list(s.ctx.target.hosts)
    if s.opts.hosts:
        wanted = set(s.opts.hosts)
        unknown = wanted - {h.name for h in hosts}
        if unknown:
            raise Refused(f"unknown host(s): {', '.join(sorted(unknown))}; configured: "
                          f"{', '.join(h.name for h in hosts) or 'none'}")
        hosts = [h for h in hosts if h.name in wanted]
    if not hosts:
        raise Refused(f"cluster {s.ctx.cluster} has no hosts configured")
    by_host: dict[str, list[int]] = {}
    if s.ctx.target.ceph is not None:
        with RadosIO(s.ctx.target.ceph) as io:
            tree = io.mon({"prefix": "osd tree"}) or {}
        for n in tree.get("nodes", []):
            if n.get("type") == "host":
                by_host[n["name"]] = sorted(c for c in n.get("children", []) if c >= 0)
    return [(h, by_host.get(h.name, [])) for h in hosts]


def scratch_dir(s: Session, h: HostTarget, osds: Sequence[int]) -> str | None:
    if not osds:
        return h.swift_devices_dir
    # {fsid} (cephadm layouts) is not known here: such hosts get no disk limit
    if "{fsid}" in h.osd_data_dir:
        return None
    return h.osd_data_dir.format(cluster=s.ctx.target.ceph_cluster_name, id=osds[0])


def plan_lines(s: Session) -> list[str]:
    lines = []
    size = human_size(s.opts.limit_size)
    for h, osds in osd_hosts(s):
        d = scratch_dir(s, h, osds)
        if "disk" in s.opts.modes and d:
            f = f"{d}/{SCRATCH}"
            lines.append(f"[{h.name}] check free space: df -B1 --output=avail {d}")
            lines.append(f"[{h.name}] $ " + " ".join(fio_disk_argv(f, "write",
                                                                   s.opts.limit_size)))
            lines.append(f"[{h.name}] $ " + " ".join(fio_disk_argv(f, "read",
                                                                   s.opts.limit_size)))
            lines.append(f"[{h.name}] $ rm -f {f}")
        if "net" in s.opts.modes:
            lines.append(f"[{h.name}] send {size} over TCP to a sink on this client "
                         "(python3 on the host)")
    return lines


def fio_disk_argv(path: str, rw: str, size: int) -> list[str]:
    return ["fio", "--name=stordoc-limit", f"--filename={path}", f"--size={size}",
            "--bs=1M", f"--rw={rw}", "--direct=1", "--ioengine=psync", "--numjobs=1",
            "--output-format=json", "--eta=never"]


def dd_argv(path: str, rw: str, size: int) -> list[str]:
    count = max(1, size // MIB)
    if rw == "write":
        return ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={count}", "oflag=direct",
                "conv=fsync"]
    return ["dd", f"if={path}", "of=/dev/null", "bs=1M", f"count={count}", "iflag=direct"]


_DD_RE = re.compile(r"(\d+) bytes .*copied, ([\d.]+) s")


def parse_dd(text: str) -> float | None:
    """MiB/s from dd's summary line ("67108864 bytes (67 MB, 64 MiB) copied, 0.1 s, ...")."""
    m = _DD_RE.search(text)
    if not m or float(m.group(2)) <= 0:
        return None
    return int(m.group(1)) / MIB / float(m.group(2))


def parse_fio_bw(text: str, rw: str) -> float | None:
    try:
        start = text.index("{")
        d = json.loads(text[start:])
        job = d["jobs"][0]
        return float(job["read" if rw == "read" else "write"]["bw_bytes"]) / MIB
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _disk(s: Session, runner: Runner, h: HostTarget, d: str) -> dict[str, Any]:
    size = s.opts.limit_size
    df = runner.run(h.name, ["df", "-B1", "--output=avail", d], timeout_s=30)
    if not df.ok:
        return {"error": f"df {d}: {df.stderr.strip()[:200]}"}
    try:
        avail = int(df.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"df {d}: unexpected output"}
    if avail < size * 4:
        return {"error": f"not enough free space on {d} ({avail // MIB} MiB free, need "
                         f"{size * 4 // MIB} MiB)"}
    path = f"{d}/{SCRATCH}"
    out: dict[str, Any] = {"dir": d, "size": size}
    try:
        for rw in ("write", "read"):
            r = runner.run(h.name, fio_disk_argv(path, rw, size), timeout_s=120)
            s.step(f"[{h.name}] disk {rw}", r.command_line, r.stdout[-300:], r.rc)
            bw = parse_fio_bw(r.stdout, rw) if r.ok else None
            tool = "fio"
            if bw is None:
                r = runner.run(h.name, dd_argv(path, rw, size), timeout_s=120)
                s.step(f"[{h.name}] disk {rw} (dd)", r.command_line, r.stderr[-300:], r.rc)
                bw = parse_dd(r.stderr) if r.ok else None
                tool = "dd"
            out[f"{rw}_mb_s"] = bw
            out["tool"] = tool
    finally:
        r = runner.run(h.name, ["rm", "-f", path], timeout_s=30)
        s.step(f"[{h.name}] remove scratch file", r.command_line, r.stderr, r.rc)
    return out


def _net(s: Session, runner: Runner, h: HostTarget) -> dict[str, Any]:
    r = runner.run(h.name, ["printenv", "SSH_CONNECTION"], timeout_s=15)
    client_ip = r.stdout.split()[0] if r.ok and r.stdout.split() else "127.0.0.1"
    size = s.opts.limit_size
    try:
        srv = socket.create_server((client_ip, 0))
    except OSError as e:
        return {"error": f"cannot listen on {client_ip}: {e}"}
    srv.settimeout(30)
    port = srv.getsockname()[1]
    got = {"bytes": 0, "t0": 0.0, "t1": 0.0}

    def sink() -> None:
        try:
            c, _ = srv.accept()
        except OSError:
            return
        with c:
            c.settimeout(30)
            first = True
            while True:
                try:
                    b = c.recv(1 << 20)
                except OSError:
                    break
                if not b:
                    break
                if first:
                    got["t0"] = time.perf_counter()
                    first = False
                got["bytes"] += len(b)
            got["t1"] = time.perf_counter()

    th = threading.Thread(target=sink, daemon=True)
    th.start()
    try:
        res = runner.run(h.name, ["python3", "-c", SENDER, client_ip, str(port), str(size)],
                         timeout_s=120)
        th.join(60)
    finally:
        srv.close()
    s.step(f"[{h.name}] network -> {client_ip}", f"python3 -c <sender> {client_ip} {port} "
           f"{size}", res.stderr[-300:], res.rc)
    el = got["t1"] - got["t0"]
    if not res.ok or got["bytes"] < size or el <= 0:
        return {"error": f"network test failed: rc {res.rc}, {got['bytes']} of {size} bytes "
                         f"{res.stderr.strip()[:200]}"}
    return {"mb_s": got["bytes"] / MIB / el, "bytes": got["bytes"], "client_ip": client_ip}


def run(s: Session, runner: Runner) -> list[BenchResult]:
    results: list[BenchResult] = []
    for rep in range(1, s.opts.repeat + 1):
        for h, osds in osd_hosts(s):
            if s.cancelled:
                break
            t0 = time.time()
            info: dict[str, Any] = {"host": h.name, "osds": osds}
            try:
                d = scratch_dir(s, h, osds)
                if "disk" in s.opts.modes:
                    info["disk"] = _disk(s, runner, h, d) if d else \
                        {"error": "no OSD data dir or Swift devices dir on this host"}
                if "net" in s.opts.modes:
                    info["net"] = _net(s, runner, h)
            except HostUnreachable as e:
                info["error"] = str(e)
            disk = info.get("disk") or {}
            net = info.get("net") or {}
            mb = [v for v in (disk.get("write_mb_s"), disk.get("read_mb_s"), net.get("mb_s"))
                  if v]
            errs = [x for x in (info.get("error"), disk.get("error"), net.get("error")) if x]
            res = BenchResult(
                cluster=s.ctx.cluster, kind="limits", engine="fio/dd+tcp",
                workload="+".join(s.opts.modes), group_id=s.group_id, rep=rep,
                params={**s.opts.to_dict(), "host": h.name},
                fingerprint_fields=fingerprint_fields(
                    s.ctx.cluster, "limits", "fio/dd+tcp", "+".join(s.opts.modes), h.name,
                    s.opts.limit_size, 1, client_host(), []),
                started_at=t0, duration_s=time.time() - t0,
                status="ok" if not errs else "failed", user=s.ctx.user,
                mb_s=min(mb) if mb else 0.0, errors=len(errs),
                error_kinds={"limits": len(errs)} if errs else {}, extra=info,
                notes=errs)
            results.append(res)
    return results


def efficiency(result: BenchResult, limits_rows: Sequence[dict[str, Any]],
               replicas: int | None) -> dict[str, Any] | None:
    """measured / limit. Writes: min(network, sum of disk write / replicas); reads:
    min(network, sum of disk read). From the latest limits run of the cluster."""
    if not limits_rows:
        return None
    net = [r["extra"].get("net", {}).get("mb_s") for r in limits_rows]
    nets = [v for v in net if v]
    reading = result.workload.split()[0] in ("seq", "rand", "seqread", "randread")
    key = "read_mb_s" if reading else "write_mb_s"
    disks = [r["extra"].get("disk", {}).get(key) for r in limits_rows]
    disk_total = sum(v for v in disks if v)
    bounds = {}
    if nets:
        bounds["network"] = min(nets)
    if disk_total:
        bounds["disks"] = disk_total / (replicas or 1) if not reading else disk_total
    if not bounds:
        return None
    which = min(bounds, key=lambda k: bounds[k])
    limit = bounds[which]
    return {"limit_mb_s": limit, "bound_by": which, "efficiency": result.mb_s / limit
            if limit else None, "limits_group": limits_rows[0].get("group_id")}
