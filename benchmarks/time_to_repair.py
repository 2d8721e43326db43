"""Time to repair on the lab: the seed fault from detection to a clean check.

Two faults (``--fault``): ``osd-unmounted`` (the XFS data partition of a ceph-disk style OSD
unmounted: OSD_DATA_UNMOUNTED, runbook osd-remount) and ``osd-not-activated`` (the tmpfs
of a ceph-volume raw OSD gone after a "reboot": OSD_NOT_ACTIVATED, runbook osd-activate);
``both`` runs them cycle by cycle on the default ``mixed`` layout and prints the medians of
each.

Each cycle: ``Lab.break_(FAULT, out=True)`` (not timed), then
  detect: ``stordoc check`` (collect with host facts + all checks) until the fault's code
          names the OSD,
  plan:   ``runbooks.api.plan`` for the runbook the finding names (fresh snapshot),
  run:    ``execute`` from the first step to the last (noout, mount, start, wait up, in,
          unset noout),
  verify: the runbook's own verification (re-running the triggering checks),
  until clean: full ``stordoc check`` runs until one is clean: exit 0 and no
          PGS_SETTLING (the PGs have reported on the current osdmap; a version without
          that code is taken at its word).
Between cycles the script waits until the lab is settled and HEALTH_OK (not timed).

With ``--cli`` the same cycle runs through the real command line (``stordoc check``,
``stordoc fix --finding CODE --entity osd.N --yes`` with its follow-up, ``stordoc check
--json``) and reports wall times per command; the fix's own output is timestamped line by
line as it arrives, which splits it into: ``fix: check+plan`` (the fresh check and the
plan, until the first step starts), each step, ``fix: verify``, ``fix: follow`` (from the
outcome line until the follow-up says clean and the command exits).

``--before-root DIR`` (with ``--cli``) measures another checkout in the same session
(e.g. ``/work/main``): each cycle runs the fault once with DIR's code and once with this
one's, the order alternating cycle by cycle, and the summary gives both medians and the
ratio after/before. Each side gets its own copy of the lab's config and journal (keys the
other side does not know are left out of its copy).

Measured (2026-11-26, Pacific lab, mixed layout, 2 cores shared with other labs at load
3-5; --cycles 3 --cli --before-root at the main branch, medians, before -> after):
  osd-unmounted:     total 33.1 -> 30.5 s (0.92); the fix 27.6 -> 21.5 s (0.78), of which
                     its follow-up 8.2 -> 3.6 s (0.44)
  osd-not-activated: total 36.3 -> 36.1 s (0.99); the fix 29.7 -> 25.8 s (0.87), follow-up
                     6.2 -> 3.5 s (0.56)
  over 12 cycles each (load 3-13): `osd in` acknowledged -> the follow-up says clean
  10.7 -> 6.9 s (XFS) and 10.1 -> 7.0 s (raw): the PGs' own report, not a 10 s timer.
Quiet machine (2026-11-26, load 0.5-1.9, Pacific lab, mixed layout, --cycles 3 --cli,
after planning on the check's snapshot and a 0.25 s wait-up poll; medians):
  osd-unmounted:     total 14.74 s (14.55-16.52; goal <= 20 s: met), of which detect
                     1.52, the fix 11.84 (check+plan 2.04, start ceph-osd 2.86, up 1.01,
                     osd in 0.98, unset noout 1.01, verify 0.54, follow-up 3.22), final
                     check 1.44
  osd-not-activated: total 16.69 s (14.15-17.08; goal met), the fix 13.65 s
  (before issue 24, quiet: 23.2 and 23.1 s). "up" stays ~1.0 s with the faster poll: the
  monitor marks a booted OSD up in its next proposal (paxos_propose_interval, 1 s), as it
  commits `osd in` and `osd unset noout`.
The rest (loaded figures above) goes to: each `stordoc check` process (detect, the final check: 2-7 s, of which
the check itself 1.3-2 s), the fix's three collections with host facts before its first
step (the check that picks the finding, the plan, execute's re-check under the lock:
6-10 s), starting ceph-osd (3-6 s), the 1 s poll of "wait until osd.N is up" (always
1.01 s), and two monitor proposals for `osd in` and `osd unset noout` (~1 s each).

Usage: .venv/bin/python benchmarks/time_to_repair.py --dir /var/tmp/sd-lab-rb \
           --port-base 17800 --cycles 3 --fault both --cli [--before-root /work/main]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.env import Env
from core.service import Service
from core.settings import load_settings
from lab import Lab
from runbooks.api import RunEvent, execute, plan

# health checks that say the lab is still re-peering after the previous cycle
SETTLING_CHECKS = frozenset({"PG_AVAILABILITY", "PG_DEGRADED", "OSD_DOWN", "OSD_HOST_DOWN",
                             "OSD_ROOT_DOWN"})


def wait_settled(lab: Lab, timeout: float = 300) -> None:
    """Not timed: every OSD up and in, the PGs settled on the current map, HEALTH_OK."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lab.unsettled(SETTLING_CHECKS) is None:
            h = lab.ceph("health", check=False)
            if isinstance(h, dict) and h.get("status") == "HEALTH_OK":
                return
        time.sleep(0.5)
    raise SystemExit("the lab did not settle (HEALTH_OK, PGs reported and clean)")


