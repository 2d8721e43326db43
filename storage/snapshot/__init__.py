"""Snapshots: everything one check collected, in a directory on-call can attach to a ticket
(as people do with a sosreport), and a replay of it through the same parsers a live check
runs. ``stordoc snapshot save DIR`` writes one; ``stordoc check --from DIR`` (the TUI's
``--from``, the bot's ``health from NAME``) diagnoses from it.

Layout (format 1)::

    snapshot.json      the manifest: format, version, cluster, when, which parts
    cluster.json       the cluster's settings without secrets, its thresholds and mutes
    ceph/<cmd>.json    each Ceph command's JSON answer (the manifest maps file -> command)
    swift.json         rings and builders as read, recon's answers, proxy health,
                       dispersion samples, the journal's recon history
    hosts/<n>.json     per host: what the facts (and identity) scripts printed, or its error

Format 0 is the older capture directory (``tests/fixtures/ceph-<release>/<scenario>/``, one
file per Ceph command and no manifest): read as Ceph's answers only. A newer format is
refused with a line that says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from storage.ceph import build_state
from storage.ceph.captures import RAW_FILE_NAMES
from storage.hostfacts import facts_from_raw, plan_for
from storage.model import CephState, ClusterSnapshot, HostFacts, SwiftState
from storage.snapshot.codec import (
    answer_files,
    host_doc,
    host_from_doc,
    needs,
    redact,
    swift_doc,
    swift_from_doc,
)
from storage.snapshot.files import (
    MAX_FILE_BYTES,
    Reader,
    SnapshotError,
    Writer,
    epoch,
    safe_relpath,
    seconds,
)
from storage.snapshot.shapes import check_ceph_answer, check_ceph_answers
from storage.targets import ClusterTarget

FORMAT = "stordoc-snapshot"
VERSION = 1
MANIFEST = "snapshot.json"
SETTINGS = "cluster.json"
MAX_HOSTS = 5000


@dataclass(frozen=True)
class SnapshotDoc:
    """A snapshot as read (not yet replayed): its manifest's facts and each part's data."""

    directory: str
    version: int
    cluster: str
    taken_at: float
    duration_s: float = 0.0
    host_facts_collected: bool = False
    written_by: str = ""
    ceph_raw: Mapping[str, Any] | None = None
    ceph_collected_at: float = 0.0
    ceph_error: str | None = None
    swift: Any = None
    swift_error: str | None = None
    hosts: tuple[tuple[str, Any], ...] = ()  # (file, document)
    settings: Mapping[str, Any] = field(default_factory=dict)  # cluster.json
    notes: tuple[str, ...] = ()


# ------------------------------------------------------------------ write
def write_snapshot(directory: str, snap: ClusterSnapshot, settings: Mapping[str, Any],
                   written_by: str) -> SnapshotDoc:
    """Write ``snap`` (collected with ``keep_raw``) and the cluster's ``settings`` document
    (already without secrets). SnapshotError when ``directory`` exists or a host's raw
    output is missing; nothing is left under ``directory`` then."""
    missing = needs(snap)
    if missing:
        raise SnapshotError(f"host facts of {', '.join(missing)} were collected without "
                            "their scripts' output")
    w = Writer(directory)
    try:
        ceph_part: dict[str, Any] | None = None
        if snap.ceph is not None:
            files = answer_files(sorted(snap.ceph.raw))
            for rel, key in files.items():
                w.write_json(rel, redact(snap.ceph.raw[key]))
            ceph_part = {"collected_at": snap.ceph.collected_at, "answers": files}
        if snap.swift is not None:
            w.write_json("swift.json", swift_doc(snap.swift))
        host_files = []
        for i, name in enumerate(sorted(snap.hosts)):
            rel = f"hosts/{i}.json"
            w.write_json(rel, host_doc(snap.hosts[name]))
            host_files.append(rel)
        w.write_json(SETTINGS, dict(settings))
        w.write_json(MANIFEST, {
            "format": FORMAT, "version": VERSION, "written_by": written_by,
            "cluster": snap.cluster, "taken_at": snap.taken_at,
            "duration_s": snap.duration_s, "host_facts_collected": snap.host_facts_collected,
            "ceph": ceph_part, "ceph_error": snap.ceph_error,
            "swift": "swift.json" if snap.swift is not None else None,
            "swift_error": snap.swift_error, "hosts": host_files, "settings": SETTINGS})
        w.commit()
    except BaseException:
        w.abort()
        raise
    return SnapshotDoc(w.final, VERSION, snap.cluster, snap.taken_at, snap.duration_s,
                       snap.host_facts_collected, written_by, settings=settings)


# ------------------------------------------------------------------ read
def _str(m: Mapping[str, Any], key: str, *, optional: bool = False) -> str | None:
    v = m.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, str) or len(v) > 100_000:
        raise SnapshotError(f"{MANIFEST}: {key} is not text")
    return v


def _time(m: Mapping[str, Any], key: str, default: float | None = None,
          where: str = MANIFEST) -> float:
    return epoch(m.get(key, default), f"{where}: {key}")


def read_snapshot(directory: str) -> SnapshotDoc:
    """Read a snapshot directory as hostile input (storage.snapshot.files): one
    SnapshotError line for anything it cannot take, and nothing outside it is read."""
    with Reader(directory) as r:
        if not r.exists(MANIFEST):
            if not (r.exists("osd_dump.json") and r.exists("osd_tree.json")):
                raise SnapshotError(f"{directory} is not a stordoc snapshot (no {MANIFEST})")
            return _read_capture(r, directory)
        m = r.read_json(MANIFEST)
        if not isinstance(m, Mapping) or m.get("format") != FORMAT:
            raise SnapshotError(f"{directory} is not a stordoc snapshot ({MANIFEST} has no "
                                f"\"format\": \"{FORMAT}\")")
        v = m.get("version")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SnapshotError(f"{MANIFEST}: unknown format version {str(v)[:20]!r}")
        if v > VERSION:
            raise SnapshotError(f"snapshot format {v} is newer than this stordoc reads "
                                f"(format {VERSION} and older): written by "
                                f"{str(m.get('written_by'))[:60]}; upgrade stordoc to read it")
        cluster = _str(m, "cluster") or ""
        ceph_raw = None
        ceph_at = 0.0
        cp = m.get("ceph")
        if cp is not None:
            if not isinstance(cp, Mapping) or not isinstance(cp.get("answers"), Mapping):
                raise SnapshotError(f"{MANIFEST}: ceph names no answers")
            ceph_at = _time(cp, "collected_at", 0.0, f"{MANIFEST}: ceph")
            ceph_raw = {}
            for rel, key in cp["answers"].items():
                if not isinstance(key, str) or not str(rel).startswith("ceph/"):
                    raise SnapshotError(f"{MANIFEST}: ceph answer {str(rel)[:60]!r} is "
                                        "not a file under ceph/")
                ceph_raw[key] = r.read_json(str(rel))
                check_ceph_answer(str(rel), key, ceph_raw[key])
            rels = {k: str(rel) for rel, k in cp["answers"].items()}
            check_ceph_answers(ceph_raw, rels.get("osd dump", "ceph/"))
        swift = None
        if m.get("swift") is not None:
            swift = r.read_json(_str(m, "swift") or "")
        hosts_l = m.get("hosts") or []
        if not isinstance(hosts_l, list) or len(hosts_l) > MAX_HOSTS:
            raise SnapshotError(f"{MANIFEST}: hosts is not a list of files")
        hosts = tuple((str(rel), r.read_json(str(rel))) for rel in hosts_l)
        settings = r.read_json(_str(m, "settings") or SETTINGS)
        if not isinstance(settings, Mapping):
            raise SnapshotError(f"{SETTINGS} is not an object")
        hf = m.get("host_facts_collected", False)
        return SnapshotDoc(
            directory=directory, version=v, cluster=cluster,
            taken_at=_time(m, "taken_at"),
            duration_s=seconds(m.get("duration_s", 0.0), f"{MANIFEST}: duration_s"),
            host_facts_collected=hf is True, written_by=str(m.get("written_by", ""))[:200],
            ceph_raw=ceph_raw, ceph_collected_at=ceph_at,
            ceph_error=_str(m, "ceph_error", optional=True), swift=swift,
            swift_error=_str(m, "swift_error", optional=True), hosts=hosts,
            settings=settings)


def _read_capture(r: Reader, directory: str) -> SnapshotDoc:
    """Format 0: a capture directory of Ceph's answers (``storage.ceph.save_raw_dir``)."""
    back = {v: k for k, v in RAW_FILE_NAMES.items()}
    raw: dict[str, Any] = {}
    with os.scandir(r.fd) as it:
        names = sorted(e.name for e in it if e.name.endswith(".json"))
    for name in names[:200]:
        try:
            safe_relpath(name)
        except SnapshotError:
            continue
        stem = name[:-len(".json")]
        key = back.get(stem, stem.replace("_", " "))
        raw[key] = r.read_json(name)
        check_ceph_answer(name, key, raw[key])
    check_ceph_answers(raw, f"{RAW_FILE_NAMES.get('osd dump', 'osd_dump')}.json")
    taken = 0.0  # the capture's moment: its status's pgmap stamp, else the osdmap's
    status = raw.get("status")
    if isinstance(status, Mapping):
        from storage.ceph import parse_stamp

        for k in ("osdmap", "pgmap"):
            part = status.get(k)
            if isinstance(part, Mapping):
                taken = parse_stamp(part.get("modified") or part.get("last_updated")) or taken
        taken = epoch(taken, "status.json: the osdmap/pgmap stamp")
    return SnapshotDoc(
        directory=directory, version=0, cluster=os.path.basename(
            os.path.abspath(directory)) or "capture", taken_at=taken, ceph_raw=raw,
        ceph_collected_at=taken, notes=("a Ceph capture without snapshot.json (format 0): "
                                        "Ceph's answers only, no Swift or host facts",))


