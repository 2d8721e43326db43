"""`stordoc bench rados|swift|rbd|limits|history|baseline|show`: quick benchmarks.

The plan is shown first; ``--yes`` (or answering y on a terminal) runs it. The run happens
in a worker thread (``core.service.task.Task``) so Ctrl-C in the main thread only sets
the cancel flag: the benchmark stops, cleans up, and the partial results are kept. Exit
status (``core.exitstatus``): 0 done (and not slower), 1 a comparison says slower,
4 refused, 5 the run failed, 130 interrupted, 64 bad input.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.argtypes import float_range, int_range, plain_name
from core.errors import UserError
from core.exitstatus import ExitStatus
from core.service.task import Task
from stordoc.commands.common import env_from_args, term_of

if TYPE_CHECKING:  # the handlers import them (the parser stays light)
    from rich.table import Table

    from core.env import Env
    from core.service import Service
    from core.service.actions import ActionPlan, Actions, RunReport
    from core.terminal import Terminal


def _size(text: str) -> int:
    from runbooks.bench.model import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _modes(text: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in text.split(",") if m.strip())


def _mix(text: str) -> tuple[int, int, int]:
    parts = text.replace(":", "/").split("/")
    try:
        vals = tuple(PERCENT(p) for p in parts)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"mix is READ/WRITE/DELETE percent, e.g. 80/15/5, "
                                         f"got {text[:40]!r}") from None
    if len(vals) != 3:
        raise argparse.ArgumentTypeError("mix needs three numbers: READ/WRITE/DELETE")
    return (vals[0], vals[1], vals[2])


PERCENT = int_range(0, 100)
DURATION = float_range(0, 86400, lo_open=True)  # [bench] max_duration_s caps it further
CONCURRENCY = int_range(1, 1024)
OPS = int_range(1, 10**9)
REPEAT = int_range(1, 100)
COUNT = int_range(0, 10**6)
LIMIT = int_range(1, 100_000)


def _common(p: argparse.ArgumentParser, duration: float = 5.0) -> None:
    p.add_argument("--cluster", help="cluster name from the settings")
    p.add_argument("--duration", type=DURATION, default=duration,
                   help=f"seconds per phase (default {duration:g})")
    p.add_argument("--ops", type=OPS, help="stop a phase after this many operations")
    p.add_argument("--repeat", type=REPEAT, default=1,
                   help="repetitions (3+ give a run-level significance test)")
    p.add_argument("--compare", nargs="?", const="", metavar="BASELINE", default="",
                   help="compare with a named baseline (default: with the last run of the "
                        "same kind, target and parameters)")
    p.add_argument("--no-compare", dest="compare", action="store_const", const=None,
                   help="do not compare with an earlier run")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--chart", metavar="FILE", help="write a PNG chart to FILE")
    p.add_argument("--plot", action="store_true", help="draw a chart in the terminal")
    p.add_argument("--yes", "-y", action="store_true", help="run without asking")
    p.add_argument("--force", action="store_true",
                   help="run even if health is ERR or PGs are not active+clean")
    p.add_argument("--seed", type=int_range(0, 2**32 - 1), help=argparse.SUPPRESS)


def _clients(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(","))
    if not text.strip() or any(not n for n in names):
        raise argparse.ArgumentTypeError("clients are configured host names separated by "
                                         "commas, e.g. node1,node2,node3")
    return names


def _multi(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clients", type=_clients, nargs="?", const=("*",), metavar="H1,H2",
                   help="run the load from these configured hosts over SSH, all at once "
                        "(alone: [bench] clients, or every configured host)")
    p.add_argument("--steady", action="store_true",
                   help="stop each phase once throughput is steady; --duration is then the "
                        "maximum")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = sub.add_parser("bench", help="quick benchmarks: rados, swift, rbd, limits",
                       description="Quick benchmarks with stored baselines and noise-aware "
                                   "verdicts.")
    bs = b.add_subparsers(dest="bench_cmd", metavar="KIND")

    r = bs.add_parser("rados", help="RADOS object write / seq read / rand read")
    _common(r)
    r.add_argument("--mode", type=_modes, default=("write",),
                   help="write, seq, rand, comma-separated (default write)")
    r.add_argument("-t", "--concurrency", type=CONCURRENCY, default=16, help="ops in flight (16)")
    r.add_argument("-b", "--size", type=_size, default=4 * 1024 * 1024,
                   help="object size (4M)")
    r.add_argument("--pool", type=plain_name, help="benchmark pool (settings [bench] pool)")
    r.add_argument("--keep", action="store_true", help="keep the objects for a read run")
    r.add_argument("--engine", choices=("native", "rados-bench"), default=None,
                   help="native (default) or rados-bench (always with --clients)")
    _multi(r)
    r.set_defaults(func=cmd_run, kind="rados")

    s = bs.add_parser("swift", help="Swift PUT/GET/DELETE mix through the proxy")
    _common(s)
    s.add_argument("--mix", type=_mix, default=(0, 100, 0),
                   help="READ/WRITE/DELETE percent (default 0/100/0; COSBench 80/15/5)")
    s.add_argument("-c", "--concurrency", type=CONCURRENCY, default=16, help="workers (16)")
    s.add_argument("-s", "--size", type=_size, default=64 * 1024, help="object size (64K)")
    s.add_argument("-l", "--size-max", type=_size,
                   help="largest object size: sizes are uniform in SIZE..SIZE_MAX")
    s.add_argument("--prefill", type=COUNT, default=200,
                   help="objects written first when the mix reads or deletes (200)")
    s.add_argument("--container", type=plain_name, help="benchmark container (settings [bench] container)")
    s.add_argument("--keep", action="store_true", help="keep the container")
    _multi(s)
    s.set_defaults(func=cmd_run, kind="swift")

    d = bs.add_parser("rbd", help="fio rbd engine on a scratch image")
    _common(d)
    d.add_argument("--mode", type=_modes, default=("randrw",),
                   help="randrw (4k), seqwrite, seqread (64k), randread, randwrite")
    d.add_argument("-t", "--iodepth", dest="concurrency", type=CONCURRENCY, default=16,
                   help="fio iodepth (16)")
    d.add_argument("-b", "--size", type=_size, default=4 * 1024 * 1024,
                   help="block size (default per mode: 4k random, 64k sequential)")
    d.add_argument("--image-size", type=_size, default=256 * 1024 * 1024,
                   help="scratch image size (256M)")
    d.add_argument("--rwmixread", type=PERCENT, default=70, help="read percent for randrw (70)")
    d.add_argument("--pool", type=plain_name, help="benchmark pool (settings [bench] pool)")
    _multi(d)
    d.set_defaults(func=cmd_run, kind="rbd")

    lm = bs.add_parser("limits", help="disk (scratch file on an OSD filesystem) and network")
    _common(lm)
    lm.add_argument("--mode", type=_modes, default=("disk", "net"), help="disk, net")
    lm.add_argument("--host", action="append", default=[], help="only this host (repeat)")
    lm.add_argument("--size", dest="limit_size", type=_size, default=64 * 1024 * 1024,
                    help="bytes per disk/network test (64M)")
    lm.set_defaults(func=cmd_run, kind="limits")

    h = bs.add_parser("history", help="stored benchmark results")
    h.add_argument("--cluster")
    h.add_argument("--kind", choices=("rados", "swift", "rbd", "limits"))
    h.add_argument("--limit", type=LIMIT, default=20)
    h.add_argument("--json", action="store_true")
    h.set_defaults(func=cmd_history)

    bl = bs.add_parser("baseline", help="named baselines")
    bls = bl.add_subparsers(dest="baseline_cmd", metavar="ACTION")
    st = bls.add_parser("set", help="name a stored run group (default: the latest)")
    st.add_argument("name")
    st.add_argument("--group", help="group id (see 'stordoc bench history')")
    st.add_argument("--kind", choices=("rados", "swift", "rbd", "limits"))
    st.add_argument("--cluster")
    st.set_defaults(func=cmd_baseline_set)
    ls = bls.add_parser("list", help="list baselines")
    ls.add_argument("--cluster")
    ls.set_defaults(func=cmd_baseline_list)

    sh = bs.add_parser("show", help="show a stored group, optionally compared")
    sh.add_argument("group")
    sh.add_argument("--cluster")
    sh.add_argument("--compare", nargs="?", const="", metavar="BASELINE", default=None)
    sh.add_argument("--json", action="store_true")
    sh.add_argument("--chart", metavar="FILE")
    sh.add_argument("--plot", action="store_true")
    sh.set_defaults(func=cmd_show)
    def usage(a: argparse.Namespace) -> ExitStatus:
        b.print_help(term_of(a).stdout)
        return ExitStatus.USAGE
    b.set_defaults(func=usage)


def _options(a: argparse.Namespace) -> Any:
    from runbooks.bench.api import BenchOptions

    kw: dict[str, Any] = {"duration_s": a.duration, "ops": a.ops, "repeat": a.repeat,
                          "force": a.force, "seed": a.seed}
    for name in ("concurrency", "size", "pool", "keep", "engine", "container", "size_max",
                 "prefill", "image_size", "rwmixread", "limit_size"):
        if hasattr(a, name) and getattr(a, name) is not None:
            kw[name] = getattr(a, name)
    if hasattr(a, "mode"):
        kw["modes"] = tuple(a.mode)
    if getattr(a, "mix", None) is not None:
        kw["mix"] = a.mix
        kw["modes"] = ("mix",)
    if getattr(a, "host", None):
        kw["hosts"] = tuple(a.host)
    if getattr(a, "clients", None):
        if getattr(a, "engine", None) == "native":
            raise UserError("--engine native runs on this host only; --clients runs rados "
                            "bench on every client")
        kw["clients"] = tuple(a.clients)
    if getattr(a, "steady", False):
        kw["steady"] = True
    return BenchOptions(**kw)


def cmd_run(a: argparse.Namespace) -> int:
    from core.confirm import confirm
    from runbooks.bench import api

    env = env_from_args(a)
    try:
        acts = _service(env).actions
        cluster = env.cluster_name(a.cluster)
        if a.compare:  # a named baseline must exist before anything runs
            acts.require_baseline(cluster, a.compare)
        plan = acts.plan_bench(cluster, a.kind, source="cli", options=_options(a))
        if not a.json or not a.yes:
            out = env.term.err if a.json else env.term.wide
            for line in plan.lines:
                out.print(line, markup=False)
        confirm(env.term, "Run this benchmark?", a.yes)
        res = _run_with_progress(env.term, acts, plan, quiet=a.json,
                                 compare=a.compare is not None, baseline=a.compare or None)
        b = res.bench
        assert b is not None
        _output(env.term, api, b.report, a, b.compared)
        if res.outcome == "cancelled":
            return ExitStatus.INTERRUPTED
        if not res.ok:
            return ExitStatus.FAILED
        return ExitStatus.WARN if b.slower else ExitStatus.OK
    finally:
        env.close()


def _run_with_progress(term: Terminal, acts: Actions, plan: ActionPlan, quiet: bool,
                       compare: bool, baseline: str | None) -> RunReport:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    opts = plan.data.get("options") or {}
    prog = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                    console=term.err, transient=True, disable=quiet)
    task = prog.add_task("starting", total=max(float(opts.get("duration_s") or 0), 0.1),
                         rate="")
    kind = plan.runbook.removeprefix("bench-")

    def on_progress(p: Any) -> None:
        prog.update(task, completed=min(p.elapsed_s, p.planned_s), total=p.planned_s,
                    description=f"{kind} {p.phase} rep {p.rep}/{p.reps}",
                    rate=(f"{p.mb_s:,.1f} MB/s {p.ops_s:,.0f} ops/s" if p.ops else ""))

    def work(cancel: threading.Event) -> RunReport:
        return acts.execute(plan, plan.user, lambda _ev: None, cancel, on_progress,
                            compare=compare, baseline=baseline)

    def interrupted(n: int) -> None:
        if n == 1:
            term.err.print("stopping: finishing in-flight operations and cleaning up ...")

    with prog:
        return Task(work, name="bench").wait(interrupted)  # ActionRefused: exit 4


def _fmt(v: Any, nd: int = 2) -> str:
    return "-" if v is None else f"{v:,.{nd}f}"


# the result table's columns, widest layout first: (header, metric or attribute)
_WIDE = (("id", "id"), ("workload", "workload"), ("rep", "rep"), ("ops/s", "ops_s"),
         ("MB/s", "mb_s"), ("avg ms", "lat_avg_ms"), ("p50 ms", "lat_p50_ms"),
         ("p90 ms", "lat_p90_ms"), ("p99 ms", "lat_p99_ms"), ("p99.9 ms", "lat_p999_ms"),
         ("max ms", "lat_max_ms"), ("errors", "errors"), ("status", "status"))
_NARROW = (("workload", "workload"), ("rep", "rep"), ("ops/s", "ops_s"), ("MB/s", "mb_s"),
           ("avg ms", "lat_avg_ms"), ("p99 ms", "lat_p99_ms"), ("err", "errors"),
           ("status", "status"))


def _cell(r: Any, key: str) -> str:
    from runbooks.bench.figures import FIGURES, figure

    if key in FIGURES:
        return figure(key, getattr(r, key))
    if key == "id":
        return str(r.id or "-")
    if key == "group":
        return str(r.group_id)
    if key == "errors":
        kinds = ", ".join(f"{k} {n}" for k, n in sorted((r.error_kinds or {}).items()))
        return str(r.errors) + (f" ({kinds})" if kinds else "")
    return str(getattr(r, key))


def _table(results: Sequence[Any], cols: Sequence[tuple[str, str]]) -> Table:
    from rich.table import Table

    t = Table(show_header=True, header_style="bold")
    for head, key in cols:
        t.add_column(head, justify="left" if key in ("workload", "status") else "right",
                     no_wrap=True)
    for r in results:
        t.add_row(*(_cell(r, key) for _, key in cols))
    return t


def _fits(console: Any, t: Table) -> bool:
    from rich.measure import Measurement

    wide = console.options.update_width(10_000)  # the table's own width, unclamped
    return Measurement.get(console, wide, t).maximum <= console.width


def _vertical(results: Sequence[Any], cols: Sequence[tuple[str, str]]) -> list[str]:
    """One block per result, key: value lines (a terminal too narrow for any table)."""
    out = []
    for r in results:
        out.append(f"{r.workload} rep {r.rep} (id {r.id or '-'}, {r.status})")
        for head, key in cols:
            if key not in ("id", "workload", "rep", "status"):
                out.append(f"  {head}: {_cell(r, key)}")
    return out


_HISTORY = (("id", "id"), ("group", "group"), ("kind", "kind"), ("engine", "engine"),
            ("workload", "workload"), ("rep", "rep"), ("ops/s", "ops_s"), ("MB/s", "mb_s"),
            ("avg ms", "lat_avg_ms"), ("p99 ms", "lat_p99_ms"), ("errors", "errors"),
            ("status", "status"), ("fingerprint", "fingerprint"))
_HISTORY_NARROW = (("id", "id"), ("group", "group"), ("workload", "workload"),
                   ("rep", "rep"), ("ops/s", "ops_s"), ("MB/s", "mb_s"), ("p99 ms", "lat_p99_ms"),
                   ("status", "status"))


def results_view(console: Any, results: Sequence[Any],
                 layouts: Sequence[Sequence[tuple[str, str]]] = ()) -> Table | list[str]:
    """The result table that fits the terminal without cutting a cell: every column when
    it fits, the main ones when not (units in the headers), else key: value lines. The
    figures are ``figures.figure``'s, the ones the verdict quotes."""
    layouts = layouts or (_WIDE, _NARROW)
    for cols in layouts:
        t = _table(results, cols)
        if _fits(console, t):
            return t
    return _vertical(results, layouts[0])


