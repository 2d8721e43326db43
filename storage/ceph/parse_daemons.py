"""Pure parsers of what the daemons say about themselves: ``health detail``, ``status`` /
``quorum_status``, ``versions`` and ``mon|mgr|osd metadata``, ``crash ls-new``,
``time-sync-status``, ``osd perf``. Same rules as ``storage.ceph.parse``: every known
release's shape, no version sniffing, junk counts as missing."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from storage.ceph.parse import as_int, as_list, as_map, parse_stamp
from storage.model import (
    CephVersions,
    CrashReport,
    DaemonVersion,
    HealthCheck,
    HealthMute,
    VersionCount,
    release_major,
    release_name,
    version_key,
)


def parse_mutes(d: Mapping[str, Any]) -> dict[str, HealthMute]:
    """``health detail``'s ``mutes`` by code (Octopus and later; absent before)."""
    out: dict[str, HealthMute] = {}
    for m in as_list(d.get("mutes")):
        m = as_map(m)
        code = m.get("code")
        if not isinstance(code, str) or not code:
            continue
        out[code] = HealthMute(code=code, sticky=m.get("sticky") is True,
                               until=parse_stamp(m.get("ttl")), count=as_int(m.get("count")))
    return out


def parse_health(d: Mapping[str, Any]) -> tuple[str, tuple[HealthCheck, ...]]:
    """``health detail``: overall status and each of Ceph's own checks, with the terms of
    its mute when it is muted."""
    checks: list[HealthCheck] = []
    mutes = parse_mutes(d)
    raw = d.get("checks") or {}
    items: Iterable[tuple[str, Any]]
    if isinstance(raw, Mapping):
        items = raw.items()
    else:  # very old layout: a list with "code"
        items = ((str(as_map(c).get("code", "?")), c) for c in as_list(raw))
    for code, c in items:
        c = as_map(c)
        summ = c.get("summary")
        summary = summ.get("message", "") if isinstance(summ, Mapping) else str(summ or "")
        detail = tuple(
            str(x.get("message", "")) if isinstance(x, Mapping) else str(x)
            for x in as_list(c.get("detail")))
        muted = c.get("muted") is True
        checks.append(HealthCheck(code=str(code), severity=str(c.get("severity", "")),
                                  summary=str(summary), detail=detail, muted=muted,
                                  mute=mutes.get(str(code)) if muted else None))
    return str(d.get("status", d.get("overall_status", "HEALTH_UNKNOWN"))), tuple(checks)


@dataclass(frozen=True)
class Quorum:
    quorum: tuple[str, ...] = ()
    mon_names: tuple[str, ...] = ()
    num_mons: int = 0


def parse_status(d: Mapping[str, Any]) -> Quorum:
    """Quorum and monitor names from ``status`` (or ``quorum_status``).

    Octopus dropped the mon list from ``status.monmap`` (only ``num_mons``), so the names
    may need ``quorum_status``; both put the quorum in ``quorum_names``.
    """
    monmap = as_map(d.get("monmap"))
    names = tuple(str(m["name"]) for m in as_list(monmap.get("mons"))
                  if isinstance(m, Mapping) and "name" in m)
    return Quorum(quorum=tuple(str(n) for n in as_list(d.get("quorum_names"))),
                  mon_names=names,
                  num_mons=as_int(monmap.get("num_mons"), len(names)) or len(names))


# "ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)";
# development builds print "ceph version Development (no_version) reef (rc)"
_VER_RE = re.compile(r"ceph version (\S+) \([^)]*\) (\w+)")
DAEMON_KINDS = ("mon", "mgr", "osd", "mds", "rgw", "rbd-mirror")


def parse_version_string(text: str) -> tuple[str, str] | None:
    """``ceph version ...`` -> (version, release name); None if it is not one."""
    m = _VER_RE.search(text)
    if not m:
        return None
    version, release = m.group(1), m.group(2).lower()
    if release_major(release) is None:  # a name this table does not know: from the number
        key = version_key(version)
        release = (release_name(key[0]) if key else None) or release
    return version, release


def _counts(d: Any) -> tuple[VersionCount, ...]:
    out = []
    for text, n in as_map(d).items():
        vr = parse_version_string(str(text))
        if vr is not None:
            out.append(VersionCount(vr[0], vr[1], as_int(n)))
    return tuple(sorted(out, key=lambda c: c.key))