# ------------------------------------------------------------------ replay
def replay(doc: SnapshotDoc, target: ClusterTarget) -> ClusterSnapshot:
    """The ``ClusterSnapshot`` a check of that moment had, rebuilt from the snapshot's
    answers by the live parsers (``target``: the snapshot's cluster shape, validated by the
    caller, tells which OSDs and devices belong to which host). SnapshotError for answers
    the parsers cannot take."""
    ceph: CephState | None = None
    if doc.ceph_raw is not None:
        if "osd dump" not in doc.ceph_raw or "osd tree" not in doc.ceph_raw:
            raise SnapshotError("the snapshot's Ceph part has no osd dump and osd tree")
        ceph = _parse("Ceph's answers", lambda: build_state(
            dict(doc.ceph_raw or {}), collected_at=doc.ceph_collected_at or doc.taken_at))
    swift: SwiftState | None = None
    if doc.swift is not None:
        swift = _parse("swift.json", lambda: swift_from_doc(doc.swift))
    hosts: dict[str, HostFacts] = {}
    for rel, hd in doc.hosts:
        name, address, err, raw, at, took = host_from_doc(hd, rel)
        if err is not None or raw is None:
            hosts[name] = HostFacts(name=name, address=address, error=err, collected_at=at,
                                    duration_s=took)
            continue
        h = target.host(name)
        if h is None and target.discovery is not None:  # found from the cluster (hosts_from)
            h = replace(target.discovery.defaults, name=name, address=address)
        elif h is not None and not h.address:  # an exception that takes the found address
            h = replace(h, address=address)
        if h is None:
            raise SnapshotError(f"{rel}: host {name} is not in the snapshot's cluster.json")
        plan = plan_for(target, h, ceph, swift)
        hosts[name] = _parse(rel, lambda p=plan, x=raw, a=at, d=took: facts_from_raw(p, x, a, d))
    return ClusterSnapshot(
        cluster=doc.cluster, taken_at=doc.taken_at, ceph=ceph, ceph_error=doc.ceph_error,
        swift=swift, swift_error=doc.swift_error, hosts=hosts,
        host_facts_collected=doc.host_facts_collected, duration_s=doc.duration_s)


def _parse(what: str, fn: Any) -> Any:
    try:
        return fn()
    except SnapshotError:
        raise
    except RecursionError:
        raise SnapshotError(f"{what}: nests too deeply") from None
    except Exception as e:  # noqa: BLE001  (hostile input: any parser surprise is one line)
        raise SnapshotError(f"{what}: not what the collector writes"
                            + (f" ({_line(str(e))})" if str(e) else "")) from None


def _line(text: str) -> str:
    """A parser's complaint as part of one line: no line breaks, no control characters."""
    return "".join(c if c.isprintable() else " " for c in text)[:120]


def age(doc: SnapshotDoc, now: float | None = None) -> float:
    return max(0.0, (now if now is not None else time.time()) - doc.taken_at)


__all__ = ["FORMAT", "MANIFEST", "MAX_FILE_BYTES", "SETTINGS", "VERSION", "SnapshotDoc",
           "SnapshotError", "age", "read_snapshot", "replay", "write_snapshot"]
