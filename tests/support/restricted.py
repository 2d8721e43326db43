"""stordoc's restricted SSH key on the lab (issue 40.3): a second key whose
authorized_keys line, as ``stordoc hostguard --authorized-key`` prints it, forces
stordoc-host with the allowlist ``stordoc hostguard`` writes for the lab's hosts (one
sshd serves them all: one allowlist for all of them). Removed afterwards; the lab's own
line is never touched."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def restricted_key(lab: Any, directory: Path) -> Iterator[Path]:
    """The restricted private key, installed for the lab's sshd while the block runs."""
    from tests.support.cli import run_main

    key = directory / "restricted_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                    "stordoc-restricted", "-f", str(key)], check=True, timeout=30)
    allow = directory / "host-allow.json"
    hosts = [f"node{i + 1}" for i in range(lab.n_hosts)]
    rc, out, err = run_main("--config", str(lab.config_path), "hostguard", *hosts,
                            "--output", str(allow))
    assert rc == 0 and out.startswith(f"wrote {allow}:"), out + err
    rc, line, err = run_main("hostguard", "x", "--authorized-key", f"{key}.pub")
    assert rc == 0, err
    rc, program, err = run_main("hostguard", "x", "--program")
    assert rc == 0, err
    # the line as printed, its program and allowlist where this lab has them (a host has
    # them at /usr/local/lib/stordoc and /etc/stordoc)
    line = line.strip().replace("/usr/local/lib/stordoc/stordoc-host", program.strip()) \
        .replace("/etc/stordoc/host-allow.json", str(allow))
    assert line.startswith('command="/usr/bin/python3 ') and ",restrict ssh-ed25519 " in line
    ak = lab.ssh_dir / "authorized_keys"
    before = ak.read_text()
    ak.write_text(before + line + "\n")
    try:
        yield key
    finally:
        ak.write_text(before)


def with_key(lab: Any, text: str, key: Path) -> str:
    """A config text of the lab's with every host's key_file the restricted key."""
    full = str(lab.ssh_dir / "client_ed25519")
    assert text.count(f'key_file = "{full}"') == lab.n_hosts, text
    return text.replace(f'key_file = "{full}"', f'key_file = "{key}"')
