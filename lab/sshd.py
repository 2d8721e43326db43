"""The lab's sshd: one daemon on the lab's port, reachable at every lab host's address
(127.0.0.1..N+1), root by key only; stordoc's host facts and runbooks go through it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from lab.procs import run, wait

if TYPE_CHECKING:
    from lab.parts import LabParts


def up_sshd(lab: LabParts) -> None:
    """Keys, known_hosts, authorized_keys and sshd_config under ``ssh/``; sshd started."""
    step = "sshd"
    sd = lab.ssh_dir
    for key in ("host_ed25519", "client_ed25519"):
        if not (sd / key).exists():
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                 f"stordoc-lab-{key}", "-f", str(sd / key)], step)
    pub = (sd / "client_ed25519.pub").read_text().strip()
    (sd / "authorized_keys").write_text(f'from="127.0.0.0/8" {pub}\n')
    os.chmod(sd / "authorized_keys", 0o600)
    hostpub = " ".join((sd / "host_ed25519.pub").read_text().split()[:2])
    hosts = ",".join(f"[127.0.0.{i}]:{lab.ports.sshd}"
                     for i in range(1, lab.n_hosts + 2))
    (sd / "known_hosts").write_text(f"{hosts} {hostpub}\n")
    log = lab.log_dir / "sshd.log"
    (sd / "sshd_config").write_text(
        f"Port {lab.ports.sshd}\nListenAddress 0.0.0.0\n"
        f"HostKey {sd / 'host_ed25519'}\nPidFile {lab.pids / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {sd / 'authorized_keys'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "AllowUsers root@127.*\nMaxStartups 200:30:400\nMaxSessions 50\n"
        "LogLevel ERROR\nUseDNS no\nSubsystem sftp internal-sftp\n"
        # a multi-client RBD benchmark reaches each host's fio server on a Unix socket
        # forwarded over SSH (never a TCP port). OpenSSH 9.2 refuses that too when
        # AllowTcpForwarding is "no" or "remote" (its local permission covers both)
        "AllowStreamLocalForwarding local\n"
        # bash sources ~/.bashrc for a command run over SSH only as a top-level shell
        # (SHLVL unset): this machine's root .bashrc runs `pyenv init` (0.3-0.8 s and a
        # PATH of pyenv shims in every session). With SHLVL=1 the lab's hosts run
        # commands as a server's root usually does: Debian's PATH, no interactive rc
        "SetEnv SHLVL=1\n")
    Path("/run/sshd").mkdir(exist_ok=True)
    run(["/usr/sbin/sshd", "-f", str(sd / "sshd_config"), "-E", str(log)], step,
        log=str(log))
    wait(lambda: lab.pid("sshd") is not None, 10, step, "sshd pid file", str(log))
