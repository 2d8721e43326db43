"""What the bot asks of the rest of stordoc, in one narrow place.

The bot never talks to Ceph, Swift or hosts itself: checks go through ``Env.check`` and
everything that acts goes through ``runbooks.api`` (plan, execute, audit), benchmarks
through ``runbooks.bench.api`` when it exists. This adapter turns their objects into the
plain values the renderer and the listeners need, and their refusals into ``BotError``.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from checks.service import CheckOutcome
from stordoc.env import Env


class BotError(Exception):
    """Something a person asked for that cannot be done; the message says why (one line)."""


@dataclass
class PlanView:
    cluster: str
    runbook: str
    target: str
    lines: list[str]
    second_person: bool  # the runbook's own needs_second_person (two-person rule)
    obj: Any  # the runbooks.api Plan, kept server-side until confirmed
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class RunOutcome:
    ok: bool
    summary: str
    verification: str
    run_id: int | None = None
    details: list[str] = field(default_factory=list)  # extra lines (benchmark figures)
    files: list[tuple[str, str, str]] = field(default_factory=list)  # (path, name, title)


def _module(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_ICONS = {"step_started": ":arrow_forward:", "step_done": ":white_check_mark:",
          "step_failed": ":x:", "cancelled": ":no_entry_sign:", "verify_started": ":mag:",
          "verify_done": ":clipboard:", "done": ":checkered_flag:"}


def describe_event(ev: Any) -> str | None:
    """One line for a runbook progress event (None for the plan, already on screen)."""
    if isinstance(ev, str):
        return ev
    kind = str(getattr(ev, "kind", "") or "")
    if kind == "plan":
        return None
    idx = getattr(ev, "index", None)
    title = str(getattr(ev, "title", "") or "")
    msg = str(getattr(ev, "message", "") or "")
    step = f"step {idx}: " if isinstance(idx, int) else ""
    if kind == "step_started":
        return f"{_ICONS[kind]} {step}{title}" + (f"\n`$ {msg}`" if msg else "")
    icon = _ICONS.get(kind, "•")
    text = f"{step}{title}" if title else step.rstrip(": ")
    return f"{icon} {text}: {msg}" if text and msg else f"{icon} {text or msg}"


def _maybe(fn: Callable[[str], None], line: str | None) -> None:
    if line:
        fn(line)


class Backend:
    """The bot's view of stordoc: checks, runbooks, audit, history, benchmarks."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self._lock = threading.Lock()
        self._flight_lock = threading.Lock()
        self._inflight: dict[str, Future[CheckOutcome]] = {}
        self._started: dict[str, float] = {}  # wall time the run in flight started
        self._last: dict[str, tuple[float, CheckOutcome]] = {}  # start time, outcome

    # ------------------------------------------------------------------ clusters
    def clusters(self) -> list[str]:
        return sorted(self.env.settings.clusters)

    def default_cluster(self) -> str | None:
        return self.env.settings.default_cluster

    def check(self, cluster: str, source: str = "slack") -> CheckOutcome:
        """A check run of ``cluster``; requests arriving while one runs share it (a burst
        of 20 ``health`` is one run and 3 SSH sessions, not 20 and 60 on a loaded host)."""
        return self.check_since(cluster, None, source)

    def check_since(self, cluster: str, since: float | None, source: str = "slack"
                    ) -> CheckOutcome:
        """Like ``check``, but a run that started at or after ``since`` (epoch seconds)
        is recent enough and is returned as it is: an alert whose condition began at
        ``since`` needs a look taken after that moment, not a new one per delivery."""
        with self._flight_lock:
            last = self._last.get(cluster)
            if since is not None and last is not None and last[0] >= since:
                return last[1]
            fut = self._inflight.get(cluster)
            mine = fut is None
            if fut is None:
                fut = self._inflight[cluster] = Future()
                self._started[cluster] = time.time()
        if not mine:
            return fut.result()
        try:
            out = self.env.check(cluster, source=source)
            with self._flight_lock:
                self._last[cluster] = (self._started[cluster], out)
            fut.set_result(out)
            return out
        except BaseException as e:
            fut.set_exception(e)
            raise
        finally:
            with self._flight_lock:
                self._inflight.pop(cluster, None)

    def history(self, cluster: str, limit: int = 15) -> list[dict[str, Any]]:
        return self.env.journal.runs(cluster, limit=limit)

    def last_findings(self, cluster: str) -> tuple[int | None, list[dict[str, Any]]]:
        runs = self.env.journal.runs(cluster, limit=1)
        if not runs:
            return None, []
        rid = int(runs[0]["id"])
        return rid, self.env.journal.findings_of(rid)

    # ------------------------------------------------------------------ runbooks
    @property
    def api(self) -> Any:
        api = _module("runbooks.api")
        if api is None or not hasattr(api, "plan"):
            raise BotError("runbooks are not available in this installation")
        return api

    def runbook_names(self) -> list[str] | None:
        api = _module("runbooks.api")
        if api is None or not hasattr(api, "list_runbooks"):
            return None
        names = []
        for rb in api.list_runbooks():
            n = rb if isinstance(rb, str) else getattr(rb, "name", None)
            if isinstance(n, str) and not n.startswith("bench"):
                names.append(n)
        return names or None

    def runbook_for_code(self, code: str) -> str | None:
        api = _module("runbooks.api")
        if api is None or not hasattr(api, "runbook_for_code"):
            return None
        rb = api.runbook_for_code(code)
        if rb is None:
            return None
        return rb if isinstance(rb, str) else getattr(rb, "name", None)

    def _ctx(self, cluster: str, user: str) -> Any:
        maker = getattr(self.env, "run_context", None)
        if maker is None:
            raise BotError("runbooks are not wired into this installation (Env.run_context)")
        ctx = maker(cluster, source="slack")
        ctx.user = user  # the audit records the Slack user ID, not the bot's OS user
        return ctx

    def plan(self, cluster: str, runbook: str, target: str, user: str,
             options: Mapping[str, Any] | None = None) -> PlanView:
        if runbook.startswith("bench-"):
            return self.plan_bench(cluster, runbook[len("bench-"):], user, options or {})
        api = self.api
        refused = getattr(api, "Refused", ())
        ctx = self._ctx(cluster, user)
        try:
            p = api.plan(ctx, runbook, target, dict(options or {}))
        except BotError:
            raise
        except Exception as e:
            if refused and isinstance(e, refused):
                raise BotError(f"refused: {e}") from None
            if type(e).__name__ in ("Refused", "UserError", "ValueError", "LockHeld"):
                raise BotError(str(e)) from None
            raise
        lines = list(p.lines()) if hasattr(p, "lines") else [str(p)]
        data = p.to_dict() if hasattr(p, "to_dict") else {}
        return PlanView(cluster, runbook, target, lines, bool(p.needs_second_person), p, data)

    def execute(self, pv: PlanView, requested_by: str, confirmed_by: str,
                on_event: Callable[[str], None], cancel: threading.Event) -> RunOutcome:
        if pv.runbook.startswith("bench-"):
            return self.run_bench(pv, requested_by, confirmed_by, on_event, cancel)
        api = self.api
        ctx = self._ctx(pv.cluster, requested_by)
        try:
            res = api.execute(ctx, pv.obj, confirmed_by=confirmed_by,
                              on_event=lambda ev: _maybe(on_event, describe_event(ev)),
                              cancel=cancel)
        except Exception as e:
            refused = getattr(api, "Refused", ())
            if (refused and isinstance(e, refused)) or type(e).__name__ in ("Refused",
                                                                            "LockHeld"):
                return RunOutcome(False, f"refused: {e}", "not run")
            raise
        ok = bool(getattr(res, "ok", False))
        summary = f"{getattr(res, 'outcome', 'done')}: {getattr(res, 'message', '')}"
        verified = getattr(res, "verified", None)
        left = [f"{f.entity} {f.code}" for f in getattr(res, "verify_findings", ())]
        if verified is True:
            vtext = "checks pass again" + (f" ({', '.join(left)} remain)" if left else "")
        elif verified is False:
            vtext = "still failing: " + (", ".join(left) or "the triggering checks")
        else:
            vtext = "not verified"
        not_done = list(getattr(res, "not_done", ()))
        if not_done and not ok:
            vtext += "; not done: " + "; ".join(not_done[:5])
        return RunOutcome(ok, summary, vtext, getattr(res, "run_id", None))

    def audit(self, cluster: str, limit: int = 15) -> list[dict[str, Any]]:
        mod = _module("storage.audit")
        if mod is None:
            return []
        return list(mod.Audit(self.env.journal).runs(limit=limit, cluster=cluster))

    # ------------------------------------------------------------------ benchmarks
    def bench_kinds(self) -> Sequence[str] | None:
        api = _module("runbooks.bench.api")
        kinds = getattr(api, "KINDS", None) if api is not None else None
        return tuple(kinds) if kinds else None

    def _bench_limits(self, api: Any) -> Any:
        return api.BenchLimits.from_mapping(self.env.settings.bench.model_dump())

    def plan_bench(self, cluster: str, kind: str, user: str,
                   options: Mapping[str, Any]) -> PlanView:
        api = _module("runbooks.bench.api")
        if api is None:
            raise BotError("benchmarks are not available in this installation")
        opts = bench_options(api, options)
        ctx = self._ctx(cluster, user)
        try:
            bp = api.plan_bench(ctx, kind, opts, self._bench_limits(api))
        except api.Refused as e:
            raise BotError(f"refused: {e}") from None
        return PlanView(cluster, f"bench-{kind}", "bench", list(bp.lines()), False,
                        (kind, opts, bp), bp.to_dict())

    def run_bench(self, pv: PlanView, requested_by: str, confirmed_by: str,
                  on_event: Callable[[str], None], cancel: threading.Event) -> RunOutcome:
        import tempfile

        api = _module("runbooks.bench.api")
        assert api is not None
        kind, opts, bp = pv.obj
        ctx = self._ctx(pv.cluster, requested_by)
        last: dict[str, Any] = {"at": 0.0, "phase": ""}

        def progress(p: Any) -> None:  # a line per phase and about every 5 s, not per tick
            now = time.monotonic()
            if p.phase == last["phase"] and now - float(last["at"]) < 5.0:
                return
            last.update(at=now, phase=p.phase)
            on_event(f":stopwatch: {p.phase} {p.rep}/{p.reps}: {p.elapsed_s:.0f}/"
                     f"{p.planned_s:.0f} s, {p.ops_s:.0f} ops/s, {p.mb_s:.1f} MB/s")

        lim = self._bench_limits(api)
        try:
            rep = api.run_bench(ctx, kind, opts, on_progress=progress, cancel=cancel,
                                limits=lim, plan=bp, confirmed_by=confirmed_by)
        except api.Refused as e:
            return RunOutcome(False, f"refused: {e}", "not run")
        details = []
        for r in rep.results:
            p50 = f"{r.lat_p50_ms:.1f}" if r.lat_p50_ms is not None else "-"
            p99 = f"{r.lat_p99_ms:.1f}" if r.lat_p99_ms is not None else "-"
            details.append(f"{r.workload}: {r.ops_s:.1f} ops/s, {r.mb_s:.2f} MB/s, latency "
                           f"p50 {p50} ms p99 {p99} ms, errors {r.errors}")
            details += api.detail_lines(r)
        verdict = "no comparison"
        files: list[tuple[str, str, str]] = []
        if rep.results:
            try:
                comps = api.compare(ctx, rep, None, lim)
                rep.comparisons = comps
                verdict = "; ".join(f"{c.workload}: {c.verdict}" for c in comps) or verdict
            except api.Refused as e:
                verdict = str(e)
            try:
                path = tempfile.mkstemp(prefix="stordoc-bench-", suffix=".png")[1]
                api.chart_png(rep, path)
                files.append((path, f"bench-{kind}-{rep.group_id}.png",
                              f"bench {kind} on {pv.cluster}"))
            except Exception as e:  # a chart is a bonus; the figures are in the thread
                details.append(f"(no chart: {type(e).__name__}: {e})")
        return RunOutcome(rep.ok, f"{rep.status}: {rep.message}", verdict,
                          getattr(rep, "audit_run_id", None), details, files)


def bench_options(api: Any, options: Mapping[str, str]) -> Any:
    """Typed benchmark options from ``key=value`` words (the grammar types and bounds
    each value); ``force``/``keep`` stay CLI-only."""
    from bot.grammar import GrammarError, bench_option

    kw: dict[str, Any] = {}
    for k, v in options.items():
        try:
            field_, value = bench_option(k, v)
        except GrammarError as e:
            raise BotError(str(e)) from None
        kw[field_] = value
        if field_ == "mix":
            kw["modes"] = ("mix",)
    try:
        return api.BenchOptions(**kw)
    except (TypeError, ValueError) as e:
        raise BotError(f"bench options: {e}") from None