def _output(term: Terminal, api: Any, report: Any, a: argparse.Namespace,
            comps: Sequence[Any]) -> None:
    console = term.wide
    if a.chart:
        target = comps[0] if comps else report
        api.chart_png(target, a.chart)
    if a.json:
        d = report.to_dict()
        if a.chart:
            d["chart"] = a.chart
        term.line(json.dumps(d, indent=2, default=str))
        return
    view = results_view(console, report.results)
    if isinstance(view, list):
        for line in view:
            console.print(line, markup=False)
    else:
        console.print(view)
    for r in report.results:
        if r.kind == "limits":
            console.print(_limits_line(r), markup=False)
        for line in api.detail_lines(r):
            console.print(line, markup=False)
    for w in report.warnings:
        console.print(f"warning: {w}", markup=False)
    console.print(f"{report.status}: {report.message}", markup=False)
    for c in comps:
        for line in c.lines():
            console.print(line, markup=False)
    if a.plot:
        console.print(api.chart_text(comps[0] if comps else report, width=min(console.width, 120),
                                    with_verdict=False), markup=False)
    if a.chart:
        console.print(f"chart written to {a.chart}")


def _limits_line(r: Any) -> str:
    x = r.extra
    parts = [f"{x.get('host')} (osd {', '.join(map(str, x.get('osds') or [])) or '-'}):"]
    d = x.get("disk") or {}
    if d.get("error"):
        parts.append(f"disk: {d['error']}")
    elif d:
        parts.append(f"disk write {_fmt(d.get('write_mb_s'), 1)} MB/s, read "
                     f"{_fmt(d.get('read_mb_s'), 1)} MB/s ({d.get('tool')}, "
                     f"{d.get('size', 0) // 2**20} MiB scratch file in {d.get('dir')});")
    n = x.get("net") or {}
    if n.get("error"):
        parts.append(f"network: {n['error']}")
    elif n:
        parts.append(f"network to {n.get('client_ip')} {_fmt(n.get('mb_s'), 1)} MB/s")
    if x.get("error"):
        parts.append(x["error"])
    return " ".join(parts)


