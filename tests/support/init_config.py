"""A config written by ``stordoc init`` for the running lab, from what a team has (its
ceph.conf, a keyring, the Swift dir, an SSH key: issue 40.5), and the findings the hosts
and the osdmap give with it, to compare with the lab's own generated config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from checks.mounts import OSD_CODES, SWIFT_CODES
from checks.swift_rings import CODES as RING_CODES

OURS = {c.code for c in OSD_CODES + SWIFT_CODES + RING_CODES} | {"HOST_UNREACHABLE"}


def init_config(lab: Any, directory: Path) -> tuple[Path, str]:
    """(a config of ``init``'s text on a journal of its own, that text)."""
    from tests.support.cli import run_main

    out = directory / "init.toml"
    rc, so, se = run_main("init", "--name", "lab", "--ceph-conf", str(lab.conf),
                          "--keyring", str(lab.admin_keyring), "--swift-dir",
                          str(lab.swift_etc), "--ssh-key", str(lab.ssh_dir / "client_ed25519"),
                          "--known-hosts", str(lab.ssh_dir / "known_hosts"),
                          "--ssh-port", str(lab.ports.sshd), "-o", str(out))
    assert rc == 0, so + se
    text = out.read_text()
    mine = directory / "mine.toml"
    mine.write_text(f'journal = "{directory / "init-journal.db"}"\n' + text)
    return mine, text


def findings(config: Path) -> tuple[int, list[tuple[str, str]]]:
    from tests.support.cli import run_main

    rc, so, se = run_main("--config", str(config), "check", "--json")
    assert rc in (0, 1, 2), so + se
    doc = json.loads(so)
    return rc, sorted((f["code"], f["entity"]) for f in doc["findings"])


def settled(config: Path) -> list[tuple[str, str]]:
    """What the hosts and the osdmap say (the PGs re-peer between two checks)."""
    return [f for f in findings(config)[1] if f[0].startswith(("OSD_", "HOST_"))
            or f[0] in OURS]
