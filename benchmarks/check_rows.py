"""How much of `stordoc check` fits a laptop terminal (issue 27): the rows it prints at 80
columns for every saved lab scenario of both releases, the default output against `-v`
(today's details, about what the default printed before issue 27), and where the cause
and the next step sit (the row of the first incident's cause; whether the last row is
the next step). Not a time: rows are exact, so one run says it.

    .venv/bin/python benchmarks/check_rows.py [--width 80] [--release pacific,reef]

Measured (2026-11-26, both releases, 38 scenarios, 80 columns, rows counting the 2-row
"from snapshot" line): default output 4..19 rows (median 11), 38 of 38 within 24, the
last row the next step (`next: stordoc fix ...`, or `next: by hand, see incident 1`);
`-v` 5..49 rows (median 27.5); the seed fault (pacific osd-unmounted-in) 11 rows against
41 before issue 27.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.terminal import Terminal  # noqa: E402
from stordoc.cli import main  # noqa: E402


def rows(release: str, name: str, width: int, *flags: str) -> list[str]:
    term = Terminal.capture(width=width)
    main(["check", "--from", f"tests/fixtures/snapshots/{release}/{name}", *flags], term)
    assert isinstance(term.stdout, io.StringIO)
    return term.stdout.getvalue().splitlines()


def main_() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=80)
    ap.add_argument("--release", default="pacific,reef")
    a = ap.parse_args()
    os.chdir(ROOT)
    short: list[int] = []
    long: list[int] = []
    print(f"{'scenario':40} {'rows':>5} {'-v rows':>8}  last row")
    for rel in a.release.split(","):
        for d in sorted((ROOT / "tests" / "fixtures" / "snapshots" / rel).iterdir()):
            s = rows(rel, d.name, a.width)
            v = rows(rel, d.name, a.width, "-v")
            short.append(len(s))
            long.append(len(v))
            print(f"{rel + '/' + d.name:40} {len(s):5d} {len(v):8d}  {s[-1][:40]}")
    print(f"default: {min(short)}..{max(short)} rows (median {statistics.median(short):g}), "
          f"{sum(1 for n in short if n <= 24)} of {len(short)} within 24; "
          f"-v: {min(long)}..{max(long)} rows (median {statistics.median(long):g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
