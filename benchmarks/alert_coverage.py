"""How many of Ceph's own Prometheus alert rules reach a useful Slack post, counted from the
posts alone (issue 38 item 8): per release, on every saved lab scenario that holds the
metrics the lab's manager and node_exporters served (tests/fixtures/snapshots/<release>/
<case>/metrics/), ``promtool test rules`` evaluates the release's rule file
(tests/fixtures/alert_rules/: Debian's ceph-prometheus-alerts; Reef's with Squid's renamed
rules) and each firing group is POSTed to the real bot's webhook, its check answered by
the scenario's snapshot; the chat.postMessage Slack receives is read
(tests/support/alert_posts.py). Printed: the rules that fire in some scenario, those whose
post names the entity (an OSD, pool, PG, host, daemon, disk), those whose post carries a
Fix button. What checks/alert_map.py declares is printed apart, labelled "declared".
Not a time: counts are exact for the saved scenarios.

    .venv/bin/python benchmarks/alert_coverage.py [--release pacific,reef] [--list]

Measured (2026-11-28, after issue 38's fifth round, 28 saved Ceph scenarios with metrics
per release): Pacific, of 58 rules, 27 fire in some scenario, 24 posts name the entity,
26 carry a Fix button (9 at the start of issue 38; 14 after ratio-restore, config-restore
and daemon-start; then config-warn-lines and mon-disk-low's runtime line gave
CephPGNotScrubbed, CephPGNotDeepScrubbed, CephPGsHighPerOSD, CephMonDiskspaceLow
config-restore; cluster-full(-out), cluster-backfillfull, pool-quota(-near) gave
CephOSDFull, CephOSDBackfillFull, CephPoolFull, CephPoolBackfillFull, CephPoolNearFull,
CephPGRecoveryAtRisk ratio-restore/quota-restore and CephPGImbalance osd-in; mgr-stopped's
daemon facts gave CephMgrPrometheusModuleInactive daemon-start). Goal Fix >= 25: met; entity
>= 45: not met, 31 rules fire in no scenario: CephFS (7), cephadm (3), hardware and device
prediction, host network and root filesystem rules have no data in the lab; CephOSDFlapping
and the growth rules need a time series (a snapshot is one instant); one monitor (no
MON_DOWN with quorum, no clock skew); CephPGBackfillAtRisk needs PGs held by
backfill_toofull, which the lab's PGs (their logs never trimmed) do not make. A rule that
cannot fire cannot post: 45 needs the lab to serve CephFS and more monitors (issue 41).
Reef, of 83 rules: 26 fire, 23 posts name the entity, 25 carry a Fix.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks import alert_map as am  # noqa: E402
from checks.alert_rules import RULES, SOURCES  # noqa: E402

GOAL_FIX, GOAL_ENTITY = 25, 45  # of Pacific's 58 rules (issue 38)


@dataclass
class RulePosts:
    """What one rule's posts did over the scenarios."""

    fired: set[str] = field(default_factory=set)  # scenarios it fired in
    entity: set[str] = field(default_factory=set)  # those whose post named the entity
    fix: set[str] = field(default_factory=set)  # "runbook target" of its Fix buttons


def measured(release: str, say: bool = False) -> tuple[int, dict[str, RulePosts]]:
    """(scenarios with metrics, rule -> what its posts did): per rule, the scenarios it
    fired in, and of its posts those naming the entity and the Fix buttons."""
    from tests.support.alert_posts import posts_of, scenario_dirs

    dirs = scenario_dirs(release)
    rules: dict[str, RulePosts] = {}
    for d in dirs:
        with tempfile.TemporaryDirectory(prefix="alert-coverage-") as tmp:
            got = posts_of(release, d, Path(tmp), dirs)
        if got is None:
            continue
        _, posts = got
        for p in posts:
            r = rules.setdefault(p.rule, RulePosts())
            r.fired.add(d.name)
            if p.names_entity:
                r.entity.add(d.name)
            if p.fix:
                r.fix.add(f"{p.fix[0]} {p.fix[1]}")
        if say:
            print(f"  {d.name}: {len({p.rule for p in posts})} rules fire, "
                  f"{len(posts)} posts", file=sys.stderr, flush=True)
    return len(dirs), rules


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default="pacific,reef")
    ap.add_argument("--list", action="store_true", help="each firing rule and its posts")
    ap.add_argument("--progress", action="store_true", help="each scenario on stderr")
    a = ap.parse_args(argv)
    for rel in a.release.split(","):
        if rel not in SOURCES:
            print(f"alert_coverage: unknown release {rel!r} (one of {', '.join(SOURCES)})",
                  file=sys.stderr)
            return 64
    for rel in a.release.split(","):
        total = sum(1 for r in RULES if rel in r.releases)
        n, rules = measured(rel, a.progress)
        print(f"{rel}: {SOURCES[rel]}")
        if n == 0:
            print("  measured: no saved scenario holds metrics (tests.support."
                  "fixture_snapshots --metrics-only on a lab up --with-alerts)")
        else:
            fired = len(rules)
            entity = sum(1 for r in rules.values() if r.entity)
            fix = sum(1 for r in rules.values() if r.fix)
            print(f"  measured on {n} scenarios' metrics (promtool, the webhook's real "
                  f"posts), of {total} rules:")
            print(f"    rules that fire in some scenario   {fired}")
            print(f"    rules whose post names the entity  {entity}")
            print(f"    rules whose post has a Fix button  {fix}")
            if rel == "pacific":
                print(f"    goal (issue 38): Fix >= {GOAL_FIX}, entity >= {GOAL_ENTITY}: "
                      f"{'met' if fix >= GOAL_FIX and entity >= GOAL_ENTITY else 'not met'}")
            never = [r.name for r in RULES if rel in r.releases and r.name not in rules]
            print(f"    fire in no saved scenario: {len(never)}")
            if a.list:
                for name in sorted(rules):
                    r = rules[name]
                    print(f"    {name}: fired in {len(r.fired)} "
                          f"({', '.join(sorted(r.fired))[:120]}); entity named in "
                          f"{len(r.entity)}; Fix {', '.join(sorted(r.fix)) or '-'}")
                print(f"    never fired: {', '.join(never)}")
        c = am.coverage(rel)
        print(f"  declared (checks/alert_map.py, not measured): rules {c.total}, mapped "
              f"{c.mapped}, diagnosed with entity {c.diagnosed}, with a runbook listed "
              f"{c.with_fix}, no data here {len(c.no_data)}, unmapped {len(c.unmapped)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
