"""Physical limits: what the disks under the OSDs and the network path can do at best, so
a benchmark can be stated as an efficiency (measured / limit), as the seed studies do.

Disk: fio (or dd when fio is missing) on a *scratch file* on the filesystem of an OSD's
data directory, over SSH, after checking free space; the file is removed afterwards,
whatever happens. The live OSD data (the ``block`` device, the object store) is never
touched. Network: the host sends a fixed number of bytes to a TCP sink on this client (the
client address as the host sees it, from ``$SSH_CONNECTION``); we time what arrives.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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
    """Every host's disk test at once (hosts that share hardware then share it, so the
    sum is a ceiling the cluster can reach together), then each host's network test in
    turn (all of them send to this host: at once they would measure its NIC instead)."""
    results: list[BenchResult] = []
    hosts = osd_hosts(s)
    for rep in range(1, s.opts.repeat + 1):
        if s.cancelled:
            break
        infos: dict[str, dict[str, Any]] = {h.name: {"host": h.name, "osds": osds}
                                            for h, osds in hosts}
        starts = {h.name: time.time() for h, _ in hosts}
        if "disk" in s.opts.modes:
            with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
                got = list(pool.map(lambda ho: _disk_quietly(s, runner, *ho), hosts))
            for (h, _), (info, steps) in zip(hosts, got):
                infos[h.name].update(info)
                for st in steps:  # the audit is written from this thread only, in order
                    s.step(*st)
        for h, _ in hosts:
            if "net" not in s.opts.modes or s.cancelled or "error" in infos[h.name]:
                continue
            try:
                infos[h.name]["net"] = _net(s, runner, h)
            except HostUnreachable as e:
                infos[h.name]["error"] = str(e)
        for h, _ in hosts:
            results.append(_limits_result(s, rep, h, infos[h.name], starts[h.name]))
    return results


def _disk_quietly(s: Session, runner: Runner, h: HostTarget, osds: list[int]
                  ) -> tuple[dict[str, Any], list[tuple[str, str, str, int]]]:
    """One host's disk test on a worker thread: its audit steps are returned, not
    written (the journal is written from the caller's thread)."""
    steps: list[tuple[str, str, str, int]] = []
    quiet = dataclasses.replace(s, on_step=lambda *a: steps.append(a), on_progress=None)
    try:
        d = scratch_dir(s, h, osds)
        return ({"disk": _disk(quiet, runner, h, d)} if d else
                {"disk": {"error": "no OSD data dir or Swift devices dir on this host"}},
                steps)
    except HostUnreachable as e:
        return {"error": str(e)}, steps


def _limits_result(s: Session, rep: int, h: HostTarget, info: dict[str, Any], t0: float
                   ) -> BenchResult:
    disk = info.get("disk") or {}
    net = info.get("net") or {}
    mb = [v for v in (disk.get("write_mb_s"), disk.get("read_mb_s"), net.get("mb_s")) if v]
    errs = [x for x in (info.get("error"), disk.get("error"), net.get("error")) if x]
    return BenchResult(
        cluster=s.ctx.cluster, kind="limits", engine="fio/dd+tcp",
        workload="+".join(s.opts.modes), group_id=s.group_id, rep=rep,
        params={**s.opts.to_dict(), "host": h.name},
        fingerprint_fields=fingerprint_fields(
            s.ctx.cluster, "limits", "fio/dd+tcp", "+".join(s.opts.modes), h.name,
            s.opts.limit_size, 1, client_host(), []),
        started_at=t0, duration_s=time.time() - t0,
        status="ok" if not errs else "failed", user=s.ctx.user,
        mb_s=min(mb) if mb else 0.0, errors=len(errs),
        error_kinds={"limits": len(errs)} if errs else {}, extra=info, notes=errs)


def efficiency(result: BenchResult, limits_rows: Sequence[dict[str, Any]],
               replicas: int | None) -> dict[str, Any] | None:
    """measured / limit, from the latest limits run of the cluster. One client (this
    host): writes min(network, sum of disk write / replicas), reads min(network, sum of
    disk read). Many clients: the clients' summed network, the OSD hosts' summed network
    (divided by the replicas for writes: each byte written reaches ``size`` OSDs) and the
    OSD hosts' summed disks, the smallest of them."""
    if not limits_rows:
        return None
    reading = result.workload.split()[0] in ("seq", "rand", "seqread", "randread")
    key = "read_mb_s" if reading else "write_mb_s"
    rep = 1 if reading else (replicas or 1)
    clients = [str(c.get("client")) for c in result.extra.get("clients") or []]
    bounds: dict[str, float] = {}
    missing: list[str] = []
    if clients:
        by_host = {str(r["extra"].get("host")): r["extra"] for r in limits_rows}
        nets = {c: (by_host.get(c, {}).get("net") or {}).get("mb_s") for c in clients}
        missing = sorted(c for c, v in nets.items() if not v)
        if not missing:
            bounds["clients' network"] = sum(float(v or 0) for v in nets.values())
        osd = [x for x in by_host.values() if x.get("osds")]
        osd_net = [float((x.get("net") or {}).get("mb_s") or 0) for x in osd]
        if osd_net and all(osd_net):
            bounds["OSD hosts' network"] = sum(osd_net) / rep
        disks = [float((x.get("disk") or {}).get(key) or 0) for x in osd]
        if disks and all(disks):
            bounds["disks"] = sum(disks) / rep
    else:
        net = [r["extra"].get("net", {}).get("mb_s") for r in limits_rows]
        nets_ = [v for v in net if v]
        disk_total = sum(v for v in (r["extra"].get("disk", {}).get(key)
                                     for r in limits_rows) if v)
        if nets_:
            bounds["network"] = min(nets_)
        if disk_total:
            bounds["disks"] = disk_total / rep
    if not bounds:
        return None
    which = min(bounds, key=lambda k: bounds[k])
    limit = bounds[which]
    out: dict[str, Any] = {"limit_mb_s": limit, "bound_by": which,
                           "efficiency": result.mb_s / limit if limit else None,
                           "limits_group": limits_rows[0].get("group_id"),
                           "bounds": bounds, "replicas": replicas}
    if missing:
        out["unmeasured_clients"] = missing
    return out


def efficiency_line(eff: dict[str, Any] | None) -> str | None:
    """"efficiency 42% of 310.0 MB/s (disks limit; ...)" for a result's efficiency."""
    if not eff or eff.get("efficiency") is None:
        return None
    others = ", ".join(f"{k} {v:,.1f}" for k, v in (eff.get("bounds") or {}).items()
                       if k != eff["bound_by"])
    line = (f"efficiency {eff['efficiency']:.0%} of {eff['limit_mb_s']:,.1f} MB/s "
            f"({eff['bound_by']} limit" + (f"; {others} MB/s" if others else "") + ")")
    if eff.get("unmeasured_clients"):
        line += (f"; no network limit for {', '.join(eff['unmeasured_clients'])} (run "
                 "`stordoc bench limits` on them)")
    return line
