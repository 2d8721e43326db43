"""Before/after speed figures of two revisions, measured interleaved in the same run.

Creates two temporary detached worktrees (``git worktree add --detach``) under the system's
temporary directory, one per revision, and runs the benchmark scripts that need no lab in
each of them, interleaved: for every round and every script, BEFORE then AFTER. Each run
uses this interpreter (or --python) with the worktree as the working directory and first on
PYTHONPATH, so the worktree's packages win over an editable install (a script run as a file
only gets its own folder on sys.path; incidents_scale.py adds nothing). Every printed figure
is parsed; the table shows the before median, the after median and the ratio after/before.
On a shared machine only that ratio means something, never absolute numbers from different
moments. A line that looks like a figure but does not parse is printed as it is. The
worktrees are removed at the end, also on Ctrl-C or SIGTERM.

    .venv/bin/python benchmarks/before_after.py [--before 245cd70] [--after HEAD]
        [--rounds 3] [--scripts incidents_scale,recon_fleet]
        [--args 'recon_fleet=--rounds 1'] [--values]

Lower is better for every figure (for recon_fleet's "ratio all/one" too: more parallel)
except the keystroke benchmark's key count: how many keys fitted into the refresh.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NUM = r"([-+]?\d+(?:\.\d+)?)"

# Figure parsers: a pattern and its figures, each a name (a format string over the match's
# groups: "{0}" is the first) and the index of the group that holds the value.
Parser = tuple[re.Pattern[str], list[tuple[str, int]]]


def _p(pattern: str, *figures: tuple[str, int]) -> Parser:
    return re.compile(pattern), list(figures)


PARSERS: dict[str, list[Parser]] = {
    "incidents_scale": [
        _p(r"^\s*(\d+) OSDs down:.*\bin " + NUM + r" ms\s*$",
           ("correlate, {0} OSDs down (ms)", 1)),
    ],
    "check_engine_scale": [
        _p(r"^Swift ring: .*\(built in " + NUM + r" s CPU\)", ("Swift ring build (CPU s)", 0)),
        _p(r"^\s*(\d+)\s+\d+\s+\d+\s+" + NUM + r"\s+" + NUM + r"\s+" + NUM + r"\s+\d+\s+"
           + NUM + r"\s*$",
           ("{0} OSDs parse (CPU s)", 1), ("{0} OSDs check (CPU s)", 2),
           ("{0} OSDs total (CPU s)", 3), ("{0} OSDs peak (MiB)", 4)),
        _p(r"^max RSS of this process: " + NUM + r" MiB", ("max RSS (MiB)", 0)),
        _p(r"^(\d+)x the OSDs -> " + NUM + r"x the CPU time", ("{0}x the OSDs -> CPU (x)", 1)),
    ],
    "recon_fleet": [
        _p(r"^recon of 1 server: " + NUM + r" ms", ("recon, 1 server (ms)", 0)),
        _p(r"^recon of (\d+) servers / (\d+) devices: " + NUM + r" ms",
           ("recon, {0} servers / {1} devices (ms)", 2)),
        _p(r"^ratio all/one: " + NUM + r"x", ("ratio all/one (x)", 0)),
    ],
    "tui_osd_screen": [
        _p(r"^OSD screen, (\d+) OSDs .*median " + NUM + r" ms, min " + NUM + r" ms, max "
           + NUM + r" ms",
           ("OSD screen {0} OSDs, median (ms)", 1), ("OSD screen {0} OSDs, min (ms)", 2),
           ("OSD screen {0} OSDs, max (ms)", 3)),
    ],
    "tui_keystroke_latency": [
        _p(r"^keystroke -> frame, (\d+) OSDs, (\d+) keys .*median " + NUM + r" ms, p95 "
           + NUM + r" ms, max " + NUM + r" ms",
           ("key -> frame {0} OSDs, median (ms)", 2), ("key -> frame {0} OSDs, p95 (ms)", 3),
           ("key -> frame {0} OSDs, max (ms)", 4), ("keys pressed during the refresh", 1)),
    ],
}

# Lines that carry no figure (headers, verdicts, the per-run list): not reported.
IGNORED = [
    re.compile(r"^\s*OSDs\s+hosts\s+pools\b"),
    re.compile(r"^goal \("),
    re.compile(r"^runs \(ms\):"),
]

# The benchmark scripts that run without the lab. The others (alert_latency, bench_*, bot_*,
# check_latency, lab_*, ssh_facts_parallel, time_to_repair) need a lab and are not run here.
SCRIPTS = list(PARSERS)


@dataclass
class Side:
    label: str
    rev: str
    sha: str = ""
    path: Path | None = None
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    raw: dict[str, list[str]] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def parse(script: str, out: str, side: Side) -> None:
    figures = side.values.setdefault(script, {})
    raw = side.raw.setdefault(script, [])
    for line in out.splitlines():
        if not line.strip() or any(p.search(line) for p in IGNORED):
            continue
        for pattern, names in PARSERS.get(script, []):
            m = pattern.search(line)
            if m is None:
                continue
            groups = m.groups()
            try:
                for name, idx in names:
                    figures.setdefault(name.format(*groups), []).append(float(groups[idx]))
            except (IndexError, ValueError):
                raw.append(line.rstrip())
            break
        else:
            raw.append(line.rstrip())


def check_imports(side: Side, python: str, env: dict[str, str]) -> None:
    """The worktree's packages must be the ones a script imports (not an editable install)."""
    assert side.path is not None
    code = ("import sys; sys.path[0] = sys.argv[1]\n"
            "import checks, storage, stordoc, tui\n"
            "print('\\n'.join(m.__file__ for m in (checks, storage, stordoc, tui)))")
    out = subprocess.run([python, "-c", code, str(side.path / "benchmarks")], cwd=side.path,
                         env=env, check=True, capture_output=True, text=True).stdout.split()
    wrong = [f for f in out if not Path(f).resolve().is_relative_to(side.path.resolve())]
    if wrong:
        raise SystemExit(f"{side.label}: imports come from outside its worktree: {wrong}")


