"""The one spelling of every runbook target, used before anything is locked, planned or
audited. Every front end (CLI, bot grammar, TUI) goes through ``canonical_target``.

Only ASCII is accepted: Python's ``\\d`` and ``int()`` take any Unicode digit, so
``osd.٢`` (Arabic-Indic two) and ``osd.02`` would otherwise be three spellings, three
locks and three concurrent runs on one OSD. Here they are ``osd.2`` or a refusal.
"""

from __future__ import annotations

import re
import unicodedata

from checks.spelling import closest
from runbooks.model import InvalidRequest
from storage.targets import ClusterTarget

OSD_RE = re.compile(r"\Aosd\.([0-9]{1,6})\Z", re.ASCII)
# Ceph allows more in a pool name, but a name a person types in a fix stays plain:
# no "/", no leading dot or dash, nothing a path or an option could be mistaken for
POOL_RE = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z", re.ASCII)
HOST_RE = re.compile(r"\A[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252}[A-Za-z0-9])?\Z", re.ASCII)
DEVICE_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z", re.ASCII)
RING_RE = re.compile(r"\A(?:object(?:-[0-9]{1,4})?|account|container)\Z", re.ASCII)

KINDS = ("osd", "pool", "cache-pool", "swift-device", "swift-ring", "swift-server", "host",
         "mgr", "pg", "osd-flag")
# the kinds whose target names a host (``DEVICE@HOST``, ``SERVER@HOST``, ``HOST``), with
# the bot grammar's short names for them
HOST_QUALIFIED = ("swift-device", "device", "swift-server", "server", "daemon")
SERVER_KINDS = ("object", "container", "account")
MGR_RE = re.compile(r"\A(?:mgr\.)?([A-Za-z0-9][A-Za-z0-9._-]{0,62})\Z", re.ASCII)


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


def _no_root_dot(host: str) -> str:
    """``node1.`` is ``node1`` (the DNS root); ``node1..`` stays wrong."""
    return host[:-1] if host.endswith(".") and not host.endswith("..") else host


def canonical_host(raw: str) -> str:
    """A host name's syntax (its configured spelling is ``resolve_host``'s work)."""
    t = _no_root_dot(_ascii_printable(raw, "host"))
    if not HOST_RE.match(t):
        raise InvalidRequest(f"{t!r} is not a host name")
    return t


def canonical_device(raw: str) -> str:
    """``DEVICE@HOST``, both parts ASCII names."""
    t = _ascii_printable(raw, "Swift device")
    dev, sep, host = t.partition("@")
    host = _no_root_dot(host)
    if not sep or not DEVICE_RE.match(dev) or not HOST_RE.match(host):
        raise InvalidRequest(f"{t!r} is not a Swift device target like d2@node2")
    return f"{dev}@{host}"


def canonical_server(raw: str) -> str:
    """``SERVER@HOST``: object, container or account (any case) on an ASCII host name."""
    t = _ascii_printable(raw, "Swift server")
    server, sep, host = t.partition("@")
    host = _no_root_dot(host)
    if not sep or server.lower() not in SERVER_KINDS or not HOST_RE.match(host):
        raise InvalidRequest(f"{t!r} is not a Swift server target like object@node1 "
                             "(object, container or account)")
    return f"{server.lower()}@{host}"


def _skeleton(t: str) -> str:
    """What a look-alike looks like, for the "did you mean" hint only (never to match):
    compatibility forms folded (fullwidth), any Unicode digit as its ASCII digit, combining
    marks and invisible format characters dropped. Other scripts' letters (Cyrillic о)
    stay: difflib still finds the name one letter away."""
    out = []
    for c in unicodedata.normalize("NFKD", t):
        if unicodedata.category(c) in ("Mn", "Cf"):
            continue
        d = unicodedata.digit(c, None)
        out.append(str(d) if d is not None and not c.isascii() else c)
    return "".join(out)


def resolve_host(raw: str, cluster: ClusterTarget) -> str:
    """The configured name of the host ``raw`` names (``ClusterTarget.hosts_named``: the
    name in any case, with a trailing dot, or the host's address when only one host has
    it), or a one-line refusal with the closest configured name. A look-alike (Cyrillic
    о, fullwidth digits) is never mapped to a host: it is refused and shown escaped."""
    t = raw.strip() if isinstance(raw, str) else ""
    if not t:
        raise InvalidRequest("host: a host name is required")
    found = cluster.hosts_named(t)
    if len(found) == 1:
        return found[0].name
    if found:
        raise InvalidRequest(f"host {t!r} is ambiguous in cluster {cluster.name}: it may be "
                             f"{', '.join(h.name for h in found)}; name one")
    shown = repr(t) if t.isascii() and t.isprintable() else f"{ascii(t)} (not plain ASCII)"
    names = [h.name for h in cluster.hosts]
    if not names:
        raise InvalidRequest(f"unknown host {shown}: cluster {cluster.name} has no hosts "
                             "configured")
    near = closest(_skeleton(t), names)
    raise InvalidRequest(f"unknown host {shown} in cluster {cluster.name}: " + (
        f"did you mean {near}?" if near else f"the hosts are {', '.join(names)}"))


