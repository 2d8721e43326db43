"""What results say: the lines every front end shows beneath a result, and what stored
results are compared with (earlier runs of the same fingerprint or a named baseline);
the history, naming baselines, and the quick benchmark after a fix with its verdict."""

from __future__ import annotations

import threading
import time
from typing import Any

from runbooks.bench import limits as limits_mod
from runbooks.bench import multi as multi_mod
from runbooks.bench import osdperf
from runbooks.bench.common import BenchLimits, ClusterNotSettled, limits_of
from runbooks.bench.measure import steady_line
from runbooks.bench.model import BenchOptions, BenchResult
from runbooks.bench.run import BenchReport, run_bench
from runbooks.bench.stats import Comparison, compare_groups
from runbooks.model import Refused, RunContext
from storage.benchstore import BenchStore


def detail_lines(r: BenchResult) -> list[str]:
    """What a result says beyond its figures (every front end shows these): the clients
    and their share, the efficiency against the measured limits, whether reads were
    verified, whether throughput reached steady
    state, and the slowest OSDs while it ran."""
    out = []
    for line in (multi_mod.clients_line(r), limits_mod.efficiency_line(r.extra.get("efficiency")),
                 verify_line(r),
                 steady_line(r.extra.get("steady_state")),
                 osdperf.line(r.extra.get("osd_latency"))):
        if line:
            out.append(f"{r.workload} rep {r.rep}: {line}")
    return out


def verify_line(r: BenchResult) -> str | None:
    """"reads verified: ..." or "DATA VERIFICATION FAILED: ..." for a read phase."""
    v = r.extra.get("verify")
    if not v:
        return None
    if not v.get("checked"):
        return f"reads NOT verified: {v.get('why', 'not available')}"
    if v.get("mismatches"):
        ex = ", ".join(v.get("examples") or [])
        return (f"DATA VERIFICATION FAILED: {v['mismatches']} read(s) returned other data "
                f"than written ({v.get('engine', '')}){': ' + ex if ex else ''}")
    return (f"reads verified: {int(v.get('reads') or 0):,} read(s), no mismatch "
            f"({v.get('engine', '')})")


def compare(ctx: RunContext, report: BenchReport | str, baseline: str | None = None,
            limits: BenchLimits | None = None) -> list[Comparison]:
    """One comparison per workload of ``report`` (or a stored group id): against the named
    baseline, or else the most recent runs of the same fingerprint."""
    lim = limits_of(ctx, limits)
    store = BenchStore(ctx.journal)
    if isinstance(report, BenchReport):
        rows = [r.to_row() for r in report.results if r.id is not None] or \
            [r.to_row() for r in report.results]
        group = report.group_id
    else:
        rows = store.group(report)
        group = report
        if not rows:
            raise Refused(f"no stored benchmark group {report!r}")
    base_group: list[dict[str, Any]] | None = None
    label = ""
    if baseline:
        b = store.baseline(ctx.cluster, baseline)
        if b is None:
            known = ", ".join(x["name"] for x in store.baselines(ctx.cluster)) or "none"
            raise Refused(f"no baseline named {baseline!r} on {ctx.cluster}; known: {known}")
        base_group = store.group(b["group_id"])
        label = f"baseline {baseline!r} (group {b['group_id']})"
    out = []
    for workload in dict.fromkeys(r["workload"] for r in rows):
        new = [r for r in rows if r["workload"] == workload and r.get("status") == "ok"]
        if not new:
            continue
        if base_group is not None:
            base = [r for r in base_group if r["workload"] == workload]
        else:  # the last stored run of the same kind, target and parameters
            base = last_run(store, ctx.cluster, new[0]["fingerprint"], workload, group)
            label = baseline_label(base)
        hist_rows = store.same_fingerprint(ctx.cluster, new[0]["fingerprint"], workload,
                                           exclude_group=group, limit=60)
        hist: dict[str, list[dict[str, Any]]] = {}
        for r in hist_rows:
            hist.setdefault(r["group_id"], []).append(r)
        c = compare_groups(base, new, lim.k_noise, lim.min_change, label,
                           history=list(hist.values())[:20])
        where = osdperf.change_note(base, new)
        if where:
            c.notes.append(where)
        out.append(c)
    return out


def last_run(store: BenchStore, cluster: str, fingerprint: str, workload: str,
             exclude_group: str | None) -> list[dict[str, Any]]:
    """The rows of the latest stored group of this fingerprint and workload (its
    repetitions), other than ``exclude_group``; [] when there is none."""
    latest = store.same_fingerprint(cluster, fingerprint, workload,
                                    exclude_group=exclude_group, limit=1)
    if not latest:
        return []
    g = latest[0]["group_id"]
    return [r for r in store.group(g) if r["workload"] == workload
            and r["fingerprint"] == fingerprint and r.get("status") == "ok"]


def baseline_label(base: list[dict[str, Any]]) -> str:
    """Which run a comparison is against: when, its id, who ran it."""
    if not base:
        return "no baseline"
    first = base[0]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(first.get("started_at")
                                                                 or 0)))
    who = f", by {first['user']}" if first.get("user") else ""
    return f"the last run of the same kind, target and parameters: {first['group_id']} " \
        f"({when}{who})"


def history(ctx: RunContext, limit: int = 20, kind: str | None = None) -> list[BenchResult]:
    return [BenchResult.from_row(r) for r in BenchStore(ctx.journal).history(
        ctx.cluster, limit, kind)]


def set_baseline(ctx: RunContext, name: str, group_id: str | None = None,
                 kind: str | None = None, note: str = "") -> dict[str, Any]:
    """Name a stored group (default: the latest successful one) as a baseline."""
    plain = name.replace("-", "").replace("_", "").replace(".", "")
    if not plain or not plain.isascii() or not plain.isalnum() or len(name) > 64:
        # ASCII only: "bаse" with a Cyrillic а would be a second baseline that reads "base"
        raise Refused("baseline names use letters, digits, '-', '_' and '.' (ASCII, at "
                      "most 64 characters)")
    store = BenchStore(ctx.journal)
    g = group_id or store.last_group(ctx.cluster, kind)
    if g is None:
        raise Refused(f"no benchmark stored for {ctx.cluster} yet: run one first")
    try:
        return store.set_baseline(ctx.cluster, name, g, ctx.user, note)
    except KeyError:
        raise Refused(f"no stored benchmark group {g!r}") from None


def bench_after_fix(ctx: RunContext, limits: BenchLimits | None = None,
                    options: BenchOptions | None = None,
                    cancel: threading.Event | None = None) -> dict[str, Any]:
    """A short RADOS write benchmark after a runbook fix, compared with the same
    fingerprint; returns a dict to add to the fix's result (never raises Refused)."""
    o = options or BenchOptions(modes=("write",), duration_s=3.0, repeat=3, size=4096,
                                concurrency=16)
    try:
        rep = run_bench(ctx, "rados", o, cancel=cancel, limits=limits)
        comps = compare(ctx, rep, limits=limits)
    except ClusterNotSettled as e:
        return {"ran": False, "reason": str(e), "settling": True}
    except Refused as e:
        return {"ran": False, "reason": str(e), "settling": False}
    return {"ran": True, "group_id": rep.group_id, "status": rep.status,
            "verdict": comps[0].verdict if comps else "inconclusive",
            "comparison": comps[0].to_dict() if comps else None,
            "headline": rep.results[0].headline() if rep.results else ""}
