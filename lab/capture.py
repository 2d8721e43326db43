"""Capture the raw JSON of every mon/mgr command stordoc sends, per fault scenario, from a
running lab (any release), into ``tests/fixtures/ceph-<release>/<scenario>/``.

The files are the ones :func:`storage.ceph.save_raw_dir` writes for
:func:`storage.ceph.collect_raw` (what ``stordoc check`` reads; ``load_raw_dir`` reads them
back), plus what runbooks and benchmarks send besides (``EXTRA``, ``EXTRA_CONFIG``, and
``osd pool get <pool> all`` per pool). Scenarios are injected and undone with the lab's own
``break_``/``heal``; each capture waits (with a deadline) until the cluster shows the
fault, never a fixed sleep.

    python -m lab.capture --dir /var/tmp/stordoc-lab --out tests/fixtures/ceph-reef
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.core import Lab
from storage.ceph import CephClient, CephCommandError, collect_raw, save_raw_dir
from storage.targets import CephTarget

# (file key, to_mgr, prefix, args): what runbooks and benchmarks send besides collect_raw
EXTRA: tuple[tuple[str, bool, str, dict[str, Any]], ...] = (
    ("osd pool autoscale-status", True, "osd pool autoscale-status", {}),
    ("osd perf", True, "osd perf", {}),
    ("progress json", True, "progress json", {}),
    ("osd pool ls", False, "osd pool ls", {}),
    ("mgr dump", False, "mgr dump", {}),
)
# (who, key): ``config get`` values the release-aware checks and runbooks read
EXTRA_CONFIG: tuple[tuple[str, str], ...] = (
    ("osd", "osd_op_queue"),
    ("osd", "osd_mclock_profile"),
    ("mon", "osd_pool_default_size"),
    ("mon", "osd_pool_default_pg_autoscale_mode"),
    ("mon", "mon_target_pg_per_osd"),
    ("mon", "mon_max_pg_per_osd"),
    ("mon", "mon_osd_down_out_interval"),
)
# scenario directory -> (layout kind it needs, break kwargs)
SCENARIOS: dict[str, tuple[str, str | None, dict[str, Any]]] = {
    "healthy": ("xfs", None, {}),
    "osd1-down-in": ("xfs", "osd-unmounted", {"osd": 1}),
    "osd1-down-out": ("xfs", "osd-unmounted", {"osd": 1, "out": True}),
    "cache-tier-misconfigured": ("xfs", "cache-tier-misconfigured", {}),
    "pool-few-pgs": ("xfs", "pool-few-pgs", {}),
    "osd1-not-activated": ("raw", "osd-not-activated", {"osd": 1}),
}
WAIT_S = 180


def capture_raw(client: CephClient) -> dict[str, Any]:
    """``collect_raw`` plus the extra commands; a failed extra lands in ``errors``."""
    raw = collect_raw(client)
    errors: dict[str, str] = raw["errors"]
    for key, to_mgr, prefix, args in EXTRA:
        try:
            raw[key] = client.mgr(prefix, **args) if to_mgr else client.mon(prefix, **args)
        except CephCommandError as e:
            errors[key] = str(e)
    cfg: dict[str, Any] = {}
    for who, name in EXTRA_CONFIG:
        try:
            cfg[f"{who} {name}"] = client.mon("config get", who=who, key=name)
        except CephCommandError as e:
            errors[f"config get {who} {name}"] = str(e)
    raw["config get"] = cfg
    per_pool: dict[str, Any] = {}
    for p in raw.get("osd pool ls detail") or []:
        name = str(p.get("pool_name"))
        try:
            per_pool[name] = client.mon("osd pool get", pool=name, var="all")
        except CephCommandError as e:
            errors[f"osd pool get {name} all"] = str(e)
    raw["osd pool get all"] = per_pool
    return raw


def _checks(client: CephClient) -> set[str]:
    h = client.mon("health", detail="detail") or {}
    return set((h.get("checks") or {}).keys())


def _osd(client: CephClient, i: int) -> dict[str, Any]:
    for o in (client.mon("osd dump") or {}).get("osds", []):
        if o.get("osd") == i:
            return dict(o)
    return {}


def _pgs_settled(client: CephClient) -> bool:
    """No PG in a transient state (peering, activating, unknown, creating)."""
    s = client.mgr("pg stat") or {}
    summ = s.get("pg_summary", s)
    names = {str(x.get("name")) for x in summ.get("num_pg_by_state", [])}
    bad = ("peering", "activating", "unknown", "creating")
    return bool(names) and not any(b in n for n in names for b in bad)


def _wait(cond: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.5)
    raise SystemExit(f"capture: timed out after {timeout:.0f}s waiting for {what}")


def _fault_visible(client: CephClient, name: str) -> Callable[[], bool]:
    if name in ("osd1-down-in", "osd1-not-activated"):
        return lambda: "OSD_DOWN" in _checks(client) and _pgs_settled(client)
    if name == "osd1-down-out":
        return lambda: (_osd(client, 1).get("in") == 0 and "OSD_DOWN" not in _checks(client)
                        and _pgs_settled(client))
    if name == "cache-tier-misconfigured":
        return lambda: "CACHE_POOL_NO_HIT_SET" in _checks(client) and _pgs_settled(client)
    return lambda: _pgs_settled(client)


def capture(lab: Lab, out: Path, names: list[str], say: Callable[[str], None]) -> list[str]:
    """Capture each scenario of ``names`` that this lab's layout can show; returns the
    directories written."""
    target = CephTarget(conf=str(lab.conf), keyring=str(lab.admin_keyring), timeout_s=15)
    written = []
    for name in names:
        kind, scenario, kwargs = SCENARIOS[name]
        if kind not in lab.kinds:
            say(f"skip {name}: this lab ({lab.layout}) has no {kind} OSD")
            continue
        if kwargs.get("osd") is not None and lab.kinds[kwargs["osd"]] != kind:
            say(f"skip {name}: osd.{kwargs['osd']} is {lab.kinds[kwargs['osd']]}, not {kind}")
            continue
        _wait(lambda: lab.osds_up_in() == (lab.n_osds, lab.n_osds) and lab.pgs_clean(),
              "a settled lab before " + name, timeout=420)
        if scenario:
            say(f"{name}: {lab.break_(scenario, **kwargs)}")
        try:
            with CephClient(target) as c:
                _wait(_fault_visible(c, name), f"{name} to show")
                raw = capture_raw(c)
            d = out / name
            if d.exists():
                for f in d.glob("*.json"):
                    f.unlink()
            save_raw_dir(raw, str(d))
            written.append(str(d))
            checks = sorted((raw.get("health detail") or {}).get("checks", {}))
            say(f"{name}: {len(list(d.glob('*.json')))} files, health checks {checks}, "
                f"errors {sorted(raw['errors'])}")
        finally:
            if scenario:
                say(f"{name}: {lab.heal(scenario, osd=kwargs.get('osd', 1))}")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="the running lab's base directory")
    ap.add_argument("--out", required=True, help="e.g. tests/fixtures/ceph-reef")
    ap.add_argument("scenarios", nargs="*", default=list(SCENARIOS),
                    help=f"default: all ({', '.join(SCENARIOS)})")
    a = ap.parse_args(argv)
    unknown = [s for s in a.scenarios if s not in SCENARIOS]
    if unknown:
        print(f"capture: unknown scenario(s) {', '.join(unknown)}; known: "
              f"{', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    lab = Lab(a.dir)
    if not lab.state_path.exists():
        print(f"capture: no lab under {a.dir} (stordoc lab up first)", file=sys.stderr)
        return 2
    done = capture(lab, Path(a.out), a.scenarios, lambda s: print(s, flush=True))
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