def parse_versions(d: Any) -> CephVersions:
    """``versions``: per daemon kind (mon, mgr, osd, mds, rgw ...) the versions and their
    counts. A reply with only ``overall`` (or nothing per kind) is kept as kind
    ``overall``."""
    m = as_map(d)
    by_kind = {k: _counts(v) for k, v in m.items() if k != "overall" and _counts(v)}
    if not by_kind and _counts(m.get("overall")):
        by_kind = {"overall": _counts(m.get("overall"))}
    return CephVersions(by_kind=by_kind)


def parse_metadata(kind: str, d: Any) -> tuple[DaemonVersion, ...]:
    """``mon metadata`` / ``mgr metadata`` / ``osd metadata``: each daemon's version.

    OSDs carry ``id`` (a number), monitors and managers ``name``; the version is
    ``ceph_version`` (the full string), else ``ceph_version_short`` + ``ceph_release``."""
    out = []
    for e in as_list(d):
        if not isinstance(e, Mapping):
            continue
        ident = e.get("id", e.get("name")) if kind == "osd" else e.get("name", e.get("id"))
        if ident is None:
            continue
        vr = parse_version_string(str(e.get("ceph_version", "")))
        if vr is None and e.get("ceph_version_short"):
            short = str(e["ceph_version_short"])
            key = version_key(short)
            rel = str(e.get("ceph_release") or (release_name(key[0]) if key else "") or "")
            vr = (short, rel)
        if vr is None:
            continue
        host = e.get("hostname")
        out.append(DaemonVersion(kind, f"{kind}.{ident}", vr[0], vr[1],
                                 str(host) if host else None))
    return tuple(out)


def parse_crashes(d: Any) -> tuple[CrashReport, ...] | None:
    """``crash ls-new``: the crash reports nobody archived; None if the answer is not a
    list (not read: the command failed, or the crash module is off)."""
    if not isinstance(d, list):
        return None
    out = []
    for c in d:
        if not isinstance(c, Mapping) or not c.get("crash_id"):
            continue

        def opt(key: str, c: Mapping[str, Any] = c) -> str | None:
            v = c.get(key)
            return str(v) if v not in (None, "") else None

        out.append(CrashReport(
            crash_id=str(c["crash_id"]), entity=str(c.get("entity_name", "")),
            timestamp=str(c.get("timestamp", "")), when=parse_stamp(c.get("timestamp")),
            process=opt("process_name"), ceph_version=opt("ceph_version"),
            assert_msg=opt("assert_msg"), assert_condition=opt("assert_condition"),
            backtrace=tuple(str(x) for x in as_list(c.get("backtrace")))))
    return tuple(out)


def parse_time_sync(d: Any) -> dict[str, float]:
    """``time-sync-status``: |skew| in seconds per monitor (empty with one monitor)."""
    out: dict[str, float] = {}
    for name, s in as_map(as_map(d).get("time_skew_status")).items():
        try:
            skew = abs(float(as_map(s).get("skew", 0.0)))
        except (TypeError, ValueError):
            continue
        if math.isfinite(skew):
            out[str(name)] = skew
    return out


def parse_osd_perf(d: Any) -> dict[int, tuple[float, float]]:
    """``osd perf``: per OSD (commit, apply) latency in ms, as the manager last averaged
    them. Octopus+ wrap the list in ``osdstats``; earlier releases do not. Entries with no
    id or no numbers are skipped (an OSD that never reported)."""
    if not isinstance(d, Mapping):
        return {}
    stats = d.get("osdstats")
    infos = stats.get("osd_perf_infos") if isinstance(stats, Mapping) \
        else d.get("osd_perf_infos")
    out: dict[int, tuple[float, float]] = {}
    if not isinstance(infos, list):
        return out
    for e in infos:
        if not isinstance(e, Mapping) or not isinstance(e.get("perf_stats"), Mapping):
            continue
        ps = e["perf_stats"]
        try:
            osd = int(e["id"])
            commit = float(ps.get("commit_latency_ms", 0))
            apply = float(ps.get("apply_latency_ms", 0))
        except (KeyError, TypeError, ValueError):
            continue
        if osd >= 0 and math.isfinite(commit) and math.isfinite(apply):
            out[osd] = (commit, apply)
    return out
