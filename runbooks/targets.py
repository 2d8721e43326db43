"""The one spelling of every runbook target, used before anything is locked, planned or
audited. Every front end (CLI, bot grammar, TUI) goes through ``canonical_target``.

Only ASCII is accepted: Python's ``\\d`` and ``int()`` take any Unicode digit, so
``osd.٢`` (Arabic-Indic two) and ``osd.02`` would otherwise be three spellings, three
locks and three concurrent runs on one OSD. Here they are ``osd.2`` or a refusal.
"""

from __future__ import annotations

import re

from runbooks.model import InvalidRequest

OSD_RE = re.compile(r"\Aosd\.([0-9]{1,6})\Z", re.ASCII)
# Ceph allows more in a pool name, but a name a person types in a fix stays plain:
# no "/", no leading dot or dash, nothing a path or an option could be mistaken for
POOL_RE = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z", re.ASCII)
HOST_RE = re.compile(r"\A[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252}[A-Za-z0-9])?\Z", re.ASCII)
DEVICE_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z", re.ASCII)
RING_RE = re.compile(r"\A(?:object(?:-[0-9]{1,4})?|account|container)\Z", re.ASCII)

KINDS = ("osd", "pool", "cache-pool", "swift-device", "swift-ring", "host")


def _ascii_printable(raw: str, what: str) -> str:
    t = raw.strip() if isinstance(raw, str) else ""
    if not t:
        raise InvalidRequest(f"{what}: a target is required")
    if not t.isascii() or not t.isprintable():
        raise InvalidRequest(f"{what}: {raw!r} has characters outside plain ASCII")
    return t


def canonical_osd(raw: str) -> str:
    """``osd.2``, ``osd.02``, ``OSD.2`` -> ``osd.2``; ``osd.٢``, ``osd.+2``, ``2`` refused."""
    t = _ascii_printable(raw, "OSD")
    m = OSD_RE.match(t.lower())
    if not m:
        raise InvalidRequest(f"{t!r} is not an OSD name like osd.3")
    return f"osd.{int(m.group(1))}"


def osd_id(raw: str) -> int:
    return int(canonical_osd(raw).split(".", 1)[1])


def canonical_pool(raw: str) -> str:
    """An existing pool, named exactly (Ceph pool names are case-sensitive and may hold
    odd characters: they go to the monitor as data, never through a shell)."""
    t = _ascii_printable(raw, "pool")
    if len(t) > 255:
        raise InvalidRequest("pool: a name of at most 255 characters")
    return t


def new_pool_name(raw: str) -> str:
    """A pool or container stordoc may create (a benchmark's): a plain name only."""
    t = _ascii_printable(raw, "pool")
    if not POOL_RE.match(t):
        raise InvalidRequest(f"{t!r} is not a plain name (letters, digits, . _ -; no /)")
    return t


def canonical_host(raw: str) -> str:
    """A host as configured (lookups are exact, so another case is an unknown host)."""
    t = _ascii_printable(raw, "host")
    if not HOST_RE.match(t):
        raise InvalidRequest(f"{t!r} is not a host name")
    return t


def canonical_device(raw: str) -> str:
    """``DEVICE@HOST``, both parts ASCII names."""
    t = _ascii_printable(raw, "Swift device")
    dev, sep, host = t.partition("@")
    if not sep or not DEVICE_RE.match(dev) or not HOST_RE.match(host):
        raise InvalidRequest(f"{t!r} is not a Swift device target like d2@node2")
    return f"{dev}@{host}"


def canonical_ring(raw: str) -> str:
    t = _ascii_printable(raw, "ring")
    if not RING_RE.match(t.lower()):
        raise InvalidRequest(f"{t!r} is not a ring kind (object, account, container)")
    return t.lower()


_DAEMON_ID_RE = re.compile(r"\A(mon|mgr)\.([A-Za-z0-9][A-Za-z0-9_-]{0,63})\Z", re.ASCII)


def canonical_daemon(raw: str) -> str:
    """``osd.2``, ``mon.a``, ``mgr.x`` (unique in the cluster) or ``NAME@HOST`` for the
    rest (``swift-object-server@node1``, ``memcached@node1``)."""
    from storage.model.daemons import daemon_kind

    t = _ascii_printable(raw, "daemon")
    if t.lower().startswith("osd."):
        return canonical_osd(t)
    if _DAEMON_ID_RE.match(t):
        return t
    name, sep, host = t.partition("@")
    try:
        kind = daemon_kind(name)
    except ValueError as e:
        raise InvalidRequest(str(e)) from None
    if kind in ("mon", "mgr", "osd") or not sep or not HOST_RE.match(host):
        raise InvalidRequest(f"{t!r} is not a daemon target like osd.2, mon.a or "
                             "swift-object-server@node1")
    return f"{name}@{host}"


_BY_KIND = {
    "daemon": canonical_daemon,
    "osd": canonical_osd, "pool": canonical_pool, "cache-pool": canonical_pool,
    "swift-device": canonical_device, "swift-ring": canonical_ring, "host": canonical_host,
    # the bot grammar's short names for the same kinds
    "device": canonical_device, "ring": canonical_ring,
}


def canonical_target(kind: str, raw: str) -> str:
    """The one spelling of a target of ``kind`` (a runbook's ``target_kind``), or Refused."""
    fn = _BY_KIND.get(kind)
    if fn is None:
        return _ascii_printable(raw, kind)
    return fn(raw)
