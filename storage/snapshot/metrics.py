"""The Prometheus metrics a snapshot may hold beside the check's answers: the exposition
text of the mgr ``prometheus`` module (``/metrics``) and of node_exporters, as scraped
when the snapshot was saved. What Ceph's own alert rules would fire on that cluster is
computed from them (``promtool test rules``: tests/unit/test_alert_posts.py,
benchmarks/alert_coverage.py), not guessed from health codes.

Layout, inside a snapshot directory::

    metrics/index.json       per source: the URL scraped, Prometheus's ``instance`` and
                             ``job`` labels for it, when, and the error when it failed
    metrics/<source>.prom    the exposition text as served (absent when the scrape failed:
                             Prometheus's ``up`` is 0 for that target then)

The parser reads Prometheus's text format 0.0.4 (what the mgr module and node_exporter
serve); a line it cannot read is an error naming the line, never skipped.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

METRICS_DIR = "metrics"
INDEX = "index.json"
MAX_BYTES = 32 * 1024 * 1024
_SOURCE = re.compile(r"[a-z][a-z0-9_-]{0,62}")


class MetricsError(ValueError):
    """Exposition text or a metrics directory that cannot be read: one line."""


@dataclass(frozen=True)
class Scrape:
    """One target scraped: ``source`` (``mgr``, ``node-node1``), the labels Prometheus
    gives its series (``instance``, ``job``), the text, or why there is none."""

    source: str
    url: str
    job: str
    instance: str
    at: float
    text: str | None
    error: str | None = None


def scrape(source: str, url: str, job: str, timeout: float = 15.0,
           keep: tuple[str, ...] = ()) -> Scrape:
    """GET ``url`` once (as Prometheus scrapes it). A failure is kept, not raised: a
    target that does not answer is itself what an alert rule sees (``up == 0``).
    ``keep``: only the metric families whose names start so (all when empty)."""
    if not _SOURCE.fullmatch(source):
        raise ValueError(f"metrics source {source!r}: lower-case letters, digits, - and _")
    instance = url.split("//", 1)[-1].split("/", 1)[0]
    at = time.time()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (http)
            body = resp.read(MAX_BYTES + 1)
        if len(body) > MAX_BYTES:
            raise MetricsError(f"more than {MAX_BYTES} bytes")
        text = body.decode("utf-8")
        return Scrape(source, url, job, instance, at, only(text, keep) if keep else text)
    except (OSError, urllib.error.URLError, UnicodeDecodeError, MetricsError) as e:
        return Scrape(source, url, job, instance, at, None, str(e)[:300] or type(e).__name__)


def write_metrics(directory: str, scrapes: Iterable[Scrape]) -> list[str]:
    """Add ``metrics/`` to a saved snapshot (replacing one there). Returns the files."""
    d = os.path.join(directory, METRICS_DIR)
    os.makedirs(d, mode=0o700, exist_ok=True)
    index: dict[str, dict[str, object]] = {}
    written = []
    for s in scrapes:
        index[s.source] = {"url": s.url, "job": s.job, "instance": s.instance,
                           "at": round(s.at, 3), "error": s.error}
        path = os.path.join(d, f"{s.source}.prom")
        if s.text is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(s.text)
            written.append(path)
        elif os.path.exists(path):
            os.unlink(path)
    with open(os.path.join(d, INDEX), "w", encoding="utf-8") as f:
        f.write(json.dumps(index, indent=1, sort_keys=True) + "\n")
    written.append(os.path.join(d, INDEX))
    return written


def read_metrics(directory: str) -> list[Scrape]:
    """The scrapes saved with a snapshot ([] when it has none)."""
    d = os.path.join(directory, METRICS_DIR)
    try:
        with open(os.path.join(d, INDEX), encoding="utf-8") as f:
            index = json.load(f)
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise MetricsError(f"{METRICS_DIR}/{INDEX}: {e}") from None
    if not isinstance(index, dict):
        raise MetricsError(f"{METRICS_DIR}/{INDEX}: not an object")
    out = []
    for source, meta in sorted(index.items()):
        if not _SOURCE.fullmatch(str(source)) or not isinstance(meta, dict):
            raise MetricsError(f"{METRICS_DIR}/{INDEX}: source {source!r} unreadable")
        text = None
        if meta.get("error") is None:
            with open(os.path.join(d, f"{source}.prom"), encoding="utf-8") as f:
                text = f.read(MAX_BYTES + 1)
        out.append(Scrape(source, str(meta.get("url", "")), str(meta.get("job", "")),
                          str(meta.get("instance", "")), float(meta.get("at", 0.0)), text,
                          meta.get("error")))
    return out


# ------------------------------------------------------------------ the text format
Sample = tuple[str, dict[str, str], float]

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*\"")
_UNESCAPE = {"\\": "\\", '"': '"', "n": "\n"}


def _value(text: str, where: str) -> float:
    t = text.strip()
    special = {"+Inf": math.inf, "Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
    if t in special:
        return special[t]
    try:
        return float(t)
    except ValueError:
        raise MetricsError(f"{where}: not a sample value: {t[:40]!r}") from None


def parse_samples(text: str) -> list[Sample]:
    """Each sample of an exposition text: (name, labels, value); comments and blank
    lines skipped, a timestamp after the value ignored."""
    out: list[Sample] = []
    for n, line in enumerate(text.split("\n"), 1):  # the format's one line break
        s = line.strip(" \t\r")
        if not s or s.startswith("#"):
            continue
        where = f"line {n}"
        m = _NAME.match(s)
        if not m:
            raise MetricsError(f"{where}: no metric name: {s[:60]!r}")
        name, i = m.group(0), m.end()
        labels: dict[str, str] = {}
        if i < len(s) and s[i] == "{":
            i += 1
            while True:
                while i < len(s) and s[i] in " ,":
                    i += 1
                if i < len(s) and s[i] == "}":
                    i += 1
                    break
                lm = _LABEL.match(s, i)
                if not lm:
                    raise MetricsError(f"{where}: unreadable labels: {s[:80]!r}")
                i = lm.end()
                buf = []
                while i < len(s) and s[i] != '"':
                    if s[i] == "\\" and i + 1 < len(s):
                        buf.append(_UNESCAPE.get(s[i + 1], "\\" + s[i + 1]))
                        i += 2
                    else:
                        buf.append(s[i])
                        i += 1
                if i >= len(s):
                    raise MetricsError(f"{where}: unterminated label value: {s[:80]!r}")
                labels[lm.group(1)] = "".join(buf)
                i += 1
        rest = s[i:].split()
        if not rest or len(rest) > 2:
            raise MetricsError(f"{where}: expected a value (and a timestamp): {s[:80]!r}")
        out.append((name, labels, _value(rest[0], where)))
    return out


def only(text: str, prefixes: tuple[str, ...]) -> str:
    """The lines (samples, HELP and TYPE) of the families whose names start with one of
    ``prefixes``."""
    def name(line: str) -> str:
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            return line.split(" ", 3)[2] if line.count(" ") >= 2 else ""
        m = _NAME.match(line)
        return m.group(0) if m else ""

    return "".join(ln + "\n" for ln in text.split("\n") if name(ln).startswith(prefixes))


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def series_text(name: str, labels: Mapping[str, str]) -> str:
    """``name{a="x",b="y"}``: a sample's series as the text format (and PromQL) write it."""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def scraped_samples(s: Scrape, target_labels: Mapping[str, str] | None = None
                    ) -> list[Sample]:
    """What Prometheus stores from one scrape (``honor_labels``, as the lab's and Ceph's
    documented scrape configs set it): the target's ``instance``/``job`` and
    ``target_labels`` where a sample has no such label of its own, and ``up``."""
    extra = {"instance": s.instance, "job": s.job, **(target_labels or {})}
    up = (("up", dict(extra), 0.0 if s.text is None else 1.0),)
    if s.text is None:
        return list(up)
    return [*up, *((n, {**extra, **lab}, v) for n, lab, v in parse_samples(s.text))]