CODE = {"osd-unmounted": "OSD_DATA_UNMOUNTED", "osd-not-activated": "OSD_NOT_ACTIVATED"}


def cycle_api(env: Env, lab: Lab, osd: int, fault: str) -> dict[str, float]:
    lab.break_(fault, osd=osd, out=True)
    target = f"osd.{osd}"
    code = CODE[fault]
    t0 = time.monotonic()
    finding = None
    while finding is None:
        out = Service(env).check("lab", "bench")
        finding = next((f for f in out.report.findings
                        if f.code == code and f.target == target), None)
        if finding is None and time.monotonic() - t0 > 120:
            raise SystemExit(f"{code} never showed up")
    t1 = time.monotonic()
    ctx = env.run_context("lab", source="bench")
    assert finding.runbook is not None
    p = plan(ctx, finding.runbook, target)
    t2 = time.monotonic()
    marks: dict[str, float] = {}

    def on_event(ev: RunEvent) -> None:
        marks.setdefault(ev.kind, time.monotonic())

    res = execute(ctx, p, confirmed_by="bench", on_event=on_event)
    if res.outcome != "success":
        raise SystemExit(f"fix failed: {res.message}")
    t3 = time.monotonic()
    while True:  # until a full check is clean: exit 0 and the PGs reported on the map
        final = Service(env).check("lab", "bench")
        if final.report.verdict == 0 and not any(
                f.code == "PGS_SETTLING" for f in final.report.findings):
            break
        if time.monotonic() - t3 > 300:
            raise SystemExit(f"not clean after the fix: "
                             f"{[(f.code, f.entity) for f in final.report.findings]}")
        time.sleep(0.5)
    t4 = time.monotonic()
    run_end = marks.get("verify_started", t3)
    return {"detect": t1 - t0, "plan": t2 - t1, "run": run_end - t2,
            "verify": t3 - run_end, "until clean": t4 - t3, "total": t4 - t0}


# ------------------------------------------------------------------ the real CLI

_STEP = re.compile(r"^\s*-> (\d+)\. (.*)$")


