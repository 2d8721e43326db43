"""The stock ``rados bench`` tool: its command lines (argv, no shell) and a robust parser
of what it prints (plain per-second rows and summary, or ``-f json``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from storage.targets import CephTarget


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
_SUMMARY: dict[str, tuple[str, type[float] | type[int]]] = {
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