def canonical_ring(raw: str) -> str:
    t = _ascii_printable(raw, "ring")
    if not RING_RE.match(t.lower()):
        raise InvalidRequest(f"{t!r} is not a ring kind (object, account, container)")
    return t.lower()


def canonical_mgr(raw: str) -> str:
    """``mgr.x`` or ``x`` -> ``mgr.x``; Ceph daemon names are case-sensitive."""
    t = _ascii_printable(raw, "manager")
    m = MGR_RE.match(t)
    if not m:
        raise InvalidRequest(f"{t!r} is not a manager name like mgr.x")
    return f"mgr.{m.group(1)}"


PG_RE = re.compile(r"\A([0-9]{1,10})\.([0-9a-f]{1,8})\Z", re.ASCII)


def canonical_pg(raw: str) -> str:
    """A placement group id, ``POOL.PS`` with PS in hex as Ceph prints it: ``2.05`` and
    ``2.A`` are ``2.5`` and ``2.a``; ``2.zz``, ``1e20``, ``２.5`` refused."""
    t = _ascii_printable(raw, "PG")
    m = PG_RE.match(t.lower())
    if not m:
        raise InvalidRequest(f"{t!r} is not a PG id like 2.1f (pool id, dot, hex)")
    return f"{int(m.group(1))}.{int(m.group(2), 16):x}"


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


def canonical_flag(raw: str) -> str:
    """An osdmap flag by the name ``ceph osd unset`` takes: ``pauserd`` and ``pausewr``
    (``osd dump``'s spelling) are ``pause``; a name Ceph does not take is refused."""
    from checks.osd import CEPH_SET_FLAGS, ceph_flag_name

    t = ceph_flag_name(_ascii_printable(raw, "flag").lower())
    if t not in CEPH_SET_FLAGS:
        near = closest(t, CEPH_SET_FLAGS)
        raise InvalidRequest(f"{t!r} is not a flag ceph osd unset takes"
                             + (f": did you mean {near}?" if near else
                                f" ({'|'.join(CEPH_SET_FLAGS)})"))
    return t


_BY_KIND = {
    "osd-flag": canonical_flag, "flag": canonical_flag,
    "daemon": canonical_daemon, "mgr": canonical_mgr,
    "osd": canonical_osd, "pool": canonical_pool, "pg": canonical_pg, "cache-pool": canonical_pool,
    "swift-device": canonical_device, "swift-ring": canonical_ring, "host": canonical_host,
    "swift-server": canonical_server,
    # the bot grammar's short names for the same kinds
    "device": canonical_device, "ring": canonical_ring, "server": canonical_server,
}


def canonical_target(kind: str, raw: str) -> str:
    """The one spelling of a target of ``kind`` (a runbook's ``target_kind``), or Refused."""
    fn = _BY_KIND.get(kind)
    if fn is None:
        return _ascii_printable(raw, kind)
    return fn(raw)


_PORT_RE = re.compile(r"\A(.+):([0-9]{1,5})\Z", re.ASCII)


def _no_port(kind: str, left: str, host: str, cluster: ClusterTarget) -> None:
    """``d1@node1:22`` (a ring device as Swift prints it, with its port): a target names
    its host without a port; the suggestion is the target without it when that host is
    configured (never a look-alike of ``node1:22`` such as ``node2``), else none."""
    m = _PORT_RE.match(host)
    if not m or cluster.hosts_named(host):  # ``::1`` is an address, not host:port
        return
    bare = m.group(1)
    if ":" in bare and not (bare.startswith("[") and bare.endswith("]")):
        return  # an IPv6 address without brackets: no port can be told apart
    found = cluster.hosts_named(bare)
    hint = (f": did you mean {left}@{found[0].name}?" if len(found) == 1 else
            f" (and no host {bare!r} in cluster {cluster.name})" if not found else "")
    raise InvalidRequest(f"{left}@{host}: a {kind} target names its host without a port"
                         + hint)


def canonical_target_on(kind: str, raw: str, cluster: ClusterTarget) -> str:
    """``canonical_target`` with every host part spelt as configured for ``cluster``: the
    one lock key, plan and audit name of a target, however the host was written
    (``d1@127.0.0.2``, ``d1@NODE1.`` and ``d1@node1`` are all ``d1@node1``)."""
    t = raw.strip() if isinstance(raw, str) else ""
    if kind in HOST_QUALIFIED and "@" in t:
        left, _, host = t.rpartition("@")
        if left and host:
            _no_port(kind, left, host, cluster)
            t = f"{left}@{resolve_host(host, cluster)}"
    elif kind == "host" and t:
        t = resolve_host(t, cluster)
    return canonical_target(kind, t or raw)
