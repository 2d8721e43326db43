"""The CI run's time per phase, from what ``scripts/test`` wrote (``$STORDOC_CI_TIMES``,
default /var/tmp/stordoc-ci-times.json) and the parts' logs: setup, each part's wall time
(unit = ruff + mypy + unit tests; the Pacific and Reef lab sessions run beside it), the
whole run, each lab's start-up seconds and pytest's own total per part.

Usage: .venv/bin/python benchmarks/ci_phases.py [TIMES_JSON]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def fmt(s: float) -> str:
    return f"{int(s // 60)} min {s % 60:04.1f} s"


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "/var/tmp/stordoc-ci-times.json")
    try:
        t = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        print(f"ci_phases: cannot read {path}: {e}", file=sys.stderr)
        return 64
    t0, t_end = t["total"]
    print(f"setup: {fmt(t['setup'][1] - t['setup'][0])}")
    logs = Path(t.get("logs", ""))
    for name in ("unit", "pacific", "reef"):
        if name not in t:
            continue
        start, end, rc = t[name]
        line = f"{name}: {fmt(end - start)} (exit {rc})"
        log = logs / f"{name}.log"
        if log.exists():
            text = log.read_text(errors="replace")
            m = re.findall(r"(\d+) passed.* in ([\d.]+)s", text)
            if m:
                line += f"; pytest: {m[-1][0]} passed in {fmt(float(m[-1][1]))}"
            up = re.findall(r"lab (\w+) up in ([\d.]+) s", text)
            if up:
                line += "; " + ", ".join(f"lab {r} up in {s} s" for r, s in up)
        print(line)
    print(f"total: {fmt(t_end - t0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
