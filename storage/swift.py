"""Swift: rings and builders read offline, live facts from recon.

Rings (``*.ring.gz``) and builders are read by ``storage.ringfile`` (Swift's formats,
without Swift's import chain). A builder is a pickle, so only files inside the configured
``swift_dir`` are ever loaded (never a path that came from anywhere else). Recon is asked
over HTTP on every (ip, port) that appears in a ring, in parallel, each with a timeout;
the proxy's ``/healthcheck`` too. Anything unreachable becomes an error string in the state.
"""

from __future__ import annotations

import glob
import hashlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from storage.dispersion import sample as sample_dispersion
from storage.model import ReconHost, RingDevice, RingState, SwiftState
from storage.ringfile import load_builder, load_ring
from storage.safefile import FileRefused, check_regular, read_regular
from storage.swift_recon_parse import recon_from_raw as recon_from_raw
from storage.targets import SwiftTarget
from storage.why import why

RECON_CHECKS = ("unmounted", "diskusage", "ringmd5", "swiftconfmd5")
SWIFT_CONF = "/etc/swift/swift.conf"  # Swift reads the hash prefix/suffix from here always


MAX_RING_BYTES = 1 << 30  # a ring of part power 24 and 3 replicas is ~100 MB


def file_md5(path: str) -> str | None:
    try:
        data = read_regular(path, MAX_RING_BYTES)  # not a FIFO or device, bounded
    except (OSError, FileRefused):
        return None
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _kind(ring_file: str) -> str:
    base = os.path.basename(ring_file)
    return base.split(".ring.gz")[0].split(".builder")[0]


def _dev_key(d: dict[str, Any]) -> tuple[Any, ...]:
    return (d.get("id"), d.get("region"), d.get("zone"), d.get("ip"), d.get("port"),
            d.get("device"), round(float(d.get("weight") or 0.0), 6))