class Side:
    """One checkout's code run through its own ``python -m stordoc`` (cwd first on
    sys.path), its own copy of the lab's config and journal."""

    def __init__(self, name: str, root: Path, lab: Lab, tmp: Path) -> None:
        self.name, self.root = name, root
        self.cfg = tmp / f"{name}.toml"
        lines = []
        known = self._knows_osdmaptool()
        for ln in lab.config_path.read_text().splitlines():
            if ln.startswith("journal ="):
                ln = f'journal = "{tmp / f"{name}-journal.db"}"'
            if ln.startswith("osdmaptool =") and not known:
                continue  # a version before the setting: its strict settings refuse it
            lines.append(ln)
        self.cfg.write_text("\n".join(lines) + "\n")

    def _knows_osdmaptool(self) -> bool:
        src = self.root / "stordoc" / "settings_clusters.py"
        return "osdmaptool" in src.read_text()

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "stordoc", "--config", str(self.cfg), *args]

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONUNBUFFERED": "1",
                "COLUMNS": "200"}

    def run(self, *args: str) -> tuple[int, float, str]:
        t = time.monotonic()
        p = subprocess.run(self.argv(*args), capture_output=True, text=True, cwd=self.root,
                           env=self.env(), timeout=600, check=False)
        return p.returncode, time.monotonic() - t, p.stdout

    def fix(self, *args: str) -> tuple[int, float, list[tuple[float, str]]]:
        """The fix, its output lines with the seconds since start each arrived at."""
        t = time.monotonic()
        p = subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, cwd=self.root,
                             env=self.env())
        lines: list[tuple[float, str]] = []
        assert p.stdout is not None
        for line in p.stdout:
            lines.append((time.monotonic() - t, line.rstrip("\n")))
        rc = p.wait(timeout=600)
        return rc, time.monotonic() - t, lines


def fix_phases(lines: list[tuple[float, str]], total: float) -> dict[str, float]:
    """Where the fix's time went, from its timestamped output."""
    marks: list[tuple[float, str]] = []
    for t, ln in lines:
        m = _STEP.match(ln)
        if m:
            marks.append((t, f"fix: {m.group(2)[:28]}"))
        elif ln.lstrip().startswith("verifying:"):
            marks.append((t, "fix: verify"))
        elif re.match(r"^(success|verify_failed|failed|cancelled): ", ln):
            marks.append((t, "fix: follow"))
    out: dict[str, float] = {}
    start = 0.0
    name = "fix: check+plan"
    for t, nxt in marks:
        out[name] = out.get(name, 0.0) + (t - start)
        start, name = t, nxt
    out[name] = out.get(name, 0.0) + (total - start)
    return out


def _clean(stdout: str) -> bool:
    try:
        doc = json.loads(stdout)
    except ValueError:
        return False
    return not any(f.get("code") == "PGS_SETTLING" for f in doc.get("findings", []))


def cycle_cli(side: Side, lab: Lab, osd: int, fault: str,
              log: list[str]) -> dict[str, float]:
    lab.break_(fault, osd=osd, out=True)
    rc1, detect, _ = side.run("check")
    rc2, fix, lines = side.fix("fix", "--finding", CODE[fault], "--entity", f"osd.{osd}",
                               "--yes")
    log.extend(f"    {t:6.2f} {ln}" for t, ln in lines)
    if rc1 == 0 or rc2 != 0:
        raise SystemExit(f"cli cycle failed ({side.name}): check rc {rc1}, fix rc {rc2}:\n"
                         + "\n".join(log[-40:]))
    t = time.monotonic()
    checks = 0
    while True:  # `stordoc check` until clean: exit 0, no PGS_SETTLING
        checks += 1
        rc3, _, out = side.run("check", "--json")
        if rc3 == 0 and _clean(out):
            break
        if time.monotonic() - t > 300:
            raise SystemExit(f"stordoc check never came back clean ({side.name})")
    clean = time.monotonic() - t
    return {"detect": detect, "fix (plan+run+verify+follow)": fix, **fix_phases(lines, fix),
            "until check clean": clean, "check runs": float(checks),
            "total": detect + fix + clean}


def _fmt(r: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" if k == "check runs" else f"{k} {v:.2f}s"
                     for k, v in r.items())


