"""Dispersion the way swift-dispersion-report measures it: do the objects and containers
really have all their copies?

stordoc keeps its own dispersion container and objects in the configured Swift account
(created only by ``populate``, which the CLI runs with consent, never by a check). A check
samples them: for each dispersion object (and container) the partition and its primary
nodes come from the local ring, and every replica is asked directly with a HEAD to the
storage server (``/<device>/<partition>/<account>/<container>[/<object>]``), bypassing
the proxy. The result is percentages of copies found, the devices that lack copies, and
the copies that could not be asked (server down: its own finding elsewhere).
"""

from __future__ import annotations

import configparser
import hashlib
import struct
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote, urlparse

import requests

from storage import swiftclient_lib
from storage.model import Copy, DispersionPart, DispersionState
from storage.ringfile import load_ring
from storage.safefile import check_regular, read_regular
from storage.targets import SwiftTarget
from storage.why import why

OBJECT_CONTAINER = "stordoc_dispersion_objects"
CONTAINER_PREFIX = "stordoc_dispersion_"  # + index: the sampled containers
OBJECT_PREFIX = "stordoc-dispersion-"
DEFAULT_OBJECTS = 32
DEFAULT_CONTAINERS = 8
MAX_COUNT = 10_000
HEAD_WORKERS = 32
SWIFT_CONF = "/etc/swift/swift.conf"
MAX_SWIFT_CONF_BYTES = 1 << 20


# --------------------------------------------------------------------------- hashing


def hash_prefix_suffix(path: str = SWIFT_CONF) -> tuple[bytes, bytes]:
    """The cluster's hash path prefix and suffix from swift.conf (what places objects)."""
    cp = configparser.ConfigParser()
    try:  # a FIFO would block, a device never end: a bounded regular file only
        cp.read_string(read_regular(path, MAX_SWIFT_CONF_BYTES).decode("utf-8", "replace"),
                       source=path)
    except FileNotFoundError:
        raise FileNotFoundError(f"cannot read {path} (the hash path prefix/suffix)") from None
    pre = cp.get("swift-hash", "swift_hash_path_prefix", fallback="")
    suf = cp.get("swift-hash", "swift_hash_path_suffix", fallback="")
    if not pre and not suf:
        raise ValueError(f"{path} has no swift_hash_path_prefix/suffix")
    return pre.encode(), suf.encode()


def partition(prefix: bytes, suffix: bytes, part_shift: int, *path: str) -> int:
    """Swift's ``hash_path`` then the ring's partition of it."""
    key = hashlib.md5(prefix + b"/" + b"/".join(p.encode() for p in path) + suffix,
                      usedforsecurity=False).digest()
    return int(struct.unpack_from(">I", key)[0] >> part_shift)


def primary_nodes(ring: Any, part: int) -> list[dict[str, Any]]:
    """The ring's primary devices of a partition, one per replica (as ``Ring.get_part_nodes``
    without its de-duplication: a device holding two replicas is asked once per replica)."""
    out = []
    for row in ring._replica2part2dev_id:
        if part < len(row):
            dev = ring.devs[row[part]]
            if dev is not None:
                out.append(dev)
    return out


# --------------------------------------------------------------------------- proxy side


def _connection(t: SwiftTarget) -> Any:
    Connection = swiftclient_lib.client().Connection  # noqa: N806

    if not (t.auth_url and t.user and t.key):
        raise ValueError("dispersion needs auth_url, user and key in the Swift settings")
    return Connection(authurl=t.auth_url, user=t.user, key=t.key, retries=1,
                      timeout=t.recon_timeout_s)


def account_of(storage_url: str) -> str:
    """``http://proxy/v1/AUTH_test`` -> ``AUTH_test``."""
    from urllib.parse import unquote

    return unquote(urlparse(storage_url).path.rstrip("/").rsplit("/", 1)[-1])


def container_names(n: int) -> list[str]:
    return [f"{CONTAINER_PREFIX}{i}" for i in range(n)]


def object_names(n: int) -> list[str]:
    return [f"{OBJECT_PREFIX}{i}" for i in range(n)]


def populate(t: SwiftTarget, objects: int = DEFAULT_OBJECTS,
             containers: int = DEFAULT_CONTAINERS) -> dict[str, Any]:
    """Create the dispersion containers and objects through the proxy. Only names of
    stordoc's own are written, and an object that already exists is left as it is."""
    conn = _connection(t)
    made: dict[str, Any] = {"containers": 0, "objects": 0, "existing_objects": 0}
    try:
        conn.put_container(OBJECT_CONTAINER, headers={"X-Container-Meta-Stordoc":
                                                      "dispersion"})
        have = {o["name"] for o in conn.get_container(OBJECT_CONTAINER, full_listing=True)[1]}
        for name in object_names(objects):
            if name in have:
                made["existing_objects"] += 1
                continue
            conn.put_object(OBJECT_CONTAINER, name, contents=name.encode(),
                            content_type="text/plain")
            made["objects"] += 1
        for name in container_names(containers):
            conn.put_container(name, headers={"X-Container-Meta-Stordoc": "dispersion"})
            made["containers"] += 1
        made["account"] = account_of(conn.url)
    finally:
        conn.close()
    return made


