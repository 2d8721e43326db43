"""Slow requests: an OSD's ``dump_ops_in_flight`` / ``dump_historic_slow_ops`` (asked
with ``ceph tell osd.N``), and the slow heartbeat lines of ``OSD_SLOW_PING_TIME_BACK`` /
``_FRONT`` -> ``storage.model.slowops``. Same rules as ``storage.ceph.parse``: every
field optional, a surprise skipped, never raised.

An op (``OpTracker::dump_ops``, both releases)::

    {"description": "osd_op(client.4161.0:5 2.1 2:8b0b...:::obj:head [write 0~4096]
      ondisk+write+known_if_redirected e49)", "initiated_at": "...", "age": 31.2,
     "duration": 31.2, "type_data": {"flag_point": "delayed", "client_info":
      {"client": "client.4161", ...}, "events": [...]}}

``dump_ops_in_flight`` lists them under ``ops`` with ``num_ops``;
``dump_historic_slow_ops`` under ``Ops`` (capital O) with ``num to keep``.

A slow heartbeat detail line (PGMap.cc, both releases): ``Slow OSD heartbeats on back
from osd.0 [dc1,rack1] to osd.1 [dc1,rack1] 1118.001 msec possibly improving``; the
bracketed CRUSH location is there only when the OSDs' CRUSH parents differ.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from storage.ceph.parse import as_int, as_list, as_map
from storage.ceph.parse_settle import parse_pgs_brief
from storage.model.slowops import OsdOps, SlowOp, SlowPing, SlowState

# how many ops of each list an OSD's answer keeps (a busy OSD has thousands in flight)
MAX_OPS = 20
_KIND_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(")
_OPS_RE = re.compile(r"\[([^\]]*)\]")
_PG_RE = re.compile(r"^\d+\.[0-9a-f]+(?:s\d+)?$")
_PING_RE = re.compile(
    r"Slow OSD heartbeats on (back|front) from osd\.(\d+)(?: \[[^\]]*\])? to "
    r"osd\.(\d+)(?: \[[^\]]*\])? ([\d.]+) msec( possibly improving)?")
PING_CODES = ("OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT")
# PG state words that mean "not serving yet": the read lease lapsed (laggy) or the PG
# waits for the previous interval's lease to end (wait); Octopus and later
LAGGY_PARTS = frozenset({"laggy", "wait"})
MAX_LAGGY = 50
# an op not decoded yet has no ``[ops]``: its flags say read or write
_FLAG_OPS = ("write", "read")


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        return None
    try:
        f = float(v)
    except ValueError:
        return None
    return f if math.isfinite(f) and f >= 0 else None


def _op_words(inner: str) -> tuple[str, ...]:
    """``write 0~4096,stat`` -> (write, stat): each op's name, not its extent."""
    out: dict[str, None] = {}
    for part in inner.split(","):
        word = part.strip().split(" ")[0]
        if word and re.fullmatch(r"[a-z][a-z0-9_-]*", word):
            out[word] = None
    return tuple(out)


def parse_op(d: Any, in_flight: bool) -> SlowOp | None:
    """One op of ``OpTracker``'s dump; None when it says nothing usable."""
    m = as_map(d)
    desc = m.get("description")
    if not isinstance(desc, str) or not desc:
        return None
    km = _KIND_RE.match(desc)
    kind = km.group(1) if km else desc.split(" ")[0][:40]
    om = _OPS_RE.search(desc)
    ops = _op_words(om.group(1)) if om and km else ()
    if km and not ops and "(undecoded)" in desc:
        flags = next((w for w in desc.split(" ") if "+" in w and "known_if" in w), "")
        ops = tuple(f for f in _FLAG_OPS if f in flags.split("+"))
    pg = None
    if km:
        words = desc[km.end():].split(" ")
        pg = next((w for w in words[:3] if _PG_RE.match(w)), None)
    age = _num(m.get("age"))
    td = as_map(m.get("type_data"))
    client = as_map(td.get("client_info")).get("client")
    return SlowOp(kind=kind, ops=ops, pg=pg, age_s=age if age is not None else 0.0,
                  duration_s=_num(m.get("duration")),
                  flag_point=str(td.get("flag_point") or ""),
                  client=str(client) if isinstance(client, str) else None,
                  description=desc[:300], in_flight=in_flight)


def _ops(items: Iterable[Any], in_flight: bool) -> list[SlowOp]:
    return [op for x in items if (op := parse_op(x, in_flight)) is not None]


def parse_osd_ops(osd: int, in_flight: Any, historic: Any,
                  error: str | None = None) -> OsdOps:
    """One OSD's two answers (either may be None: not read) -> ``OsdOps``: in-flight ops
    oldest first, historic slow ops slowest first, ``MAX_OPS`` of each."""
    fl = as_map(in_flight)
    cur = sorted(_ops(as_list(fl.get("ops")), True), key=lambda o: -o.age_s)
    hm = as_map(historic)
    hist = sorted(_ops(as_list(hm.get("Ops", hm.get("ops"))), False),
                  key=lambda o: -(o.duration_s or 0.0))
    total = as_int(fl.get("num_ops"), len(cur))
    return OsdOps(osd=osd, in_flight=tuple(cur[:MAX_OPS]), historic=tuple(hist[:MAX_OPS]),
                  in_flight_total=max(total, 0), error=error)


def parse_ping_lines(lines: Iterable[str]) -> tuple[SlowPing, ...]:
    """The slow heartbeat lines of ``OSD_SLOW_PING_TIME_*`` -> one ``SlowPing`` each."""
    out = []
    for line in lines:
        m = _PING_RE.search(line)
        if m is None:
            continue
        ms = _num(m.group(4))
        if ms is None:
            continue
        out.append(SlowPing(osd=int(m.group(2)), peer=int(m.group(3)), iface=m.group(1),
                            ms=ms, trend="possibly improving" if m.group(5) else ""))
    return tuple(out)


def parse_laggy(brief: Any) -> tuple[tuple[str, str], ...]:
    """(pgid, state) of the PGs ``pg dump pgs_brief`` shows laggy or wait, at most
    ``MAX_LAGGY`` (empty when not read)."""
    reports = parse_pgs_brief(brief) or ()
    return tuple((r.pgid, r.state) for r in reports
                 if LAGGY_PARTS & set(r.state.split("+")))[:MAX_LAGGY]


def parse_slow(raw_ops: Any, perf: Mapping[int, tuple[float, float]],
               ping_lines: Iterable[str], error: str | None = None,
               laggy: tuple[tuple[str, str], ...] = ()) -> SlowState:
    """``raw["osd slow ops"]`` ({"osd.N": {"in_flight": ..., "historic": ...,
    "error": ...}}), ``osd perf`` parsed, and the slow heartbeat lines -> ``SlowState``."""
    ops = []
    for name, ans in as_map(raw_ops).items():
        key = str(name)
        if not key.startswith("osd.") or not key[4:].isdigit():
            continue
        a = as_map(ans)
        err = a.get("error")
        ops.append(parse_osd_ops(int(key[4:]), a.get("in_flight"), a.get("historic"),
                                 str(err) if err else None))
    return SlowState(ops=tuple(sorted(ops, key=lambda o: o.osd)),
                     pings=parse_ping_lines(ping_lines), perf=dict(perf), error=error,
                     laggy_pgs=laggy)
