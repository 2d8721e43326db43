"""One spelling per Swift device: ``d2@node2``, the device name at the host's name in the
settings (``ip`` only when no configured host has that address). Ring entries' addresses
(``127.0.0.3:6200``) stay in the evidence, where they are the facts the ring holds."""

from __future__ import annotations

from collections.abc import Mapping

from storage.model import ClusterSnapshot


def host_names(snap: ClusterSnapshot) -> dict[str, str]:
    """Address -> configured host name, for the hosts of the snapshot."""
    out: dict[str, str] = {}
    for name, facts in sorted(snap.hosts.items()):
        if facts.address:
            out.setdefault(facts.address, name)
    return out


def device_name(device: str, ip: str, names: Mapping[str, str] | None = None) -> str:
    """``d2@node2`` (``d2@127.0.0.3`` when no configured host has that address)."""
    return f"{device}@{(names or {}).get(ip, ip)}"
