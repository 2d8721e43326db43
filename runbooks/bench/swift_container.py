"""Reaching Swift for a benchmark and the container it writes into: auth (one token,
shared), connections, the proxy's health (the gate), claiming the container, cleanup.

Safety: a benchmark writes only into a container it creates (marked with the metadata
``X-Container-Meta-Stordoc-Bench``) or one already carrying that mark (a dedicated one an
operator set aside with ``swift post -m Stordoc-Bench:yes NAME``); any other existing
container is refused before anything is written. Cleanup deletes only the objects this
run wrote, and the container only if this run created it (an operator's benchmark once
emptied a customer's container here).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from runbooks.bench.common import Session
from runbooks.model import Refused
from storage.targets import SwiftTarget
from storage.why import why

MARK_HEADER = "X-Container-Meta-Stordoc-Bench"


def container_owner(conn: Any, container: str) -> str:
    """``absent``, ``stordoc`` (it carries stordoc's mark) or ``foreign``."""
    from swiftclient.client import ClientException

    try:
        headers = conn.head_container(container)
    except ClientException as e:
        if e.http_status == 404:
            return "absent"
        raise Refused(f"cannot read container {container}: {err_kind(e)}") from None
    except Exception as e:
        raise Refused(f"cannot read container {container}: {err_kind(e)}") from None
    return "stordoc" if MARK_HEADER.lower() in {k.lower() for k in headers} else "foreign"


def refuse_foreign(container: str) -> Refused:
    return Refused(f"container {container} exists and was not created by stordoc: a "
                   "benchmark writes only into its own container (pick another name, or "
                   f"mark a dedicated one with `swift post -m Stordoc-Bench:yes {container}`)")


def check_container(s: Session, container: str) -> str:
    """Plan-time ownership check (changes nothing): refuses a foreign container."""
    url, token = auth(swift_target(s))
    conn = connect(url, token)
    try:
        owner = container_owner(conn, container)
    finally:
        conn.close()
    if owner == "foreign":
        raise refuse_foreign(container)
    return owner


def swift_target(s: Session) -> SwiftTarget:
    t = s.ctx.target.swift
    if t is None or not t.auth_url:
        raise Refused(f"cluster {s.ctx.cluster} has no Swift auth_url configured")
    return t


def auth(t: SwiftTarget) -> tuple[str, str]:
    from swiftclient.client import ClientException, get_auth

    try:
        url, token = get_auth(t.auth_url or "", t.user or "", t.key or "", auth_version="1.0",
                              timeout=10)
    except ClientException as e:
        raise Refused(f"Swift auth failed at {t.auth_url}: {e.http_status} {e.msg}") from None
    except Exception as e:
        raise Refused(f"Swift auth failed at {t.auth_url}: {why(e)}") from None
    return str(url), str(token)


def connect(url: str, token: str) -> Any:
    from swiftclient.client import Connection

    return Connection(preauthurl=url, preauthtoken=token, retries=0, timeout=30)


def state(s: Session) -> dict[str, Any]:
    """Proxy health and Swift version for the result (and the gate)."""
    import requests

    t = swift_target(s)
    base = (t.proxy_url or (t.auth_url or "").split("/auth")[0]).rstrip("/")
    out: dict[str, Any] = {"proxy": base}
    try:
        h = requests.get(base + "/healthcheck", timeout=5)
        out["health"] = "ok" if h.ok else f"HTTP {h.status_code}"
    except requests.RequestException as e:
        out["health"] = f"unreachable: {why(e)}"
    try:
        info = requests.get(base + "/info", timeout=5).json()
        v = info.get("swift", {}).get("version")
        out["swift_version"] = v
        out["versions"] = [f"swift {v}"] if v else []
    except Exception:
        out["versions"] = []
    return out


def gate(st: dict[str, Any], force: bool) -> list[str]:
    if st.get("health") != "ok":
        msg = f"Swift proxy {st.get('proxy')} is not healthy ({st.get('health')})"
        if not force:
            raise Refused(f"refusing to benchmark: {msg} (use --force to run anyway)")
        return [f"forced despite: {msg}"]
    return []


def err_kind(e: Exception) -> str:
    st = getattr(e, "http_status", None)
    return f"HTTP {st}" if st else type(e).__name__


def open_container(s: Session, container: str) -> tuple[str, str, dict[str, Any], Any, bool]:
    """Auth, the proxy's state, a connection and the claimed container (one client or
    many): (storage URL, token, state, connection, created by this run)."""
    url, token = auth(swift_target(s))
    st = state(s)
    conn = connect(url, token)
    try:
        created = _claim(s, conn, container)
    except BaseException:
        conn.close()
        raise
    return url, token, st, conn, created


def cleanup_step(s: Session, conn: Any, container: str, names: list[str], created: bool,
                 url: str, token: str) -> None:
    """Delete this run's objects (and the container it created) and audit what was done."""
    n, gone = cleanup(conn, container, names, created, s.opts.concurrency, url, token)
    what = f"deleted {n} objects this run wrote"
    if created:
        what += " and the container" if gone else \
            f"; kept container {container}: it holds objects this run did not write"
    s.step(f"clean up container {container}", f"swift delete {container} "
           f"<{len(names)} objects of this run>", what)


def _claim(s: Session, conn: Any, container: str) -> bool:
    """Make sure the run may write into ``container``; True if this run created it.

    The PUT carries no header: on an existing container it changes nothing (202), and the
    mark is set by a POST only on a container this PUT created (201)."""
    owner = container_owner(conn, container)
    if owner == "foreign":
        raise refuse_foreign(container)
    if owner == "stordoc":
        s.step(f"use container {container}", f"swift stat {container}",
               "marked as stordoc's")
        return False
    resp: dict[str, Any] = {}
    try:
        conn.put_container(container, response_dict=resp)
    except Exception as e:
        raise Refused(f"cannot create container {container}: {err_kind(e)}") from None
    if resp.get("status") != 201:  # someone created it between our HEAD and PUT
        if container_owner(conn, container) != "stordoc":
            raise refuse_foreign(container)
        return False
    conn.post_container(container, {MARK_HEADER: s.group_id})
    s.step(f"create container {container}", f"swift post -m Stordoc-Bench:{s.group_id} "
           f"{container}", "created")
    return True


def cleanup(conn: Any, container: str, names: list[str], created: bool, concurrency: int,
            url: str, token: str) -> tuple[int, bool]:
    """Delete the objects this run wrote (in parallel); then the container, only if this
    run created it and nothing else is left in it. Returns (deleted, container gone)."""
    from swiftclient.client import ClientException

    todo = list(names)
    lock = threading.Lock()
    deleted = [0]

    def worker() -> None:
        c = connect(url, token)
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    n = todo.pop()
                try:
                    c.delete_object(container, n)
                    with lock:
                        deleted[0] += 1
                except ClientException:
                    pass  # 404: the mix deleted it already
        finally:
            c.close()

    threads = [threading.Thread(target=worker, daemon=True)
               for _ in range(max(1, min(concurrency, 16)))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if not created:
        return deleted[0], False
    mine = set(names)
    deadline = time.monotonic() + 30
    while True:  # listings are eventually consistent: retry while only our names show
        try:
            conn.delete_container(container)
            return deleted[0], True
        except ClientException as e:
            if e.http_status == 404:
                return deleted[0], True
            if e.http_status != 409 or time.monotonic() > deadline:
                return deleted[0], False
            try:
                _, left = conn.get_container(container, full_listing=True)
            except ClientException:
                left = []
            if any(o["name"] not in mine for o in left):
                return deleted[0], False  # someone else's objects: the container stays
            for o in left:
                try:
                    conn.delete_object(container, o["name"])
                    deleted[0] += 1
                except ClientException:
                    pass
            time.sleep(0.5)
