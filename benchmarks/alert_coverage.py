"""How many of Ceph's own Prometheus alert rules the webhook diagnoses by name (issue 29
item 6): per release's rule file (checks/alert_rules.py, Debian's ceph-prometheus-alerts:
Pacific's is the one the lab's Prometheus loads), the rules, those mapped
(checks/alert_map.py), those diagnosed with the entity named (an OSD, pool, host, PG,
daemon), those whose cause has a runbook (the Fix button), and, with --replay, the alerts
the saved lab scenarios fire and what they select. Not a time: counts are exact.

    .venv/bin/python benchmarks/alert_coverage.py [--release pacific,reef] [--list] [--replay]

Measured (2026-11-27): Pacific 58 rules, 58 mapped, 49 diagnosed with the entity, 28 with
a Fix (11 of them only through runbooks other issue-29 work adds), 9 with no data here (7
CephFS, cephadm paused, Prometheus' own job); Reef 83 rules, 83 mapped, 51 diagnosed, 29
with a Fix, 32 with no data (also 14 NVMe-oF, 4 rbd-mirror, 5 Redfish hardware).
Replayed: 9 alert names fired by the saved scenarios, each selecting its cause.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks import alert_map as am  # noqa: E402
from checks.alert_rules import RULES, SOURCES  # noqa: E402


def replayed() -> list[str]:
    """Each alert the saved scenarios fire (tests/unit/test_alert_map.py builds them as
    Alertmanager sends them) and what it selects."""
    from tests.unit.test_alert_map import CEPH_CASES, fired, payload, replay

    seen: dict[str, set[str]] = {}
    for rel, name in CEPH_CASES:
        rp = replay(rel, name)
        incs = list(rp.outcome.incidents)
        for a in fired(rp):
            p = payload(a)
            sel = am.select_one(p.name, p.alerts[0].labels, incs)
            what = ", ".join(
                i.id + (f" [Fix {i.next_step.runbook} {i.next_step.target}]"
                        if i.next_step else "") for i in sel.incidents) or "nothing"
            seen.setdefault(p.name, set()).add(f"{name}: {sel.how}: {what}")
    out = []
    for n in sorted(seen):
        out.append(f"  {n}")
        out += [f"    {x}" for x in sorted(seen[n])[:3]]
    return [f"replayed: {len(seen)} alert names fired by the saved scenarios", *out]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default="pacific,reef")
    ap.add_argument("--list", action="store_true", help="each rule and its mapping")
    ap.add_argument("--replay", action="store_true", help="the saved scenarios' alerts")
    a = ap.parse_args(argv)
    for rel in a.release.split(","):
        if rel not in SOURCES:
            print(f"alert_coverage: unknown release {rel!r} (one of {', '.join(SOURCES)})",
                  file=sys.stderr)
            return 64
        c = am.coverage(rel)
        print(f"{rel}: {SOURCES[rel]}")
        print(f"  rules {c.total}, mapped {c.mapped}, diagnosed with entity {c.diagnosed}, "
              f"with fix {c.with_fix}, no data here {len(c.no_data)}, "
              f"unmapped {len(c.unmapped)}")
        pend = sum(1 for r in RULES if rel in r.releases and am.MAP.get(r.name)
                   and set(am.MAP[r.name].runbooks) <= set(am.PENDING_RUNBOOKS)
                   and am.MAP[r.name].runbooks)
        print(f"  of the fixes, {pend} only through pending runbooks "
              f"({', '.join(am.PENDING_RUNBOOKS)})")
        if c.unmapped:
            print(f"  UNMAPPED: {', '.join(c.unmapped)}")
        if a.list:
            for r in RULES:
                if rel not in r.releases:
                    continue
                m = am.MAP.get(r.name)
                if m is None:
                    print(f"    {r.name}: UNMAPPED")
                elif m.no_data:
                    print(f"    {r.name}: no data: {m.no_data}")
                else:
                    print(f"    {r.name}: ceph {','.join(m.ceph) or '-'}; codes "
                          f"{','.join(m.codes) or ('any' if m.any_incident else '-')}; "
                          f"entity {m.labels or 'from the incident'} -> {m.names}; "
                          f"fix {','.join(m.runbooks) or '-'}")
    if a.replay:
        print("\n".join(replayed()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