# --------------------------------------------------------------------------- sampling


def _head(session: requests.Session, c: Copy, path: str, timeout_s: float) -> Copy:
    url = f"http://{c.ip}:{c.port}/{quote(c.device)}/{c.partition}/{path}"
    try:
        r = session.head(url, timeout=timeout_s,
                         headers={"X-Backend-Storage-Policy-Index": "0"})
    except requests.RequestException as e:
        return Copy(c.kind, c.name, c.ip, c.port, c.device, c.partition, None,
                    f"{why(e)}")
    return Copy(c.kind, c.name, c.ip, c.port, c.device, c.partition, r.status_code,
                None if r.status_code < 500 else f"HTTP {r.status_code}")


def head_all(todo: Sequence[tuple[Copy, str]], timeout_s: float,
             workers: int = HEAD_WORKERS) -> tuple[Copy, ...]:
    """Direct HEADs in parallel (one keep-alive session per worker thread)."""
    import threading

    local = threading.local()

    def one(item: tuple[Copy, str]) -> Copy:
        s = getattr(local, "s", None)
        if s is None:
            s = local.s = requests.Session()
        return _head(s, item[0], item[1], timeout_s)

    if not todo:
        return ()
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(todo)))) as pool:
        return tuple(pool.map(one, todo))


def _plan_copies(kind: str, ring: Any, prefix: bytes, suffix: bytes, account: str,
                 names: Iterable[tuple[str, ...]]) -> list[tuple[Copy, str]]:
    out: list[tuple[Copy, str]] = []
    shift = int(ring._part_shift)
    for path in names:
        part = partition(prefix, suffix, shift, account, *path)
        name = "/".join(path)
        url_path = "/".join(quote(p, safe="") for p in (account, *path))
        for dev in primary_nodes(ring, part):
            out.append((Copy(kind, name, str(dev["ip"]), int(dev["port"]), str(dev["device"]),
                             part, None), url_path))
    return out


def sample(t: SwiftTarget, ring_paths: dict[str, str], now: float,
           conf_path: str = SWIFT_CONF) -> DispersionState:
    """Sample stordoc's dispersion objects and containers; never raises."""
    try:
        return _sample(t, ring_paths, now, conf_path)
    except Exception as e:  # noqa: BLE001  (a fact of the snapshot, not a traceback)
        return DispersionState(populated=False, error=f"{why(e)}",
                               sampled_at=now)


def _sample(t: SwiftTarget, ring_paths: dict[str, str], now: float,
            conf_path: str) -> DispersionState:
    ClientException = swiftclient_lib.client().ClientException  # noqa: N806

    conn = _connection(t)
    try:
        try:
            _, listing = conn.get_container(OBJECT_CONTAINER, full_listing=True)
        except ClientException as e:
            if e.http_status == 404:
                return DispersionState(populated=False, account=account_of(conn.url),
                                       sampled_at=now)
            raise
        account = account_of(conn.url)
        objs = sorted(o["name"] for o in listing if o["name"].startswith(OBJECT_PREFIX))
        _, conts = conn.get_account(prefix=CONTAINER_PREFIX, full_listing=True)
        cnames = sorted(c["name"] for c in conts if c["name"] != OBJECT_CONTAINER
                        and c["name"][len(CONTAINER_PREFIX):].isdigit())
    finally:
        conn.close()
    prefix, suffix = hash_prefix_suffix(conf_path)
    todo: list[tuple[Copy, str]] = []
    rings: dict[str, Any] = {}
    for kind in ("object", "container"):
        if kind in ring_paths:
            check_regular(ring_paths[kind], 1 << 30)  # not a FIFO or device, bounded
            rings[kind] = load_ring(ring_paths[kind])
    if "object" in rings:
        todo += _plan_copies("object", rings["object"], prefix, suffix, account,
                             ((OBJECT_CONTAINER, o) for o in objs))
    if "container" in rings:
        todo += _plan_copies("container", rings["container"], prefix, suffix, account,
                             ((c,) for c in cnames))
    got = head_all(todo, t.recon_timeout_s)
    parts = {}
    for kind, n in (("object", len(objs)), ("container", len(cnames))):
        if kind in rings:
            parts[kind] = DispersionPart(
                kind, n, len(rings[kind]._replica2part2dev_id),
                tuple(c for c in got if c.kind == kind))
    return DispersionState(populated=True, account=account, objects=parts.get("object"),
                           containers=parts.get("container"), sampled_at=now)
