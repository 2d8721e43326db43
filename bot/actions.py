"""The Fix / Confirm / Cancel / Silence buttons: a plan with its buttons, and what
pressing one does (checked server-side, the two-person rule asked of ``core.policy``, run
with progress in the thread, a follow-up while the cluster settles). ``Actions`` holds the
bot's ``BotCore`` (composition: no base class)."""

from __future__ import annotations

import queue
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bot import render as r
from bot.core import BotCore, BotError, Where, log
from core.alerts.alertmanager import AlertmanagerError
from core.policy import Level, SecondPerson
from core.service.actions import (
    ActionPlan,
    ActionRefused,
    PlanKind,
    RunReport,
    bench_option_values,
    is_bench,
)
from core.slack.poster import ChannelThrottle
from core.slack.store import Button
from runbooks.bench.api import BenchOptions
from runbooks.bench.model import Progress as BenchProgress
from runbooks.model import EventKind, RunEvent

_ICONS = {EventKind.STEP_STARTED: ":arrow_forward:", EventKind.STEP_DONE: ":white_check_mark:",
          EventKind.STEP_FAILED: ":x:", EventKind.CANCELLED: ":no_entry_sign:",
          EventKind.VERIFY_STARTED: ":mag:", EventKind.VERIFY_DONE: ":clipboard:",
          EventKind.DONE: ":checkered_flag:"}


def describe_event(ev: RunEvent) -> str | None:
    """One line for a runbook progress event; None for the plan (already on screen) and
    for the outcome and verification verdict, which the one result message says."""
    if ev.kind in (EventKind.PLAN, EventKind.DONE, EventKind.VERIFY_DONE):
        return None
    step = f"step {ev.index}: " if isinstance(ev.index, int) else ""
    if ev.kind == EventKind.STEP_STARTED:
        return f"{_ICONS[EventKind.STEP_STARTED]} {step}{ev.title}" + (
            f"\n`$ {ev.message}`" if ev.message else "")
    icon = _ICONS.get(EventKind(ev.kind), "•")
    text = f"{step}{ev.title}" if ev.title else step.rstrip(": ")
    return f"{icon} {text}: {ev.message}" if text and ev.message else f"{icon} {text or ev.message}"


def bench_options(options: Mapping[str, str]) -> BenchOptions:
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
    try:
        return BenchOptions(**bench_option_values(kw))
    except (TypeError, ValueError) as e:
        raise BotError(f"bench options: {e}") from None


def _bench_lines(rep: RunReport) -> tuple[str, list[str]]:
    """(verdict, detail lines) of a finished benchmark, for its thread."""
    b = rep.bench
    if b is None:
        return "no comparison", []
    details: list[str] = []
    for res in b.report.results:
        p50 = f"{res.lat_p50_ms:.1f}" if res.lat_p50_ms is not None else "-"
        p99 = f"{res.lat_p99_ms:.1f}" if res.lat_p99_ms is not None else "-"
        details.append(f"{res.workload}: {res.ops_s:.1f} ops/s, {res.mb_s:.2f} MB/s, "
                       f"latency p50 {p50} ms p99 {p99} ms, errors {res.errors}")
    details += b.details
    verdict = "; ".join(f"{w}: {v}" for w, v in b.verdicts) or b.no_comparison or \
        "no comparison"
    return verdict, details


class ThreadFeed:
    """Progress lines into one Slack thread: queued, coalesced, sent at the channel's rate."""

    def __init__(self, send: Callable[[str], None], throttle: ChannelThrottle,
                 channel: str) -> None:
        self._send = send
        self._q: queue.Queue[str | None] = queue.Queue()
        self._throttle = throttle
        self._channel = channel
        self.sent: list[str] = []
        self._t = threading.Thread(target=self._loop, name="stordoc-bot-feed", daemon=True)
        self._t.start()

    def push(self, line: str) -> None:
        self._q.put(line)

    def close(self, timeout: float = 60.0) -> None:
        self._q.put(None)
        self._t.join(timeout)

    def _loop(self) -> None:
        done = False
        while not done:
            item = self._q.get()
            lines = [] if item is None else [item]
            done = item is None
            while not done:
                try:
                    nxt = self._q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    done = True
                else:
                    lines.append(nxt)
            if not lines:
                continue
            self._throttle.wait(self._channel)
            text = "\n".join(lines)
            try:
                self._send(text)
                self.sent.append(text)
            except Exception as e:  # progress is best effort; the audit has every step
                log.warning("progress post failed: %s", e)