def cmd_history(a: argparse.Namespace) -> int:

    env = env_from_args(a)
    console = env.term.wide
    try:
        rows = _service(env).actions.bench_history(a.cluster, a.limit, a.kind)
        if a.json:
            env.term.line(json.dumps([r.to_row() for r in rows], indent=2, default=str))
            return 0
        view = results_view(console, rows, (_HISTORY, _HISTORY_NARROW))
        if isinstance(view, list):
            for line in view:
                console.print(line, markup=False)
        else:
            console.print(view)
        return 0
    finally:
        env.close()


def cmd_baseline_set(a: argparse.Namespace) -> int:
    env = env_from_args(a)
    try:
        rec = _service(env).actions.set_baseline(a.cluster, a.name, a.group, a.kind)
        env.term.wide.print(f"baseline {rec['name']!r} on {rec['cluster']} = group "
                      f"{rec['group_id']} (fingerprint {rec['fingerprint']})", markup=False)
        return 0
    finally:
        env.close()


def cmd_baseline_list(a: argparse.Namespace) -> int:
    env = env_from_args(a)
    try:
        for b in _service(env).actions.baselines(a.cluster):
            env.term.wide.print(f"{b['name']}: group {b['group_id']} fingerprint {b['fingerprint']}"
                          f" set by {b['user']}", markup=False)
        return 0
    finally:
        env.close()


def cmd_show(a: argparse.Namespace) -> int:
    from runbooks.bench import api

    env = env_from_args(a)
    try:
        summary = _service(env).actions.stored_bench(a.cluster, a.group,
                                                     compare=a.compare is not None,
                                                     baseline=a.compare or None)
        _output(env.term, api, summary.report, a, summary.compared)
        return ExitStatus.WARN if summary.slower else ExitStatus.OK
    finally:
        env.close()


def _service(env: Env) -> Service:
    from core.service import Service

    return Service(env)