def run_one(side: Side, script: str, args: list[str], python: str, env: dict[str, str],
            timeout: float) -> None:
    assert side.path is not None
    path = side.path / "benchmarks" / f"{script}.py"
    if not path.exists():
        side.failures.setdefault(script, []).append(f"{path.name} missing at {side.sha[:10]}")
        return
    t0 = time.monotonic()
    # Its own process group: on a timeout or Ctrl-C the script and its children (recon_fleet
    # serves from a child process) are killed together, by the group of the process we started.
    p = subprocess.Popen([python, str(path.relative_to(side.path)), *args], cwd=side.path,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except BaseException as e:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
        if not isinstance(e, subprocess.TimeoutExpired):
            raise
        side.failures.setdefault(script, []).append(f"timed out after {timeout:.0f} s")
        return
    dt = time.monotonic() - t0
    parse(script, out, side)
    note = f"{side.label:<6} {script} ({dt:.1f} s wall"
    if p.returncode != 0:
        err = (err.strip().splitlines() or ["(no stderr)"])[-1]
        side.failures.setdefault(script, []).append(f"exit {p.returncode}: {err}")
        note += f", exit {p.returncode}"
    print(note + ")", file=sys.stderr, flush=True)


def fmt(x: float) -> str:
    return f"{x:.4g}"


def report(scripts: list[str], before: Side, after: Side, show_values: bool) -> None:
    for script in scripts:
        print(f"\n== {script}")
        b, a = before.values.get(script, {}), after.values.get(script, {})
        names = list(dict.fromkeys([*b, *a]))
        if names:
            w = max(len("figure"), *(len(n) for n in names))
            print(f"{'figure':<{w}}  {'before med':>10}  {'after med':>10}  {'after/before':>12}"
                  f"  {'n':>5}")
            for name in names:
                bv, av = b.get(name, []), a.get(name, [])
                bm = statistics.median(bv) if bv else None
                am = statistics.median(av) if av else None
                ratio = (f"{am / bm:.2f}" if bm and am is not None else "-")
                print(f"{name:<{w}}  {fmt(bm) if bm is not None else '-':>10}  "
                      f"{fmt(am) if am is not None else '-':>10}  {ratio:>12}  "
                      f"{len(bv)}/{len(av):<3}")
                if show_values:
                    print(f"{'':<{w}}    before: {', '.join(fmt(v) for v in bv)}")
                    print(f"{'':<{w}}    after:  {', '.join(fmt(v) for v in av)}")
        for side in (before, after):
            for line in dict.fromkeys(side.raw.get(script, [])):
                print(f"  {side.label} (not parsed): {line}")
            for msg in side.failures.get(script, []):
                print(f"  {side.label} FAILED: {msg}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="245cd70", help="revision before (default 245cd70)")
    ap.add_argument("--after", default="HEAD", help="revision after (default HEAD)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="before/after pairs per script (default 3)")
    ap.add_argument("--scripts", default=",".join(SCRIPTS),
                    help=f"comma-separated, among {','.join(SCRIPTS)} (default all)")
    ap.add_argument("--args", action="append", default=[], metavar="SCRIPT=ARGS",
                    help="options for one script, the same before and after "
                         "(e.g. 'tui_osd_screen=--runs 3'); repeatable")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for the scripts (default: this one)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--values", action="store_true", help="also print every value")
    a = ap.parse_args()

    scripts = [s.strip().removesuffix(".py") for s in a.scripts.split(",") if s.strip()]
    unknown = [s for s in scripts if s not in SCRIPTS]
    if unknown or a.rounds < 1:
        ap.error(f"unknown or lab-only scripts: {unknown}" if unknown else "--rounds >= 1")
    extra: dict[str, list[str]] = {}
    for item in a.args:
        name, sep, rest = item.partition("=")
        if not sep or name.removesuffix(".py") not in SCRIPTS:
            ap.error(f"--args wants SCRIPT=ARGS with SCRIPT among {SCRIPTS}: {item!r}")
        extra[name.removesuffix(".py")] = shlex.split(rest)

    before, after = Side("before", a.before), Side("after", a.after)
    for side in (before, after):
        try:
            side.sha = git("rev-parse", "--verify", f"{side.rev}^{{commit}}")
        except subprocess.CalledProcessError:
            ap.error(f"not a revision: {side.rev}")

    # SIGTERM ends the run like Ctrl-C, so the worktrees still go away.
    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    tmp = Path(tempfile.mkdtemp(prefix="stordoc-before-after-"))
    made: list[Path] = []
    try:
        for side in (before, after):
            side.path = tmp / side.label
            made.append(side.path)
            git("worktree", "add", "--detach", str(side.path), side.sha)
        envs: dict[str, dict[str, str]] = {}
        for side in (before, after):
            assert side.path is not None
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(side.path), *filter(None, [os.environ.get("PYTHONPATH")])])
            check_imports(side, a.python, env)
            envs[side.label] = env
            print(f"{side.label}: {side.rev} = {side.sha} in {side.path}", file=sys.stderr)
        for k in range(a.rounds):
            print(f"-- round {k + 1}/{a.rounds}", file=sys.stderr, flush=True)
            for s in scripts:
                for side in (before, after):
                    run_one(side, s, extra.get(s, []), a.python, envs[side.label], a.timeout)
        print(f"before: {before.rev} ({before.sha[:10]})   after: {after.rev} "
              f"({after.sha[:10]})   rounds: {a.rounds}, interleaved before/after")
        for s, args in extra.items():
            print(f"options for {s}: {shlex.join(args)}")
        report(scripts, before, after, a.values)
        return 0
    except KeyboardInterrupt:
        print("\ninterrupted: removing the worktrees", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not skip this
        for path in made:
            r = subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO,
                               capture_output=True, text=True)
            if r.returncode != 0 and path.exists():
                print(f"could not remove worktree {path}: {r.stderr.strip()}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
