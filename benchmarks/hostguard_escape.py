"""What stordoc's restricted key can run (issue 40's goal: 0 commands other than the
allowed ones). From every saved fault of each release: every command stordoc really sends
to a host (each host's facts script, the identity probe, each printed fix's host steps
and the Swift ring push's copies, planned from the snapshot); each is put to that host's allowlist (storage/hostallow.py),
and so is each of its hostile variants: every argument in turn replaced by a shell, a
file outside the configured paths, a command substitution, a path escape, a look-alike,
an argument added or dropped. Printed: product commands allowed / sent, hostile variants
allowed (the goal is 0; a variant that equals another product command is not hostile and
is not counted), and the rules per host.

    python benchmarks/hostguard_escape.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runbooks.api import RunContext, plan_from_snapshot  # noqa: E402
from storage.hostallow import rules_for  # noqa: E402
from storage.hostfacts.collect import plan_for  # noqa: E402
from storage.hostfacts.identity import identity_argv  # noqa: E402
from storage.hostfacts.scripts import facts_argv  # noqa: E402
from storage.hostguard import match  # noqa: E402
from storage.journal import Journal  # noqa: E402
from tests.support.fixture_snapshots import CASES, replayed  # noqa: E402
from tests.support.hostsent import sent as sent_by  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "snapshots"
HOSTILE = ("sh", "/bin/sh", "id", "$(id)", "`id`", "; id", "x && id", "/etc/shadow",
           "/root/.ssh/id_ed25519", "../../../etc/shadow", "/dev/../etc/shadow",
           "/var/lib/ceph/osd/ceph-1/../../../../etc", "-o", "--", "*", "\n id",
           "ｓh", "/dev/lооp1", "-oProxyCommand=id", "1 2")


def variants(argv: tuple[str, ...]) -> list[tuple[str, ...]]:
    out = [argv + ("id",), argv + ("/etc/shadow",), ("sh", "-c", "id"),
           ("bash",) + argv[1:]]
    for i in range(len(argv)):
        for h in HOSTILE:
            if h != argv[i]:
                out.append(argv[:i] + (h,) + argv[i + 1:])
    return out


def main() -> int:
    sent = allowed = hostile = hostile_ok = 0
    rules_n: dict[str, int] = {}
    escapes: list[tuple[str, str, tuple[str, ...]]] = []
    for rel in sorted(d.name for d in FIXTURES.iterdir() if d.is_dir()):
        for case in CASES:
            if not (FIXTURES / rel / case.name / "snapshot.json").exists():
                continue
            rp = replayed(rel, case.name)
            snap, target = rp.outcome.snapshot, rp.target
            product: dict[str, set[tuple[str, ...]]] = {}
            for h in target.hosts:
                p = plan_for(target, h, snap.ceph, snap.swift)
                product.setdefault(h.name, set()).add(tuple(facts_argv(
                    h.fstab_path, p.osds, p.swift, h.swift_ring_dirs, p.daemons)))
                devs = sorted({i.device for i in h_identities(snap, h.name)}) or ["/dev/loop0"]
                product[h.name].add(tuple(identity_argv(devs)))
            if case.next_step and case.next_step.startswith("stordoc fix "):
                _, _, rb, tg = case.next_step.split()[:4]
                ctx = RunContext("lab", target, Journal(":memory:"), rp.thresholds,
                                 user="bench")
                plan = plan_from_snapshot(ctx, snap, rb, tg)
                for s in plan.steps:
                    ht = target.host(s.where)
                    for argv in sent_by(s):  # host steps, and a ring push's commands
                        if ht is not None:
                            product.setdefault(ht.name, set()).add(argv)
            for name, cmds in sorted(product.items()):
                host = target.host(name)
                assert host is not None
                rules = rules_for(target, host)
                rules_n[f"{rel}/{case.name}/{name}"] = len(rules)
                for argv in sorted(cmds):
                    sent += 1
                    allowed += match(argv, rules) is not None
                    for v in variants(argv):
                        if v in cmds:
                            continue
                        hostile += 1
                        if match(v, rules) is not None:
                            hostile_ok += 1
                            escapes.append((rel, name, v))
    print(f"product commands allowed: {allowed}/{sent} (every command stordoc sent to a "
          "host on the saved faults)")
    print(f"hostile variants allowed: {hostile_ok}/{hostile} (goal 0)")
    print(f"rules per host: {min(rules_n.values())}..{max(rules_n.values())} "
          f"over {len(rules_n)} release/fault/host triples")
    for rel, name, v in escapes[:10]:
        print(f"  allowed on {rel}/{name}: {[a[:60] for a in v]}")
    return 0 if allowed == sent and hostile_ok == 0 else 1


def h_identities(snap: object, host: str) -> list[object]:
    hosts = getattr(snap, "hosts", {}) or {}
    facts = hosts.get(host)
    return list(getattr(facts, "identities", ()) or ()) if facts is not None else []


if __name__ == "__main__":
    sys.exit(main())
