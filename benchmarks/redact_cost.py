"""What scrubbing secrets costs a check run (issue 37.12): every saved lab snapshot
(tests/fixtures/snapshots/<release>/<case>) is diagnosed once, then each one's findings
are recorded into a real SQLite journal, and the time of ``storage.audit.redact_obj`` +
``redact`` over the same findings (what ``Journal.record_check_run`` now adds) is printed
beside the time of the whole record. Also the scrub's rate over a large text (a runbook
step's 20000-character output).

Usage: .venv/bin/python benchmarks/redact_cost.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()

    from core.service.snapshots import load
    from storage.audit import redact, redact_obj
    from storage.journal import Journal

    runs = []
    for case in sorted((ROOT / "tests" / "fixtures" / "snapshots").glob("*/*")):
        if (case / "snapshot.json").exists():
            rp = load(str(case))
            runs.append([f.to_dict() for f in rp.outcome.report.findings])
    n_findings = sum(len(r) for r in runs)
    ev_bytes = sum(len(json.dumps(f.get("evidence") or {}, default=str))
                   for r in runs for f in r)

    scrub: list[float] = []
    record: list[float] = []
    with tempfile.TemporaryDirectory() as d:
        j = Journal(Path(d) / "j.db")
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for r in runs:
                for f in r:
                    redact(f["message"])
                    redact_obj(json.loads(json.dumps(f.get("evidence") or {}, default=str)))
            t1 = time.perf_counter()
            for r in runs:
                j.record_check_run("lab", time.time(), 1.0, 1, "warn", r)
            t2 = time.perf_counter()
            scrub.append((t1 - t0) / len(runs))
            record.append((t2 - t1) / len(runs))
        j.close()

    text = ("2024-01-01 osd.3 heartbeat_check: no reply from 127.0.0.2:6802 osd.7 ever on "
            "either front or back, pool rbd pg 3.1f active+clean keyring path\n") * 150
    text = text[:20000]
    t0 = time.perf_counter()
    for _ in range(args.rounds):
        redact(text)
    per_text = (time.perf_counter() - t0) / args.rounds

    print(f"{len(runs)} saved check runs, {n_findings} findings, {ev_bytes} bytes of "
          f"evidence; {args.rounds} rounds")
    print(f"scrub per check run:  median {statistics.median(scrub) * 1e3:.2f} ms")
    print(f"record per check run (scrub included): median "
          f"{statistics.median(record) * 1e3:.2f} ms")
    print(f"scrub of a 20000-character step output: {per_text * 1e3:.2f} ms "
          f"({len(text) / per_text / 1e6:.1f} MB/s)")


if __name__ == "__main__":
    main()
