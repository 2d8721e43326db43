"""Time to repair on the lab: unmounted+out OSD -> detect -> plan -> run -> verify.

Two faults (``--fault``): ``osd-unmounted`` (the XFS data partition of a ceph-disk style OSD
unmounted: OSD_DATA_UNMOUNTED, runbook osd-remount) and ``osd-not-activated`` (the tmpfs
of a ceph-volume raw OSD gone after a "reboot": OSD_NOT_ACTIVATED, runbook osd-activate);
``both`` alternates them cycle by cycle and prints the medians of each.

Each cycle: ``Lab.break_(FAULT, out=True)`` (not timed), then
  detect: ``stordoc check`` (collect with host facts + all checks) until the fault's code
          names the OSD,
  plan:   ``runbooks.api.plan`` for the runbook the finding names (fresh snapshot),
  run:    ``execute`` from the first step to the last (noout, mount, start, wait up, in,
          unset noout),
  verify: the runbook's own verification (re-running the triggering checks),
  until clean: full ``stordoc check`` runs until one exits 0 (PGs may still be peering).
Between cycles the script waits for HEALTH_OK (not timed). With ``--cli`` the same cycle
runs through the real command line (``stordoc check``, ``stordoc fix --finding ... --yes``,
``stordoc check``) and reports wall times per command.

Usage: .venv/bin/python benchmarks/time_to_repair.py --dir /var/tmp/sd-lab-rb \
           --port-base 17800 --cycles 5 [--fault both] [--osd 1] [--cli]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab import Lab
from runbooks.api import RunEvent, execute, plan
from stordoc.env import Env
from stordoc.settings import load_settings


def wait_healthy(lab: Lab, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        h = lab.ceph("health", check=False)
        if isinstance(h, dict) and h.get("status") == "HEALTH_OK" and lab.pgs_clean():
            return
        time.sleep(1)
    raise SystemExit("the lab did not return to HEALTH_OK")


CODE = {"osd-unmounted": "OSD_DATA_UNMOUNTED", "osd-not-activated": "OSD_NOT_ACTIVATED"}


def cycle_api(env: Env, lab: Lab, osd: int, fault: str) -> dict[str, float]:
    lab.break_(fault, osd=osd, out=True)
    target = f"osd.{osd}"
    code = CODE[fault]
    t0 = time.monotonic()
    finding = None
    while finding is None:
        out = env.check("lab", source="bench")
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
    # then until a full check is clean (exit 0): PGs may still be peering after "osd in"
    while True:
        final = env.check("lab", source="bench")
        if final.report.verdict == 0:
            break
        if time.monotonic() - t3 > 300:
            raise SystemExit(f"not clean after the fix: "
                             f"{[(f.code, f.entity) for f in final.report.findings]}")
        time.sleep(0.5)
    t4 = time.monotonic()
    run_end = marks.get("verify_started", t3)
    return {"detect": t1 - t0, "plan": t2 - t1, "run": run_end - t2,
            "verify": t3 - run_end, "until clean": t4 - t3, "total": t4 - t0}


def cycle_cli(cfg: str, lab: Lab, osd: int, fault: str) -> dict[str, float]:
    lab.break_(fault, osd=osd, out=True)
    base = [sys.executable, "-m", "stordoc", "--config", cfg]
    envv = {**os.environ, "PYTHONWARNINGS": "ignore"}

    def run(*args: str) -> tuple[int, float]:
        t = time.monotonic()
        p = subprocess.run([*base, *args], capture_output=True, text=True, cwd=ROOT,
                           env=envv, timeout=600, check=False)
        return p.returncode, time.monotonic() - t

    rc1, detect = run("check")
    rc2, fix = run("fix", "--finding", CODE[fault], "--entity", f"osd.{osd}", "--yes")
    if rc1 == 0 or rc2 != 0:
        raise SystemExit(f"cli cycle failed: check rc {rc1}, fix rc {rc2}")
    t = time.monotonic()
    checks = 0
    while True:  # `stordoc check` until it exits 0 (PGs may still be peering)
        checks += 1
        rc3, _ = run("check")
        if rc3 == 0:
            break
        if time.monotonic() - t > 300:
            raise SystemExit("stordoc check never came back clean")
    clean = time.monotonic() - t
    return {"detect": detect, "fix (plan+run+verify)": fix, "until check clean": clean,
            "check runs": float(checks), "total": detect + fix + clean}


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/var/tmp/sd-lab-rb")
    ap.add_argument("--port-base", type=int, default=17800)
    ap.add_argument("--cycles", type=int, default=5, help="cycles per fault")
    ap.add_argument("--fault", choices=("osd-unmounted", "osd-not-activated", "both"),
                    default="osd-unmounted")
    ap.add_argument("--osd", type=int, default=None,
                    help="OSD id (default: osd.1 for XFS, the last raw OSD for tmpfs)")
    ap.add_argument("--cli", action="store_true", help="time the real CLI commands")
    args = ap.parse_args()
    lab = Lab(args.dir, args.port_base)
    cfg = str(lab.config_path)
    env = Env(load_settings(cfg))
    faults = ["osd-unmounted", "osd-not-activated"] if args.fault == "both" else [args.fault]
    rows: dict[str, list[dict[str, float]]] = {f: [] for f in faults}
    try:
        for i in range(args.cycles):
            for fault in faults:
                osd = _osd_for(lab, fault, args.osd)
                wait_healthy(lab)
                r = cycle_cli(cfg, lab, osd, fault) if args.cli else \
                    cycle_api(env, lab, osd, fault)
                rows[fault].append(r)
                print(f"cycle {i + 1} {fault} osd.{osd}: " + _fmt(r), flush=True)
    finally:
        env.close()
        wait_healthy(lab)
    summary: dict[str, Any] = {}
    for fault, rs in rows.items():
        med: dict[str, Any] = {k: round(statistics.median(r[k] for r in rs), 2)
                               for k in rs[0]}
        print(f"{fault}: median over {len(rs)} cycles: " + _fmt(med))
        summary[fault] = {"cycles": len(rs), "median_s": med,
                          "max_total_s": round(max(r["total"] for r in rs), 2)}
    print(json.dumps({"mode": "cli" if args.cli else "api", "faults": summary,
                      "goal_s": {"osd-unmounted": 60, "osd-not-activated": 30}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