class ProgressMessage:
    """A run's progress as ONE thread message, edited in place (``chat.update``) as lines
    arrive; the first line (who started it) always stays, older step lines give way to
    newer ones when the message would pass Slack's size."""

    LIMIT = 2900

    def __init__(self, post: Callable[[str], str], update: Callable[[str, str], None]) -> None:
        self._post = post
        self._update = update
        self.lines: list[str] = []
        self.ts: str | None = None

    def send(self, text: str) -> None:
        self.lines.extend(text.splitlines())
        body = self.text()
        if self.ts is None:
            self.ts = self._post(body)
        else:
            self._update(self.ts, body)

    def text(self) -> str:
        head, rest = self.lines[:1], self.lines[1:]
        dropped = 0
        while rest and len("\n".join(head + rest)) > self.LIMIT - 40:
            rest = rest[1:]
            dropped += 1
        gap = [f"_({dropped} earlier line(s) not shown: the audit has every step)_"] \
            if dropped else []
        return r.clip("\n".join(head + gap + rest), self.LIMIT)


class Actions:
    """Plans with Confirm/Cancel buttons and the handling of every button press; holds
    the bot's shared state and delivery (``core``) and the plans shown but not yet
    confirmed, and the runs under way."""

    def __init__(self, core: BotCore) -> None:
        self.core = core
        self._plans: dict[str, tuple[ActionPlan, float]] = {}
        self._plans_lock = threading.Lock()
        self.runs: list[threading.Thread] = []

    def plan_reply(self, where: Where, cluster: str, runbook: str, target: str,
                   buttons: bool, options: Mapping[str, Any] | None = None) -> r.Reply:
        pv = self._plan(cluster, runbook, target, where.user, options)
        target = pv.target  # the canonical target the plan acts on ("NODE2." -> "node2")
        # the policy's answer (a runbook that always needs two people says so whatever
        # the cluster's setting); nobody has confirmed yet
        two = self.core.auth.second_person(cluster, runbook, pv.second_person, where.user,
                                      None) is not SecondPerson.NOT_NEEDED
        conf = canc = None
        if buttons:
            conf = secrets.token_urlsafe(18)
            canc = self.core.store.new_button("cancel", cluster, runbook, target, where.user,
                                         self.core.ttl, {"confirm": conf})
            self.core.store.new_button(
                "confirm", cluster, runbook, target, where.user, self.core.ttl,
                {"cancel": canc, "fingerprint": pv.fingerprint,
                 "second_person": pv.second_person, "options": dict(options or {})},
                token=conf)
            with self._plans_lock:
                now = time.monotonic()
                self._plans = {k: v for k, v in self._plans.items()
                               if now - v[1] < self.core.ttl}  # expired plans: forget them
                self._plans[conf] = (pv, now)
        self.core.audit(where, cluster, "plan", "shown", f"{runbook} {target}")
        return r.plan_reply(cluster, runbook, target, list(pv.lines), conf, canc, where.user,
                            self.core.ttl, two)

    def _plan(self, cluster: str, runbook: str, target: str, user: str,
              options: Mapping[str, Any] | None) -> ActionPlan:
        """The service's plan; a benchmark's words are typed first (the grammar's)."""
        opts: Mapping[str, Any] | BenchOptions | None = options
        if is_bench(runbook):
            opts = bench_options(options or {})
        try:
            return self.core.backend.actions.plan(cluster, runbook, target, source="slack",
                                             user=user, options=opts)
        except ActionRefused as e:
            raise BotError(f"refused: {e}") from None

    def _button(self, where: Where, token: str, kind: str) -> Button | None:
        b = self.core.store.button(token)
        if b is None or b.kind != kind:
            self.core.refuse(where, "this button is not known here (it may come from another "
                                "installation): run the command again")
            return None
        if b.expired():
            self.core.audit(where, b.cluster, kind, "expired", f"{b.runbook} {b.target}")
            self.core.refuse(where, f"this button expired (buttons last {r.ttl_words(self.core.ttl)}): "
                                f"run `{self.core.command} health {b.cluster}` again")
            return None
        refusal = self.core.auth.refusal(where.user, b.cluster, Level.OPERATOR)
        if refusal:
            self.core.audit(where, b.cluster, kind, "refused", f"{b.runbook} {b.target}")
            self.core.refuse(where, refusal)
            return None
        return b

    def press_fix(self, where: Where, msg_ts: str, token: str) -> None:
        b = self._button(where, token, "fix")
        if b is None:
            return
        self.core.audit(where, b.cluster, "fix", "pressed", f"{b.runbook} {b.target}")
        self.core.answer_in_time(where, lambda: self.plan_reply(where, b.cluster, b.runbook, b.target,
                                                    buttons=True))

    def press_silence(self, where: Where, msg_ts: str, token: str) -> None:
        """The Silence button of an alert's post: 4 h, operators only, answered in the
        alert's thread; the token is spent so a double press silences once."""
        b = self._button(where, token, "silence")
        if b is None:
            return
        if not self.core.store.spend([token], where.user):
            self.core.refuse(where, "this alert was already silenced from this button")
            return
        alertname = str(b.data.get("alertname", b.target))
        self.core.audit(where, b.cluster, "silence", "pressed", alertname)
        try:
            line = self.core.desk.silence(b.cluster, alertname, 4 * 3600.0, where.user,
                                     f"Silence button by {where.user}")
        except AlertmanagerError as e:
            self.core.refuse(where, str(e))
            return
        self.core.post(Where(where.channel, where.user, msg_ts, "button"), r.text_reply(line),
                  thread_ts=msg_ts)

    def press_cancel(self, where: Where, msg_ts: str, token: str) -> None:
        b = self._button(where, token, "cancel")
        if b is None:
            return
        conf = str(b.data.get("confirm", ""))
        if not self.core.store.spend([token] + ([conf] if conf else []), where.user):
            self.core.refuse(where, "this plan was already confirmed or cancelled")
            return
        self.core.audit(where, b.cluster, "cancel", "cancelled", f"{b.runbook} {b.target}")
        head = f"Plan: {b.runbook} {b.target} on {b.cluster}"
        self.core.client.chat_update(channel=where.channel, ts=msg_ts, text=f"{head}: cancelled",
                                blocks=r.plan_closed_blocks(
                                    head, f"Cancelled by <@{where.user}>; nothing ran."))

    def press_confirm(self, where: Where, msg_ts: str, token: str) -> None:
        b = self._button(where, token, "confirm")
        if b is None:
            return
        if b.used_at is not None:
            self.core.refuse(where, f"this plan was already handled by <@{b.used_by}>")
            return
        second = bool(b.data.get("second_person", True))  # unknown: the safe side
        if not self.core.auth.second_person(b.cluster, b.runbook, second, b.requested_by,
                                       where.user).ok:  # the pressing operator: the approver
            self.core.audit(where, b.cluster, "confirm", "refused: two-person",
                        f"{b.runbook} {b.target}")
            self.core.refuse(where, f"two-person rule on `{b.cluster}`: `{b.runbook}` must be "
                                "confirmed by another operator than the one who asked")
            return
        with self._plans_lock:
            kept = self._plans.pop(token, None)
        pv = kept[0] if kept else None
        if pv is None:  # restarted since the plan was shown: plan again, must be identical
            try:
                pv = self._plan(b.cluster, b.runbook, b.target, b.requested_by,
                                b.data.get("options") or {})
            except BotError as e:
                self.core.refuse(where, str(e))
                return
            if pv.fingerprint != b.data.get("fingerprint"):
                self.core.refuse(where, "the plan changed since it was shown: press Fix again")
                return
        cancel_tok = str(b.data.get("cancel", ""))
        if not self.core.store.spend([token] + ([cancel_tok] if cancel_tok else []), where.user):
            self.core.refuse(where, "this plan was already confirmed or cancelled")
            return
        self.core.audit(where, b.cluster, "confirm", "running", f"{b.runbook} {b.target}")
        head = f"Plan: {b.runbook} {b.target} on {b.cluster}"
        lines_block = r.sections_of("```\n" + r.esc("\n".join(pv.lines)) + "\n```")[:40]
        self.core.client.chat_update(
            channel=where.channel, ts=msg_ts, text=f"{head}: running",
            blocks=[r.header(head), *lines_block,
                    r.context(f":gear: confirmed by <@{where.user}> (requested by "
                              f"<@{b.requested_by}>); running, progress in the thread")])
        t = threading.Thread(target=self._run, name="stordoc-bot-run", daemon=True,
                             args=(where, msg_ts, b, pv, head, lines_block))
        self.runs.append(t)
        t.start()

    def _run(self, where: Where, msg_ts: str, b: Button, pv: ActionPlan, head: str,
             lines_block: list[r.Block]) -> None:
        thread = where.thread_ts or msg_ts

        def post(text: str) -> str:
            resp = self.core.client.chat_postMessage(channel=where.channel, thread_ts=thread,
                                                text=self.core.redactor.text(text))
            return str(resp.get("ts"))

        def update(ts: str, text: str) -> None:
            self.core.client.chat_update(channel=where.channel, ts=ts,
                                    text=self.core.redactor.text(text))

        progress = ProgressMessage(post, update)
        feed = ThreadFeed(progress.send, self.core.throttle, where.channel)
        feed.push(f":arrow_forward: `{b.runbook} {b.target}` started by <@{where.user}>")
        cancel = threading.Event()
        files: list[tuple[str, str, str]] = []
        ok = False
        details: list[str] = []
        try:
            res = self.core.backend.actions.execute(
                pv, where.user, lambda ev: _maybe(feed.push, describe_event(ev)), cancel,
                _bench_progress(feed.push))
            ok = res.ok
            icon = ":white_check_mark:" if res.ok else ":x:"
            status = f"{icon} {res.outcome}: {res.message}"
            verification = res.verification
            if not res.ok and res.not_done:
                verification += "; not done: " + "; ".join(res.not_done[:5])
            if res.kind is PlanKind.BENCH:
                verification, details = _bench_lines(res)
                files = self._bench_chart(res, b.cluster)
        except ActionRefused as e:
            status, verification = f":x: refused: {e}", "not run"
        except Exception:
            status = f":x: runbook error: {self.core.internal_error('runbook')}"
            verification = "not verified"
        feed.close()
        label = "verdict" if is_bench(b.runbook) else "verification"
        result = "\n".join([f"{status}", f"*{label}:* {verification}", *details])
        self.core.throttle.wait(where.channel)
        result_ts: str | None = None
        try:  # the one result message of the run (a follow-up edits it, never adds one)
            result_ts = post(r.clip(result, 2900))
        except Exception as e:
            log.warning("result post failed: %s", self.core.redactor.text(str(e))[:200])
        for path, name, title in files:
            try:
                self.core.client.files_upload_v2(channel=where.channel, thread_ts=thread,
                                            file=path, filename=name, title=title)
            except Exception as e:
                log.warning("chart upload failed: %s", self.core.redactor.text(str(e)))
            finally:
                Path(path).unlink(missing_ok=True)
        self.core.audit(where, b.cluster, "run", status[:100], f"{b.runbook} {b.target}")
        self.core.throttle.wait(where.channel)
        closing = (f"{status} · {label}: {verification} · confirmed by "
                   f"<@{where.user}>, requested by <@{b.requested_by}>")
        self.core.client.chat_update(channel=where.channel, ts=msg_ts,
                                text=r.clip(f"{head}: {status}", 2900),
                                blocks=[r.header(head), *lines_block,
                                        r.context(r.clip(self.core.redactor.text(closing), 2900))])
        if ok and result_ts is not None:
            self._follow(where, result_ts, r.clip(result, 2000), b)

    def _bench_chart(self, rep: RunReport, cluster: str) -> list[tuple[str, str, str]]:
        """The benchmark's chart as a PNG for the thread (a bonus: figures are posted)."""
        import tempfile

        b = rep.bench
        if b is None or not b.rows:
            return []
        path = tempfile.mkstemp(prefix="stordoc-bench-", suffix=".png")[1]
        try:
            self.core.backend.actions.chart_png(b, path)
        except Exception as e:
            Path(path).unlink(missing_ok=True)
            log.warning("no chart: %s", self.core.redactor.text(str(e))[:200])
            return []
        kind = b.report.kind
        return [(path, f"bench-{kind}-{b.group_id}.png", f"bench {kind} on {cluster}")]

    def _follow(self, where: Where, result_ts: str, result: str, b: Button) -> None:
        """After a successful OSD/pool fix: what the cluster still does (peering,
        recovery, Ceph's ETA), a line under the run's result message, updated in place
        until clean or 3 minutes."""
        from runbooks.aftermath import Aftermath

        def show(am: Aftermath, prefix: str = "") -> None:
            icon = ":white_check_mark:" if am.clean else ":hourglass_flowing_sand:"
            text = r.clip(f"{result}\n{icon} after the fix: {prefix}{am.line}", 2900)
            self.core.throttle.wait(where.channel)
            self.core.client.chat_update(channel=where.channel, ts=result_ts,
                                    text=self.core.redactor.text(text))

        try:
            am = self.core.backend.actions.follow(b.cluster, b.runbook, show, self.core.closing,
                                             source="slack", timeout_s=180.0, interval_s=3.0)
            if am is not None and not am.clean and not self.core.closing.is_set():
                show(am, "still not clean after 3 minutes: ")
        except Exception as e:
            log.warning("follow-up failed: %s", self.core.redactor.text(str(e))[:200])



def _maybe(fn: Callable[[str], None], line: str | None) -> None:
    if line:
        fn(line)


def _bench_progress(push: Callable[[str], None]) -> Callable[[BenchProgress], None]:
    """A line per phase and about every 5 s, not per tick."""
    last: dict[str, Any] = {"at": 0.0, "phase": ""}

    def progress(p: BenchProgress) -> None:
        now = time.monotonic()
        if p.phase == last["phase"] and now - float(last["at"]) < 5.0:
            return
        last.update(at=now, phase=p.phase)
        push(f":stopwatch: {p.phase} {p.rep}/{p.reps}: {p.elapsed_s:.0f}/"
             f"{p.planned_s:.0f} s, {p.ops_s:.0f} ops/s, {p.mb_s:.1f} MB/s")
    return progress
