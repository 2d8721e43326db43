"""``ceph device ls``: the manager's device table (``DeviceState::dump`` in
src/mgr/DaemonState.cc) -> ``CephDevice``.

Each entry: ``devid``, ``location`` [{host, dev, path}], ``daemons`` ["osd.1"], and only
when the devicehealth module stored a prediction ``life_expectancy_min``/``_max``/``_stamp``
(utime_t printed as ``2026-12-01T00:00:00.000000+0000``; ``0.000000`` or empty = none);
``wear_level`` (0..1) only when the device reported one.
"""

from __future__ import annotations

import math
from typing import Any

from storage.ceph.parse import as_list, as_map, parse_stamp
from storage.model import CephDevice


def _wear(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        f = float(value)
    except ValueError:
        return None
    return f if math.isfinite(f) and f >= 0 else None


def parse_device_ls(value: Any) -> tuple[CephDevice, ...]:
    out = []
    for d in as_list(value):
        m = as_map(d)
        devid = str(m.get("devid") or "")
        if not devid:
            continue
        loc = tuple((str(a.get("host") or ""), str(a.get("dev") or ""))
                    for a in map(as_map, as_list(m.get("location")))
                    if a.get("host") and a.get("dev"))
        out.append(CephDevice(
            devid=devid, location=loc,
            daemons=tuple(str(x) for x in as_list(m.get("daemons")) if x),
            life_expectancy_min=parse_stamp(m.get("life_expectancy_min")),
            life_expectancy_max=parse_stamp(m.get("life_expectancy_max")),
            life_expectancy_stamp=parse_stamp(m.get("life_expectancy_stamp")),
            wear_level=_wear(m.get("wear_level"))))
    return tuple(out)
