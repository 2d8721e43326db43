"""Check runs for every front end: the recording rule and the sharing of a run in flight.

The CLI records every run it makes; the TUI refreshes every few seconds and records only
when the findings changed (or every 5 minutes), so "new since the last run" stays true
without a row per refresh; the bot's views share one run in flight per cluster (a burst of
20 ``health`` is one run and one SSH session per host, not 20, even when the bot's pool
takes them up one batch after another: a request's ``since`` is when it was asked, and a
run still going at that moment answers it). All of that is decided here, once.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from enum import Enum

from checks.outcome import CheckOutcome
from core.env import Env, preflight_cluster
from core.service.pipeline import CheckRequest, record_outcome, run_check


class RecordPolicy(Enum):
    """When a check run goes into the journal."""

    ALWAYS = "always"  # every run (the CLI, watch mode, the bot's health)
    ON_CHANGE = "on_change"  # when the set of findings changed, or every RECORD_EVERY_S
    NEVER = "never"  # a look that leaves no trace (mutes still apply)


RECORD_EVERY_S = 300.0
# a run is shared by callers asking for the same cluster, record policy, codes, host facts
_Key = tuple[str, "RecordPolicy", tuple[str, ...] | None, bool]


@dataclass(frozen=True)
class _Recorded:
    at: float  # wall time it was recorded
    keys: frozenset[tuple[str, str]]
    outcome: CheckOutcome


class Inspector:
    """One per process and Env: thread-safe, shared by every caller of ``check``."""

    def __init__(self, env: Env, record_every_s: float = RECORD_EVERY_S) -> None:
        self.env = env
        self.record_every_s = record_every_s
        self._lock = threading.Lock()
        # a run in flight per (cluster, policy): its outcome to come and its start time
        self._inflight: dict[_Key, tuple[Future[CheckOutcome], float]] = {}
        self._last: dict[_Key, tuple[float, CheckOutcome]] = {}  # end time, outcome
        self._recorded: dict[str, _Recorded] = {}
        self.runs = 0  # check runs started (shared ones count once): for benchmarks, tests

    def check(self, cluster: str | None, source: str,
              record: RecordPolicy = RecordPolicy.ALWAYS, since: float | None = None,
              only: Iterable[str] | None = None, host_facts: bool = True) -> CheckOutcome:
        """A check of ``cluster`` (``only`` those codes shown; host facts unless told
        not). Callers asking while a run of the same cluster and options is in flight get
        that run's outcome. With ``since`` (epoch seconds), the last run is recent enough
        when it was still going at that moment or started later (it ended at or after
        ``since``), the same rule as joining a run in flight: a person asking at ``since``
        (the bot's request time) or an alert whose condition began then needs one look
        that was under way at that moment, not a new one per request or delivery
        (callers clamp a ``since`` in the future to when they were asked:
        ``core.alerts.AlertDesk.handle``)."""
        name = self.env.cluster_name(cluster)
        codes = tuple(sorted({c.upper() for c in only})) if only else None
        key = (name, record, codes, host_facts)
        with self._lock:
            last = self._last.get(key)
            if since is not None and last is not None and last[0] >= since:
                return last[1]
            running = self._inflight.get(key)
            if running is not None:
                fut, started = running
            else:
                fut, started = Future(), time.time()
                self._inflight[key] = (fut, started)
                self.runs += 1
        if running is not None:
            return fut.result()
        try:
            out = self._run(name, source, record, codes, host_facts)
            with self._lock:
                self._last[key] = (time.time(), out)
            fut.set_result(out)
            return out
        except BaseException as e:
            fut.set_exception(e)
            raise
        finally:
            with self._lock:
                self._inflight.pop(key, None)

    def _run(self, cluster: str, source: str, record: RecordPolicy,
             only: tuple[str, ...] | None, host_facts: bool) -> CheckOutcome:
        if record is RecordPolicy.ALWAYS:
            return self._pipeline(cluster, source, True, only, host_facts)
        out = self._pipeline(cluster, source, False, only, host_facts)
        if record is RecordPolicy.NEVER:
            return out
        keys = frozenset(f.key for f in out.report.findings)
        last = self._recorded.get(cluster)
        if last is not None and keys == last.keys and \
                time.time() - last.at < self.record_every_s:
            return replace(out, delta=last.outcome.delta)
        recorded = record_outcome(self.env.journal, cluster, out, source)
        self._recorded[cluster] = _Recorded(time.time(), keys, recorded)
        return recorded

    def _pipeline(self, cluster: str, source: str, record: bool,
                  only: tuple[str, ...] | None, host_facts: bool) -> CheckOutcome:
        """The settings' part of a check, then ``pipeline.run_check``: the mutes of the
        journal honoured even when the run is not recorded, next steps planned. A check
        never reverts an expired temporary change (it says it is overdue:
        checks/planned.py); ``Env.sweep_expired`` is its own step."""
        from runbooks.nextstep import planning_context

        env = self.env
        cs = env.settings.clusters[cluster]
        preflight_cluster(cs)
        mutes_from = env.journal if record or os.path.exists(
            os.path.expanduser(env.settings.journal)) else None
        target = env.target(cluster)  # with the hosts found from the cluster (hosts_from)
        thresholds = env.settings.thresholds_for(cluster)
        t0 = time.monotonic()
        snap = env.collect(target, host_facts)
        return run_check(CheckRequest(target, thresholds, cs.muted, env.journal if record else None,
                         only=only, host_facts=host_facts, source=source,
                         mutes_from=mutes_from, collected=(snap, time.monotonic() - t0),
                         planning=planning_context(cluster, target, thresholds)))