def _devs(devs: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    return [d for d in devs if d is not None]


def _parts_per_dev(replica2part2dev: Iterable[Any]) -> Counter[int]:
    c: Counter[int] = Counter()
    for row in replica2part2dev:
        c.update(row)
    return c


def read_ring(swift_dir: str, kind: str, now: float | None = None) -> RingState:
    """One ring and its builder; errors (missing/corrupt files) land in ``RingState.error``."""
    now = now or time.time()
    ring_path = os.path.join(swift_dir, f"{kind}.ring.gz")
    builder_path = os.path.join(swift_dir, f"{kind}.builder")
    has_ring = os.path.isfile(ring_path)
    has_builder = os.path.isfile(builder_path)
    errors: list[str] = []
    ring = builder = None
    if has_ring:
        try:
            check_regular(ring_path, MAX_RING_BYTES)
            ring = load_ring(ring_path)
        except Exception as e:  # noqa: BLE001
            errors.append(f"cannot read {ring_path}: {why(e)}")
    if has_builder:
        try:
            check_regular(builder_path, MAX_RING_BYTES)
            builder = load_builder(builder_path)
        except Exception as e:  # noqa: BLE001
            errors.append(f"cannot read {builder_path}: {why(e)}")
    if ring is None and builder is None:
        return RingState(kind, ring_path if has_ring else None,
                         builder_path if has_builder else None, 0, 0.0, 0, (),
                         error="; ".join(errors) or f"no ring or builder for {kind}")

    ring_devs = _devs(ring.devs) if ring is not None else []
    b_devs = _devs(builder.devs) if builder is not None else []
    if ring is not None:
        parts = _parts_per_dev(ring._replica2part2dev_id)
        part_power = 32 - ring._part_shift
        replicas = float(len(ring._replica2part2dev_id))
    else:
        assert builder is not None
        parts = Counter({d["id"]: int(d.get("parts", 0)) for d in b_devs})
        part_power = builder.part_power
        replicas = float(builder.replicas)
    wanted = {d["id"]: int(d.get("parts_wanted", 0)) for d in b_devs}
    src = ring_devs if ring is not None else b_devs
    devices = tuple(RingDevice(
        id=int(d["id"]), region=int(d.get("region", 1)), zone=int(d.get("zone", 0)),
        ip=str(d.get("ip")), port=int(d.get("port", 0)), device=str(d.get("device")),
        weight=float(d.get("weight") or 0.0), parts=int(parts.get(d["id"], 0)),
        parts_wanted=wanted.get(d["id"], 0),
        replication_ip=d.get("replication_ip"), replication_port=d.get("replication_port"),
        meta=str(d.get("meta") or "")) for d in sorted(src, key=lambda d: d["id"]))

    balance = dispersion = None
    min_part_hours = 0
    last_hours = None
    matches = None
    builder_mtime = os.path.getmtime(builder_path) if has_builder else None
    ring_mtime = os.path.getmtime(ring_path) if has_ring else None
    if builder is not None:
        min_part_hours = int(builder.min_part_hours)
        try:
            balance = float(builder.get_balance()) if b_devs and builder._replica2part2dev \
                else None
        except Exception:  # noqa: BLE001
            balance = None
        dispersion = float(builder.dispersion) if builder.dispersion is not None else None
        if builder._last_part_moves_epoch:
            last_hours = max(0.0, (now - builder._last_part_moves_epoch) / 3600.0)
    if builder is not None and ring is not None:
        same_devs = sorted(map(_dev_key, b_devs)) == sorted(map(_dev_key, ring_devs))
        same_shape = builder.part_power == part_power and \
            abs(float(builder.replicas) - replicas) < 1e-9
        same_parts = builder._replica2part2dev is not None and \
            list(builder._replica2part2dev) == list(ring._replica2part2dev_id)
        matches = bool(same_devs and same_shape and same_parts)
    return RingState(
        kind=kind, ring_path=ring_path if has_ring else None,
        builder_path=builder_path if has_builder else None, part_power=int(part_power),
        replicas=replicas, min_part_hours=min_part_hours, devices=devices, balance=balance,
        dispersion=dispersion, ring_mtime=ring_mtime, builder_mtime=builder_mtime,
        ring_md5=file_md5(ring_path) if has_ring else None, builder_matches_ring=matches,
        last_rebalance_hours_ago=last_hours, error="; ".join(errors) or None,
        builder_replicas=float(builder.replicas) if builder is not None else None)


def ring_kinds(swift_dir: str) -> list[str]:
    found = {_kind(p) for p in glob.glob(os.path.join(swift_dir, "*.ring.gz"))}
    found |= {_kind(p) for p in glob.glob(os.path.join(swift_dir, "*.builder"))}
    return sorted(found)


_SERVER_OF = {"account": "account", "container": "container"}


def _server(kind: str) -> str:
    return _SERVER_OF.get(kind, "object")


# What every storage server answers (ring/swift.conf md5, devices, load...), then what
# depends on the server type ("{t}" is object/container/account). A failure of the first
# request tells whether the server is up; later failures only lose that one signal.
RECON_COMMON = ("unmounted", "diskusage", "ringmd5", "swiftconfmd5", "load", "time",
                "sockstat", "driveaudit", "quarantined")
RECON_BY_TYPE = {
    "object": ("replication/object", "async", "updater/object", "auditor/object",
               "expirer/object"),
    "container": ("replication/container", "updater/container", "auditor/container"),
    "account": ("replication/account", "auditor/account"),
}


def classify_error(e: BaseException | None, status: int | None = None) -> str:
    """refused / timeout / unreachable / no-recon / http / bad-json for one failed GET."""
    if status is not None:
        # without the recon middleware the storage server parses /recon/x as a
        # device/partition path and answers 400 (or 404 behind something else)
        return "no-recon" if status in (400, 404) else "http"
    if isinstance(e, requests.Timeout):
        return "timeout"
    if isinstance(e, requests.ConnectionError):
        text = str(e)
        return "refused" if "refused" in text.lower() or "Errno 111" in text else "unreachable"
    if isinstance(e, ValueError):
        return "bad-json"
    return "http"


def fetch_recon(ip: str, port: int, server: str, timeout_s: float,
                session: requests.Session | None = None,
                full: bool = True) -> ReconHost:
    """All recon answers of one storage server; the first failure becomes ``error``.

    The first request decides reachability (``error_kind``); when it fails nothing else is
    asked. With ``full`` the per-type signals (replication, async, sweeps...) are asked too;
    their failures are kept in ``raw["_errors"]`` without marking the server down.
    """
    s = session or requests.Session()
    raw: dict[str, Any] = {}
    err = kind = None
    errors: dict[str, str] = {}
    checks = RECON_COMMON + (RECON_BY_TYPE.get(server, ()) if full else ())
    if not full:
        checks = RECON_CHECKS
    for i, what in enumerate(checks):
        url = f"http://{ip}:{port}/recon/{what}"
        try:
            t0 = time.time()
            r = s.get(url, timeout=timeout_s)
            if what == "time":  # the checking host's clock at the middle of the request
                raw["_local_time"] = (t0 + time.time()) / 2
                raw["_rtt_s"] = time.time() - t0
            if r.status_code >= 400:
                cls = classify_error(None, r.status_code)
                msg = f"{url}: HTTP {r.status_code}: {r.text.strip()[:100]}"
                if i == 0:
                    err, kind = msg, cls
                    break
                errors[what] = msg
                if what in RECON_CHECKS:
                    err = err or msg
                continue
            raw[what] = r.json()
        except (requests.RequestException, ValueError) as e:
            msg = f"{url}: {why(e)}"
            if i == 0 or isinstance(e, (requests.ConnectionError, requests.Timeout)):
                err, kind = msg, classify_error(e)
                break
            errors[what] = msg
            if what in RECON_CHECKS:
                err = err or msg
    if errors:
        raw["_errors"] = errors
    return recon_from_raw(ip, port, server, raw, err, kind)


RECON_WORKERS = 64


def collect_recon(endpoints: Iterable[tuple[str, int, str]], timeout_s: float,
                  max_workers: int = RECON_WORKERS) -> tuple[ReconHost, ...]:
    """Recon of every (ip, port, server) in parallel, each server with its own timeout per
    request and its own keep-alive session; results in the order given."""
    eps = list(endpoints)
    if not eps:
        return ()

    def one(ep: tuple[str, int, str]) -> ReconHost:
        with requests.Session() as s:
            return fetch_recon(ep[0], ep[1], ep[2], timeout_s, session=s)

    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(eps)))) as pool:
        return tuple(pool.map(one, eps))


