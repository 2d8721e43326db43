"""Goal (issue #28): a Swift drive replaced in the lab with dispersion 100% afterwards.

One cycle on a running lab:
  1. populate stordoc's dispersion objects if needed (the runbook
     ``swift-dispersion-populate``; not timed) and attach a spare drive beside ``--device``
     (``lab.replace.attach_swift_spare``; not timed);
  2. plan ``swift-replace-drive DEV@HOST -o device=SPARE -o planned=yes
     -o ignore_min_part_hours=yes`` (a fresh lab's rings were balanced minutes ago) and
     execute it: timed, per step;
  3. sample dispersion again independently of the runbook (``storage.dispersion.sample``)
     and print the percentages; the lab then adopts the spare as the drive's image.

Measured (2026-11-27, Pacific lab, d3@node3, 32 dispersion objects and 8 containers, 2
cores shared): 57.5 s plan to verified (drain 25.1 s, dispersion back to 100% 17.9 s, the
rest ring writes and pushes); dispersion afterwards objects 100%, containers 100% (goal
met).

Usage: /work/main/.venv/bin/python benchmarks/replace_swift_drive.py \
           --dir /var/tmp/stordoc-lab-replace [--device d2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.env import Env  # noqa: E402
from core.settings import load_settings  # noqa: E402
from lab import Lab  # noqa: E402
from lab.layout import SWIFT_DEVICE_HOST  # noqa: E402
from lab.replace import adopt_swift_spare, attach_swift_spare  # noqa: E402
from runbooks.api import RunEvent, execute, plan  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--device", default="d2")
    args = ap.parse_args()
    lab = Lab(args.dir)
    env = Env(load_settings(str(lab.config_path)))
    ctx = env.run_context("lab", source="bench")
    ctx.verify_timeout_s = 180
    pop = plan(ctx, "swift-dispersion-populate", "dispersion")
    execute(ctx, pop, confirmed_by="bench")
    spare = attach_swift_spare(lab, args.device)
    host = SWIFT_DEVICE_HOST[args.device][0]
    t0 = time.monotonic()
    p = plan(ctx, "swift-replace-drive", f"{args.device}@{host}",
             {"device": spare, "planned": "yes", "ignore_min_part_hours": "yes"})
    marks: list[tuple[str, float]] = []

    def on_event(ev: RunEvent) -> None:
        if ev.kind in ("step_done", "verify_done", "step_failed"):
            marks.append((f"{ev.index or ''} {ev.title}".strip(), time.monotonic()))

    res = execute(ctx, p, confirmed_by="bench", on_event=on_event)
    t1 = time.monotonic()
    last = t0
    for title, t in marks:
        print(f"  {title}: {t - last:.1f} s")
        last = t
    if res.outcome != "success":
        print(f"replacement failed: {res.message}")
        return 1
    from storage.dispersion import sample

    st = ctx.target.swift
    assert st is not None
    rings = {k: os.path.join(st.swift_dir, f"{k}.ring.gz") for k in ("object", "container")}
    ds = sample(st, rings, time.time())
    adopt_swift_spare(lab, args.device)
    print(f"runbook (plan to verified): {t1 - t0:.1f} s")
    pcts = {part.kind: part.pct_found for part in (ds.objects, ds.containers) if part}
    print("dispersion afterwards: " + ", ".join(
        f"{k} {v if v is None else round(v, 2)}%" for k, v in pcts.items()))
    ok = bool(pcts) and all(v == 100.0 for v in pcts.values())
    print(f"goal (dispersion 100% afterwards): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
