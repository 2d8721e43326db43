"""OSD flaps from the cluster log (``ceph log last N info cluster``): an OSD marked down
while it ran (the monitor's ``osd.N failed (...)`` on its peers' reports, ``marked down
after no beacon``, or the OSD's own "Monitor daemon marked osd.N down, but it is still
running") and then booted again is one flap. A clean stop ("marked itself down") and
start is a restart, not a flap, and it starts the count again (the restart on-call does
once the cause is fixed: older flaps are then history). Real on Pacific and Reef alike; bounded by N lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from storage.ceph.parse import as_list, parse_stamp
from storage.model.pgquery import OsdFlaps

LOG_LINES = 500
LOG_FLAPS = "log last flaps"  # its raw key (file log_last_flaps.json)
_FAILED_RE = re.compile(r"^osd\.(\d+) failed \(")
_NO_BEACON_RE = re.compile(r"^osd\.(\d+) marked down after no beacon")
_WRONGLY_RE = re.compile(r"^Monitor daemon marked osd\.(\d+) down, but it is still running")
_SELF_DOWN_RE = re.compile(r"^osd\.(\d+) marked itself down")
_BOOT_RE = re.compile(r"^osd\.(\d+) \S+ boot$")


def parse_flaps(log: Any, now: float) -> tuple[OsdFlaps, ...]:
    """Flaps per OSD in the log's entries (any order), those with at least one flap. A
    flap: the OSD said it was marked down while running, then booted again; a daemon
    that died (killed, crashed) and was restarted is reported failed but never protests,
    so it is not counted (that is a crash, not a flap)."""
    entries = []
    for e in as_list(log):
        if not isinstance(e, Mapping):
            continue
        t = parse_stamp(e.get("stamp"))
        if t is not None:
            entries.append((t, str(e.get("message") or "")))
    entries.sort()
    if not entries:
        return ()
    window = max(0.0, now - entries[0][0])
    episode: dict[int, dict[str, Any]] = {}  # OSD -> the down it has not booted from yet
    boots: dict[int, list[tuple[float, bool, bool]]] = {}  # (stamp, wrongly, failed)
    for t, msg in entries:
        for rx, how in ((_FAILED_RE, "failed"), (_NO_BEACON_RE, "failed"),
                        (_WRONGLY_RE, "wrongly")):
            m = rx.match(msg)
            if m:
                ep = episode.setdefault(int(m.group(1)), {"at": t})
                ep[how] = True
        m = _SELF_DOWN_RE.match(msg)
        if m:  # a clean stop: the flaps before it are history
            osd = int(m.group(1))
            if osd in boots:
                del boots[osd]
            if osd in episode:
                del episode[osd]
        b = _BOOT_RE.match(msg)
        if b:
            osd = int(b.group(1))
            gone = episode.pop(osd, None)
            if gone is not None and gone.get("wrongly"):
                boots.setdefault(osd, []).append((t, True, bool(gone.get("failed"))))
    out = []
    for osd, bs in sorted(boots.items()):
        out.append(OsdFlaps(osd, flaps=len(bs), wrongly_marked=len(bs),
                            failed_reports=sum(1 for _, _, f in bs if f),
                            first=bs[0][0], last=bs[-1][0], window_s=window,
                            stamps=tuple(b[0] for b in bs)))
    return tuple(out)