def _osd_for(lab: Lab, fault: str, wanted: int | None) -> int:
    kind = "xfs" if fault == "osd-unmounted" else "raw"
    mine = [i for i, k in enumerate(lab.kinds) if k == kind]
    if wanted is not None and wanted in mine:
        return wanted
    if not mine:
        raise SystemExit(f"the lab (layout {lab.layout}) has no {kind} OSD for {fault}")
    return mine[min(1, len(mine) - 1)] if kind == "xfs" else mine[-1]


def _medians(rs: list[dict[str, float]]) -> dict[str, float]:
    keys: list[str] = []
    for r in rs:
        keys += [k for k in r if k not in keys]
    return {k: round(statistics.median(r.get(k, 0.0) for r in rs), 2) for k in keys}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/var/tmp/sd-lab-rb")
    ap.add_argument("--port-base", type=int, default=17800)
    ap.add_argument("--cycles", type=int, default=3, help="cycles per fault (and side)")
    ap.add_argument("--fault", choices=("osd-unmounted", "osd-not-activated", "both"),
                    default="both")
    ap.add_argument("--osd", type=int, default=None,
                    help="OSD id (default: osd.1 for XFS, the last raw OSD for tmpfs)")
    ap.add_argument("--cli", action="store_true", help="time the real CLI commands")
    ap.add_argument("--before-root", type=Path, default=None,
                    help="with --cli: also time this checkout's code, alternating")
    ap.add_argument("--verbose", action="store_true", help="print each fix's timed output")
    args = ap.parse_args()
    if args.before_root is not None and not args.cli:
        ap.error("--before-root needs --cli")
    lab = Lab(args.dir, args.port_base)
    faults = ["osd-unmounted", "osd-not-activated"] if args.fault == "both" else [args.fault]
    tmp = Path(tempfile.mkdtemp(prefix="ttr-"))
    sides = [Side("after", ROOT, lab, tmp)]
    if args.before_root is not None:
        sides.insert(0, Side("before", args.before_root.resolve(), lab, tmp))
    env = None if args.cli else Env(load_settings(str(lab.config_path)))
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        for i in range(args.cycles):
            for fault in faults:
                osd = _osd_for(lab, fault, args.osd)
                order = sides if i % 2 == 0 else sides[::-1]
                for side in (order if args.cli else [None]):
                    wait_settled(lab)
                    log: list[str] = []
                    if side is None:
                        assert env is not None
                        r = cycle_api(env, lab, osd, fault)
                        name = "api"
                    else:
                        r = cycle_cli(side, lab, osd, fault, log)
                        name = side.name
                    rows.setdefault((fault, name), []).append(r)
                    print(f"cycle {i + 1} {fault} osd.{osd} [{name}]: " + _fmt(r), flush=True)
                    if args.verbose:
                        print("\n".join(log), flush=True)
    finally:
        if env is not None:
            env.close()
        wait_settled(lab)
    summary: dict[str, Any] = {}
    for (fault, name), rs in rows.items():
        med = _medians(rs)
        print(f"{fault} [{name}]: median over {len(rs)} cycles: " + _fmt(med))
        summary.setdefault(fault, {})[name] = {
            "cycles": len(rs), "median_s": med,
            "totals_s": [round(r["total"], 2) for r in rs]}
    for fault, by in summary.items():
        if "before" in by and "after" in by:
            b, a = by["before"]["median_s"], by["after"]["median_s"]
            by["ratio_after_before"] = {k: round(a[k] / b[k], 2) for k in a
                                        if k in b and b[k] and k != "check runs"}
            print(f"{fault}: total median before {b['total']:.2f}s, after {a['total']:.2f}s "
                  f"(ratio {a['total'] / b['total']:.2f})")
    print(json.dumps({"mode": "cli" if args.cli else "api", "faults": summary,
                      "goal_s": {"osd-unmounted": 20, "osd-not-activated": 20}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
