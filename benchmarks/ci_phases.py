"""The CI run's time per phase, from what ``scripts/test`` wrote (``$STORDOC_CI_TIMES``,
default /var/tmp/stordoc-ci-times.json) and the parts' logs: setup, each part's wall time
(unit = ruff + mypy + unit tests; the Pacific and Reef lab sessions run beside it), the
whole run, each lab's start-up seconds and pytest's own total per part.

Usage: .venv/bin/python benchmarks/ci_phases.py [TIMES_JSON]
"""

from __future__ import annotations

import json
import os
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
    busy = cpu_busy(logs)
    if busy is not None:
        print(f"CPU busy over the three parts: {busy:.0%} of {os.cpu_count()} cores (a run "
              "near 100% is bound by the CPU; well below, by the labs' waits)")
    for name in ("pacific", "reef"):
        waits = logs / f"{name}.settle"
        if waits.exists():
            rows = [ln.split(" ", 1) for ln in waits.read_text().splitlines() if " " in ln]
            total = sum(float(r[0]) for r in rows)
            top = max(rows, key=lambda r: float(r[0]), default=None)
            print(f"{name}: waited {fmt(total)} for the lab to settle before {len(rows)} "
                  f"tests" + (f" (longest {float(top[0]):.0f} s, before {top[1]})"
                              if top else ""))
    return 0


def cpu_busy(logs: Path) -> float | None:
    """The busy share of all cores between the parts' start and end (/proc/stat's cpu
    line: user nice system idle iowait irq softirq steal ...)."""
    try:
        a = [int(x) for x in (logs / "cpu.start").read_text().split()[1:]]
        b = [int(x) for x in (logs / "cpu.end").read_text().split()[1:]]
    except (OSError, ValueError):
        return None
    d = [y - x for x, y in zip(a, b)]
    total = sum(d[:8])
    idle = d[3] + d[4]
    return (total - idle) / total if total > 0 else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
