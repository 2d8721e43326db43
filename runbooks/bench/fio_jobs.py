"""fio's client/server mode as stordoc drives it (the input side; ``fio_client`` reads
what comes back): the job file each server gets, the ``fio --server`` and ``fio --client``
command lines, and reaching every server this run started, and only those.

fio's server has no authentication and runs whatever job reaches it as its user (a job
file can run commands: ``exec_prerun``). So no server ever listens on TCP: each one
listens on a Unix socket in the client's private directory of the run (``mktemp -d``,
mode 0700, the SSH user's), and this host reaches it only through the SSH connection it
already holds (``storage.ssh_forward``: OpenSSH's streamlocal forwarding to a socket in
a local 0700 directory, where ``fio --client`` connects). No one else on the network, and
no other user on either host, can send a server a job. Job files hold only values
checked against a strict pattern, so nothing free-form reaches one either.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence

from runbooks.bench.clients import STAGE_RE, Fleet, Launched
from runbooks.bench.measure import fio_steadystate_options
from runbooks.bench.model import MIB
from runbooks.bench.rbd import MODES
from runbooks.model import Refused
from storage.ssh_forward import ForwardRefused, SocketForward

VERIFY_INTERVAL = 4096
PREFILL_BS = 4 * MIB
READY_TIMEOUT_S = 20.0
SOCKET = "fio.sock"
_SAFE = re.compile(r"\A[A-Za-z0-9._-]{1,128}\Z")
READ_MODES = ("seqread", "randread")


def safe_value(v: object, what: str) -> str:
    text = str(v)
    if not _SAFE.match(text):
        raise Refused(f"{what} {text[:40]!r} cannot go into a fio job file (letters, digits, "
                      "'.', '_' and '-' only)")
    return text


def server_socket(stage_dir: str) -> str:
    """Where a client's ``fio --server`` listens: a Unix socket in its private directory."""
    if not STAGE_RE.match(stage_dir):
        raise Refused(f"unexpected client directory {stage_dir[:60]!r}")
    return f"{stage_dir}/{SOCKET}"


def server_argv(stage_dir: str) -> list[str]:
    return ["env", f"CEPH_CONF={stage_dir}/ceph.conf", "fio",
            f"--server=sock:{server_socket(stage_dir)}"]


def client_specs(names: Sequence[str]) -> dict[str, str]:
    """fio's ``--client`` address of each client: the local end of its forwarded socket,
    relative to the directory ``fio --client`` runs in (fio names the logs it receives
    after it: ``<prefix>_iops.1.log.c1.sock``)."""
    return {c: f"sock:c{i + 1}.sock" for i, c in enumerate(names)}


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


def forward_sockets(fleet: Fleet, specs: Mapping[str, str], local_dir: str
                    ) -> dict[str, SocketForward]:
    """For each client, the local socket ``local_dir``/<spec> carried over its SSH
    connection to its server's socket (``local_dir`` must be private: 0700)."""
    return {c: fleet.forward(c, server_socket(fleet.dirs[c]),
                             os.path.join(local_dir, specs[c].split(":", 1)[1]))
            for c in specs}


def wait_ready(fleet: Fleet, forwards: Mapping[str, SocketForward],
               batch: Sequence[Launched], timeout_s: float = READY_TIMEOUT_S) -> None:
    """Until every fio server accepts a connection through its forwarded socket. A socket
    that is there on its host but cannot be reached through SSH: the host's sshd does not
    forward to Unix sockets (OpenSSH answers that as it answers a missing socket)."""
    left = dict(forwards)
    deadline = time.monotonic() + timeout_s
    while left:
        for c, fwd in list(left.items()):
            try:
                if fwd.reachable():
                    del left[c]
                    continue
                if not fleet.runner.run(c, ["test", "-S", fwd.remote_path], 15).ok:
                    continue  # not listening yet
                if _reachable_soon(fwd):
                    del left[c]
                    continue
                why = "its sshd does not forward to Unix sockets; allow it with " \
                      "AllowStreamLocalForwarding in its sshd_config"
            except ForwardRefused as e:
                why = str(e)
            raise Refused(f"client {c}: cannot reach fio's server through SSH ({why})")
        if not left:
            break
        dead = [b for b in batch if b.client in left and not b.running]
        if dead or time.monotonic() > deadline:
            b = dead[0] if dead else next(x for x in batch if x.client in left)
            why = " | ".join(ln for ln in b.proc.lines()[-3:]
                             if not ln.startswith("stordoc-ready"))[:240] or "not listening"
            raise Refused(f"client {b.client}: fio --server did not come up on "
                          f"{left[b.client].remote_path}: {why}")
        time.sleep(0.2)


def _reachable_soon(fwd: SocketForward, tries: int = 4, every_s: float = 0.3) -> bool:
    """The socket is there: give the server a moment to listen on it."""
    for _ in range(tries):
        time.sleep(every_s)
        if fwd.reachable():
            return True
    return False


def write_jobs(logdir: str, tag: str, texts: Mapping[str, str]) -> dict[str, str]:
    paths = {}
    for i, (c, text) in enumerate(texts.items()):
        p = os.path.join(logdir, f"{tag}-c{i + 1}.fio")
        with open(p, "w", encoding="ascii") as f:
            f.write(text)
        paths[c] = p
    return paths