def _proxy_health(url: str, timeout_s: float) -> tuple[bool | None, str | None]:
    try:
        r = requests.get(url.rstrip("/") + "/healthcheck", timeout=timeout_s)
    except requests.RequestException as e:
        return False, f"{why(e)}"
    if r.status_code == 200 and r.text.strip() == "OK":
        return True, None
    return False, f"HTTP {r.status_code}: {r.text.strip()[:100]}"


def proxy_health(url: str, timeout_s: float) -> tuple[bool | None, str | None]:
    """The proxy's ``/healthcheck``: (True, None) when it says OK, else (False, why)."""
    return _proxy_health(url, timeout_s)


def ring_server(kind: str) -> str:
    """The storage server a ring's devices name (``object-1`` -> ``object``)."""
    return _server(kind)


def collect_swift(target: SwiftTarget, on_rings: Callable[[SwiftState], None] | None = None
                  ) -> tuple[SwiftState | None, str | None]:
    """Rings, recon of every ring endpoint and the proxy health; never raises.
    ``on_rings`` gets a state of the rings alone (what the host facts are planned from) as
    soon as they are read, while recon and the proxy are still asked."""
    try:
        return _collect(target, on_rings), None
    except Exception as e:  # a broken swift_dir is a fact, not a traceback  # noqa: BLE001
        return None, f"{why(e)}"


def _collect(target: SwiftTarget,
             on_rings: Callable[[SwiftState], None] | None = None) -> SwiftState:
    if not os.path.isdir(target.swift_dir):
        raise FileNotFoundError(f"swift_dir {target.swift_dir} does not exist")
    kinds = ring_kinds(target.swift_dir)
    if not kinds:
        raise FileNotFoundError(f"no rings or builders in {target.swift_dir}")
    now = time.time()
    rings = tuple(read_ring(target.swift_dir, k, now) for k in kinds)
    if on_rings is not None:
        on_rings(SwiftState(rings=rings, recon=(), collected_at=now))
    endpoints: dict[tuple[str, int], str] = {}
    for ring in rings:
        for d in ring.devices:
            endpoints.setdefault((d.ip, d.port), _server(ring.kind))
    eps = sorted(endpoints.items())
    ring_paths = {r.kind: r.ring_path for r in rings if r.ring_path and r.kind in
                  ("object", "container")}
    with ThreadPoolExecutor(max_workers=2) as two:
        proxy_f = two.submit(_proxy_health, target.proxy_url, target.recon_timeout_s) \
            if target.proxy_url else None
        disp_f = two.submit(sample_dispersion, target, ring_paths, now) \
            if target.auth_url and target.user and target.key else None
        recon = collect_recon([(ip, port, srv) for (ip, port), srv in eps],
                              target.recon_timeout_s)
        healthy, perr = proxy_f.result() if proxy_f else (None, None)
        dispersion = disp_f.result() if disp_f else None
    local_md5 = {r.ring_path: r.ring_md5 for r in rings if r.ring_path and r.ring_md5}
    return SwiftState(rings=rings, recon=recon, proxy_url=target.proxy_url,
                      proxy_healthy=healthy, proxy_error=perr,
                      local_ring_md5=local_md5, local_swiftconf_md5=file_md5(SWIFT_CONF),
                      collected_at=now, dispersion=dispersion)
