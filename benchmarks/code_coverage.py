"""How stordoc answers each of Ceph's health codes (issue 38 items 3 and 8), counted from
replays, never from a table: for each code of Ceph's list (Reef, as its documentation
lists them: tests/support/ceph_code_cases.py, with the source URL) and of the codes added
since, Ceph's health-detail entry is injected into a saved lab snapshot (or the lab
scenario that made it for real is taken as saved), the real check is replayed, and what
it printed is read: the incidents that carry the code, the incident's root, the words
that name the entity, the next step (a runbook that plans, or an exact command).

    .venv/bin/python benchmarks/code_coverage.py [--list]

Prints: codes, bare (Ceph's text alone), shown twice, misfiled (root not its cause),
with the entity named, with a next step. Exact counts, not a time.

Measured (2026-11-28, fifth round): Reef 74 codes; bare 0, shown twice 0, not shown 0,
misfiled 0, with entity 74, with next step 74 (counted as printed: the incident's step
as every front end says it, a runbook, an exact command or nothing to do, never a
sentence; 60 by the older count of any command in the text); since Reef 5 codes; bare 0,
with entity 5, with next step 5.
Before issue 38's explainers (checks/ceph_codes_rest.py): Reef bare 27, with entity 51,
with next step 25; since Reef bare 5, with entity 0, with next step 0.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.ceph_code_cases import (  # noqa: E402
    POST_REEF_CODES,
    REEF_CODES,
    REEF_SOURCE,
    cases,
    measure,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="one line per code")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = [measure(c, Path(tmp)) for c in cases()]
    for label, codes in (("Reef", REEF_CODES), ("since Reef", POST_REEF_CODES)):
        rs = [r for r in results if r.code in codes]
        print(f"{label}: {len(rs)} codes; bare {sum(r.bare for r in rs)}, "
              f"shown twice {sum(r.carriers > 1 for r in rs)}, "
              f"not shown {sum(r.carriers == 0 for r in rs)}, "
              f"misfiled {sum(r.carriers > 0 and not r.root_ok for r in rs)}, "
              f"with entity {sum(r.named for r in rs)}, "
              f"with next step {sum(r.next_step is not None for r in rs)}")
    print(f"(list: {REEF_SOURCE})")
    if args.list:
        for r in results:
            flags = ("BARE " if r.bare else "") + ("TWICE " if r.carriers > 1 else "") + \
                ("" if r.root_ok else f"MISFILED({r.root}) ") + \
                ("" if r.named else f"UNNAMED{list(r.missing)} ") + \
                ("" if r.next_step else "NO-STEP")
            print(f"{r.code:40} {flags or 'ok'}  next: {r.next_step or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
