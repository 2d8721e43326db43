"""Where a CI run's CPU goes, from the kernel's process accounting (``acct(2)``, version 3
records): every process that exits while it is on, with its CPU time, however short it
lived (a ``ceph`` call, a facts script) or however long (a daemon of a lab, counted when
its lab stops). Printed: the CPU minutes by program name, and the processes that took the
most. On while ``bash .ci/run`` runs, off after:

    python3 benchmarks/ci_cpu.py on /var/tmp/acct.ci
    CI=true bash .ci/run; python3 benchmarks/ci_cpu.py off
    python3 benchmarks/ci_cpu.py report /var/tmp/acct.ci [--top 25]

Root only (``acct`` is privileged); the file grows by 64 bytes a process (~25 MB a run).
A name is the kernel's ``comm``: 15 characters, a script's file name for a ``#!`` program
(``swift-object-se`` is swift-object-server), ``python`` for ``python -m``.

Measured (2026-11-29, a CI run of 22bbb45 at load 10-13, with three labs of other work
beside it, one filled with objects on purpose): 82.5 CPU-min in all; the Swift storage
daemons 30 of them (object servers 12.7, container servers 10.0, object replicators 7.2;
about 5 of the 30 the filled lab's), the unit tests' pytest process 8.1. An object
replication pass over every partition (once the benchmarks wrote to them) is ~8 s of CPU,
and the lab's replicators passed every 10 s: they now pass every 60 s
(lab/swift_conf.py) and the lab runs a pass where it needs one now.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import datetime
import os
import struct
import sys
from collections.abc import Iterator
from typing import Any

FMT = "<BBHIIIIIIf8H16s"  # struct acct_v3
SIZE = struct.calcsize(FMT)
AHZ = 100.0


def _comp(v: int) -> int:
    """comp_t: a 13-bit mantissa and a 3-bit base-8 exponent."""
    return (v & 0x1FFF) << (((v >> 13) & 7) * 3)


def records(path: str) -> Iterator[dict[str, Any]]:
    data = open(path, "rb").read()
    for off in range(0, len(data) - SIZE + 1, SIZE):
        (_flag, version, _tty, _exit, _uid, _gid, pid, ppid, btime, etime, ut, st, *_rest,
         comm) = struct.unpack_from(FMT, data, off)
        if version & 0x0F != 3:
            continue
        yield {"pid": pid, "ppid": ppid, "btime": btime, "etime": etime / AHZ,
               "cpu": (_comp(ut) + _comp(st)) / AHZ,
               "comm": comm.split(b"\0")[0].decode(errors="replace")}


def _acct(path: str | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if path is not None:
        open(path, "ab").close()
    if libc.acct(path.encode() if path is not None else None) != 0:
        sys.exit(f"acct: {os.strerror(ctypes.get_errno())}")


def report(path: str, top: int) -> None:
    recs = list(records(path))
    by = collections.Counter[str]()
    n = collections.Counter[str]()
    for r in recs:
        by[r["comm"]] += r["cpu"]
        n[r["comm"]] += 1
    print(f"{len(recs)} processes, {sum(by.values()) / 60:.1f} CPU-min")
    for comm, cpu in by.most_common(top):
        print(f"{cpu / 60:7.2f} CPU-min {n[comm]:7d} x  {comm}")
    print("the processes that took the most:")
    for r in sorted(recs, key=lambda r: -r["cpu"])[:top]:
        st = datetime.datetime.fromtimestamp(r["btime"], datetime.UTC).strftime("%H:%M:%S")
        print(f"{r['cpu'] / 60:7.2f} CPU-min  started {st}, ran {r['etime'] / 60:5.1f} min  "
              f"pid {r['pid']}  {r['comm']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="action", required=True)
    sub.add_parser("on").add_argument("file")
    sub.add_parser("off")
    rp = sub.add_parser("report")
    rp.add_argument("file")
    rp.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    if a.action == "on":
        _acct(a.file)
    elif a.action == "off":
        _acct(None)
    else:
        report(a.file, a.top)


if __name__ == "__main__":
    main()
