"""fio's client/server mode as stordoc drives it (the input side; ``fio_client`` reads
what comes back): the job file each server gets, the ``fio --server`` and ``fio --client``
command lines, and making sure every server the jobs go to is one this run started.

Job files hold only values checked against a strict pattern: a job file can run commands
(``exec_prerun``), so nothing free-form reaches one. fio's server has no authentication:
it listens only on the client's configured address, only while the run lasts (``timeout``
caps it even if this host dies), and is stopped after the run.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Mapping, Sequence

from runbooks.bench.clients import Fleet, Launched
from runbooks.bench.model import MIB
from runbooks.bench.rbd import MODES
from runbooks.bench.stats import fio_steadystate_options
from runbooks.model import Refused

VERIFY_INTERVAL = 4096
PREFILL_BS = 4 * MIB
READY_TIMEOUT_S = 20.0
_SAFE = re.compile(r"\A[A-Za-z0-9._-]{1,128}\Z")
_HOST_SAFE = re.compile(r"\A[A-Za-z0-9.:-]{1,253}\Z")
READ_MODES = ("seqread", "randread")


def safe_value(v: object, what: str) -> str:
    text = str(v)
    if not _SAFE.match(text):
        raise Refused(f"{what} {text[:40]!r} cannot go into a fio job file (letters, digits, "
                      "'.', '_' and '-' only)")
    return text


def server_spec(address: str, port: int) -> str:
    """fio's address syntax: ``ip:host,port`` (``ip6:`` for an IPv6 literal)."""
    if not _HOST_SAFE.match(address):
        raise Refused(f"client address {address[:40]!r} is not a host name or IP address")
    return f"{'ip6' if ':' in address else 'ip'}:{address},{port}"


def server_argv(stage_dir: str, address: str, port: int) -> list[str]:
    return ["env", f"CEPH_CONF={stage_dir}/ceph.conf", "fio", f"--server={server_spec(address, port)}"]


def verified(mode: str, bs: int) -> bool:
    return mode in READ_MODES and bs % VERIFY_INTERVAL == 0


def job_text(*, client: str, pool: str, image: str, mode: str, bs: int, iodepth: int,
             seconds: float, rwmixread: int, ops: int | None, steady: bool,
             log_prefix: str | None, prefill_size: int | None = None) -> str:
    """One client's job file for one phase (``prefill_size``: the sequential write that
    lays down verify headers over the image before the first read phase)."""
    g = {"ioengine": "rbd", "clientname": safe_value(client, "Ceph client"),
         "pool": safe_value(pool, "pool"), "rbdname": safe_value(image, "image"), "direct": "1",
         "invalidate": "0", "numjobs": "1", "verify": "crc32c",
         "verify_interval": str(VERIFY_INTERVAL)}
    if prefill_size is not None:
        job = {"rw": "write", "bs": str(PREFILL_BS), "iodepth": str(max(1, min(iodepth, 16))),
               "size": str(int(prefill_size)), "do_verify": "0"}
        name = "prefill"
    else:
        rw, _ = MODES[mode]
        job = {"rw": rw, "bs": str(int(bs)), "iodepth": str(int(iodepth)),
               "runtime": str(max(1, round(seconds))), "time_based": "1",
               "percentile_list": "50:90:99:99.9"}
        if rw == "randrw":
            job["rwmixread"] = str(int(rwmixread))
        if ops:
            job["number_ios"] = str(int(ops))
        if not verified(mode, bs):
            # writes still lay down headers (later read phases check them); a read that
            # cannot be checked must not be: no verify on it
            if "read" in rw and rw != "randrw":
                del g["verify"], g["verify_interval"]
            else:
                job["do_verify"] = "0"
        if steady:
            job.update(fio_steadystate_options())
        if log_prefix is not None:
            job.update({"write_iops_log": log_prefix, "write_bw_log": log_prefix,
                        "write_lat_log": log_prefix, "log_avg_msec": "1000"})
        name = "stordoc"
    for v in job.values():
        if "\n" in v or "$" in v:
            raise Refused("unexpected character in a fio job option")
    return ("[global]\n" + "".join(f"{k}={v}\n" for k, v in g.items())
            + f"[{name}]\n" + "".join(f"{k}={v}\n" for k, v in job.items()))


def client_argv(jobs: Mapping[str, str], specs: Mapping[str, str]) -> list[str]:
    """``fio --client=A job_A --client=B job_B ...`` with JSON output."""
    argv = ["fio", "--output-format=json"]
    for c, path in jobs.items():
        argv += [f"--client={specs[c]}", path]
    return argv


def port_taken(address: str, port: int) -> bool:
    """Something already accepts connections there (another fio server, anything)."""
    try:
        socket.create_connection((address, port), 1.0).close()
        return True
    except OSError:
        return False


def check_ports(addresses: Mapping[str, str], port: int) -> None:
    """Refuse when a client's fio port already answers: jobs must never go to a server
    this run did not start."""
    taken = [c for c, a in addresses.items() if port_taken(a, port)]
    if taken:
        c = taken[0]
        raise Refused(f"client {c}: port {port} on {addresses[c]} is already in use (another "
                      "fio server?); nothing was started; set [bench] fio_port to a free port")


def wait_listening(specs: Mapping[str, tuple[str, int]], fleet: Fleet,
                   batch: Sequence[Launched], timeout_s: float = READY_TIMEOUT_S) -> None:
    """Until every fio server accepts a TCP connection (fio prints nothing we can wait
    for: its "listening" line is buffered)."""
    left = dict(specs)
    deadline = time.monotonic() + timeout_s
    while left:
        for c, (addr, port) in list(left.items()):
            try:
                socket.create_connection((addr, port), 1.0).close()
                del left[c]
            except OSError:
                pass
        if not left:
            break
        dead = [b for b in batch if b.client in left and not b.running]
        if dead or time.monotonic() > deadline:
            b = dead[0] if dead else next(x for x in batch if x.client in left)
            why = " | ".join(b.proc.lines()[-3:])[:240] or "not listening"
            raise Refused(f"client {b.client}: fio --server did not come up on "
                          f"{left[b.client][0]}:{left[b.client][1]}: {why}")
        time.sleep(0.2)
    # what answers must be ours: a server that lost the port to another process exits
    time.sleep(0.5)
    dead = [b for b in batch if not b.running]
    if dead:
        why = " | ".join(dead[0].proc.lines()[-3:])[:240] or "exited"
        raise Refused(f"client {dead[0].client}: fio --server exited: {why}")


def write_jobs(logdir: str, tag: str, texts: Mapping[str, str]) -> dict[str, str]:
    paths = {}
    for i, (c, text) in enumerate(texts.items()):
        p = os.path.join(logdir, f"{tag}-c{i + 1}.fio")
        with open(p, "w", encoding="ascii") as f:
            f.write(text)
        paths[c] = p
    return paths
