"""Where a CI run's time went: per part (unit, pacific, reef), the slowest test files and
tests, from a CI log directory (``scripts/test`` prints it: /var/tmp/stordoc-ci.XXXXXX).

Each part's JUnit XML (``PART.xml``, every test's time, written by ``scripts/test``) is
read when there, else the ``--durations`` lines of ``PART.log`` (pytest's slowest N only:
the files' sums then cover only those tests, said in the header). Several directories
(older runs) add up: a file's seconds are then the mean per run it appears in.

Usage: .venv/bin/python benchmarks/ci_time.py LOG_DIR [LOG_DIR ...] [--top 15]
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

PARTS = ("unit", "pacific", "reef")
# "12.34s call     tests/lab/test_x.py::test_y[param]"
DURATION = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+?)::(\S+)\s*$", re.M)
TOTAL = re.compile(r"(\d+) passed.* in ([\d.]+)s")


def from_xml(path: Path) -> dict[str, float]:
    """Test id (file::name) -> seconds, from a JUnit XML file."""
    out: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        cls = case.get("classname", "")
        # classname "tests.unit.test_x" (or "tests.unit.test_x.TestClass")
        parts = cls.split(".")
        mod = [p for p in parts if not p[:1].isupper()]
        file = "/".join(mod) + ".py"
        out[f"{file}::{case.get('name', '')}"] = out.get(
            f"{file}::{case.get('name', '')}", 0.0) + float(case.get("time") or 0)
    return out


def from_log(text: str) -> dict[str, float]:
    """Test id -> seconds (setup + call + teardown) from ``--durations`` lines."""
    out: dict[str, float] = defaultdict(float)
    for secs, _, file, name in DURATION.findall(text):
        out[f"{file}::{name}"] += float(secs)
    return dict(out)


def read_part(d: Path, part: str) -> tuple[dict[str, float], str, float | None]:
    """(test seconds, where from, pytest's whole wall time or None)."""
    log = d / f"{part}.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    m = TOTAL.findall(text)
    wall = float(m[-1][1]) if m else None
    xml = d / f"{part}.xml"
    if xml.exists():
        try:
            return from_xml(xml), "junit xml (every test)", wall
        except ET.ParseError:
            pass
    return from_log(text), "--durations lines (slowest only)", wall


def fmt(s: float) -> str:
    return f"{s:7.1f} s"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args(argv)
    bad = [str(d) for d in a.dirs if not d.is_dir()]
    if bad:
        print(f"ci_time: not a directory: {', '.join(bad)}", file=sys.stderr)
        return 64
    for part in PARTS:
        tests: dict[str, list[float]] = defaultdict(list)
        walls: list[float] = []
        sources: set[str] = set()
        for d in a.dirs:
            times, src, wall = read_part(d, part)
            if not times and wall is None:
                continue
            sources.add(src)
            if wall is not None:
                walls.append(wall)
            for t, s in times.items():
                tests[t].append(s)
        if not tests:
            continue
        mean = {t: sum(v) / len(v) for t, v in tests.items()}
        files: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        for t, s in mean.items():
            files[t.split("::", 1)[0]] += s
            counts[t.split("::", 1)[0]] += 1
        covered = sum(mean.values())
        wall = f"{sum(walls) / len(walls):.0f} s" if walls else "?"
        print(f"== {part}: pytest {wall} over {len(walls)} run(s); {len(mean)} tests timed "
              f"({covered:.0f} s) from {', '.join(sorted(sources))}")
        print("  slowest files:")
        for f, s in sorted(files.items(), key=lambda kv: -kv[1])[:a.top]:
            print(f"    {fmt(s)}  {counts[f]:4d} tests  {f}")
        print("  slowest tests:")
        for t, s in sorted(mean.items(), key=lambda kv: -kv[1])[:a.top]:
            print(f"    {fmt(s)}  {t}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
