"""What the Swift runbooks share: the configured host a target names, the Swift state of
the snapshot, and ``SERVER@HOST`` targets (a storage server on a host)."""

from __future__ import annotations

import re

from runbooks.base import Draft
from runbooks.model import Refused
from storage.model import ClusterSnapshot, SwiftState
from storage.targets import HostTarget

SERVER_TARGET_RE = re.compile(r"^(object|container|account)@([A-Za-z0-9][A-Za-z0-9._-]{0,253})$")


def configured_host(d: Draft, host: str) -> HostTarget:
    """The cluster's configured host of that name, or a refusal that lists the known ones."""
    ht = d.ctx.target.host(host)
    if ht is None:
        known = ", ".join(h.name for h in d.ctx.target.hosts) or "none"
        raise Refused(f"host {host!r} is not configured for cluster {d.ctx.cluster} "
                      f"(hosts: {known})")
    return ht


def need_swift(snap: ClusterSnapshot) -> SwiftState:
    if snap.swift is None:
        raise Refused(f"cannot read Swift: {snap.swift_error or 'no Swift configured'}")
    return snap.swift


def server_on_host(d: Draft, snap: ClusterSnapshot, target: str
                    ) -> tuple[str, SwiftState, HostTarget]:
    """SERVER@HOST parsed: (server kind, the Swift state, the configured host), or Refused."""
    m = SERVER_TARGET_RE.match(target)
    if not m:
        raise Refused(f"{target!r} is not a Swift server target like object@node1 "
                      "(object, container or account)")
    server, host = m.group(1), m.group(2)
    swift = need_swift(snap)
    return server, swift, configured_host(d, host)
