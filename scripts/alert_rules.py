"""Write checks/alert_rules.py: the names of Ceph's own Prometheus alert rules (ceph-mixin's
``prometheus_alerts.yml``, as Debian ships it in ``ceph-prometheus-alerts``), each with its
severity, SNMP oid, key metric, Ceph health codes and the labels its alerts carry.

The lab's Prometheus loads the host's file (``lab/alerts.py`` CEPH_RULES: Debian 12's
16.2.15, Pacific) for both lab releases; Reef's file (Debian 13's 18.2.7) is a superset.
Usage (run from the repository's root)::

    python scripts/alert_rules.py PACIFIC_YML REEF_YML [--pacific-version V --reef-version V]

``apt-get download ceph-prometheus-alerts`` (bookworm, trixie) and ``dpkg-deb -x`` give the
files at ``etc/prometheus/ceph/ceph_default_alerts.yml``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parents[1] / "checks" / "alert_rules.py"

# labels each metric family's series carry (the mgr prometheus module, node_exporter);
# ``instance``/``job`` are the scrape's, ``cluster`` comes from Prometheus' external labels
_BASE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ceph_health_detail", ("name", "instance", "job")),
    ("ceph_health_status", ("instance", "job")),
    ("ceph_healthcheck_", ("instance", "job")),
    ("ceph_daemon_health_metrics", ("ceph_daemon", "instance", "job")),
    ("ceph_mon_", ("ceph_daemon", "instance", "job")),
    ("ceph_osd_", ("ceph_daemon", "instance", "job")),
    ("ceph_pool_", ("pool_id", "name", "instance", "job")),
    ("ceph_pg_", ("pool_id", "instance", "job")),
    ("ceph_rbd_mirror_", ("ceph_daemon", "image", "namespace", "pool", "instance", "job")),
    ("ceph_nvmeof_", ("instance", "job")),
    ("node_filesystem_", ("device", "fstype", "mountpoint", "instance", "job")),
    ("node_network_", ("device", "instance", "job")),
    ("node_bonding_", ("master", "instance", "job")),
    ("node_cpu_", ("cpu", "mode", "instance", "job")),
    ("up", ("instance", "job")),
)
_METRIC_RE = re.compile(r"\b((?:ceph|node)_[a-z_]+|up)\b(?=\s*[{\[),\s=<>!*/+-])")
_LABEL_NAMES = {"ceph_daemon"}  # label names that look like metrics (``by (ceph_daemon)``)
_CODES_RE = re.compile(r'ceph_health_detail\{name=~?"([A-Z0-9_|]+)"\}')
_BY_RE = re.compile(r"^\s*\(?\s*(?:sum|count|avg|max|min|topk)\s*by\s*\(([^)]*)\)")
_GROUP_RE = re.compile(r"group_(?:left|right)\s*\(([^)]*)\)")
_REPLACE_RE = re.compile(r',\s*"([a-z_]+)"\s*,\s*"\$1"')  # label_replace(v, "dst", "$1", ...)
_SELECTOR_RE = re.compile(r'\{([^}]*)\}')


def _base(metric: str) -> tuple[str, ...]:
    for prefix, labels in _BASE:
        if metric == prefix or (prefix.endswith("_") and metric.startswith(prefix)):
            return labels
    return ("instance", "job")


def alert_labels(expr: str, metric: str) -> tuple[str, ...]:
    """The labels an alert of ``expr`` carries besides the rule's own (best effort from
    the expression: aggregation ``by``, ``group_left``, ``label_replace``, selectors)."""
    e = " ".join(expr.split())
    if e.startswith("absent("):
        sel = _SELECTOR_RE.search(e)
        return tuple(sorted(k.split("=")[0].strip() for k in (sel.group(1) if sel else "")
                            .split(",") if "=" in k and "!" not in k and "~" not in k))
    by = _BY_RE.match(re.sub(r"^\s*label_replace\(", "", e))
    if by:
        labels = {x.strip() for x in by.group(1).split(",") if x.strip()}
    elif re.match(r"^\s*\(?\s*count\s*\(", e):  # count() with no by: one bare series
        return ()
    else:
        labels = set(_base(metric))
        # ceph_pool_metadata's labels win where a rule joins it to pool statistics
        if "ceph_pool_metadata" in e:
            labels |= set(_base("ceph_pool_metadata"))
    for m in _GROUP_RE.finditer(e):
        labels |= {x.strip() for x in m.group(1).split(",") if x.strip()}
    for m in _REPLACE_RE.finditer(e):
        labels.add(m.group(1))
    if "group_left(nodename)" in e or "group_left (nodename)" in e:
        labels.add("nodename")
    return tuple(sorted(labels))


def rules_of(path: Path) -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load(path.read_text())
    out: dict[str, dict[str, Any]] = {}
    for g in doc["groups"]:
        for r in g["rules"]:
            if "alert" not in r:
                continue
            expr = str(r["expr"])
            fires = re.sub(r"scalar\([^)]*\)", "", expr)  # scalar(): a condition against
            codes = tuple(c for m in _CODES_RE.findall(fires) for c in m.split("|"))
            metrics = [m for m in _METRIC_RE.findall(expr) if m not in _LABEL_NAMES]
            metric = "ceph_health_detail" if codes else (metrics[0] if metrics else "")
            labels = r.get("labels") or {}
            out[r["alert"]] = {
                "name": r["alert"], "group": g["name"],
                "severity": str(labels.get("severity", "")), "oid": str(labels.get("oid", "")),
                "metric": metric, "health_codes": codes,
                "labels": alert_labels(expr, metric),
            }
    return out


def render(pacific: dict[str, dict[str, Any]], reef: dict[str, dict[str, Any]],
           sources: dict[str, str]) -> str:
    names = list(reef) + [n for n in pacific if n not in reef]
    lines = [
        '"""Ceph\'s own Prometheus alert rules (ceph-mixin), by name: GENERATED by',
        "scripts/alert_rules.py from Debian's ``ceph-prometheus-alerts`` (do not edit by hand).",
        "",
        "Each rule: its group, severity, SNMP oid, key metric, the Ceph health codes it fires",
        "on (``ceph_health_detail{name=...}``), the labels its alerts carry besides the rule's",
        "own (``alertname``, ``severity``, ``type``, ``oid``) and Prometheus' external labels",
        "(``cluster``), and the releases whose file has it. ``checks.alert_map`` says what",
        'explains each one."""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass",
        "",
        "SOURCES: dict[str, str] = {",
        *(f"    {k!r}: {v!r}," for k, v in sources.items()),
        "}",
        "",
        "",
        "@dataclass(frozen=True)",
        "class AlertRule:",
        "    name: str",
        "    group: str",
        "    severity: str",
        "    oid: str",
        "    metric: str",
        "    health_codes: tuple[str, ...]",
        "    labels: tuple[str, ...]",
        "    releases: tuple[str, ...]",
        "",
        "",
        "RULES: tuple[AlertRule, ...] = (",
    ]
    for n in names:
        r = reef.get(n) or pacific[n]
        rel = tuple(x for x, d in (("pacific", pacific), ("reef", reef)) if n in d)
        lines.append(
            f"    AlertRule({r['name']!r}, {r['group']!r}, {r['severity']!r}, {r['oid']!r},"
            f" {r['metric']!r}, {tuple(r['health_codes'])!r}, {tuple(r['labels'])!r},"
            f" {rel!r}),")
    lines += [")", "BY_NAME: dict[str, AlertRule] = {r.name: r for r in RULES}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pacific", type=Path)
    ap.add_argument("reef", type=Path)
    ap.add_argument("--pacific-version", default="16.2.15+ds-0+deb12u2")
    ap.add_argument("--reef-version", default="18.2.7+ds-1+deb13u1")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    for p in (a.pacific, a.reef):
        if not p.is_file():
            print(f"alert_rules: {p}: no such file", file=sys.stderr)
            return 64
    where = "etc/prometheus/ceph/ceph_default_alerts.yml"
    sources = {
        "pacific": f"Debian ceph-prometheus-alerts {a.pacific_version}: {where} "
                   "(the file the lab's Prometheus loads, lab/alerts.py)",
        "reef": f"Debian ceph-prometheus-alerts {a.reef_version}: {where}",
    }
    a.out.write_text(render(rules_of(a.pacific), rules_of(a.reef), sources))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
